#pragma once
// The copy/fill/for-each engine. It plans a walk over several same-shaped strided views
// (view/walk.hpp) and hands kernels innermost runs; writes follow view/aliasing.hpp.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/shape.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/for_each.hpp"
#include "tbatch/view/streaming.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

/// Uninitialised room for one element, also for types whose default constructor zeroes
/// (Eigen::half, Eigen::bfloat16); assigning to `value` starts its lifetime.
template <class T>
union TileCell {
  TileCell() {}
  T value;
};

/// Copies one rows x cols block where the source is contiguous along rows and the destination
/// along cols, in cache-sized tiles so neither side strides through memory. Each tile goes
/// through a small buffer: the source's row segments are read whole into it, then the
/// destination's column segments are written whole from it. Copying straight from source to
/// destination would re-read the tile's source lines once per tile row, and when the source's
/// row pitch is a multiple of 4 KiB those lines share one L1 set, so every read missed.
template <class S, class D>
void copy_tiled(const S* src, index_t src_row, index_t src_col, D* dst, index_t dst_row,
                index_t dst_col, index_t rows, index_t cols) {
  constexpr index_t tile_rows = copy_tile_rows;
  constexpr index_t tile_cols = copy_tile_bytes / index_t(std::max(sizeof(S), sizeof(D)));
  TileCell<S> buffer[static_cast<std::size_t>(tile_cols)]
                    [static_cast<std::size_t>(tile_rows)];  // 16 KiB at most
  // Unit: the source rows and destination columns are dense. Full: a whole tile, whose
  // compile-time extents let both passes vectorise.
  auto copy_tile = [&]<bool Unit, bool Full>(std::bool_constant<Unit>, std::bool_constant<Full>,
                                             const S* in, D* out, index_t n_rows, index_t n_cols) {
    const index_t in_row = Unit ? 1 : src_row, out_col = Unit ? 1 : dst_col;
    const index_t nr = Full ? tile_rows : n_rows, nc = Full ? tile_cols : n_cols;
    for (index_t c = 0; c < nc; ++c)
      for (index_t r = 0; r < nr; ++r)
        buffer[c][r].value = in[c * src_col + r * in_row];
    for (index_t r = 0; r < nr; ++r)
      for (index_t c = 0; c < nc; ++c)
        out[r * dst_row + c * out_col] = cast_element<D>(buffer[c][r].value);
  };
  const bool unit = src_row == 1 && dst_col == 1;
  for (index_t r0 = 0; r0 < rows; r0 += tile_rows) {
    const index_t n_rows = std::min(tile_rows, rows - r0);
    for (index_t c0 = 0; c0 < cols; c0 += tile_cols) {
      const index_t n_cols = std::min(tile_cols, cols - c0);
      const S* in = src + r0 * src_row + c0 * src_col;
      D* out = dst + r0 * dst_row + c0 * dst_col;
      const bool full = n_rows == tile_rows && n_cols == tile_cols;
      if (unit && full)
        copy_tile(std::true_type{}, std::true_type{}, in, out, n_rows, n_cols);
      else if (unit)
        copy_tile(std::true_type{}, std::false_type{}, in, out, n_rows, n_cols);
      else
        copy_tile(std::false_type{}, std::false_type{}, in, out, n_rows, n_cols);
    }
  }
}

/// The dim to tile against the run when the source is strided along the run but contiguous
/// along another dim (a transposed copy); -1 when a plain walk is already cache-friendly.
template <std::size_t N>
index_t transposed_dim(const RunPlan<N>& plan) {
  const std::size_t run = plan.sizes.size() - 1;
  const index_t src_inner = std::abs(plan.strides[1][run]);
  if (run == 0 || src_inner <= 1 || plan.sizes[run] < min_tile_extent) return -1;
  index_t best = -1;
  for (std::size_t d = 0; d < run; ++d) {
    const index_t s = std::abs(plan.strides[1][d]);
    if (s < src_inner && plan.sizes[d] >= min_tile_extent &&
        (best < 0 || s < std::abs(plan.strides[1][best])))
      best = static_cast<index_t>(d);
  }
  return best;
}

/// Copies the runs of `plan` (operand 0 the destination, operand 1 the source), a row of runs
/// at a time, from `origin` (each operand's element offset from its view's data). Dense runs of
/// one type are copied and broadcast runs filled with `stores`; the others are element loops.
template <class S, class D>
void copy_runs(RunPlan<2> plan, const StridedView<const S>& src, const StridedView<D>& dst,
               Stores stores, std::array<index_t, 2> origin = {0, 0}) {
  // Through the cache, the dim next to the run may trade places with a longer dim just outside
  // it whose span of the destination fits in L1: the same lines are written, and the 2-D loop
  // gets the longer rows.
  const std::size_t rank = plan.sizes.size();
  if (stores == Stores::cached && rank >= 3 && plan.sizes[rank - 2] < plan.sizes[rank - 3] &&
      std::abs(plan.strides[0][rank - 3]) * plan.sizes[rank - 3] * index_t(sizeof(D)) <=
          row_swap_span_bytes) {
    std::swap(plan.sizes[rank - 2], plan.sizes[rank - 3]);
    for (auto& s : plan.strides)
      std::swap(s[rank - 2], s[rank - 3]);
  }
  const index_t length = plan.run_length();
  const index_t dst_inner = plan.inner_stride(0), src_inner = plan.inner_stride(1);
  const index_t dst_row = plan.row_stride(0), src_row = plan.row_stride(1);
  walk_rows(plan, origin, [&](const std::array<index_t, 2>& at, index_t rows) {
    D* out = dst.data() + at[0];
    const S* in = src.data() + at[1];
    if constexpr (std::is_same_v<S, D>) {
      if (dst_inner == 1 && src_inner == 1) {
        if (stores == Stores::streaming)
          for (index_t r = 0; r < rows; ++r)
            stream_copy(out + r * dst_row, in + r * src_row,
                        static_cast<std::size_t>(length) * sizeof(D));
        else
          copy_rows(out, dst_row, in, src_row, rows, length);
        return;
      }
    }
    for (index_t r = 0; r < rows; ++r, out += dst_row, in += src_row) {
      if (dst_inner == 1 && src_inner == 1) {
        for (index_t i = 0; i < length; ++i)
          out[i] = cast_element<D>(in[i]);
      } else if (dst_inner == 1 && src_inner == 0) {
        fill_row_with(stores, out, length, cast_element<D>(*in));
      } else {
        for (index_t i = 0; i < length; ++i)
          out[i * dst_inner] = cast_element<D>(in[i * src_inner]);
      }
    }
  });
  if (stores == Stores::streaming) streaming_fence();
}

/// Copies src to dst (same shapes, no overlap) along a planned walk; transposed copies go
/// through cache-sized tiles, the others write with `stores`.
template <class S, class D>
void copy_planned(const StridedView<const S>& src, const StridedView<D>& dst,
                  Stores stores = Stores::cached) {
  RunPlan<2> plan = plan_runs<2>(dst.shape(), {&dst.strides(), &src.strides()});
  if (plan.numel == 0) return;
  const index_t tile_dim = transposed_dim(plan);
  if (tile_dim >= 0) {
    // Walk every dim but the tiled pair; each visit copies one rows x cols block in tiles.
    const std::size_t run = plan.sizes.size() - 1;
    const index_t rows = plan.sizes[tile_dim], cols = plan.sizes[run];
    const index_t src_row = plan.strides[1][tile_dim], src_col = plan.strides[1][run];
    const index_t dst_row = plan.strides[0][tile_dim], dst_col = plan.strides[0][run];
    RunPlan<2> outer;
    outer.numel = plan.numel / (rows * cols);
    for (std::size_t d = 0; d < run; ++d) {
      if (static_cast<index_t>(d) == tile_dim) continue;
      outer.sizes.push_back(plan.sizes[d]);
      for (std::size_t k = 0; k < 2; ++k)
        outer.strides[k].push_back(plan.strides[k][d]);
    }
    outer.sizes.push_back(1);
    for (auto& s : outer.strides)
      s.push_back(0);
    walk_runs(outer, {0, 0}, [&](const std::array<index_t, 2>& at) {
      copy_tiled(src.data() + at[1], src_row, src_col, dst.data() + at[0], dst_row, dst_col, rows,
                 cols);
    });
    return;
  }
  copy_runs(plan, src, dst, stores);
}

/// The plan of a copy (operand 0 the destination, as copy_runs takes it) in the source's
/// visiting order: dims ordered by the source's strides, so reads stream through the source and
/// writes go to the few streams the destination interleaves. For gathers whose runs are whole
/// cache lines on both sides but whose destination order reads the source in several strided
/// passes (space_to_batch_nd: one pass per block offset).
template <class S, class D>
RunPlan<2> plan_source_order(const StridedView<const S>& src, const StridedView<D>& dst) {
  RunPlan<2> plan = plan_runs<2>(dst.shape(), {&src.strides(), &dst.strides()});
  std::swap(plan.strides[0], plan.strides[1]);
  return plan;
}

/// True when a plan of dense rows (is_dense_rows) over `bytes` in all is copied or filled row by
/// row without the ordered plan: small ones, and those of long rows.
template <std::size_t N>
bool takes_dense_rows(const RunPlan<N>& plan, index_t bytes, index_t element_size) {
  return is_dense_rows(plan) &&
         (bytes < small_copy_bytes || plan.run_length() * element_size >= dense_row_min_bytes);
}

/// Copies the elements of layout `sl` over `src` (the buffer's element 0) to those of `dl` over
/// `dst` when, taken in index order, both are dense rows of one length (takes_dense_rows) and
/// their bytes do not overlap: one row copy each, with `stores`. Returns false, having done
/// nothing, when the views need the ordered walk.
template <class T>
bool copy_dense_rows(const T* src, const Layout& sl, T* dst, const Layout& dl, Stores stores) {
  const RunPlan<2> plan = plan_runs_in_order<2>(dl.shape, {&dl.strides, &sl.strides});
  if (!takes_dense_rows(plan, plan.numel * index_t(sizeof(T)), sizeof(T))) return false;
  const index_t length = plan.run_length(), rows = plan.numel / length;
  const index_t dst_row = plan.row_stride(0), src_row = plan.row_stride(1);
  const T* in = src + sl.offset;
  T* out = dst + dl.offset;
  const T* in_end = in + (rows - 1) * src_row + length;
  const T* out_end = out + (rows - 1) * dst_row + length;
  if (in < out_end && out < in_end) return false;  // overlapping: the walk stages through a copy
  walk_rows(plan, {0, 0}, [&](const std::array<index_t, 2>& at, index_t n_rows) {
    for (index_t r = 0; r < n_rows; ++r)
      copy_row_with(stores, out + at[0] + r * dst_row, in + at[1] + r * src_row, length);
  });
  if (stores == Stores::streaming) streaming_fence();
  return true;
}

/// `v` as a view of words of its element size (same buffer, same layout).
template <class T>
auto as_words(const StridedView<T>& v) {
  using W = std::conditional_t<std::is_const_v<T>, const WordOf<std::remove_const_t<T>>, WordOf<T>>;
  return StridedView<W>(reinterpret_cast<W*>(v.element_pointer()), v.layout());
}

/// The planned part of copy_views: overlapping views go through a temporary.
template <class S, class D>
void copy_views_planned(const StridedView<const S>& src, const StridedView<D>& dst, Stores stores) {
  if (may_share_elements(src, dst)) {
    const index_t n = src.numel();
    const auto staging = std::make_unique<S[]>(static_cast<std::size_t>(n));
    StridedView<S> staged(staging.get(), src.shape());
    copy_planned<S, S>(src, staged);
    copy_planned<S, D>(StridedView<const S>(staged), dst, stores);
    return;
  }
  copy_planned<S, D>(src, dst, stores);
}

/// copy() with the stores chosen by the caller, for kernels that write one output in several
/// copies (the choice follows the whole output's size, not each piece's), on layouts `sl` and
/// `dl` over the buffers at `src` and `dst` (their element 0): the RawView kernels call it
/// without making views.
template <class S, class D>
void copy_layouts(const S* src, const Layout& sl, D* dst, const Layout& dl, Stores stores) {
  if (!(sl.shape == dl.shape))
    fail<ShapeError>("copy",
                     {"source shape ", sl.shape, " does not match destination shape ", dl.shape});
  if constexpr (std::is_same_v<S, D>) {
    if (dl.shape.numel() == 0) return;
    // A copy only moves bytes: every element type of one width shares one compiled copy.
    using W = WordOf<S>;
    const W* const src_words = reinterpret_cast<const W*>(src);
    W* const dst_words = reinterpret_cast<W*>(dst);
    if (copy_dense_rows(src_words, sl, dst_words, dl, stores)) return;
    copy_views_planned(StridedView<const W>(src_words, sl), StridedView<W>(dst_words, dl), stores);
  } else {
    copy_views_planned(StridedView<const S>(src, sl), StridedView<D>(dst, dl), stores);
  }
}
template <class S, class D>
void copy_views(const StridedView<const S>& src, const StridedView<D>& dst, Stores stores) {
  copy_layouts(src.element_pointer(), src.layout(), dst.element_pointer(), dst.layout(), stores);
}

/// Writes `value` every `stride` elements from `out`, `n` times. Unrolled by hand: the compiler
/// does not unroll strided stores of integers, and four stores in flight write 1.5x faster.
template <class T>
void fill_strided(T* out, index_t n, index_t stride, T value) {
  index_t i = 0, at = 0;
  for (; i + 4 <= n; i += 4, at += 4 * stride) {
    out[at] = value;
    out[at + stride] = value;
    out[at + 2 * stride] = value;
    out[at + 3 * stride] = value;
  }
  for (; i < n; ++i, at += stride)
    out[at] = value;
}

/// Fills the runs of `plan` (over `data`) with `value`, a row of runs at a time.
template <class T>
void fill_runs(const RunPlan<1>& plan, T* data, T value, Stores stores) {
  if (plan.numel == 0) return;
  const index_t length = plan.run_length(), inner = plan.inner_stride(0), row = plan.row_stride(0);
  walk_rows(plan, {0}, [&](const std::array<index_t, 1>& at, index_t rows) {
    T* out = data + at[0];
    for (index_t r = 0; r < rows; ++r, out += row) {
      if (inner == 1 || length == 1)
        fill_row_with(stores, out, length, value);
      else
        fill_strided(out, length, inner, value);
    }
  });
  if (stores == Stores::streaming) streaming_fence();
}

/// fill() with the stores chosen by the caller, of the elements of layout `l` over the buffer
/// at `base` (its element 0).
template <class T>
void fill_layout(T* base, const Layout& l, T value, Stores stores) {
  // Dense rows in index order need no ordered plan, and stay typed: the other fills go through
  // one compiled walk per element width.
  const RunPlan<1> rows = plan_runs_in_order<1>(l.shape, {&l.strides});
  if (takes_dense_rows(rows, rows.numel * index_t(sizeof(T)), sizeof(T))) {
    fill_runs(rows, base + l.offset, value, stores);
    return;
  }
  const RunPlan<1> plan = plan_runs<1>(l.shape, {&l.strides});
  if constexpr (is_word_v<T>)
    fill_runs(plan, base + l.offset, value, stores);
  else
    fill_runs(plan, reinterpret_cast<WordOf<T>*>(base + l.offset), to_word(value), stores);
}
template <class T>
void fill_view(const StridedView<T>& dst, T value, Stores stores) {
  fill_layout(dst.element_pointer(), dst.layout(), value, stores);
}

}  // namespace detail

}  // namespace tbatch

namespace tbatch::detail {

// Unchecked: the kernels that build the offsets (indexing, the scatter family) keep them inside
// the buffer; they are not part of the public API.

/// Gather by element offsets: dst[i] = *(&src_base[i] + offsets[i]) for every element i of the
/// common shape. `src_base` is usually a broadcast view (stride 0 on the gathered dims); the
/// caller guarantees every offset stays inside the source buffer.
template <class T>
void gather_by_offsets(StridedView<const std::type_identity_t<T>> src_base,
                       StridedView<const index_t> offsets, StridedView<T> dst) {
  for_each_run(
      "gather_by_offsets",
      [](index_t n, const std::array<index_t, 3>& stride, T* out, const index_t* shift,
         const T* in) {
        for (index_t i = 0; i < n; ++i)
          out[i * stride[0]] = in[i * stride[2] + shift[i * stride[1]]];
      },
      dst, offsets, src_base);
}

}  // namespace tbatch::detail
