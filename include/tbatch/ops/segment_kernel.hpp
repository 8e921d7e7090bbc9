#pragma once
// The segment reductions' kernels (see segment.hpp), typed by dtype, and their type-erased entry
// points (defined where the library is built). Included by segment.hpp in header-only mode and
// in the library, not in a compiled-mode user file.
//
// segment_reduce is a loop body on the engine: walk_rows walks the dims after the first (one row
// of the values against one row of the output) and the body, for each segment, combines that
// segment's rows into its output row, a chunk of the run at a time, rows in order.
// segment_argmax / segment_argmin are the same walk with a body that keeps, per chunk of the run,
// each position's best value and its row.

#include <algorithm>
#include <array>
#include <type_traits>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/reduce_combiners.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/ops/segment_checks.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/walk.hpp"

#ifdef TBATCH_BUILDING_LIBRARY
#include "tbatch/tensor/any_tensor.hpp"
#endif

namespace tbatch::detail {

/// The plan of a row of the output (operand 0) against a row of the values (operand 1): their
/// dims after the first. The output is contiguous, so index order is its memory order and its
/// runs are dense.
template <class T, class U>
RunPlan<2> plan_segment_rows(const Tensor<T>& out, const Tensor<U>& values) {
  const Shape rest(values.shape().begin() + 1, values.shape().end());
  const LayoutStrides out_rest(out.strides().begin() + 1, out.strides().end());
  const LayoutStrides values_rest(values.strides().begin() + 1, values.strides().end());
  return plan_runs_in_order<2>(rest, {&out_rest, &values_rest});
}

/// Calls visit(e, count, out, in, rows) for each segment e and each 2-D block of `plan`: count
/// is the segment's row count, out its output's first run of the block, in the segment's first
/// row's first run; run r of the block is plan.row_stride(k) further. `visit` is called by value:
/// capture by value too.
template <class T, class U, class Visit>
void walk_segments(const RunPlan<2>& plan, const index_t* offsets, index_t segments, T* out,
                   index_t scale, const U* values, index_t row_stride, Visit visit) {
  // Everything by value, and the body copied per block: local copies stay in registers across
  // the body's stores, which may alias anything reached through a reference.
  walk_rows(plan, {0, 0}, [=](const std::array<index_t, 2>& at, index_t rows) {
    auto body = visit;
    const index_t* first = offsets;
    T* const out_at = out + at[0];
    const U* const in_at = values + at[1];
    for (index_t e = 0; e < segments; ++e)
      body(e, first[e + 1] - first[e], out_at + e * scale, in_at + first[e] * row_stride, rows);
  });
}

/// Combines `count` rows (row r at in + r * in_row) of n elements `inner` apart into one dense
/// output row of n, in row order: as combine_dense_rows, for runs that are not dense.
template <class Op, class T>
void combine_strided_rows(const Op& op, T* out, const T* in, index_t inner, index_t in_row,
                          index_t count, index_t n) {
  constexpr index_t w = chunk_width<T>;
  index_t i = 0;
  for (; i + w <= n; i += w) {
    T acc[static_cast<std::size_t>(w)];
    std::copy_n(out + i, w, acc);
    for (index_t r = 0; r < count; ++r)
      for (index_t j = 0; j < w; ++j)
        op.apply(acc[j], in[r * in_row + (i + j) * inner]);
    std::copy_n(acc, w, out + i);
  }
  for (; i < n; ++i) {
    T acc = out[i];
    for (index_t r = 0; r < count; ++r)
      op.apply(acc, in[r * in_row + i * inner]);
    out[i] = acc;
  }
}

/// Writes to out[0..n) the row (row0 + r) of the first best of `count` rows by
/// better(candidate, best): row r at in + r * in_row, its elements `inner` apart (Inner when it
/// is known at compile time, else 0). Each chunk of the row keeps its best values and rows in local
/// arrays across the rows, updated by selects (no data-dependent branches).
template <index_t Inner, class T, class Better>
[[gnu::always_inline]] inline void arg_of_rows(const Better& better, index_t* out, const T* in,
                                               index_t inner, index_t in_row, index_t count,
                                               index_t n, index_t row0) {
  constexpr index_t w = chunk_width<T>;
  const index_t step = Inner > 0 ? Inner : inner;
  index_t c = 0;
  for (; c + w <= n; c += w) {
    T b[static_cast<std::size_t>(w)];
    index_t a[static_cast<std::size_t>(w)];
    for (index_t j = 0; j < w; ++j) {
      b[j] = in[(c + j) * step];
      a[j] = row0;
    }
    for (index_t r = 1; r < count; ++r)
      for (index_t j = 0; j < w; ++j) {
        const T value = in[r * in_row + (c + j) * step];
        const bool take = better(value, b[j]);
        b[j] = take ? value : b[j];
        a[j] = take ? row0 + r : a[j];
      }
    std::copy_n(a, w, out + c);
  }
  for (; c < n; ++c) {
    T b = in[c * step];
    index_t a = row0;
    for (index_t r = 1; r < count; ++r) {
      const T value = in[r * in_row + c * step];
      if (better(value, b)) {
        b = value;
        a = row0 + r;
      }
    }
    out[c] = a;
  }
}

template <class T>
Tensor<T> segment_reduce_impl(const char* function, const Tensor<T>& values,
                              const Tensor<index_t>& first_idx, Reduce reduce) {
  check_reduce(function, reduce);
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, concat("reduce ", reduce));
  } else {
    check_segment_values(function, values.shape());
    const Tensor<index_t> first = checked_segment_offsets(function, first_idx, values.size(0));
    const index_t segments = first.size(0) - 1;
    // The whole output starts at the identity (0 for sum and mean) before any segment: a run
    // filled just before its accumulators load it back would stall those loads.
    const bool identity_first =
        reduce == Reduce::prod || reduce == Reduce::amax || reduce == Reduce::amin;
    const Shape out_shape = joined(Shape{segments}, values.shape(), 1);
    Tensor<T> out =
        identity_first ? Tensor<T>(out_shape, reduce_identity<T>(reduce)) : Tensor<T>(out_shape);
    const RunPlan<2> plan = plan_segment_rows(out, values);
    if (plan.numel == 0) return out;
    const index_t n = plan.run_length(), inner = plan.inner_stride(1);
    const index_t out_row = plan.row_stride(0), in_row = plan.row_stride(1);
    const index_t row_stride = values.strides()[0];
    const bool dense = n == 1 || inner == 1;
    with_reduce_op<T>(reduce, [&](const auto& op) {
      walk_segments(plan, first.data(), segments, out.data(), out.stride(0), values.data(),
                    row_stride, [=](index_t, index_t count, T* out_run, const T* in, index_t rows) {
                      for (index_t r = 0; r < rows; ++r, out_run += out_row, in += in_row) {
                        if (count == 0) {  // an empty segment gives 0 for every reduction
                          if (identity_first) std::fill_n(out_run, n, T(0));
                          continue;
                        }
                        if (dense)
                          combine_dense_rows(op, out_run, in, row_stride, count, n);
                        else
                          combine_strided_rows(op, out_run, in, inner, row_stride, count, n);
                        if (reduce == Reduce::mean)
                          for (index_t j = 0; j < n; ++j)
                            out_run[j] = mean_of(out_run[j], count);
                      }
                    });
    });
    return out;
  }
}

/// The first row (global, into values) of each segment holding its maximum (Max) or minimum per
/// position; -1 for empty segments.
template <class T, bool Max>
Tensor<index_t> segment_arg_impl(const char* function, const Tensor<T>& values,
                                 const Tensor<index_t>& first_idx) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "an arg reduction");
  } else {
    check_segment_values(function, values.shape());
    const Tensor<index_t> first = checked_segment_offsets(function, first_idx, values.size(0));
    const index_t segments = first.size(0) - 1;
    Tensor<index_t> arg(joined(Shape{segments}, values.shape(), 1), index_t(-1));
    const RunPlan<2> plan = plan_segment_rows(arg, values);
    if (plan.numel == 0) return arg;
    const index_t n = plan.run_length(), inner = plan.inner_stride(1);
    const index_t out_row = plan.row_stride(0), in_row = plan.row_stride(1);
    const index_t row_stride = values.strides()[0];
    const index_t* offsets = first.data();
    // better(candidate, best): candidate beyond best, or candidate NaN and best not (a NaN is
    // the extreme, as in torch.argmax / argmin), as two compares that vectorise.
    const auto better = [](const T& candidate, const T& best) {
      if constexpr (Max)
        return !(candidate <= best) && !is_nan(best);
      else
        return !(candidate >= best) && !is_nan(best);
    };
    auto walk = [&]<index_t Inner>(std::integral_constant<index_t, Inner>) {
      walk_segments(plan, offsets, segments, arg.data(), arg.stride(0), values.data(), row_stride,
                    [=](index_t e, index_t count, index_t* out_run, const T* in, index_t rows) {
                      if (count == 0) return;  // an empty segment keeps -1
                      for (index_t r = 0; r < rows; ++r, out_run += out_row, in += in_row)
                        arg_of_rows<Inner>(better, out_run, in, inner, row_stride, count, n,
                                           offsets[e]);
                    });
    };
    if (n == 1 || inner == 1)
      walk(std::integral_constant<index_t, 1>{});
    else
      walk(std::integral_constant<index_t, 0>{});
    return arg;
  }
}

#ifdef TBATCH_BUILDING_LIBRARY
TBATCH_INLINE AnyTensor segment_reduce_kernel(const char* function, const AnyTensor& values,
                                              const Tensor<index_t>& first_idx, Reduce reduce) {
  return values.visit([&](const auto& typed) -> AnyTensor {
    return segment_reduce_impl(function, typed, first_idx, reduce);
  });
}
TBATCH_INLINE Tensor<index_t> segment_arg_kernel(const char* function, const AnyTensor& values,
                                                 const Tensor<index_t>& first_idx, bool max) {
  return values.visit([&]<class T>(const Tensor<T>& typed) {
    return max ? segment_arg_impl<T, true>(function, typed, first_idx)
               : segment_arg_impl<T, false>(function, typed, first_idx);
  });
}
#endif

}  // namespace tbatch::detail
