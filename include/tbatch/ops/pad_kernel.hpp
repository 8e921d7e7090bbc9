#pragma once
// pad's kernel on views: the interior copy and the border slabs, the fused row pass and the
// blocking; pad_views serves the dense forms and the large elements of batches. Instantiated per
// element width (Word<N>) behind the non-template entry points of pad.hpp and pad_batch.hpp.

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/parallel.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/ops/pad_plan.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/constant_rows.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {
namespace detail {

/// The view of `region` that border positions [j0, j0 + n) of `dim` copy from.
template <class T>
StridedView<const T> border_source_view(const StridedView<T>& region, index_t dim, PadMode mode,
                                        const PadDim& p, index_t j0, index_t n) {
  const StridedView<const T> from = region;
  const index_t first = border_source(mode, p, j0);
  switch (border_slope(mode)) {
    case 0: {
      std::vector<index_t> sizes(static_cast<std::size_t>(region.dim()), -1);
      sizes[static_cast<std::size_t>(dim)] = n;
      return from.narrow(dim, first, 1).expand(sizes);
    }
    case -1:
      return from.narrow(dim, first - n + 1, n).slice(dim, std::nullopt, std::nullopt, -1);
    default:
      return from.narrow(dim, first, n);
  }
}

/// How each row (along the last dim, dense on both sides) of a pad is written: [left border |
/// source columns | right border], the borders `value` in constant mode, else copied from the
/// source row by the mode's rule. A crop of the last dim is a narrower window of the row.
template <class T>
struct RowPadder {
  index_t lo, hi, size_out;
  index_t first;  // the source column of output column lo
  bool constant;
  T value;
  std::vector<index_t> left, right;  // the source column of each border column

  RowPadder(const PadDim& p, PadMode mode, T fill)
      : lo(p.lo),
        hi(p.hi),
        size_out(p.size_out),
        first(p.lo - p.before),
        constant(mode == PadMode::constant),
        value(fill) {
    if (constant) return;
    for (index_t j = 0; j < lo; ++j)
      left.push_back(source_index(mode, p, j));
    for (index_t j = hi; j < size_out; ++j)
      right.push_back(source_index(mode, p, j));
  }

  [[gnu::always_inline]] void write(T* out, const T* in) const {
    copy_row(out + lo, in + first, hi - lo);
    if (constant) {
      std::fill_n(out, lo, value);
      std::fill_n(out + hi, size_out - hi, value);
    } else {
      for (index_t j = 0; j < lo; ++j)
        out[j] = in[left[static_cast<std::size_t>(j)]];
      for (index_t j = hi; j < size_out; ++j)
        out[j] = in[right[static_cast<std::size_t>(j - hi)]];
    }
  }

  /// write_rows for a whole plane of short dense rows in constant mode (fills_plane_first): one
  /// fill of all of them, then the copied columns of each run of rows with evenly spaced sources,
  /// by copy_rows (its move width chosen once per run instead of once per row).
  bool fills_plane_first() const {
    return constant && size_out * index_t(sizeof(T)) <= pad_fill_first_row_bytes;
  }
  void write_plane(T* out, const T* in, const index_t* sources, index_t n) const {
    std::fill_n(out, n * size_out, value);
    const index_t width = hi - lo;
    for (index_t r = 0; r < n;) {
      if (sources[r] < 0) {
        ++r;
        continue;
      }
      const index_t step = r + 1 < n ? sources[r + 1] - sources[r] : 0;
      index_t count = 1;
      while (r + count < n && sources[r + count] >= 0 &&
             sources[r + count] - sources[r + count - 1] == step)
        ++count;
      copy_rows(out + r * size_out + lo, size_out, in + sources[r] + first, step, count, width);
      r += count;
    }
  }

  /// Writes `n` output rows `out_step` apart: row r pads the source row at in + sources[r], or
  /// is all `value` where that offset is -1. Consecutive rows of `value` are one fill when the
  /// rows are dense (out_step == size_out).
  [[gnu::always_inline]] void write_rows(T* out, index_t out_step, const T* in,
                                         const index_t* sources, index_t n) const {
    const index_t length = size_out;  // locals: stores through `out` may alias the members
    const T fill = value;
    for (index_t r = 0; r < n;) {
      if (sources[r] >= 0) {
        write(out, in + sources[r]);
        ++r;
        out += out_step;
        continue;
      }
      index_t fills = 1;
      if (out_step == length)
        while (r + fills < n && sources[r + fills] < 0)
          ++fills;
      std::fill_n(out, (fills - 1) * out_step + length, fill);
      r += fills;
      out += fills * out_step;
    }
  }
};

/// Appends to `table`, for each row (position over `count` dims, of sizes `sizes`) of an output,
/// the offset of the source row it pads from the source's start, or -1 for a row of `value`: a
/// constant border row, or a row past the padded size (a padded batch's slot). `plan` holds the
/// dims' pads, `strides` the source's strides. Built dim by dim: each entry so far is expanded by
/// the next dim's offsets (an outer sum of per-dim tables, in index order), so no N-d walk.
inline void append_source_rows(std::vector<index_t>& table, const index_t* sizes,
                               const PadDim* plan, const index_t* strides, std::size_t count,
                               PadMode mode) {
  const std::size_t start = table.size();
  table.push_back(0);
  for (std::size_t d = 0; d < count; ++d) {
    const PadDim& p = plan[d];
    const auto size = static_cast<std::size_t>(sizes[d]);
    const std::size_t known = table.size() - start;
    table.resize(start + known * size);
    // Backwards, so that entry a is read before the entries it expands to overwrite it.
    for (std::size_t a = known * std::min<std::size_t>(size, 1); a-- > 0;) {
      const index_t base = table[start + a];
      for (std::size_t j = size; j-- > 0;) {
        const auto position = static_cast<index_t>(j);
        const index_t source = position < p.size_out ? source_index(mode, p, position) : -1;
        table[start + a * size + j] = base < 0 || source < 0 ? -1 : base + source * strides[d];
      }
    }
  }
}

/// The interior copy and the borders of the last two dims in one pass, plane by plane:
/// `src_planes` and `dst_planes` are the source and destination narrowed to the interior on every
/// dim but the last two, which are whole; both are dense along the last dim. The engine walks the
/// planes' first elements (rows of lines of planes); the loop body writes each plane's output
/// rows in order, [left border | row | right border], border rows included, every value read from
/// the source (or `value`), so the output streams out once, in address order, through the cache.
/// With streaming `stores`, constant mode on dense output rows of at least streamed_row_min_bytes
/// goes to stream_constant_planes where the CPU has it.
template <class T>
void pad_planes_fused(const StridedView<const T>& src_planes, const StridedView<T>& dst_planes,
                      const PadDim& ph, const PadDim& pw, PadMode mode, T value, Stores stores) {
  const index_t rank = dst_planes.dim();
  const index_t in_row = src_planes.strides()[rank - 2], out_row = dst_planes.strides()[rank - 2];
  // The offset of the source row each output row of a plane copies; -1 for a constant border row.
  std::vector<index_t> source_rows;
  append_source_rows(source_rows, &ph.size_out, &ph, &in_row, 1, mode);
  const RowPadder<T> row_padder(pw, mode, value);
  const index_t size_out = pw.size_out;
  const bool fill_plane_first = out_row == size_out && row_padder.fills_plane_first();
  [[maybe_unused]] const bool streamed =
      row_padder.constant && stores == Stores::streaming && out_row == size_out &&
      size_out * index_t(sizeof(T)) >= streamed_row_min_bytes && constant_rows_supported();
  [[maybe_unused]] const ConstantRows rows{.rows = ph.size_out,
                                           .row_length = size_out,
                                           .lo = pw.lo,
                                           .width = pw.hi - pw.lo,
                                           .source_rows = source_rows.data(),
                                           .in_row_stride = 1};
  const StridedView<T> out_planes = dst_planes.select(rank - 1, 0).select(rank - 2, 0);
  const StridedView<const T> in_planes = src_planes.select(rank - 1, 0).select(rank - 2, 0);
  const RunPlan<2> plan =
      plan_runs<2>(out_planes.shape(), {&out_planes.strides(), &in_planes.strides()});
  const index_t length = plan.run_length();
  const std::array<index_t, 2> inner{plan.inner_stride(0), plan.inner_stride(1)};
  const index_t out_line = plan.row_stride(0), in_line = plan.row_stride(1);
  walk_rows(plan, {0, 0}, [&](const std::array<index_t, 2>& at, index_t lines) {
    for (index_t l = 0; l < lines; ++l) {
      T* out = out_planes.data() + at[0] + l * out_line;
      const T* in = in_planes.data() + at[1] + l * in_line;
#if TBATCH_CONSTANT_ROWS
      if (streamed) {
        stream_constant_planes(out, in + row_padder.first, length, inner, rows, value);
        continue;
      }
#endif
      if (fill_plane_first) {
        for (index_t i = 0; i < length; ++i)
          row_padder.write_plane(out + i * inner[0], in + i * inner[1], source_rows.data(),
                                 ph.size_out);
        continue;
      }
      for (index_t i = 0; i < length; ++i)
        row_padder.write_rows(out + i * inner[0], out_row, in + i * inner[1], source_rows.data(),
                              ph.size_out);
    }
  });
}

/// Pads `src` into `dst` (shapes already checked, no overlap) when every border reads the
/// written interior: the interior copy, then per dim (innermost first) its border slabs over
/// the dims already done (whole) and the dims still to do (interior only). When the last dim
/// is padded and dense on both sides, one pass plane by plane writes the interior and the
/// borders of the last two dims. Writes with `stores`, except where later border passes read
/// the output back (modes other than constant), which needs it in the cache.
template <class T>
void pad_block(const StridedView<const T>& src, const StridedView<T>& dst,
               const std::vector<PadDim>& plan, PadMode mode, T value, Stores stores) {
  const index_t rank = dst.dim();
  StridedView<const T> from = src, planes_in = src;
  StridedView<T> to = dst, planes_out = dst;
  bool has_interior = true;
  for (index_t d = 0; d < rank; ++d) {
    const PadDim& p = plan[static_cast<std::size_t>(d)];
    if (!p.pads()) continue;
    if (p.hi == p.lo) has_interior = false;
    if (!has_interior) break;
    from = from.narrow(d, p.lo - p.before, p.hi - p.lo);
    to = to.narrow(d, p.lo, p.hi - p.lo);
    if (d + 2 < rank) {
      planes_in = planes_in.narrow(d, p.lo - p.before, p.hi - p.lo);
      planes_out = planes_out.narrow(d, p.lo, p.hi - p.lo);
    }
  }
  const bool fused = rank > 0 && has_interior && plan.back().pads() &&
                     src.strides()[rank - 1] == 1 && dst.strides()[rank - 1] == 1;
  // An unpadded dim's plan entry may not hold its size (pad_blocked folds and splits those
  // dims), so the rows of an unpadded plane are counted from the view.
  auto unpadded = [](index_t size) { return PadDim{size, size, 0, 0, 0, size}; };
  const index_t border_passes = fused ? rank - 2 : rank;  // dims [0, border_passes) pass later
  if (mode != PadMode::constant && std::any_of(plan.begin(), plan.begin() + border_passes,
                                               [](const PadDim& p) { return p.pads(); }))
    stores = Stores::cached;
  if (fused && rank == 1)  // a single row: a plane of one unpadded row
    pad_planes_fused(planes_in.unsqueeze(0), planes_out.unsqueeze(0), unpadded(1), plan[0], mode,
                     value, stores);
  else if (fused)
    pad_planes_fused(
        planes_in, planes_out,
        plan[plan.size() - 2].pads() ? plan[plan.size() - 2] : unpadded(dst.size(rank - 2)),
        plan.back(), mode, value, stores);
  else if (has_interior)
    copy_planned<T, T>(from, to, stores);

  for (index_t d = border_passes; d-- > 0;) {
    const PadDim& p = plan[static_cast<std::size_t>(d)];
    if (!p.pads()) continue;
    StridedView<T> region = dst;
    for (index_t e = 0; e < d; ++e) {
      const PadDim& q = plan[static_cast<std::size_t>(e)];
      if (q.pads()) region = region.narrow(e, q.lo, q.hi - q.lo);
    }
    if (region.numel() == 0) continue;
    const std::array<std::pair<index_t, index_t>, 2> borders{
        {{0, p.lo}, {p.hi, p.size_out - p.hi}}};
    for (const auto& [j0, n] : borders) {
      if (n == 0) continue;
      const StridedView<T> slab = region.narrow(d, j0, n);
      if (mode == PadMode::constant)
        fill_view(slab, value, stores);
      else
        copy_planned<T, T>(border_source_view(region, d, mode, p, j0, n), slab);
    }
  }
}

/// pad_block over blocks of the leading dims that are not padded (they are independent), so
/// each block's borders are written while the block is in cache.
template <class T>
void pad_blocked(const StridedView<const T>& src, const StridedView<T>& dst,
                 std::vector<PadDim> plan, PadMode mode, T value, Stores stores) {
  index_t lead = 0;
  while (lead < dst.dim() && !plan[static_cast<std::size_t>(lead)].pads())
    ++lead;
  if (lead == 0 || lead == dst.dim()) {
    pad_block(src, dst, plan, mode, value, stores);
    return;
  }
  StridedView<const T> in = src;
  StridedView<T> out = dst;
  if (lead > 1) {  // fold the leading dims into one when they merge in both (the engine's rule)
    const Shape leading(dst.shape().begin(), dst.shape().begin() + lead);
    const RunPlan<2> folded = plan_runs_in_order<2>(leading, {&src.strides(), &dst.strides()});
    if (folded.sizes.size() == 1) {
      auto fold = [&](const Layout& whole, std::size_t k) {
        Layout part{Shape{folded.sizes[0]}, Strides{}, whole.offset};
        part.strides.push_back(folded.strides[k][0]);
        for (index_t d = lead; d < whole.dim(); ++d) {
          part.shape.push_back(whole.shape[d]);
          part.strides.push_back(whole.strides[d]);
        }
        return part;
      };
      in = src.with_layout(fold(src.layout(), 0));
      out = dst.with_layout(fold(dst.layout(), 1));
      plan.erase(plan.begin() + 1, plan.begin() + lead);
    }
  }
  const index_t rows = out.size(0);
  const index_t row_bytes = out.numel() / rows * index_t(sizeof(T));
  const index_t step = std::max<index_t>(1, pad_block_bytes / std::max<index_t>(row_bytes, 1));
  parallel_for(0, rows, step, out.numel() * index_t(sizeof(T)) > parallel_min_bytes,
               [&](index_t r) {
                 const index_t n = std::min(step, rows - r);
                 pad_block(in.narrow(0, r, n), out.narrow(0, r, n), plan, mode, value, stores);
               });
}

/// The pad kernel: writes `src` padded by `pads` into `dst` (shape checked by the caller, no
/// overlap with src). Dims whose borders mirror data a crop removed are padded into a
/// temporary without that crop (without crops every border reads the interior, by the mode's
/// limits), and the crop is copied out of it. `stores` is how the output is written (the
/// temporary is read back, so goes through the cache).
template <class T>
void pad_views(const StridedView<const T>& src, const StridedView<T>& dst,
               const std::vector<DimPad>& pads, PadMode mode, T value, Stores stores) {
  if (dst.numel() == 0) return;
  const std::vector<PadDim> plan = plan_pad(src.shape(), pads);
  if (mode != PadMode::constant) {
    std::vector<DimPad> uncropped = pads;
    bool needs_temporary = false;
    for (std::size_t d = 0; d < plan.size(); ++d) {
      if (!plan[d].pads() || borders_read_interior(mode, plan[d])) continue;
      uncropped[d] =
          DimPad{std::max<index_t>(pads[d].before, 0), std::max<index_t>(pads[d].after, 0)};
      needs_temporary = true;
    }
    if (needs_temporary) {
      Shape wide;
      for (std::size_t d = 0; d < plan.size(); ++d)
        wide.push_back(plan[d].size_in + uncropped[d].before + uncropped[d].after);
      // T is a Word (no Tensor of it): the canvas is a bare buffer.
      const std::shared_ptr<Storage> buffer = Storage::allocate(wide.numel(), index_t(sizeof(T)));
      const StridedView<T> canvas(static_cast<T*>(buffer->data()), wide);
      const std::vector<PadDim> uncropped_plan = plan_pad(src.shape(), uncropped);
      for ([[maybe_unused]] const PadDim& p : uncropped_plan)
        TBATCH_ASSERT(!p.pads() || borders_read_interior(mode, p));
      pad_blocked(src, canvas, uncropped_plan, mode, value, Stores::cached);
      StridedView<const T> cropped = canvas;
      for (std::size_t d = 0; d < plan.size(); ++d)
        cropped = cropped.narrow(static_cast<index_t>(d), uncropped[d].before - pads[d].before,
                                 plan[d].size_out);
      copy_planned<T, T>(cropped, dst, stores);
      return;
    }
  }
  pad_blocked(src, dst, plan, mode, value, stores);
}

}  // namespace detail
}  // namespace tbatch
