#pragma once
// masked_select: the elements of x where a bool mask holds, in x's index order, as one 1-d
// tensor (torch.masked_select; the mask broadcasts against x). Its kernel is a loop body on the
// engine's in-order walk, compiled once per element width; the batch forms (ragged/selection.hpp)
// call it per element.

#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/view/walk.hpp"
#endif

namespace tbatch {
namespace detail {

/// How many elements of `mask` (a bool view, broadcast dims included) are true.
TBATCH_INLINE index_t count_true(const RawView& mask);
/// Copies the elements of x where `mask` (x's shape) holds, in index order, to out[0, n) and
/// returns n. out must have room for count_true(mask) + 1 elements (the one after the last may
/// be written) and share none with x.
TBATCH_INLINE index_t masked_select_raw(const RawView& x, const RawView& mask, void* out);

#if TBATCH_DEFINITIONS

TBATCH_INLINE index_t count_true(const RawView& mask) {
  const auto plan = plan_runs_in_order<1>(mask.layout.shape, {&mask.layout.strides});
  if (plan.numel == 0) return 0;
  const bool* base = static_cast<const bool*>(mask.base);
  const index_t step = plan.inner_stride(0), length = plan.run_length();
  index_t count = 0;
  walk_runs(plan, {mask.layout.offset}, [&, step, length](const std::array<index_t, 1>& at) {
    const bool* m = base + at[0];
    index_t run = 0;  // a local: the compiler keeps it in a register and vectorises
    if (step == 0) {
      run = m[0] ? length : 0;
    } else if (step == 1) {
      for (index_t j = 0; j < length; ++j)
        run += m[j];
    } else {
      for (index_t j = 0; j < length; ++j)
        run += m[j * step];
    }
    count += run;
  });
  return count;
}

template <class W>
index_t masked_select_words(const RawView& x, const RawView& mask, W* out) {
  const auto plan =
      plan_runs_in_order<2>(x.layout.shape, {&x.layout.strides, &mask.layout.strides});
  if (plan.numel == 0) return 0;
  const W* from = static_cast<const W*>(x.base);
  const bool* keep = static_cast<const bool*>(mask.base);
  const index_t x_step = plan.inner_stride(0), mask_step = plan.inner_stride(1);
  const index_t length = plan.run_length();
  W* next = out;
  walk_runs(plan, {x.layout.offset, mask.layout.offset}, [&](const std::array<index_t, 2>& at) {
    const W* v = from + at[0];
    const bool* m = keep + at[1];
    W* to = next;          // a local: not stored and reloaded around every write
    if (mask_step == 0) {  // a row mask broadcast along the run: the whole run or nothing
      if (!m[0]) return;
      for (index_t j = 0; j < length; ++j)
        to[j] = v[j * x_step];
      next = to + length;
      return;
    }
    // Branch-free (a mask of random bits would mispredict every other entry): each value is
    // written, and kept by moving on only where the mask holds.
    if (x_step == 1 && mask_step == 1) {
      for (index_t j = 0; j < length; ++j) {
        *to = v[j];
        to += m[j];
      }
    } else {
      for (index_t j = 0; j < length; ++j) {
        *to = v[j * x_step];
        to += m[j * mask_step];
      }
    }
    next = to;
  });
  return next - out;
}

TBATCH_INLINE index_t masked_select_raw(const RawView& x, const RawView& mask, void* out) {
  return dispatch_width(x.element_size(), [&]<class W>(std::type_identity<W>) {
    return masked_select_words<W>(x, mask, static_cast<W*>(out));
  });
}

#endif  // TBATCH_DEFINITIONS

/// The selected elements of x (mask of x's shape, broadcast allowed) written to out, which has
/// room for them and one more: returns how many.
template <class T>
index_t run_masked_select(const StridedView<const T>& x, const StridedView<const bool>& mask,
                          T* out) {
#if TBATCH_DEFINITIONS
  return masked_select_words<WordOf<T>>(raw_view(x), raw_view(mask),
                                        reinterpret_cast<WordOf<T>*>(out));
#else
  return masked_select_raw(raw_view(x), raw_view(mask), out);
#endif
}

}  // namespace detail

/// The elements of x where `mask` holds, in x's index order, as a 1-d tensor (torch's
/// masked_select). The mask broadcasts against x (a (L, 1) mask selects whole rows of an
/// (L, D) x, row after row); ShapeError when the two do not broadcast to x's shape.
template <Element T, class M>
Tensor<T> masked_select(const Tensor<T>& x, const Tensor<M>& mask) {
  detail::require_bool_mask<M>();
  const Shape shape = layout::broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const StridedView<const T> values(x.element_pointer(),
                                    layout::broadcast(x.layout(), shape, "masked_select", "x"));
  const StridedView<const bool> keep = detail::broadcast_view(mask, shape, "masked_select", "mask");
  const index_t count = detail::count_true(detail::raw_view(keep));
  Tensor<T> out = Tensor<T>::empty(Shape{count + 1});  // room for the kernel's one extra write
  detail::run_masked_select<T>(values, keep, out.data());
  return out.narrow(0, 0, count);
}

}  // namespace tbatch
