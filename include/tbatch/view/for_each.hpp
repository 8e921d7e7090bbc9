#pragma once
// for_each over same-shaped strided views and tensors, and for_each_run, the walk that hands a
// kernel each innermost run. Templates on the caller's function, apart from the engine
// (view/engine.hpp), so that Tensor<T>'s header reaches them without the copy kernels.

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

template <class V, class... Vs>
void check_same_shapes(const char* function, const V& first, const Vs&... rest) {
  [[maybe_unused]] auto check = [&](const auto& view) {
    if (!(view.shape() == first.shape()))
      fail<ShapeError>(function,
                       {"operand shape ", view.shape(), " does not match shape ", first.shape()});
  };
  (check(rest), ...);
}

/// Plans a walk over `views` (same shapes required) and calls
/// fn(run_length, inner_strides, run_start_pointers...) per innermost run.
template <class Fn, class... Ts>
void for_each_run(const char* function, Fn&& fn, const StridedView<Ts>&... views) {
  constexpr std::size_t N = sizeof...(Ts);
  check_same_shapes(function, views...);
  const auto& shape = std::get<0>(std::forward_as_tuple(views...)).shape();
  const RunPlan<N> plan = plan_runs<N>(shape, {&views.strides()...});
  if (plan.numel == 0) return;
  std::array<index_t, N> inner;
  for (std::size_t k = 0; k < N; ++k)
    inner[k] = plan.inner_stride(k);
  const index_t length = plan.run_length();
  walk_runs(plan, std::array<index_t, N>{}, [&](const std::array<index_t, N>& offsets) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      fn(length, inner, (views.data() + offsets[I])...);
    }
    (std::make_index_sequence<N>{});
  });
}

}  // namespace detail

/// Calls fn(a, b, ...) on corresponding elements of same-shaped views (ShapeError otherwise).
/// Elements are passed by reference, so fn may write through non-const views. Tensors are
/// taken as their views: writable unless const (see the overload below).
template <class Fn, class... Ts>
void for_each(Fn&& fn, StridedView<Ts>... views) {
  constexpr std::size_t N = sizeof...(Ts);
  detail::for_each_run(
      "for_each",
      [&](index_t n, const std::array<index_t, N>& stride, Ts*... run) {
        const bool dense =
            std::all_of(stride.begin(), stride.end(), [](index_t s) { return s == 1; });
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          if (dense) {
            for (index_t i = 0; i < n; ++i)
              fn(run[i]...);
          } else {
            for (index_t i = 0; i < n; ++i)
              fn(run[i * stride[I]]...);
          }
        }
        (std::make_index_sequence<N>{});
      },
      views...);
}

namespace detail {
template <class V>
inline constexpr bool is_strided_view_v = false;
template <class T>
inline constexpr bool is_strided_view_v<StridedView<T>> = true;

/// An operand of for_each: a StridedView, or a tensor (anything whose view() is one).
template <class V>
concept ForEachOperand = is_strided_view_v<std::remove_cvref_t<V>> || requires(V& v) {
  requires is_strided_view_v<decltype(v.view())>;
};

template <class V>
auto operand_view(V& operand) {
  if constexpr (is_strided_view_v<std::remove_cvref_t<V>>)
    return operand;
  else
    return operand.view();
}
}  // namespace detail

/// for_each over tensors and views: a Tensor<T> is taken as its StridedView<T>, a const one as
/// its StridedView<const T>. Tensor copies share their buffer, so a copy is written in place:
/// `Tensor<T> d = batch.data(); for_each(fn, d);` writes a batch's data.
template <class Fn, class... Vs>
requires((detail::ForEachOperand<Vs> && ...) &&
         !(detail::is_strided_view_v<std::remove_cvref_t<Vs>> &&
           ...)) void for_each(Fn&& fn, Vs&&... operands) {
  for_each(std::forward<Fn>(fn), detail::operand_view(operands)...);
}

}  // namespace tbatch
