#pragma once
// The elementwise kernels: loop bodies on the engine (view/for_each.hpp's for_each_run) that
// apply an operation of elementwise_ops.hpp to same-shaped views, broadcast inputs being views
// with stride 0. Header-only mode instantiates the kernel of one operation and element type
// where it is called; compiled mode calls the library's entry points (binary_raw, unary_raw,
// where_raw), which dispatch on the dtype and the operation.

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/math/map_views.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/streaming_stores.hpp"
#endif

namespace tbatch::detail {

/// The library's entry points (compiled mode): the same kernels, on views whose element types
/// are erased. Operands are broadcast to the output's shape; `out` is written.
TBATCH_INLINE void binary_raw(BinaryOp op, const RawView& a, const RawView& b, const RawView& out);
/// `params` points at a UnaryParams of the element type.
TBATCH_INLINE void unary_raw(UnaryOp op, const RawView& x, const RawView& out, const void* params);
TBATCH_INLINE void where_raw(const RawView& condition, const RawView& a, const RawView& b,
                             const RawView& out);
/// out = a op b over blocks (operands out, a, b): `out` of the result type of op on `dtype`.
TBATCH_INLINE void binary_blocks_raw(BinaryOp op, DType dtype, const RowBlocks<3>& blocks,
                                     void* out, const void* a, const void* b);
/// out = op(x) over blocks (operands out, x, both col 1); `params` as unary_raw's.
TBATCH_INLINE void unary_blocks_raw(UnaryOp op, DType dtype, const RowBlocks<2>& blocks, void* out,
                                    const void* x, const void* params);

#if TBATCH_DEFINITIONS

template <BinaryOp Op, class T>
void binary_views(const StridedView<const T>& a, const StridedView<const T>& b,
                  const StridedView<BinaryResult<Op, T>>& out) {
  // Streaming stores pay when two inputs as large as the output are read (a + b); with a
  // broadcast operand one input stream is read, and writing through the cache was faster
  // (docs/benchmarks.md, "Stores").
  const bool streamed =
      !layout::repeats_elements(a.layout()) && !layout::repeats_elements(b.layout());
  map_views_with(
      "elementwise", streamed, [](T x, T y) { return apply_binary<Op, T>(x, y); }, nullptr, out, a,
      b);
}

/// True when Eigen's vectorised array function computes Op on T (float and double).
template <UnaryOp Op, class T>
constexpr bool has_eigen_form() {
  return (std::is_same_v<T, float> || std::is_same_v<T, double>)&&is_transcendental(Op);
}

/// Op on count dense elements with Eigen's array functions (SIMD; sqrt correctly rounded, the
/// others within a few ulp of the standard library's, as torch's vectorised functions are).
template <UnaryOp Op, class T>
void eigen_unary(T* out, const T* in, index_t count) {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  const Eigen::Map<const Array> x(in, count);
  Eigen::Map<Array> y(out, count);
  // Eigen's float sqrt is an rsqrt estimate off by an ulp; in double it is exact, and rounding
  // that to float is correctly rounded (53 >= 2 * 24 + 2 bits), as IEEE's sqrt is.
  if constexpr (Op == UnaryOp::sqrt) y = x.template cast<double>().sqrt().template cast<T>();
  if constexpr (Op == UnaryOp::rsqrt)
    y = (1.0 / x.template cast<double>().sqrt()).template cast<T>();
  if constexpr (Op == UnaryOp::exp) y = x.exp();
  if constexpr (Op == UnaryOp::expm1) y = x.expm1();
  if constexpr (Op == UnaryOp::log) y = x.log();
  if constexpr (Op == UnaryOp::log1p) y = x.log1p();
  if constexpr (Op == UnaryOp::sin) y = x.sin();
  if constexpr (Op == UnaryOp::cos) y = x.cos();
  if constexpr (Op == UnaryOp::tanh) y = x.tanh();
  if constexpr (Op == UnaryOp::sigmoid) y = x.logistic();
}

template <UnaryOp Op, class T>
void unary_views(const StridedView<const T>& x, const StridedView<T>& out,
                 const UnaryParams<T>& params) {
  const auto fn = [params](T v) { return apply_unary<Op, T>(v, params); };
  if constexpr (has_eigen_form<Op, T>()) {
    map_views_with(
        "elementwise", false, fn,
        [](T* o, index_t n, Stores stores, const T* in) {
          write_run(o, n, stores, [&](T* dst, index_t begin, index_t count) {
            eigen_unary<Op, T>(dst, in + begin, count);
          });
        },
        out, x);
  } else {
    map_views("elementwise", fn, out, x);
  }
}

template <class T>
void where_views(const StridedView<const bool>& condition, const StridedView<const T>& a,
                 const StridedView<const T>& b, const StridedView<T>& out) {
  map_views(
      "where", [](bool c, T x, T y) { return select(c, x, y); }, out, condition, a, b);
}

template <BinaryOp Op, class T>
void binary_blocks(const RowBlocks<3>& blocks, BinaryResult<Op, T>* out, const T* a, const T* b) {
  map_blocks([](T x, T y) { return apply_binary<Op, T>(x, y); }, blocks, out, a, b);
}

/// op(x) over blocks whose values are dense (col 1): a block whose rows follow each other in
/// both operands is one run, computed with Eigen's functions where unary_views uses them.
template <UnaryOp Op, class T>
void unary_blocks(const RowBlocks<2>& blocks, T* out, const T* x, const UnaryParams<T>& params) {
  const bool joined = blocks.blocks_are_runs();
  write_blocks(
      [&](const std::array<index_t, 2>& at, index_t rows) {
        const index_t runs = joined ? 1 : rows,
                      length = joined ? rows * blocks.width : blocks.width;
        for (index_t r = 0; r < runs && length > 0; ++r) {
          T* o = out + at[0] + r * blocks.row[0];
          const T* in = x + at[1] + r * blocks.row[1];
          if constexpr (has_eigen_form<Op, T>())
            eigen_unary<Op, T>(o, in, length);
          else
            dense_run(
                o, length, Stores::cached, std::array<index_t, 2>{1, 1},
                [&params](T v) { return apply_unary<Op, T>(v, params); }, std::tuple<const T*>(in));
        }
      },
      blocks, out, x);
}

#endif  // TBATCH_DEFINITIONS

/// The blocks' kernel of op(x) on T.
template <UnaryOp Op, class T>
void run_unary_blocks(const RowBlocks<2>& blocks, T* out, const T* x,
                      const UnaryParams<T>& params) {
#if TBATCH_DEFINITIONS
  unary_blocks<Op, T>(blocks, out, x, params);
#else
  unary_blocks_raw(Op, dtype_of<T>, blocks, out, x, &params);
#endif
}

/// The blocks' kernel of Op on T (out col 1, inputs col 0 or 1).
template <BinaryOp Op, class T>
void run_binary_blocks(const RowBlocks<3>& blocks, BinaryResult<Op, T>* out, const T* a,
                       const T* b) {
#if TBATCH_DEFINITIONS
  binary_blocks<Op, T>(blocks, out, a, b);
#else
  binary_blocks_raw(Op, dtype_of<T>, blocks, out, a, b);
#endif
}

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
  if (!found) fail<ValueError>(function, {"operation code ", value, " is not one tbatch defines"});
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
            fail<TypeError>("elementwise",
                            {"operation ", int(Op), " is not defined on ", dtype_name_of<T>});
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
            fail<TypeError>("elementwise",
                            {"operation ", int(Op), " is not defined on ", dtype_name_of<T>});
        },
        "elementwise");
  });
}

TBATCH_INLINE void binary_blocks_raw(BinaryOp op, DType dtype, const RowBlocks<3>& blocks,
                                     void* out, const void* a, const void* b) {
  dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<BinaryOp, int(BinaryOp::logical_or) + 1>(
        op,
        [&]<BinaryOp Op>(std::integral_constant<BinaryOp, Op>) {
          if constexpr (binary_accepts<Op, T>())
            binary_blocks<Op, T>(blocks, static_cast<BinaryResult<Op, T>*>(out),
                                 static_cast<const T*>(a), static_cast<const T*>(b));
          else
            fail<TypeError>("elementwise",
                            {"operation ", int(Op), " is not defined on ", dtype_name_of<T>});
        },
        "elementwise");
  });
}

TBATCH_INLINE void unary_blocks_raw(UnaryOp op, DType dtype, const RowBlocks<2>& blocks, void* out,
                                    const void* x, const void* params) {
  dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<UnaryOp, int(UnaryOp::clamp) + 1>(
        op,
        [&]<UnaryOp Op>(std::integral_constant<UnaryOp, Op>) {
          if constexpr (unary_accepts<Op, T>())
            unary_blocks<Op, T>(blocks, static_cast<T*>(out), static_cast<const T*>(x),
                                *static_cast<const UnaryParams<T>*>(params));
          else
            fail<TypeError>("elementwise",
                            {"operation ", int(Op), " is not defined on ", dtype_name_of<T>});
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
