#pragma once
// softmax and log_softmax along one dim, numerically stable (the maximum is subtracted first).
// Along a dim of stride 1 each row is one loop body of the engine: the row is read once for
// its maximum and once for exp and the sum while it sits in cache, then scaled in place.
// Along other dims the maximum and the sum are reductions (math/reductions.hpp) whose runs
// cross the rows, so that every pass streams through memory.

#include <array>
#include <cmath>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/math/reduction_kernel.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/walk.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>

#include "tbatch/view/for_each.hpp"
#endif

namespace tbatch {
namespace detail {

/// The library's entry point (compiled mode): softmax (log_softmax when `log`) of x along `dim`
/// into `out`, of x's shape and dtype and sharing no element with x.
TBATCH_INLINE void softmax_raw(bool log, const RawView& x, const RawView& out, index_t dim);

/// The library's entry point (compiled mode) of the blocks' softmax (float and double): each
/// block of x (operand 1), rows(k) rows of `width` contiguous values, gets its softmax along the
/// rows into the block of out (operand 0), which shares no element with x; with pad_to, out's
/// padded slots get 0 after their rows (walk_blocks).
TBATCH_INLINE void softmax_blocks_raw(bool log, DType dtype, const void* x, void* out,
                                      const RowBlocks<2>& blocks);

#if TBATCH_DEFINITIONS

/// The (log-)softmax along the n rows of a block of m contiguous columns, the rows `in_row` and
/// `out_row` apart, with `maximum` and `sum` as room for m values: each pass runs along a row
/// with Eigen's vectorised functions, so a column softmax costs what a row softmax does. Columns
/// is Eigen::Dynamic, or m as a constant: rows of one, two or four vector registers take
/// fixed-size arrays, whose loops Eigen unrolls (padded softmax along 1e5 elements of 1-8 x 16
/// floats took 0.58x the time, docs/benchmarks.md).
template <class C, int Columns>
void softmax_block(bool log, const C* in, index_t in_row, C* out, index_t out_row, index_t n,
                   index_t m, Eigen::Array<C, Columns, 1>& maximum,
                   Eigen::Array<C, Columns, 1>& sum) {
  using Array = Eigen::Array<C, Columns, 1>;
  if (n == 0 || m == 0) return;
  auto x = [&](index_t r) { return Eigen::Map<const Array>(in + r * in_row, m); };
  auto y = [&](index_t r) { return Eigen::Map<Array>(out + r * out_row, m); };
  maximum = x(0);
  for (index_t r = 1; r < n; ++r)
    maximum = maximum.max(x(r));
  sum.setZero(m);
  if (log) {  // (x - m) - log(s), as softmax_row
    for (index_t r = 0; r < n; ++r)
      sum += (x(r) - maximum).exp();
    sum = sum.log();
    for (index_t r = 0; r < n; ++r)
      y(r) = (x(r) - maximum) - sum;
  } else {
    for (index_t r = 0; r < n; ++r) {
      y(r) = (x(r) - maximum).exp();
      sum += y(r);
    }
    sum = sum.inverse();
    for (index_t r = 0; r < n; ++r)
      y(r) *= sum;
  }
}

template <class C, int Columns>
void softmax_blocks_of(bool log, const C* x, C* out, const RowBlocks<2>& blocks) {
  Eigen::Array<C, Columns, 1> maximum(blocks.width), sum(blocks.width);
  walk_blocks_prefetching(
      blocks,
      [&](const std::array<index_t, 2>& at, index_t rows) {
        C* slot = out + at[0];
        softmax_block<C, Columns>(log, x + at[1], blocks.row[1], slot, blocks.row[0], rows,
                                  blocks.width, maximum, sum);
        blocks.fill_padding(slot, rows);
      },
      prefetch_inputs(blocks, x));
}

template <class C>
void softmax_blocks(bool log, const C* x, C* out, const RowBlocks<2>& blocks) {
  constexpr index_t simd = vector_register_bytes / index_t(sizeof(C));
  with_constant_width<simd, 1, 2, 4>(
      blocks.width, [&]<index_t width>(std::integral_constant<index_t, width>) {
        softmax_blocks_of<C, width == 0 ? Eigen::Dynamic : int(width)>(log, x, out, blocks);
      });
}

/// The (log-)softmax of the n values at `in` into `out` (the same array, or one apart).
template <class C>
void softmax_row(bool log, const C* in, C* out, index_t n) {
  using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
  const Eigen::Map<const Array> x(in, n);
  Eigen::Map<Array> y(out, n);
  const C m = x.maxCoeff();
  if (log) {  // (x - m) - log(s): adding m to log(s) first would round it at m's magnitude
    y = x - m;
    y -= std::log(y.exp().sum());
  } else {
    y = (x - m).exp();
    y *= C(1) / y.sum();
  }
}

/// softmax along `dim` for rows of stride 1 in x: the engine walks x and out with `dim`
/// collapsed to size 1 and hands the kernel each row's first element.
template <class T>
void softmax_rows(bool log, const StridedView<const T>& x, const StridedView<T>& out,
                  std::size_t dim) {
  using C = ComputeType<T>;
  const index_t n = x.shape()[dim], out_stride = out.strides()[dim];
  Layout x_rows = x.layout(), out_rows = out.layout();
  x_rows.shape.set(dim, 1);
  out_rows.shape.set(dim, 1);
  Eigen::Array<C, Eigen::Dynamic, 1> buffer;  // for rows computed apart from their output
  for_each_run(
      "softmax",
      [&](index_t rows, const std::array<index_t, 2>& stride, T* o, const T* in) {
        for (index_t r = 0; r < rows; ++r) {
          const T* source = in + r * stride[1];
          T* target = o + r * stride[0];
          if constexpr (std::is_same_v<T, C>) {
            if (out_stride == 1) {
              softmax_row(log, source, target, n);
              continue;
            }
          }
          buffer.resize(n);
          for (index_t i = 0; i < n; ++i)
            buffer[i] = static_cast<C>(source[i]);
          softmax_row(log, buffer.data(), buffer.data(), n);
          for (index_t i = 0; i < n; ++i)
            target[i * out_stride] = static_cast<T>(buffer[i]);
        }
      },
      StridedView<T>(out.element_pointer(), std::move(out_rows)),
      StridedView<const T>(x.element_pointer(), std::move(x_rows)));
}

/// softmax along a strided `dim`: the maximum, exp and the sum as passes over all of x.
template <class T>
void softmax_strided(bool log, const StridedView<const T>& x, const StridedView<T>& out,
                     std::size_t dim) {
  using C = ComputeType<T>;
  Shape kept = x.shape();
  kept.set(dim, 1);
  auto at_x = [&](Tensor<C>& t) {
    return StridedView<C>(t.element_pointer(),
                          layout::broadcast(t.layout(), x.shape(), "softmax", "a row value"));
  };
  Tensor<C> maximum(kept, reduction_identity<Reduction::amax, C>());
  reduce_views<Reduction::amax, T>(x, at_x(maximum));
  Tensor<C> sum(kept);
  sum_exp_views<T>(x, StridedView<const C>(at_x(maximum)), at_x(sum));
  // softmax = exp(x - m) / s; log_softmax = (x - m) - log(s)
  if (log) for_each([](C& s) { s = std::log(s); }, sum);
  for_each_run(
      "softmax",
      [log](index_t n, const std::array<index_t, 4>& stride, T* o, const T* in, const C* m,
            const C* s) {
        for (index_t i = 0; i < n; ++i) {
          const C v = static_cast<C>(in[i * stride[1]]);
          const C shifted = v - m[i * stride[2]];
          o[i * stride[0]] = static_cast<T>(log ? shifted - s[i * stride[3]]
                                                : std::exp(shifted) / s[i * stride[3]]);
        }
      },
      out, x, StridedView<const C>(at_x(maximum)), StridedView<const C>(at_x(sum)));
}

/// softmax along `dim` where the last dim is another, of stride 1 in x and out: the engine walks
/// x and out with both collapsed to size 1 and each (dim x last) block is one softmax_block.
template <class C>
void softmax_columns(bool log, const StridedView<const C>& x, const StridedView<C>& out,
                     std::size_t dim) {
  const std::size_t last = x.shape().size() - 1;
  const index_t n = x.shape()[dim], m = x.shape()[last];
  const index_t x_row = x.strides()[dim], out_row = out.strides()[dim];
  Layout x_blocks = x.layout(), out_blocks = out.layout();
  for (std::size_t d : {dim, last}) {
    x_blocks.shape.set(d, 1);
    out_blocks.shape.set(d, 1);
  }
  Eigen::Array<C, Eigen::Dynamic, 1> maximum(m), sum(m);
  for_each_run(
      "softmax",
      [&](index_t blocks, const std::array<index_t, 2>& stride, C* o, const C* in) {
        for (index_t k = 0; k < blocks; ++k)
          softmax_block(log, in + k * stride[1], x_row, o + k * stride[0], out_row, n, m, maximum,
                        sum);
      },
      StridedView<C>(out.element_pointer(), std::move(out_blocks)),
      StridedView<const C>(x.element_pointer(), std::move(x_blocks)));
}

template <class T>
void softmax_views(bool log, const StridedView<const T>& x, const StridedView<T>& out,
                   index_t dim) {
  const auto d = static_cast<std::size_t>(dim);
  if (x.shape().numel() == 0) return;
  const std::size_t last = x.shape().size() - 1;
  if (x.strides()[d] == 1 || x.shape()[d] == 1) {
    softmax_rows<T>(log, x, out, d);
    return;
  }
  if constexpr (std::is_same_v<T, ComputeType<T>>) {
    if (d != last && x.shape()[last] > 1 && x.strides()[last] == 1 && out.strides()[last] == 1) {
      softmax_columns<T>(log, x, out, d);
      return;
    }
  }
  softmax_strided<T>(log, x, out, d);
}

#endif  // TBATCH_DEFINITIONS

/// The kernel of softmax (log_softmax when `log`) of x along dim `dim` (normalised) into `out`
/// (x's shape, sharing no element with x): instantiated here in header-only mode, the library's
/// otherwise.
template <class T>
void run_softmax(bool log, const StridedView<const T>& x, const StridedView<T>& out, index_t dim) {
#if TBATCH_DEFINITIONS
  softmax_views<T>(log, x, out, dim);
#else
  softmax_raw(log, raw_view(x), raw_view(out), dim);
#endif
}

/// softmax_blocks of x's and out's blocks (float or double): instantiated here in header-only
/// mode, the library's otherwise.
template <class T>
void run_softmax_blocks(bool log, const T* x, T* out, const RowBlocks<2>& blocks) {
#if TBATCH_DEFINITIONS
  softmax_blocks<T>(log, x, out, blocks);
#else
  softmax_blocks_raw(log, dtype_of<T>, x, out, blocks);
#endif
}

template <class T>
Tensor<T> softmax_of(bool log, const Tensor<T>& x, index_t dim, const char* function) {
  static_assert(FloatingElement<T>,
                "tbatch: softmax and log_softmax need a floating element "
                "type: cast<float>() first");
  Tensor<T> out = Tensor<T>::empty(x.shape());
  if (x.dim() == 0) {  // torch: one element, softmax 1 and log_softmax 0 (NaN stays NaN)
    layout::normalize_dim(dim, 1, function);
    const auto v = static_cast<ComputeType<T>>(x.item());
    *out.data() = static_cast<T>(log ? v - v : (v - v) + 1);
    return out;
  }
  run_softmax<T>(log, x.view(), out.view(), layout::normalize_dim(dim, x.dim(), function));
  return out;
}

}  // namespace detail

/// exp(x) / sum(exp(x)) along `dim`, computed as exp(x - max) / sum(exp(x - max)) so that no
/// exp overflows; the 16-bit floats are computed in float. A row holding NaN or +inf gives NaN
/// (as torch). IndexError for a dim out of range.
template <Element T>
Tensor<T> softmax(const Tensor<T>& x, index_t dim) {
  return detail::softmax_of(false, x, dim, "softmax");
}
/// log(softmax(x, dim)), computed as x - max - log(sum(exp(x - max))): finite where softmax
/// would underflow to 0.
template <Element T>
Tensor<T> log_softmax(const Tensor<T>& x, index_t dim) {
  return detail::softmax_of(true, x, dim, "log_softmax");
}

}  // namespace tbatch

#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void softmax_raw(bool log, const RawView& x, const RawView& out, index_t dim) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (FloatingElement<T>)
      softmax_views<T>(log, typed_view<const T>(x), typed_view<T>(out), dim);
    else
      fail<TypeError>("softmax", {"needs a floating dtype, got ", dtype_name_of<T>});
  });
}

TBATCH_INLINE void softmax_blocks_raw(bool log, DType dtype, const void* x, void* out,
                                      const RowBlocks<2>& blocks) {
  dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      softmax_blocks<T>(log, static_cast<const T*>(x), static_cast<T*>(out), blocks);
    else
      fail<TypeError>("softmax", {"blocks of float or double, got ", dtype_name_of<T>});
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
