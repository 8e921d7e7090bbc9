#pragma once
// Factories as free functions, torch's names: zeros, ones, full, arange, and the *_like forms.

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

/// A contiguous tensor of `shape` filled with 0, 1 or `value`.
template <Element T>
Tensor<T> zeros(Shape shape) {
  return Tensor<T>::zeros(std::move(shape));
}
template <Element T>
Tensor<T> ones(Shape shape) {
  return Tensor<T>::full(std::move(shape), T(1));
}
template <Element T>
Tensor<T> full(Shape shape, ScalarOf<T> value) {
  return Tensor<T>::full(std::move(shape), detail::cast_element<T>(value));
}

/// A contiguous tensor of x's shape and element type: uninitialised, 0, 1 or `value`.
template <Element T>
Tensor<T> empty_like(const Tensor<T>& x) {
  return Tensor<T>::empty(x.shape());
}
template <Element T>
Tensor<T> zeros_like(const Tensor<T>& x) {
  return Tensor<T>::zeros(x.shape());
}
template <Element T>
Tensor<T> ones_like(const Tensor<T>& x) {
  return Tensor<T>::full(x.shape(), T(1));
}
template <Element T>
Tensor<T> full_like(const Tensor<T>& x, ScalarOf<T> value) {
  return Tensor<T>::full(x.shape(), detail::cast_element<T>(value));
}

/// start, start + step, ... up to but excluding `end`, as torch.arange: ceil((end - start) /
/// step) values, each start + i * step computed in double (in int64 for integers) and converted
/// to T. ValueError for a step of 0, a step whose sign points away from `end`, or a bound that
/// is not finite.
template <ArithmeticElement T>
Tensor<T> arange(ScalarOf<T> start, ScalarOf<T> end, ScalarOf<T> step = ScalarOf<T>(1)) {
  using C = ScalarOf<T>;
  const char* function = "arange";
  if constexpr (FloatingElement<T>)
    if (!std::isfinite(double(start)) || !std::isfinite(double(end)) ||
        !std::isfinite(double(step)))
      detail::fail<ValueError>(
          function, {"start ", start, ", end ", end, " and step ", step, " must be finite"});
  if (step == C(0)) detail::fail<ValueError>(function, {"step must not be 0"});
  if ((step > C(0) && end < start) || (step < C(0) && start < end))
    detail::fail<ValueError>(function, {"step ", detail::widen(step), " goes away from end ",
                                        detail::widen(end), " (start ", detail::widen(start), ")"});
  Tensor<T> out;
  if constexpr (FloatingElement<T>) {
    const double count = std::ceil((double(end) - double(start)) / double(step));
    if (!(count < 9.2e18))
      detail::fail<ShapeError>(function, {"the range from ", start, " to ", end, " by ", step,
                                          " has too many elements"});
    out = Tensor<T>::empty(Shape{static_cast<index_t>(count)});
    for (index_t i = 0; i < out.numel(); ++i)
      out.data()[i] = static_cast<T>(double(start) + double(i) * double(step));
  } else {
    // In uint64, where the distance between two values of T and the steps towards end never
    // overflow; each value start + i * step is in T's range.
    const bool up = step > C(0);
    const auto distance =
        up ? std::uint64_t(end) - std::uint64_t(start) : std::uint64_t(start) - std::uint64_t(end);
    const auto stride = up ? std::uint64_t(step) : std::uint64_t(0) - std::uint64_t(step);
    out = Tensor<T>::empty(
        Shape{static_cast<index_t>(distance / stride + (distance % stride != 0 ? 1 : 0))});
    for (index_t i = 0; i < out.numel(); ++i)
      out.data()[i] = static_cast<T>(std::uint64_t(start) + std::uint64_t(i) * std::uint64_t(step));
  }
  return out;
}
/// 0, 1, ..., up to but excluding `end`.
template <ArithmeticElement T>
Tensor<T> arange(ScalarOf<T> end) {
  return arange<T>(ScalarOf<T>(0), end, ScalarOf<T>(1));
}

}  // namespace tbatch
