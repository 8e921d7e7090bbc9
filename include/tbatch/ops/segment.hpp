#pragma once
// Segment reductions over packed rows (torch_scatter's segment_csr): first_idx holds CSR offsets,
// segment e is rows [first_idx[e], first_idx[e + 1]) of the values. segment_reduce combines each
// segment's rows with the Reduce combiners of reduce.hpp; segment_argmax / segment_argmin find
// the row of each segment's extreme.
//
// segment_reduce is a loop body on the engine: walk_rows walks the dims after the first (one row
// of the values against one row of the output) and the body, for each segment, combines that
// segment's rows into its output row, a chunk of the run at a time, rows in order.
// segment_argmax / segment_argmin combine dense rows segment by segment, strided runs row by row,
// and any other layout in blocks of rows through the engine's for_each_run.

#include <algorithm>
#include <array>
#include <type_traits>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/scatter_runs.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

/// Validates CSR offsets against `rows` rows: 1-d with B + 1 entries, starting at 0, never
/// decreasing, ending at `rows`. Returns them contiguous.
inline Tensor<index_t> checked_segment_offsets(const char* function,
                                               const Tensor<index_t>& first_idx, index_t rows) {
  if (first_idx.dim() != 1 || first_idx.size(0) == 0)
    fail<ShapeError>(function,
                     "first_idx must be 1-d with B + 1 entries (0, then each segment's end), got "
                     "shape ",
                     first_idx.shape());
  Tensor<index_t> first = first_idx.contiguous();
  const index_t* p = first.data();
  const index_t segments = first.size(0) - 1;
  check_first_idx(function, p, segments, [](index_t) {});
  if (p[segments] != rows)
    fail<ValueError>(function, "first_idx[", segments, "] = ", p[segments], " but values has ",
                     rows, " rows; the last offset must be the row count");
  return first;
}

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

/// Visits rows [0, rows) in blocks of at most index_block: visit(r0, length, segment) where
/// segment[k] is the segment holding row r0 + k (first must be validated offsets).
template <class Visit>
void for_each_row_block(const index_t* first, index_t rows, Visit&& visit) {
  std::array<index_t, index_block> segment;
  index_t e = 0;
  for (index_t r0 = 0; r0 < rows; r0 += index_block) {
    const index_t length = std::min(index_block, rows - r0);
    for (index_t k = 0; k < length; ++k) {
      while (first[e + 1] <= r0 + k)
        ++e;
      segment[static_cast<std::size_t>(k)] = e;
    }
    visit(r0, length, segment.data());
  }
}

/// Shape (length) + values.shape[1:] and the strides that spread a per-row value over it.
struct RowBlock {
  Shape shape;
  LayoutStrides per_row_strides;

  RowBlock(const Shape& values_shape, index_t length)
      : shape(values_shape), per_row_strides(values_shape.size(), 0) {
    shape.set(0, length);
    per_row_strides[0] = 1;
  }
};

template <class T>
void check_segment_values(const char* function, const Tensor<T>& values) {
  if (values.dim() < 1)
    fail<ShapeError>(function, "values must have rank >= 1 (rows first), got shape ",
                     values.shape());
}

template <class T>
Tensor<T> segment_reduce_impl(const char* function, const Tensor<T>& values,
                              const Tensor<index_t>& first_idx, Reduce reduce) {
  check_reduce(function, reduce);
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, concat("reduce ", reduce));
  } else {
    check_segment_values(function, values);
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

/// The first row (global, into values) of each segment holding its extreme per position, by
/// `better(candidate, best)`; -1 for empty segments.
template <class T, class Better>
Tensor<index_t> segment_arg_impl(const char* function, const Tensor<T>& values,
                                 const Tensor<index_t>& first_idx, Better better) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "an arg reduction");
  } else {
    check_segment_values(function, values);
    const index_t rows = values.size(0);
    const Tensor<index_t> first = checked_segment_offsets(function, first_idx, rows);
    const Shape out_shape = joined(Shape{first.size(0) - 1}, values.shape(), 1);
    Tensor<T> best = Tensor<T>::empty(out_shape);
    Tensor<index_t> arg(out_shape, index_t(-1));
    const index_t scale = arg.stride(0);
    // Keeps a[j] (the row of b[j]) when the candidate `value` from `row` is not better.
    auto consider = [&](const T& value, index_t row, T& b, index_t& a) {
      if (a < 0 || better(value, b)) {
        b = value;
        a = row;
      }
    };
    const index_t* offsets = first.data();
    if (const auto run = row_run(values.view(), best.view(), arg.view())) {
      const auto [n, s] = *run;
      const index_t row_stride = values.strides()[0];
      const index_t segments = first.size(0) - 1;
      if (n <= 1 || (s[0] == 1 && s[1] == 1 && s[2] == 1)) {
        // Dense rows: per segment, each chunk of the row keeps its best values and rows in local
        // arrays across the segment's rows, updated by selects (no data-dependent branches).
        constexpr index_t w = chunk_width<T>;
        for (index_t e = 0; e < segments; ++e) {
          if (offsets[e + 1] == offsets[e]) continue;
          const T* rows_in = values.data() + offsets[e] * row_stride;
          const index_t count = offsets[e + 1] - offsets[e];
          index_t c = 0;
          for (; c + w <= n; c += w) {
            T b[static_cast<std::size_t>(w)];
            index_t a[static_cast<std::size_t>(w)];
            for (index_t j = 0; j < w; ++j) {
              b[j] = rows_in[c + j];
              a[j] = offsets[e];
            }
            for (index_t r = 1; r < count; ++r)
              for (index_t j = 0; j < w; ++j) {
                const T value = rows_in[r * row_stride + c + j];
                const bool take = better(value, b[j]);
                b[j] = take ? value : b[j];
                a[j] = take ? offsets[e] + r : a[j];
              }
            std::copy_n(a, w, arg.data() + e * scale + c);
          }
          for (; c < n; ++c) {
            T b = rows_in[c];
            index_t a = offsets[e];
            for (index_t r = 1; r < count; ++r)
              consider(rows_in[r * row_stride + c], offsets[e] + r, b, a);
            arg.data()[e * scale + c] = a;
          }
        }
        return arg;
      }
      // Rows that form one strided run: one loop over the segments and their rows, one over the
      // run.
      for (index_t e = 0; e < segments; ++e)
        for (index_t r = offsets[e]; r < offsets[e + 1]; ++r) {
          const T* in = values.data() + r * row_stride;
          T* b = best.data() + e * scale;
          index_t* a = arg.data() + e * scale;
          for (index_t j = 0; j < n; ++j)
            consider(in[j * s[0]], r, b[j * s[1]], a[j * s[2]]);
        }
      return arg;
    }
    // Any other layout: blocks of rows through the engine, with each row's segment and number.
    std::array<index_t, index_block> row_ids;
    for_each_row_block(offsets, rows, [&](index_t r0, index_t length, const index_t* segment) {
      const StridedView<const T> block_values = values.view().narrow(0, r0, length);
      const RowBlock block(values.shape(), length);
      for (index_t k = 0; k < length; ++k)
        row_ids[static_cast<std::size_t>(k)] = r0 + k;
      for_each_run(
          function,
          [&](index_t n, const std::array<index_t, 5>& s, const T* in, const index_t* seg,
              T* best_base, index_t* arg_base, const index_t* row) {
            for (index_t i = 0; i < n; ++i) {
              const index_t e = seg[i * s[1]];
              consider(in[i * s[0]], row[i * s[4]], best_base[i * s[2] + e * scale],
                       arg_base[i * s[3] + e * scale]);
            }
          },
          block_values, StridedView<const index_t>(segment, block.shape, block.per_row_strides),
          indexed_base(best.view(), 0, length), indexed_base(arg.view(), 0, length),
          StridedView<const index_t>(row_ids.data(), block.shape, block.per_row_strides));
    });
    return arg;
  }
}

}  // namespace detail

/// Reduces each segment of rows of `values` (shape (rows, ...)): segment e is rows
/// [first_idx[e], first_idx[e + 1]). Returns (B, values.shape[1:]...). Rows are combined in
/// order with the scatter_reduce combiners (NaN propagates through amax / amin; integer sums and
/// products wrap; integer means floor). An empty segment gives 0 for every reduction.
/// `first_idx` has B + 1 entries: 0, non-decreasing, ending at values.size(0) (ValueError
/// otherwise; ShapeError unless it is 1-d and values has rank >= 1). TypeError for bool values;
/// ValueError for a `reduce` that is not a Reduce.
template <class T>
Tensor<T> segment_reduce(const Tensor<T>& values, const Tensor<index_t>& first_idx, Reduce reduce) {
  return detail::segment_reduce_impl("segment_reduce", values, first_idx, reduce);
}

/// Reduces each element of a packed batch over its rows: (B, last_dim), row i the reduction of
/// element i's rows (0 for an element without rows). Errors as the dense form.
template <class T>
Tensor<T> segment_reduce(const PackedBatch<T>& batch, Reduce reduce) {
  return detail::segment_reduce_impl("segment_reduce", batch.data(), batch.first_idx(), reduce);
}

/// For each segment and position, the row of `values` (a global row number) holding the segment's
/// maximum; the first such row wins, a NaN counts as the maximum (as torch.argmax), and an empty
/// segment gives -1. Shape (B, values.shape[1:]...). first_idx is checked as for
/// segment_reduce (ValueError / ShapeError); TypeError for bool values.
template <class T>
Tensor<index_t> segment_argmax(const Tensor<T>& values, const Tensor<index_t>& first_idx) {
  return detail::segment_arg_impl(
      "segment_argmax", values, first_idx, [](const T& candidate, const T& best) {
        return candidate > best || (detail::is_nan(candidate) && !detail::is_nan(best));
      });
}

/// segment_argmax of a packed batch: (B, last_dim) rows of batch.data().
template <class T>
Tensor<index_t> segment_argmax(const PackedBatch<T>& batch) {
  return segment_argmax(batch.data(), batch.first_idx());
}

/// As segment_argmax, for the minimum (a NaN counts as the minimum, as torch.argmin).
template <class T>
Tensor<index_t> segment_argmin(const Tensor<T>& values, const Tensor<index_t>& first_idx) {
  return detail::segment_arg_impl(
      "segment_argmin", values, first_idx, [](const T& candidate, const T& best) {
        return candidate < best || (detail::is_nan(candidate) && !detail::is_nan(best));
      });
}

/// segment_argmin of a packed batch: (B, last_dim) rows of batch.data().
template <class T>
Tensor<index_t> segment_argmin(const PackedBatch<T>& batch) {
  return segment_argmin(batch.data(), batch.first_idx());
}

}  // namespace tbatch
