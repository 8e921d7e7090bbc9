#pragma once
// Reductions of Tensor<T>: sum, mean, prod, amax, amin, logsumexp, any and all over every dim
// or a set of dims (keepdim as torch), argmax / argmin along one dim, cumsum. docs/math.md has
// the result types and the empty cases.

#include <cmath>
#include <concepts>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/math/reduction_kernel.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// The dims a reduction folds: one (`sum(x, 1)`) or several (`sum(x, {0, 2})`); negative dims
/// count from the end. An empty list is a ValueError: `sum(x)` reduces every dim.
class Dims {
 public:
  template <std::integral I>
  requires(!std::is_same_v<I, bool>) Dims(I dim) : dims_{static_cast<index_t>(dim)} {}
  Dims(std::initializer_list<index_t> dims) : dims_(dims) {}
  Dims(std::vector<index_t> dims) : dims_(std::move(dims)) {}
  const std::vector<index_t>& values() const { return dims_; }

 private:
  std::vector<index_t> dims_;
};

/// The element type of sum, prod and cumsum of T: T for the floating types, int64 for the
/// integers and bool (torch's).
template <class T>
using SumType = std::conditional_t<FloatingElement<T>, T, std::int64_t>;

namespace detail {

/// The shapes of a reduction of `shape`: `kept` has 1 at the reduced dims (keepdim), `squeezed`
/// drops them; `count` elements fold into each output, `empty_dim` is a reduced dim of size 0
/// (-1 when none).
struct ReducedShape {
  Shape kept, squeezed;
  index_t count = 1;
  index_t empty_dim = -1;
};

/// The reduction of `shape` over `dims` (every dim when null). A 0-d tensor accepts dim 0 and
/// -1, as torch. IndexError for a dim out of range, ValueError for an empty list or a dim
/// given twice.
TBATCH_INLINE ReducedShape reduced_shape(const Shape& shape, const std::vector<index_t>* dims,
                                         const char* function);

/// ShapeError when `r` reduces a dim of size 0 of `shape`: amax, amin, argmax and argmin have no
/// value over nothing.
TBATCH_INLINE void require_extreme(const ReducedShape& r, const Shape& shape, const char* function);

/// x folded by R into a tensor of its accumulator type, of shape r.kept.
template <Reduction R, class T>
Tensor<AccumulatorOf<R, T>> accumulate(const Tensor<T>& x, const ReducedShape& r,
                                       const char* function) {
  using A = AccumulatorOf<R, T>;
  Tensor<A> acc(r.kept, reduction_identity<R, A>());
  run_reduce<R, T>(x.view(), StridedView<A>(acc.element_pointer(),
                                            layout::broadcast(acc.layout(), x.shape(), function,
                                                              "the accumulator")));
  return acc;
}

/// `acc` (of shape r.kept) converted to Out and shaped as the reduction returns it.
template <class Out, class A>
Tensor<Out> reduced_result(Tensor<A> acc, const ReducedShape& r, bool keepdim) {
  Tensor<Out> out;
  if constexpr (std::is_same_v<Out, A>)
    out = std::move(acc);
  else
    out = acc.template cast<Out>();
  return out.with_layout(layout::contiguous(keepdim ? r.kept : r.squeezed));
}

template <Reduction R, class Out, class T>
Tensor<Out> reduce(const Tensor<T>& x, const Dims* dims, bool keepdim, const char* function) {
  if constexpr (R == Reduction::any || R == Reduction::all) require_bool_mask<T>();
  const ReducedShape r = reduced_shape(x.shape(), dims ? &dims->values() : nullptr, function);
  if constexpr (R == Reduction::amax || R == Reduction::amin)
    require_extreme(r, x.shape(), function);
  return reduced_result<Out>(accumulate<R>(x, r, function), r, keepdim);
}

template <class T>
Tensor<T> mean_of(const Tensor<T>& x, const Dims* dims, bool keepdim, const char* function) {
  static_assert(FloatingElement<T>,
                "tbatch: mean needs a floating element type (the mean of integers is not an "
                "integer): cast<float>() first");
  const ReducedShape r = reduced_shape(x.shape(), dims ? &dims->values() : nullptr, function);
  auto acc = accumulate<Reduction::sum>(x, r, function);
  acc /= static_cast<ComputeType<T>>(r.count);  // 0 / 0 is NaN for an empty reduction, as torch
  return reduced_result<T>(std::move(acc), r, keepdim);
}

template <class T>
Tensor<T> logsumexp_of(const Tensor<T>& x, const Dims* dims, bool keepdim, const char* function) {
  static_assert(FloatingElement<T>,
                "tbatch: logsumexp needs a floating element type: cast<float>() first");
  using C = ComputeType<T>;
  const ReducedShape r = reduced_shape(x.shape(), dims ? &dims->values() : nullptr, function);
  // log(sum(exp(x - m))) + m with m the maximum, so that no exp overflows; an infinite or empty
  // maximum shifts by 0 instead (inf stays inf, all -inf gives -inf).
  Tensor<C> shift = accumulate<Reduction::amax>(x, r, "logsumexp");
  for_each([](C& m) { m = std::isinf(m) ? C(0) : m; }, shift);
  Tensor<C> acc(r.kept);
  const Shape& shape = x.shape();
  detail::run_sum_exp<T>(
      x.view(), broadcast_view(shift, shape, "logsumexp", "the maximum"),
      StridedView<C>(acc.element_pointer(),
                     layout::broadcast(acc.layout(), shape, "logsumexp", "the accumulator")));
  for_each([](C& a, const C& m) { a = std::log(a) + m; }, acc, std::as_const(shift));
  return reduced_result<T>(std::move(acc), r, keepdim);
}

template <class T>
Tensor<index_t> arg_reduce(bool largest, const Tensor<T>& x, index_t dim, bool keepdim,
                           const char* function) {
  using C = ComputeType<T>;
  const std::vector<index_t> dims{dim};
  const ReducedShape r = reduced_shape(x.shape(), &dims, function);
  require_extreme(r, x.shape(), function);
  // -1: no best yet (a 0-d tensor's one element is at position 0).
  Tensor<index_t> index(r.kept, index_t(x.dim() == 0 ? 0 : -1));
  if (x.dim() > 0) {
    const index_t d = layout::normalize_dim(dim, x.dim(), function);
    // Each element's position along d: a {size(d)} range seen with stride 0 along other dims.
    const Tensor<index_t> range = Tensor<index_t>::arange(x.size(d));
    Strides strides(x.shape().size(), 0);
    strides[static_cast<std::size_t>(d)] = 1;
    const StridedView<const index_t> position(range.data(), x.shape(), std::move(strides));
    Tensor<C> best(r.kept);
    run_arg_reduce<T>(
        largest, x.view(), position,
        StridedView<C>(best.element_pointer(),
                       layout::broadcast(best.layout(), x.shape(), function, "the best values")),
        StridedView<index_t>(index.element_pointer(), layout::broadcast(index.layout(), x.shape(),
                                                                        function, "the indices")));
  }
  return index.with_layout(layout::contiguous(keepdim ? r.kept : r.squeezed));
}

template <class T>
Tensor<index_t> arg_reduce_all(bool largest, const Tensor<T>& x, const char* function) {
  require_extreme(reduced_shape(x.shape(), nullptr, function), x.shape(), function);
  const Tensor<T> flat = x.contiguous();
  return arg_reduce(largest, flat.with_layout(layout::contiguous(Shape{x.numel()})), 0, false,
                    function);
}

}  // namespace detail

// Each reduction takes every dim (`sum(x)`, a 0-d result) or Dims with keepdim (`sum(x, 1)`,
// `sum(x, {0, 2}, true)`). IndexError for a dim out of range; ValueError for a dim given twice.
#define TBATCH_DETAIL_REDUCTION(name, Concept, Result, ...)                         \
  template <Concept T>                                                              \
  Tensor<Result> name(const Tensor<T>& x) {                                         \
    return __VA_ARGS__(x, nullptr, false, #name);                                   \
  }                                                                                 \
  template <Concept T>                                                              \
  Tensor<Result> name(const Tensor<T>& x, const Dims& dims, bool keepdim = false) { \
    return __VA_ARGS__(x, &dims, keepdim, #name);                                   \
  }

/// Sum of the elements (0 over nothing); integers and bools sum in int64 (wrapping), the
/// 16-bit floats in float.
TBATCH_DETAIL_REDUCTION(sum, Element, SumType<T>,
                        detail::reduce<detail::Reduction::sum, SumType<T>>)
/// Product of the elements (1 over nothing), in the types of sum.
TBATCH_DETAIL_REDUCTION(prod, ArithmeticElement, SumType<T>,
                        detail::reduce<detail::Reduction::prod, SumType<T>>)
/// Largest / smallest element, NaN if any is NaN; ShapeError over a dim of size 0.
TBATCH_DETAIL_REDUCTION(amax, ArithmeticElement, T, detail::reduce<detail::Reduction::amax, T>)
TBATCH_DETAIL_REDUCTION(amin, ArithmeticElement, T, detail::reduce<detail::Reduction::amin, T>)
/// Whether any / every element of a Tensor<bool> is true (false / true over nothing).
TBATCH_DETAIL_REDUCTION(any, Element, bool, detail::reduce<detail::Reduction::any, bool>)
TBATCH_DETAIL_REDUCTION(all, Element, bool, detail::reduce<detail::Reduction::all, bool>)
/// Mean of the elements of a floating tensor (NaN over nothing); cast integers first.
TBATCH_DETAIL_REDUCTION(mean, Element, T, detail::mean_of<T>)
/// log(sum(exp(x))) computed without overflow (the maximum is subtracted first); -inf over
/// nothing. Floating types only.
TBATCH_DETAIL_REDUCTION(logsumexp, Element, T, detail::logsumexp_of<T>)
#undef TBATCH_DETAIL_REDUCTION

/// The position of the largest element along `dim` (the first of equal ones; a NaN counts as
/// the largest), as torch.argmax; ShapeError when dim has size 0. Without a dim: the row-major
/// position in the whole tensor, a 0-d tensor.
template <ArithmeticElement T>
Tensor<index_t> argmax(const Tensor<T>& x, index_t dim, bool keepdim = false) {
  return detail::arg_reduce(true, x, dim, keepdim, "argmax");
}
template <ArithmeticElement T>
Tensor<index_t> argmax(const Tensor<T>& x) {
  return detail::arg_reduce_all(true, x, "argmax");
}
/// argmax for the smallest element (a NaN counts as the smallest).
template <ArithmeticElement T>
Tensor<index_t> argmin(const Tensor<T>& x, index_t dim, bool keepdim = false) {
  return detail::arg_reduce(false, x, dim, keepdim, "argmin");
}
template <ArithmeticElement T>
Tensor<index_t> argmin(const Tensor<T>& x) {
  return detail::arg_reduce_all(false, x, "argmin");
}

/// Running sums along `dim`: out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...], in the
/// types of sum (the 16-bit floats accumulate in float). IndexError for a dim out of range.
template <Element T>
Tensor<SumType<T>> cumsum(const Tensor<T>& x, index_t dim) {
  using A = std::conditional_t<FloatingElement<T>, detail::ComputeType<T>, std::int64_t>;
  const std::vector<index_t> dims{dim};
  (void)detail::reduced_shape(x.shape(), &dims, "cumsum");  // checks dim
  Tensor<A> out = x.template cast<A>();
  if (x.dim() > 0) {
    const index_t d = layout::normalize_dim(dim, x.dim(), "cumsum");
    const index_t n = x.size(d);
    if (n > 1)
      detail::run_cumulate<A>(out.narrow(d, 1, n - 1).view(),
                              std::as_const(out).narrow(d, 0, n - 1).view());
  }
  if constexpr (std::is_same_v<A, SumType<T>>)
    return out;
  else
    return out.template cast<SumType<T>>();
}

#if TBATCH_DEFINITIONS

TBATCH_INLINE detail::ReducedShape detail::reduced_shape(const Shape& shape,
                                                         const std::vector<index_t>* dims,
                                                         const char* function) {
  const auto rank = static_cast<index_t>(shape.size());
  std::vector<bool> reduced(shape.size(), dims == nullptr);
  if (dims != nullptr) {
    if (dims->empty())
      fail<ValueError>(function,
                       {"dims is empty; call ", function, "(x) without dims to reduce every dim"});
    for (index_t dim : *dims) {
      // A 0-d tensor has no dims; torch accepts 0 and -1 for it and reduces nothing.
      const index_t d = layout::normalize_dim(dim, std::max<index_t>(rank, 1), function);
      if (rank == 0) continue;
      if (reduced[static_cast<std::size_t>(d)])
        fail<ValueError>(function,
                         {"dim ", dim, " appears more than once in dims ", listed(*dims)});
      reduced[static_cast<std::size_t>(d)] = true;
    }
  }
  ReducedShape r;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      r.kept.push_back(shape[d]);
      r.squeezed.push_back(shape[d]);
      continue;
    }
    r.kept.push_back(1);
    r.count *= shape[d];
    if (shape[d] == 0 && r.empty_dim < 0) r.empty_dim = static_cast<index_t>(d);
  }
  return r;
}

TBATCH_INLINE void detail::require_extreme(const ReducedShape& r, const Shape& shape,
                                           const char* function) {
  if (r.empty_dim >= 0)
    fail<ShapeError>(function, {"cannot reduce over dim ", r.empty_dim, " of size 0 (shape ", shape,
                                "): an empty set has no extreme value"});
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
