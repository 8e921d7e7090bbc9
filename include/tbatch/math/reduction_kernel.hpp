#pragma once
// The reduction kernels: loop bodies on the engine (view/for_each.hpp's for_each_run) that fold
// a tensor into an accumulator viewed at the tensor's shape with stride 0 along the reduced
// dims. A run along reduced dims (accumulator stride 0) is folded in independent lanes, which
// vectorise; a run along kept dims adds a row into the accumulator row, which vectorises too.
// Header-only mode instantiates the kernel where it is called; compiled mode calls the
// library's entry points (reduce_raw, sum_exp_raw, arg_reduce_raw, cumulate_raw).

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>
#include <cmath>

#include "tbatch/base/errors.hpp"
#include "tbatch/view/for_each.hpp"
#endif
#ifdef TBATCH_BUILDING_LIBRARY
#include "tbatch/math/elementwise_kernel.hpp"  // dispatch_enum
#endif

namespace tbatch::detail {

enum class Reduction : int { sum, prod, amax, amin, any, all };

/// The type a reduction of T accumulates in: bool for any / all; T for amax / amin (float for
/// the 16-bit floats); for sums and products double for float and double (a float accumulator
/// loses the small sums of values that cancel), float for the 16-bit floats and int64 for
/// integers and bools (torch's result type).
template <Reduction R, class T>
using AccumulatorOf = std::conditional_t<
    R == Reduction::any || R == Reduction::all, bool,
    std::conditional_t<
        R == Reduction::amax || R == Reduction::amin, ComputeType<T>,
        std::conditional_t<std::is_floating_point_v<T>, double,
                           std::conditional_t<FloatingElement<T>, float, std::int64_t>>>>;

/// The type a reduction of T returns: its accumulator's for any / all (bool) and for integer
/// sums and products (int64), T otherwise (a mean is a sum divided, in T).
template <Reduction R, class T>
using ReducedOf =
    std::conditional_t<R == Reduction::any || R == Reduction::all ||
                           ((R == Reduction::sum || R == Reduction::prod) && !FloatingElement<T>),
                       AccumulatorOf<R, T>, T>;

/// True when reduction R is defined on T: any / all on bool, sum on every type (a bool sum
/// counts), the others on the arithmetic types.
template <Reduction R, class T>
constexpr bool reduction_accepts() {
  if constexpr (R == Reduction::any || R == Reduction::all)
    return std::is_same_v<T, bool>;
  else if constexpr (R == Reduction::sum)
    return Element<T>;
  else
    return ArithmeticElement<T>;
}

/// The value an accumulator of R starts from (the result of reducing nothing).
template <Reduction R, class A>
A reduction_identity() {
  if constexpr (R == Reduction::sum) return A(0);
  if constexpr (R == Reduction::prod) return A(1);
  if constexpr (R == Reduction::any) return false;
  if constexpr (R == Reduction::all) return true;
  if constexpr (R == Reduction::amax)
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  if constexpr (R == Reduction::amin)
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::max();
}

/// acc combined with v: integer sums and products wrap; amax / amin propagate NaN.
template <Reduction R, class A>
A combine(A acc, A v) {
  if constexpr (R == Reduction::any) return acc || v;
  if constexpr (R == Reduction::all) return acc && v;
  if constexpr (R == Reduction::sum || R == Reduction::prod) {
    if constexpr (std::is_integral_v<A>) {
      const auto x = static_cast<std::uint64_t>(acc), y = static_cast<std::uint64_t>(v);
      return static_cast<A>(R == Reduction::sum ? x + y : x * y);
    } else {
      return R == Reduction::sum ? acc + v : acc * v;
    }
  }
  if constexpr (R == Reduction::amax) return is_nan(acc) || !(acc < v || is_nan(v)) ? acc : v;
  if constexpr (R == Reduction::amin) return is_nan(acc) || !(v < acc || is_nan(v)) ? acc : v;
}

/// The library's entry points (compiled mode). `acc` (the accumulator type of `op` on x's
/// dtype) is x's shape with stride 0 along the reduced dims and already holds the identity.
TBATCH_INLINE void reduce_raw(Reduction op, const RawView& x, const RawView& acc);
/// acc += exp(x - shift), the second pass of logsumexp; shift and acc have acc's dtype.
TBATCH_INLINE void sum_exp_raw(const RawView& x, const RawView& shift, const RawView& acc);
/// The first position of the largest (or smallest) element of x along the reduced dim into
/// `index` (int64, -1 to start), with its value in `best`; `position` gives each element's
/// position along that dim. NaN counts as larger and smaller than everything, as in torch.
TBATCH_INLINE void arg_reduce_raw(bool largest, const RawView& x, const RawView& position,
                                  const RawView& best, const RawView& index);
/// out += previous elementwise, in the walk's order: `previous` is `out` one step back along the
/// scanned dim, so each step adds the sum written just before (cumsum's scan).
TBATCH_INLINE void cumulate_raw(const RawView& out, const RawView& previous);
/// Block k's rows (operand 1, of `dtype`) folded by `op` into the row at operand 0's start, of
/// the type op returns on dtype (ReducedOf; divided by the block's row count when `mean`):
/// written, not read, and the rows of empty blocks are left as they were.
TBATCH_INLINE void reduce_blocks_raw(Reduction op, DType dtype, bool mean,
                                     const RowBlocks<2>& blocks, void* out, const void* x);

#if TBATCH_DEFINITIONS

/// R over n contiguous elements from `in`, in independent lanes (the compiler vectorises
/// them) combined pairwise at the end of each block. Sums whose accumulator is float (the
/// 16-bit floats) add each block of 512 elements into a double.
template <Reduction R, class A, class T>
A fold_dense(const T* in, index_t n) {
  using Lane = A;
  using Total = std::conditional_t<
      std::is_same_v<Lane, float> && (R == Reduction::sum || R == Reduction::prod), double, A>;
  constexpr index_t lanes = std::max<index_t>(8, 128 / index_t(sizeof(Lane)));
  constexpr index_t block = 16 * lanes;
  Total total = reduction_identity<R, Total>();
  for (index_t begin = 0; begin < n; begin += block) {
    const index_t end = std::min(n, begin + block);
    Lane lane[static_cast<std::size_t>(lanes)];
    for (Lane& l : lane)
      l = reduction_identity<R, Lane>();
    index_t i = begin;
    for (; i + lanes <= end; i += lanes)
      for (index_t j = 0; j < lanes; ++j)
        lane[j] = combine<R>(lane[j], static_cast<Lane>(in[i + j]));
    for (index_t j = 0; i < end; ++i, ++j)
      lane[j] = combine<R>(lane[j], static_cast<Lane>(in[i]));
    for (index_t width = lanes / 2; width > 0; width /= 2)
      for (index_t j = 0; j < width; ++j)
        lane[j] = combine<R>(lane[j], lane[j + width]);
    total = combine<R>(total, static_cast<Total>(lane[0]));
  }
  return static_cast<A>(total);
}

/// `rows` rows (row apart) folded column by column in registers, from `prior[0, columns)` (the
/// identity when null), and each column's result given to emit(c, value) once (no
/// store-to-load chain through memory from row to row).
template <Reduction R, class T, class A, index_t Chunk, bool Whole, class Emit>
void fold_columns(const Emit& emit, const A* prior, const T* in, index_t row, index_t rows,
                  index_t columns) {
  A lane[std::size_t(Chunk)];
  for (index_t c = 0; c < Chunk; ++c)
    lane[c] = prior == nullptr || !(Whole || c < columns) ? reduction_identity<R, A>() : prior[c];
  for (index_t r = 0; r < rows; ++r)
    for (index_t c = 0; c < Chunk; ++c)
      if (Whole || c < columns) lane[c] = combine<R>(lane[c], static_cast<A>(in[r * row + c]));
  for (index_t c = 0; c < (Whole ? Chunk : columns); ++c)
    emit(c, lane[c]);
}

/// Columns [from, width) of one tile of `rows` rows folded `chunk` columns at a time in
/// registers, from prior[from, width) (the identity when null), each result given to
/// emit(column, value). Columns left after the whole chunks go to the next narrower chunk, down
/// to two SIMD registers' worth, whose last chunk is partial.
template <Reduction R, class T, class A, index_t chunk, class Emit>
void fold_tile(const Emit& emit, const A* prior, const T* in, index_t row, index_t rows,
               index_t width, index_t from = 0) {
  constexpr index_t simd = 64 / index_t(sizeof(A));
  const index_t whole = width - (width - from) % chunk;
  for (index_t c = from; c < whole; c += chunk)
    fold_columns<R, T, A, chunk, true>([&](index_t j, A v) { emit(c + j, v); },
                                       prior == nullptr ? nullptr : prior + c, in + c, row, rows,
                                       chunk);
  if (whole == width) return;
  if constexpr (chunk > 2 * simd)
    fold_tile<R, T, A, chunk / 2>(emit, prior, in, row, rows, width, whole);
  else
    fold_columns<R, T, A, chunk, false>([&](index_t j, A v) { emit(whole + j, v); },
                                        prior == nullptr ? nullptr : prior + whole, in + whole, row,
                                        rows, width - whole);
}

/// fold_tile in the widest chunk that suits rows of `width` A: up to fold_register_bytes of
/// accumulators (8 registers: each row is loaded once per tile instead of once per two-register
/// chunk), or one register's worth for rows narrower than two (16 floats: amax 7.6 -> 2 ms on
/// 1e5 elements of 1-8 rows).
template <Reduction R, class T, class A, class Emit>
void fold_tile_in_registers(const Emit& emit, const A* prior, const T* in, index_t row,
                            index_t rows, index_t width) {
  constexpr index_t simd = 64 / index_t(sizeof(A));
  constexpr index_t widest = fold_register_bytes / index_t(sizeof(A));
  if constexpr (widest >= 8 * simd)
    if (width >= 8 * simd) return fold_tile<R, T, A, 8 * simd>(emit, prior, in, row, rows, width);
  if constexpr (widest >= 4 * simd)
    if (width >= 4 * simd) return fold_tile<R, T, A, 4 * simd>(emit, prior, in, row, rows, width);
  if (width >= 2 * simd) return fold_tile<R, T, A, 2 * simd>(emit, prior, in, row, rows, width);
  fold_tile<R, T, A, simd>(emit, prior, in, row, rows, width);
}

/// `rows` rows of `width` values (`row` apart) folded into out[0, width): from the identity when
/// `start`, else on top of what out holds. Tiles of `tile` rows are folded chunk by chunk in
/// registers while their rows stay in L1, so out is read and written once per tile.
template <Reduction R, class T, class A, index_t tile = 32>
void fold_rows(A* out, const T* in, index_t row, index_t rows, index_t width, bool start) {
  for (index_t r0 = 0; r0 < rows; r0 += tile)
    fold_tile_in_registers<R, T, A>([out](index_t c, A v) { out[c] = v; },
                                    start && r0 == 0 ? nullptr : out, in + r0 * row, row,
                                    std::min(tile, rows - r0), width);
}

/// Folds x into acc (x's shape, stride 0 along the reduced dims) along the engine's rows of runs:
/// a run along reduced dims is folded in lanes; dense rows that all fold into one dense
/// accumulator run are folded by fold_rows, so the accumulator is read and written once per
/// tile of rows.
template <Reduction R, class T>
void reduce_views(const StridedView<const T>& x, const StridedView<AccumulatorOf<R, T>>& acc) {
  using A = AccumulatorOf<R, T>;
  check_same_shapes("reduce", acc, x);
  const RunPlan<2> plan = plan_runs<2>(x.shape(), {&acc.strides(), &x.strides()});
  const index_t n = plan.numel == 0 ? 0 : plan.run_length();
  const index_t a_in = plan.numel == 0 ? 0 : plan.inner_stride(0);
  const index_t x_in = plan.numel == 0 ? 0 : plan.inner_stride(1);
  const index_t a_row = plan.row_stride(0), x_row = plan.row_stride(1);
  auto in = [](const T& v) { return static_cast<A>(v); };
  walk_rows(plan, {0, 0}, [&](const std::array<index_t, 2>& at, index_t rows) {
    A* a = acc.data() + at[0];
    const T* p = x.data() + at[1];
    if (a_in == 0) {  // runs of reduced elements
      for (index_t r = 0; r < rows; ++r) {
        const T* run = p + r * x_row;
        A folded = reduction_identity<R, A>();
        if (x_in == 1)
          folded = fold_dense<R, A>(run, n);
        else
          for (index_t i = 0; i < n; ++i)
            folded = combine<R>(folded, in(run[i * x_in]));
        a[r * a_row] = combine<R>(a[r * a_row], folded);
      }
      return;
    }
    if (a_in == 1 && x_in == 1 && a_row == 0) {  // dense rows into one dense accumulator row
      // Tiles of 8 rows: a wide row (4096 floats) is past L1, so a taller tile only adds
      // streams (4096 x 4096: 2.3 ms with 8 rows, 4.1 ms with 32).
      fold_rows<R, T, AccumulatorOf<R, T>, 8>(a, p, x_row, rows, n, false);
      return;
    }
    for (index_t r = 0; r < rows; ++r)
      for (index_t i = 0; i < n; ++i) {
        A& target = a[r * a_row + i * a_in];
        target = combine<R>(target, in(p[r * x_row + i * x_in]));
      }
  });
}

template <class T>
void sum_exp_views(const StridedView<const T>& x, const StridedView<const ComputeType<T>>& shift,
                   const StridedView<ComputeType<T>>& acc) {
  using C = ComputeType<T>;
  for_each_run(
      "logsumexp",
      [](index_t n, const std::array<index_t, 3>& stride, C* a, const T* in, const C* s) {
        if constexpr (std::is_same_v<T, C>) {
          if (stride[0] == 0 && stride[1] == 1 && stride[2] == 0) {
            using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
            *a += (Eigen::Map<const Array>(in, n) - *s).exp().sum();
            return;
          }
        }
        for (index_t i = 0; i < n; ++i)
          a[i * stride[0]] += std::exp(static_cast<C>(in[i * stride[1]]) - s[i * stride[2]]);
      },
      acc, x, shift);
}

template <class T>
void arg_reduce_views(bool largest, const StridedView<const T>& x,
                      const StridedView<const index_t>& position,
                      const StridedView<ComputeType<T>>& best, const StridedView<index_t>& index) {
  using C = ComputeType<T>;
  // True when v at position p replaces the best so far (b at position i, none when i < 0): NaN
  // beats every number, and of equal values the first position wins.
  auto better = [largest](C v, index_t p, C b, index_t i) {
    if (i < 0) return true;
    if (is_nan(b)) return is_nan(v) && p < i;
    if (is_nan(v)) return true;
    if (v == b) return p < i;
    return largest ? b < v : v < b;
  };
  for_each_run(
      largest ? "argmax" : "argmin",
      [&](index_t n, const std::array<index_t, 4>& stride, C* b, index_t* i, const T* in,
          const index_t* p) {
        for (index_t k = 0; k < n; ++k) {
          C& bk = b[k * stride[0]];
          index_t& ik = i[k * stride[1]];
          const C v = static_cast<C>(in[k * stride[2]]);
          const index_t pk = p[k * stride[3]];
          if (better(v, pk, bk, ik)) {
            bk = v;
            ik = pk;
          }
        }
      },
      best, index, x, position);
}

template <class A>
void cumulate_views(const StridedView<A>& out, const StridedView<const A>& previous) {
  for_each_run(
      "cumsum",
      [](index_t n, const std::array<index_t, 2>& stride, A* o, const A* p) {
        for (index_t i = 0; i < n; ++i)
          o[i * stride[0]] = combine<Reduction::sum>(o[i * stride[0]], p[i * stride[1]]);
      },
      out, previous);
}

/// fold_rows of an element taller than a tile, kept out of reduce_blocks' flattened loop: inlined
/// there, it made amax over 1,024 elements of up to 512 rows slower.
template <Reduction R, class T, class A, index_t tile>
[[gnu::noinline]] void fold_tall_element(A* acc, const T* in, index_t row, index_t rows,
                                         index_t width) {
  fold_rows<R, T, A, tile>(acc, in, row, rows, width, true);
}

/// reduce_blocks for rows of blocks.width values blocks.row[1] apart or, when `dense` is not 0,
/// of `dense` values that follow each other; a mean when `Mean`. Flattened: the walk, the fold of
/// each short block and its emit become one loop with fewer instructions per element, so more
/// elements' loads are in flight (docs/benchmarks.md). Mean is a constant: with a divide that
/// might or might not run, GCC took a fold's registers apart into scalars and put them back
/// together for every element.
template <Reduction R, class T, index_t dense, bool Mean>
[[gnu::flatten]] void reduce_blocks_of(const RowBlocks<2>& blocks, ReducedOf<R, T>* out,
                                       const T* x) {
  using A = AccumulatorOf<R, T>;
  using Out = ReducedOf<R, T>;
  constexpr index_t tile = 32;
  const index_t width = dense == 0 ? blocks.width : dense;
  const index_t row = dense == 0 ? blocks.row[1] : dense;
  std::unique_ptr<A[]> taller;  // the accumulator row of an element of more than `tile` rows
  const auto fold = [&](const std::array<index_t, 2>& at, index_t rows) {
    Out* to = out + at[0];
    const T* in = x + at[1];
    // results[0, n) of the element into columns [c, c + n): divided by the row count for mean,
    // converted in one loop, which vectorises where n is more than one.
    const auto store = [&](index_t c, const A* results, index_t n) {
      for (index_t j = 0; j < n; ++j)
        if constexpr (Mean)
          to[c + j] = static_cast<Out>(results[j] / static_cast<A>(rows));
        else
          to[c + j] = static_cast<Out>(results[j]);
    };
    if (rows <= tile) {
      if constexpr (dense == 0) {
        fold_tile_in_registers<R, T, A>([&](index_t c, A v) { store(c, &v, 1); }, nullptr, in, row,
                                        rows, width);
      } else {
        // Stored all at once: a column at a time, each result left its register on its own. A
        // mean's count is blocks.width (== dense) read at run time: with the constant, GCC
        // divided the values one by one (16 scalar divides per element of 16 floats).
        A folded[std::size_t(dense)];
        fold_columns<R, T, A, dense, true>([&](index_t c, A v) { folded[c] = v; }, nullptr, in,
                                           dense, rows, dense);
        store(0, folded, Mean ? blocks.width : dense);
      }
      return;
    }
    if (!taller) taller = std::make_unique<A[]>(static_cast<std::size_t>(width));
    fold_tall_element<R, T, A, tile>(taller.get(), in, row, rows, width);
    store(0, taller.get(), width);
  };
  walk_blocks_prefetching(blocks, fold, prefetch_inputs(blocks, x));
}

/// Dense rows of one or two SIMD registers of accumulators (16 floats summed in doubles, say)
/// get a fold whose width and row stride are constants: with the row stride a variable, GCC's
/// code for the same fold took 2.5x as long on 1e5 padded elements of 1-8 x 16 floats.
template <Reduction R, class T, bool Mean>
void reduce_shaped_blocks(const RowBlocks<2>& blocks, ReducedOf<R, T>* out, const T* x) {
  constexpr index_t simd = 64 / index_t(sizeof(AccumulatorOf<R, T>));
  with_constant_width<simd, 1, 2>(blocks.row[1] == blocks.width ? blocks.width : 0,
                                  [&]<index_t dense>(std::integral_constant<index_t, dense>) {
                                    reduce_blocks_of<R, T, dense, Mean>(blocks, out, x);
                                  });
}
/// `mean` (a sum divided by each block's row count) applies to floating results only.
template <Reduction R, class T>
void reduce_blocks(const RowBlocks<2>& blocks, ReducedOf<R, T>* out, const T* x, bool mean) {
  if constexpr (R == Reduction::sum && FloatingElement<ReducedOf<R, T>>)
    if (mean) return reduce_shaped_blocks<R, T, true>(blocks, out, x);
  reduce_shaped_blocks<R, T, false>(blocks, out, x);
}

#endif  // TBATCH_DEFINITIONS

/// The blocks' fold of R on T (x's values at stride 1 along the rows).
template <Reduction R, class T>
void run_reduce_blocks(const RowBlocks<2>& blocks, ReducedOf<R, T>* out, const T* x, bool mean) {
#if TBATCH_DEFINITIONS
  reduce_blocks<R, T>(blocks, out, x, mean);
#else
  reduce_blocks_raw(R, dtype_of<T>, mean, blocks, out, x);
#endif
}

/// The kernels of one element type: instantiated here in header-only mode, the library's
/// otherwise.
template <Reduction R, class T>
void run_reduce(const StridedView<const T>& x, const StridedView<AccumulatorOf<R, T>>& acc) {
#if TBATCH_DEFINITIONS
  reduce_views<R, T>(x, acc);
#else
  reduce_raw(R, raw_view(x), raw_view(acc));
#endif
}
template <class T>
void run_sum_exp(const StridedView<const T>& x, const StridedView<const ComputeType<T>>& shift,
                 const StridedView<ComputeType<T>>& acc) {
#if TBATCH_DEFINITIONS
  sum_exp_views<T>(x, shift, acc);
#else
  sum_exp_raw(raw_view(x), raw_view(shift), raw_view(acc));
#endif
}
template <class T>
void run_arg_reduce(bool largest, const StridedView<const T>& x,
                    const StridedView<const index_t>& position,
                    const StridedView<ComputeType<T>>& best, const StridedView<index_t>& index) {
#if TBATCH_DEFINITIONS
  arg_reduce_views<T>(largest, x, position, best, index);
#else
  arg_reduce_raw(largest, raw_view(x), raw_view(position), raw_view(best), raw_view(index));
#endif
}
template <class A>
void run_cumulate(const StridedView<A>& out, const StridedView<const A>& previous) {
#if TBATCH_DEFINITIONS
  cumulate_views<A>(out, previous);
#else
  cumulate_raw(raw_view(out), raw_view(previous));
#endif
}

}  // namespace tbatch::detail

#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void reduce_blocks_raw(Reduction op, DType dtype, bool mean,
                                     const RowBlocks<2>& blocks, void* out, const void* x) {
  dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<Reduction, int(Reduction::all) + 1>(
        op,
        [&]<Reduction R>(std::integral_constant<Reduction, R>) {
          if constexpr (reduction_accepts<R, T>())
            reduce_blocks<R, T>(blocks, static_cast<ReducedOf<R, T>*>(out),
                                static_cast<const T*>(x), mean);
          else
            fail<TypeError>("reduce",
                            {"reduction ", int(R), " is not defined on ", dtype_name_of<T>});
        },
        "reduce");
  });
}

TBATCH_INLINE void reduce_raw(Reduction op, const RawView& x, const RawView& acc) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    dispatch_enum<Reduction, int(Reduction::all) + 1>(
        op,
        [&]<Reduction R>(std::integral_constant<Reduction, R>) {
          if constexpr (reduction_accepts<R, T>())
            reduce_views<R, T>(typed_view<const T>(x), typed_view<AccumulatorOf<R, T>>(acc));
          else
            fail<TypeError>("reduce",
                            {"reduction ", int(R), " is not defined on ", dtype_name_of<T>});
        },
        "reduce");
  });
}

TBATCH_INLINE void sum_exp_raw(const RawView& x, const RawView& shift, const RawView& acc) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (FloatingElement<T>)
      sum_exp_views<T>(typed_view<const T>(x), typed_view<const ComputeType<T>>(shift),
                       typed_view<ComputeType<T>>(acc));
    else
      fail<TypeError>("logsumexp", {"needs a floating dtype, got ", dtype_name_of<T>});
  });
}

TBATCH_INLINE void arg_reduce_raw(bool largest, const RawView& x, const RawView& position,
                                  const RawView& best, const RawView& index) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    arg_reduce_views<T>(largest, typed_view<const T>(x), typed_view<const index_t>(position),
                        typed_view<ComputeType<T>>(best), typed_view<index_t>(index));
  });
}

TBATCH_INLINE void cumulate_raw(const RawView& out, const RawView& previous) {
  dispatch_dtype(out.dtype, [&]<class A>(std::type_identity<A>) {
    if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double> ||
                  std::is_same_v<A, std::int64_t>)
      cumulate_views<A>(typed_view<A>(out), typed_view<const A>(previous));
    else
      fail<TypeError>("cumsum", {"accumulates in float, double or int64, got ", dtype_name_of<A>});
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
