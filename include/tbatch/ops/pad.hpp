#pragma once
// pad: constant, reflect, replicate, circular and symmetric padding of dense tensors and of
// every batch layout. Pads are listed as in torch.nn.functional.pad and PyPTO (last dim
// first) or as per-dim {before, after} pairs (first dim first, as TF and ONNX); negative pads
// crop.
//
// One kernel serves every mode, through the view engine: the interior is one strided copy,
// then each dim's two border slabs are written, innermost dim first. Constant mode fills
// them; the other modes copy them from data already written: a reversed slice (reflect,
// symmetric), a size-1 slice expanded (replicate) or a slice of the opposite end (circular).
// When the last dim is padded and dense, the interior and the borders of the last two dims are
// written in one pass instead, plane by plane and row by row in address order, border values
// read from the source.
//
// The modes and the plan are in pad_plan.hpp, the kernel in pad_kernel.hpp, the batch forms in
// pad_batch.hpp; this header is the entry point and holds the dense forms.

#include <array>
#include <concepts>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/ops/pad_batch.hpp"
#include "tbatch/ops/pad_plan.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <cstring>
#include <memory>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/ops/pad_kernel.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/streaming.hpp"
#endif

namespace tbatch {
namespace detail {

// The kernels behind the dense forms, compiled once per element width: `value` points at the
// bits of one element (pad only moves bytes).

/// Pads `src` into `dst`, allocated for it (shape padded_shape(src, pads, mode)).
TBATCH_INLINE void pad_raw(const RawView& src, const RawView& dst, const std::vector<DimPad>& pads,
                           PadMode mode, const void* value);
/// pad_into after its value check: the pads, the shape of `out`, its distinct elements, then
/// the pad (through a copy of `x` when it shares elements with `out`).
TBATCH_INLINE void pad_into_raw(const RawView& x, const std::vector<index_t>& pad,
                                const RawView& out, PadMode mode, const void* value);

#if TBATCH_DEFINITIONS
// Their bodies for the word W of the element width. Header-only mode calls them directly, so a
// file compiles only the widths it pads; the library's pad_raw / pad_into_raw dispatch to them.

template <class W>
void pad_words(const RawView& src, const RawView& dst, const std::vector<DimPad>& pads,
               PadMode mode, const void* value) {
  W fill;
  std::memcpy(&fill, value, sizeof(W));
  pad_views<W>(typed_view<const W>(src), typed_view<W>(dst), pads, mode, fill,
               stores_for(dst.layout.shape.numel() * index_t(sizeof(W))));
}

template <class W>
void pad_into_words(const RawView& x, const std::vector<index_t>& pad, const RawView& out,
                    PadMode mode, const void* value) {
  const std::vector<DimPad> pads = pads_from_flat(pad, x.layout.dim(), "pad_into", tensor_subject);
  const Shape expected = padded_shape(x.layout.shape, pads, mode, "pad_into");
  if (!(out.layout.shape == expected))
    fail<ShapeError>("pad_into",
                     {"out has shape ", out.layout.shape, " but x of shape ", x.layout.shape,
                      " padded by ", listed(pad), " has shape ", expected});
  const StridedView<W> to = typed_view<W>(out);
  check_distinct_elements(to, "pad_into");
  StridedView<const W> from = typed_view<const W>(x);
  std::shared_ptr<Storage> staging;  // a copy of x when it shares elements with out
  if (may_share_elements(from, to)) {
    staging = Storage::allocate(from.numel(), index_t(sizeof(W)));
    const StridedView<W> copy(static_cast<W*>(staging->data()), from.shape());
    copy_planned<W, W>(from, copy);
    from = copy;
  }
  W fill;
  std::memcpy(&fill, value, sizeof(W));
  pad_views<W>(from, to, pads, mode, fill, stores_for_output(to));
}
#endif  // TBATCH_DEFINITIONS

/// The dense pad after the argument checks that depend on T: allocates the result and pads
/// into it.
template <class T>
Tensor<T> pad_tensor(const Tensor<T>& x, const std::vector<DimPad>& pads, PadMode mode, T value) {
  Tensor<T> out = Tensor<T>::empty(padded_shape(x.shape(), pads, mode, "pad"));
#if TBATCH_DEFINITIONS
  pad_words<WordOf<T>>(raw_view(x.view()), raw_view(out.view()), pads, mode, &value);
#else
  pad_raw(raw_view(x.view()), raw_view(out.view()), pads, mode, &value);
#endif
  return out;
}

}  // namespace detail

/// `x` padded by `pad`, listed from the last dim backwards as in torch.nn.functional.pad and
/// PyPTO: (before_last, after_last, before_prev, after_prev, ...), even length, at most
/// 2 * rank values; dims not listed are not padded. Negative values crop. In constant mode the
/// border is `value`; the other modes take no value. Limits: reflect needs pads < size,
/// symmetric and circular pads <= size, replicate a non-empty dim. Any strided `x`; the result
/// is a new contiguous tensor of shape x.shape() with dim d grown by its before + after.
/// Errors: ValueError for an odd-length list, a pad over a mode's limit, a non-zero `value` in
/// a non-constant mode, or a `mode` that is not a PadMode; ShapeError for more pairs than dims,
/// a crop below size 0, or a size that overflows.
template <class T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<index_t>& pad, PadMode mode = PadMode::constant,
              std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_tensor(x, detail::pads_from_flat(pad, x.dim(), "pad", detail::tensor_subject),
                            mode, value);
}

/// `x` padded by one {before, after} pair per dim, first dim first (the TF / ONNX order); no
/// pairs pads nothing. ShapeError unless there are exactly rank pairs or none; otherwise the
/// same semantics and errors as the flat form.
template <class T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<std::array<index_t, 2>>& pairs,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_tensor(
      x, detail::pads_from_pairs(pairs, x.dim(), "pad", detail::tensor_subject), mode, value);
}
template <class T>
Tensor<T> pad(const Tensor<T>& x, std::initializer_list<std::array<index_t, 2>> pairs,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  return pad(x, std::vector<std::array<index_t, 2>>(pairs), mode, value);
}

/// The shape pad(x, pad, mode) has for an `x` of `shape`, checked as pad checks it, with the
/// same errors (use it to size the output of pad_into).
inline Shape pad_shape(const Shape& shape, const std::vector<index_t>& pad,
                       PadMode mode = PadMode::constant) {
  detail::check_pad_mode(mode, "pad_shape");
  return detail::padded_shape(shape,
                              detail::pads_from_flat(pad, static_cast<index_t>(shape.size()),
                                                     "pad_shape", detail::tensor_subject),
                              mode, "pad_shape");
}

/// pad into a caller-owned view `out` of shape pad_shape(x.shape(), pad, mode) (ShapeError
/// otherwise), for example a slot of a larger tensor or memory the caller owns. `out` must not
/// map two elements to one address (ValueError). Allocates nothing, except a copy of `x` when it
/// shares elements with `out` and a temporary when a crop removes data a non-constant border
/// mirrors. Other errors as pad.
template <class S, class T>
requires std::same_as<std::remove_const_t<S>, T>
void pad_into(StridedView<S> x, const std::vector<index_t>& pad, StridedView<T> out,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad_into");
  detail::check_pad_value(mode, value, "pad_into");
#if TBATCH_DEFINITIONS
  detail::pad_into_words<detail::WordOf<T>>(detail::raw_view(x), pad, detail::raw_view(out), mode,
                                            &value);
#else
  detail::pad_into_raw(detail::raw_view(x), pad, detail::raw_view(out), mode, &value);
#endif
}

}  // namespace tbatch

// The library's entry points (compiled mode), one function for every width.
#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void pad_raw(const RawView& src, const RawView& dst, const std::vector<DimPad>& pads,
                           PadMode mode, const void* value) {
  dispatch_width(dst.element_size(), [&]<class W>(std::type_identity<W>) {
    pad_words<W>(src, dst, pads, mode, value);
  });
}

TBATCH_INLINE void pad_into_raw(const RawView& x, const std::vector<index_t>& pad,
                                const RawView& out, PadMode mode, const void* value) {
  dispatch_width(out.element_size(), [&]<class W>(std::type_identity<W>) {
    pad_into_words<W>(x, pad, out, mode, value);
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
