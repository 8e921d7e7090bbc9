#pragma once
// The elementwise kernels: loop bodies on the engine (view/for_each.hpp's for_each_run) that
// apply an operation of elementwise_ops.hpp to same-shaped views, broadcast inputs being views
// with stride 0. Header-only mode instantiates the kernel of one operation and element type
// where it is called; compiled mode calls the library's entry points (binary_raw, unary_raw,
// where_raw), which dispatch on the dtype and the operation.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/strided_view.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/errors.hpp"
#include "tbatch/view/for_each.hpp"
#endif

namespace tbatch::detail {

/// The library's entry points (compiled mode): the same kernels, on views whose element types
/// are erased. Operands are broadcast to the output's shape; `out` is written.
TBATCH_INLINE void binary_raw(BinaryOp op, const RawView& a, const RawView& b, const RawView& out);
/// `params` points at a UnaryParams of the element type.
TBATCH_INLINE void unary_raw(UnaryOp op, const RawView& x, const RawView& out, const void* params);
TBATCH_INLINE void where_raw(const RawView& condition, const RawView& a, const RawView& b,
                             const RawView& out);

#if TBATCH_DEFINITIONS

/// One input of a dense run: its elements (stride 1) or one broadcast value (stride 0), fixed at
/// compile time so that the loop over the run vectorises. The broadcast value is read once,
/// before the loop: the output may alias it.
template <bool Dense, class T>
struct RunInput;
template <class T>
struct RunInput<true, T> {
  const T* p;
  T operator[](index_t i) const { return p[i]; }
};
template <class T>
struct RunInput<false, T> {
  T value;
  T operator[](index_t) const { return value; }
};

/// out[i] = fn(inputs[i]...) over a run whose output is dense and whose inputs are dense or
/// broadcast (`stride` holds the output's and then each input's stride, 0 or 1): picks the
/// compile-time form of each input, one at a time.
template <class Out, class Fn, class Inputs, std::size_t N, class... Ready>
void dense_run(Out* out, index_t n, const std::array<index_t, N>& stride, const Fn& fn,
               const Inputs& inputs, const Ready&... ready) {
  constexpr std::size_t k = sizeof...(Ready);
  if constexpr (k == std::tuple_size_v<Inputs>) {
    for (index_t i = 0; i < n; ++i)
      out[i] = fn(ready[i]...);
  } else {
    const auto* p = std::get<k>(inputs);
    using E = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    if (stride[k + 1] == 0)
      dense_run(out, n, stride, fn, inputs, ready..., RunInput<false, E>{*p});
    else
      dense_run(out, n, stride, fn, inputs, ready..., RunInput<true, E>{p});
  }
}

/// out = fn(inputs...) elementwise: the views share out's shape (broadcast inputs have stride
/// 0). The engine plans the walk with the output first; each run is a loop body here.
template <class Out, class Fn, class... In>
void map_views(const char* function, const Fn& fn, const StridedView<Out>& out,
               const StridedView<const In>&... inputs) {
  constexpr std::size_t N = 1 + sizeof...(In);
  for_each_run(
      function,
      [&](index_t n, const std::array<index_t, N>& stride, Out* o, const In*... in) {
        bool dense = stride[0] == 1;
        for (std::size_t k = 1; k < N; ++k)
          dense = dense && (stride[k] == 0 || stride[k] == 1);
        if (dense) {
          dense_run(o, n, stride, fn, std::tuple<const In*...>(in...));
          return;
        }
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          for (index_t i = 0; i < n; ++i)
            o[i * stride[0]] = fn(in[i * stride[I + 1]]...);
        }
        (std::make_index_sequence<N - 1>{});
      },
      out, inputs...);
}

template <BinaryOp Op, class T>
void binary_views(const StridedView<const T>& a, const StridedView<const T>& b,
                  const StridedView<BinaryResult<Op, T>>& out) {
  map_views(
      "elementwise", [](T x, T y) { return apply_binary<Op, T>(x, y); }, out, a, b);
}

template <UnaryOp Op, class T>
void unary_views(const StridedView<const T>& x, const StridedView<T>& out,
                 const UnaryParams<T>& params) {
  map_views(
      "elementwise", [params](T v) { return apply_unary<Op, T>(v, params); }, out, x);
}

template <class T>
void where_views(const StridedView<const bool>& condition, const StridedView<const T>& a,
                 const StridedView<const T>& b, const StridedView<T>& out) {
  map_views(
      "where", [](bool c, T x, T y) { return c ? x : y; }, out, condition, a, b);
}

#endif  // TBATCH_DEFINITIONS

/// The kernel of Op on T: instantiated here in header-only mode, the library's otherwise.
template <BinaryOp Op, class T>
void run_binary(const StridedView<const T>& a, const StridedView<const T>& b,
                const StridedView<BinaryResult<Op, T>>& out) {
#if TBATCH_DEFINITIONS
  binary_views<Op, T>(a, b, out);
#else
  binary_raw(Op, raw_view(a), raw_view(b), raw_view(out));
#endif
}
template <UnaryOp Op, class T>
void run_unary(const StridedView<const T>& x, const StridedView<T>& out,
               const UnaryParams<T>& params) {
#if TBATCH_DEFINITIONS
  unary_views<Op, T>(x, out, params);
#else
  unary_raw(Op, raw_view(x), raw_view(out), &params);
#endif
}
template <class T>
void run_where(const StridedView<const bool>& condition, const StridedView<const T>& a,
               const StridedView<const T>& b, const StridedView<T>& out) {
#if TBATCH_DEFINITIONS
  where_views<T>(condition, a, b, out);
#else
  where_raw(raw_view(condition), raw_view(a), raw_view(b), raw_view(out));
#endif
}

}  // namespace tbatch::detail

#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

/// Calls fn(std::integral_constant<E, e>{}) for the enumerator e == `op` of the `count` first.
template <class E, int Count, class Fn>
void dispatch_enum(E op, Fn&& fn, const char* function) {
  const int value = static_cast<int>(op);
  const bool found = [&]<int... I>(std::integer_sequence<int, I...>) {
    return ((value == I ? (fn(std::integral_constant<E, E(I)>{}), true) : false) || ...);
  }
  (std::make_integer_sequence<int, Count>{});
  if (!found) fail<ValueError>(function, "operation code ", value, " is not one tbatch defines");
}

TBATCH_INLINE void binary_raw(BinaryOp op, const RawView& a, const RawView& b, const RawView& out) {
  dispatch_dtype(a.dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<BinaryOp, int(BinaryOp::logical_or) + 1>(
        op,
        [&]<BinaryOp Op>(std::integral_constant<BinaryOp, Op>) {
          if constexpr (binary_accepts<Op, T>())
            binary_views<Op, T>(typed_view<const T>(a), typed_view<const T>(b),
                                typed_view<BinaryResult<Op, T>>(out));
          else
            fail<TypeError>("elementwise", "operation ", int(Op), " is not defined on ",
                            dtype_name_of<T>);
        },
        "elementwise");
  });
}

TBATCH_INLINE void unary_raw(UnaryOp op, const RawView& x, const RawView& out, const void* params) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<UnaryOp, int(UnaryOp::clamp) + 1>(
        op,
        [&]<UnaryOp Op>(std::integral_constant<UnaryOp, Op>) {
          if constexpr (unary_accepts<Op, T>())
            unary_views<Op, T>(typed_view<const T>(x), typed_view<T>(out),
                               *static_cast<const UnaryParams<T>*>(params));
          else
            fail<TypeError>("elementwise", "operation ", int(Op), " is not defined on ",
                            dtype_name_of<T>);
        },
        "elementwise");
  });
}

TBATCH_INLINE void where_raw(const RawView& condition, const RawView& a, const RawView& b,
                             const RawView& out) {
  dispatch_dtype(a.dtype, [&]<class T>(std::type_identity<T>) {
    where_views<T>(typed_view<const bool>(condition), typed_view<const T>(a),
                   typed_view<const T>(b), typed_view<T>(out));
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
