#pragma once
// The one scatter primitive: for every element p of a common shape, op.apply(dst_base[p] +
// index[p] * scale, src[p]), where dst_base has stride 0 on the dims the index addresses. Ops
// (the combiners) supply the loop body: apply(target, value) for one element and chunk(out, in)
// for one line of a dense row. Updates that reach one target are applied in the engine's order.

#include <array>
#include <cstring>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tbatch/base/tuning.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {
namespace detail {

/// Overwrite: the target takes the value.
template <class T>
struct AssignOp {
  void apply(T& target, const T& value) const { target = value; }
  void chunk(T* out, const T* in) const {
    std::memcpy(static_cast<void*>(out), in, chunk_width<T> * sizeof(T));
  }
};

/// Applies op to one dense run of n elements: whole chunks, then the tail.
template <class Op, class T>
inline void combine_dense(const Op& op, T* out, const T* in, index_t n) {
  index_t i = 0;
  for (; i + chunk_width<T> <= n; i += chunk_width<T>)
    op.chunk(out + i, in + i);
  for (; i < n; ++i)
    op.apply(out[i], in[i]);
}

/// Combines `count` dense rows (row r at in + r * in_row) into one dense output row of n
/// elements, in row order. Each chunk of the output stays in a local accumulator across the
/// rows, so a row does not wait for the previous row's store; the operations and their order
/// are those of combine_dense row after row, so results are identical.
template <class Op, class T>
inline void combine_dense_rows(const Op& op, T* out, const T* in, index_t in_row, index_t count,
                               index_t n) {
  constexpr index_t w = chunk_width<T>;
  index_t i = 0;
  for (; i + w <= n; i += w) {
    T acc[static_cast<std::size_t>(w)];
    std::memcpy(static_cast<void*>(acc), out + i, sizeof acc);
    for (index_t r = 0; r < count; ++r)
      op.chunk(acc, in + r * in_row + i);
    std::memcpy(static_cast<void*>(out + i), acc, sizeof acc);
  }
  for (; i < n; ++i) {
    T acc = out[i];
    for (index_t r = 0; r < count; ++r)
      op.apply(acc, in[r * in_row + i]);
    out[i] = acc;
  }
}

/// Applies op to one run: out and in strided by out_stride and in_stride.
template <class Op, class T>
void combine_run(const Op& op, T* out, index_t out_stride, const T* in, index_t in_stride,
                 index_t n) {
  if (out_stride == 1 && in_stride == 1) {
    combine_dense(op, out, in, n);
  } else if (out_stride == 1 && in_stride == 0) {  // a broadcast value into a dense run
    const T value = *in;
    for (index_t i = 0; i < n; ++i)
      op.apply(out[i], value);
  } else {
    for (index_t i = 0; i < n; ++i)
      op.apply(out[i * out_stride], in[i * in_stride]);
  }
}

/// The stride list type of a Layout (what StridedView takes).
using LayoutStrides = std::remove_cvref_t<decltype(std::declval<Layout>().strides)>;

/// The dims after the first of same-shaped views (rank >= 1), as one run when the engine's
/// planner merges them into one for every view: {length, each view's stride along it}; nullopt
/// when they need an N-d walk. A view's row k then starts at data() + k * strides()[0].
template <class... Views>
std::optional<std::pair<index_t, std::array<index_t, sizeof...(Views)>>> row_run(
    const Views&... views) {
  constexpr std::size_t m = sizeof...(Views);
  const Shape& shape = std::get<0>(std::forward_as_tuple(views...)).shape();
  const Shape rest(shape.begin() + 1, shape.end());
  const std::array<LayoutStrides, m> rest_strides{
      LayoutStrides(views.strides().begin() + 1, views.strides().end())...};
  std::array<const LayoutStrides*, m> pointers;
  for (std::size_t k = 0; k < m; ++k)
    pointers[k] = &rest_strides[k];
  const RunPlan<m> plan = plan_runs<m>(rest, pointers);
  std::array<index_t, m> inner{};
  if (plan.numel == 0) return std::pair{index_t(0), inner};
  if (plan.sizes.size() != 1) return std::nullopt;
  for (std::size_t k = 0; k < m; ++k)
    inner[k] = plan.inner_stride(k);
  return std::pair{plan.run_length(), inner};
}

/// True when the layout of `v` lets it vary along `dim` only: every other dim has size 1 or
/// stride 0.
template <class T>
bool varies_only_along(const StridedView<T>& v, index_t dim) {
  for (index_t d = 0; d < v.dim(); ++d)
    if (d != dim && v.shape()[d] > 1 && v.strides()[d] != 0) return false;
  return true;
}

/// For every element p of the common shape: op.apply(dst_base[p] + index[p] * scale, src[p]).
/// `dst_base` has stride 0 on the dims the index addresses, so index[p] * scale (scale = the
/// addressed dim's stride) moves to the target. Indices must be validated by the caller. Runs
/// along which the index is constant (the rows) are combined densely. Row scatters (the index
/// addresses dim 0 and the remaining dims form one run) skip the N-d walk: one loop over rows.
template <class T, class Op>
void scatter_along(StridedView<const T> src, StridedView<const index_t> index, index_t scale,
                   StridedView<T> dst_base, const Op& op) {
  check_same_shapes("scatter", src, index, dst_base);
  if (src.dim() >= 1 && dst_base.strides()[0] == 0 && varies_only_along(index, 0)) {
    if (const auto run = row_run(src, dst_base)) {
      const auto [length, stride] = *run;
      const index_t rows = src.size(0);
      const index_t src_row = src.strides()[0], index_row = index.strides()[0];
      const T* in = src.data();
      const index_t* at = index.data();
      T* out = dst_base.data();
      if (length == 0) return;
      if (length == 1 || (stride[0] == 1 && stride[1] == 1)) {  // the common case, inline
        for (index_t k = 0; k < rows;) {
          // Consecutive rows with one target (sorted indices, segments) are combined together.
          const index_t target = at[k * index_row];
          index_t end = k + 1;
          while (end < rows && at[end * index_row] == target)
            ++end;
          if (end - k == 1)
            combine_dense(op, out + target * scale, in + k * src_row, length);
          else if constexpr (std::is_same_v<Op, AssignOp<T>>)  // the last write wins
            combine_dense(op, out + target * scale, in + (end - 1) * src_row, length);
          else
            combine_dense_rows(op, out + target * scale, in + k * src_row, src_row, end - k,
                               length);
          k = end;
        }
      } else {
        for (index_t k = 0; k < rows; ++k)
          combine_run(op, out + at[k * index_row] * scale, stride[1], in + k * src_row, stride[0],
                      length);
      }
      return;
    }
  }
  for_each_run(
      "scatter",
      [&](index_t n, const std::array<index_t, 3>& stride, const T* in, const index_t* at, T* out) {
        if (stride[1] == 0) {
          combine_run(op, out + *at * scale, stride[2], in, stride[0], n);
          return;
        }
        for (index_t i = 0; i < n; ++i)
          op.apply(out[i * stride[2] + at[i * stride[1]] * scale], in[i * stride[0]]);
      },
      src, index, dst_base);
}

}  // namespace detail
}  // namespace tbatch
