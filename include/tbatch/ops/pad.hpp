#pragma once
// pad: constant, reflect, replicate, circular and symmetric padding of dense tensors and of
// every batch layout. Pads are listed as in torch.nn.functional.pad and PyPTO (last dim
// first) or as per-dim {before, after} pairs (first dim first, as TF and ONNX); negative pads
// crop.
//
// One kernel serves every mode, through the view engine: the interior is one strided copy,
// then each dim's two border slabs are written, innermost dim first. Constant mode fills
// them; the other modes copy them from data already written: a reversed slice (reflect,
// symmetric), a size-1 slice expanded (replicate) or a slice of the opposite end (circular).
// When the last dim is padded and dense, the interior and the borders of the last two dims are
// written in one pass instead, plane by plane and row by row in address order, border values
// read from the source.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/parallel.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/constant_rows.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// How pad fills the border. For the source [1, 2, 3] padded by 2 on both sides:
/// constant (value v) [v, v, 1, 2, 3, v, v]; reflect (edge not repeated) [3, 2, 1, 2, 3, 2, 1];
/// symmetric (edge repeated) [2, 1, 1, 2, 3, 3, 2]; replicate (clamp) [1, 1, 1, 2, 3, 3, 3];
/// circular (wrap) [2, 3, 1, 2, 3, 1, 2].
enum class PadMode { constant, reflect, replicate, circular, symmetric };

/// Name of a mode as torch spells it ("constant", "reflect", ...); "invalid" for other values.
inline std::string_view pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
    case PadMode::symmetric:
      return "symmetric";
  }
  return "invalid";
}
inline std::ostream& operator<<(std::ostream& out, PadMode mode) {
  return out << pad_mode_name(mode);
}

namespace detail {

/// Padding of one dim: elements added before index 0 and after the last index (negative
/// values crop).
struct DimPad {
  index_t before = 0;
  index_t after = 0;

  bool pads() const { return before != 0 || after != 0; }
};

inline void check_pad_mode(PadMode mode, const char* function) {
  if (pad_mode_name(mode) == "invalid")
    fail<ValueError>(function, "mode ", static_cast<int>(mode),
                     " is not a PadMode; expected constant, reflect, replicate, circular or "
                     "symmetric");
}

/// Only constant mode uses `value` (torch rejects a value for the other modes as well).
template <class T>
void check_pad_value(PadMode mode, T value, const char* function) {
  if (mode != PadMode::constant && !(value == T(0)))
    fail<ValueError>(function, "value ", widen(value), " is only used by mode constant; mode ",
                     mode, " takes no value (leave it 0)");
}

/// Per-dim pads (first dim first) from a flat list in torch order: (before, after) of the last
/// dim, then of the dim before it, ... `subject` completes "but <subject> rank r".
inline std::vector<DimPad> pads_from_flat(const std::vector<index_t>& flat, index_t rank,
                                          const char* function, const char* subject) {
  if (flat.size() % 2 != 0)
    fail<ValueError>(function, "pad ", listed(flat), " has odd length ", flat.size(),
                     "; expected (before, after) pairs listed from the last dim backwards");
  const index_t pairs = static_cast<index_t>(flat.size() / 2);
  if (pairs > rank)
    fail<ShapeError>(function, "pad ", listed(flat), " holds ", pairs,
                     " (before, after) pairs but ", subject, " rank ", rank, "; expected at most ",
                     2 * rank, " values");
  std::vector<DimPad> pads(static_cast<std::size_t>(rank));
  for (std::size_t k = 0; k < flat.size() / 2; ++k)
    pads[static_cast<std::size_t>(rank) - 1 - k] = DimPad{flat[2 * k], flat[2 * k + 1]};
  return pads;
}

/// Per-dim pads from {before, after} pairs, one per dim, first dim first; no pairs at all pads
/// nothing (so `pad(x, {})`, which picks this form, means no padding as in the flat form).
inline std::vector<DimPad> pads_from_pairs(const std::vector<std::array<index_t, 2>>& pairs,
                                           index_t rank, const char* function,
                                           const char* subject) {
  if (pairs.empty()) return std::vector<DimPad>(static_cast<std::size_t>(rank));
  if (static_cast<index_t>(pairs.size()) != rank)
    fail<ShapeError>(function, "got ", pairs.size(), " {before, after} pairs but ", subject,
                     " rank ", rank, "; expected one pair per dim, first dim first, or none");
  std::vector<DimPad> pads;
  pads.reserve(pairs.size());
  for (const auto& pair : pairs)
    pads.push_back(DimPad{pair[0], pair[1]});
  return pads;
}

/// " of element i" for errors about batch elements, nothing for dense tensors.
struct ElementSuffix {
  index_t element = -1;
  friend std::ostream& operator<<(std::ostream& out, const ElementSuffix& s) {
    if (s.element >= 0) out << " of element " << s.element;
    return out;
  }
};

/// The shape of `shape` padded by `pads`, after checking every dim against the mode's limits:
/// output sizes >= 0; reflect needs pads < size, symmetric and circular pads <= size,
/// replicate a non-empty dim (only positive pads count; crops need no source data).
inline Shape padded_shape(const Shape& shape, const std::vector<DimPad>& pads, PadMode mode,
                          const char* function, index_t element = -1) {
  TBATCH_ASSERT(pads.size() == shape.size());
  const ElementSuffix of{element};
  Shape out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const index_t size = shape[d], before = pads[d].before, after = pads[d].after;
    // Both partial sums are checked, so -before and -after are representable below.
    checked_add(size, after, function);
    const index_t padded = checked_add(checked_add(size, before, function), after, function);
    if (padded < 0)
      fail<ShapeError>(function, "padding (", before, ", ", after, ") at dim ", d, of,
                       " would make its size ", size, " negative (", padded,
                       "); crops may remove at most the whole dim");
    const bool grows = before > 0 || after > 0;
    const index_t widest = std::max(before, after);
    if (mode == PadMode::reflect && grows && widest >= size)
      fail<ValueError>(function, "padding (", before, ", ", after, ") at dim ", d, of,
                       " must be less than its size ", size, " for mode reflect");
    if ((mode == PadMode::symmetric || mode == PadMode::circular) && grows && widest > size)
      fail<ValueError>(function, "padding (", before, ", ", after, ") at dim ", d, of,
                       " must be at most its size ", size, " for mode ", mode);
    if (mode == PadMode::replicate && grows && size == 0)
      fail<ValueError>(function, "padding (", before, ", ", after, ") at dim ", d, of,
                       " needs a non-empty dim for mode replicate, but its size is 0");
    out.push_back(padded);
  }
  return out;
}

/// One dim of a pad, in output positions: [lo, hi) holds source elements lo - before ...,
/// [0, lo) is the leading border and [hi, size_out) the trailing one.
struct PadDim {
  index_t size_in = 0, size_out = 0, before = 0, after = 0, lo = 0, hi = 0;

  bool pads() const { return before != 0 || after != 0; }
};

inline std::vector<PadDim> plan_pad(const Shape& shape, const std::vector<DimPad>& pads) {
  std::vector<PadDim> plan(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    PadDim& p = plan[d];
    p.size_in = shape[d];
    p.before = pads[d].before;
    p.after = pads[d].after;
    p.size_out = p.size_in + p.before + p.after;
    p.lo = std::clamp<index_t>(p.before, 0, p.size_out);
    p.hi = std::clamp<index_t>(p.before + p.size_in, 0, p.size_out);
  }
  return plan;
}

/// Slope of the map from a border's output positions to the positions it copies:
/// reflect and symmetric run backwards, replicate stays put, circular runs forwards.
inline index_t border_slope(PadMode mode) {
  switch (mode) {
    case PadMode::reflect:
    case PadMode::symmetric:
      return -1;
    case PadMode::replicate:
      return 0;
    default:
      return 1;
  }
}

/// The output position whose element the border position `j` copies: the mode's index rule
/// maps j's source coordinate (outside [0, size_in)) back into the source, and the result is
/// shifted to where the interior holds it.
inline index_t border_source(PadMode mode, const PadDim& p, index_t j) {
  const index_t c = j - p.before, n = p.size_in;
  index_t m = 0;
  switch (mode) {
    case PadMode::reflect:
      m = c < 0 ? -c : 2 * (n - 1) - c;
      break;
    case PadMode::symmetric:
      m = c < 0 ? -c - 1 : 2 * n - 1 - c;
      break;
    case PadMode::replicate:
      m = c < 0 ? 0 : n - 1;
      break;
    case PadMode::circular:
      m = c < 0 ? c + n : c - n;
      break;
    case PadMode::constant:
      break;
  }
  return m + p.before;
}

/// The source index output position `j` of dim `p` reads: j - before inside the source, the
/// mode's index rule in a border, -1 in a constant border.
inline index_t source_index(PadMode mode, const PadDim& p, index_t j) {
  const index_t c = j - p.before;
  if (c >= 0 && c < p.size_in) return c;
  if (mode == PadMode::constant) return -1;
  return border_source(mode, p, j) - p.before;
}

/// True when both borders of a dim copy only positions of the written interior [lo, hi); a
/// crop on the far side can remove the data a border mirrors (reflect (2, -3) of 4 elements).
inline bool borders_read_interior(PadMode mode, const PadDim& p) {
  auto inside = [&](index_t j0, index_t j1) {
    if (j0 >= j1) return true;
    const index_t a = border_source(mode, p, j0), b = border_source(mode, p, j1 - 1);
    return std::min(a, b) >= p.lo && std::max(a, b) < p.hi;
  };
  return inside(0, p.lo) && inside(p.hi, p.size_out);
}

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

/// Elements per 64-byte chunk of copy_row.
template <class T>
inline constexpr index_t row_chunk = std::max<index_t>(1, 64 / index_t(sizeof(T)));

/// Copies a row of n elements (no overlap). Rows of one to 16 cache lines are copied inline, in
/// fixed-size 64-byte chunks the compiler turns into single vector moves, the last chunk ending
/// at the row's end (overlapping the one before): on 56-float rows a memmove call per row
/// costs more than the copy. Other rows go to memmove.
template <class T>
void copy_row(T* out, const T* in, index_t n) {
  constexpr index_t chunk = row_chunk<T>;
  if (n < chunk || n > 16 * chunk) {
    std::copy_n(in, n, out);
    return;
  }
  index_t i = 0;
  for (; i + chunk <= n; i += chunk)
    std::memcpy(static_cast<void*>(out + i), in + i, chunk * sizeof(T));
  if (i < n) std::memcpy(static_cast<void*>(out + n - chunk), in + n - chunk, chunk * sizeof(T));
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

  void write(T* out, const T* in) const {
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
};

/// The interior copy and the borders of the last two dims in one pass, plane by plane:
/// `src_planes` and `dst_planes` are the source and destination narrowed to the interior on every
/// dim but the last two, which are whole; both are dense along the last dim. Each output row of a
/// plane is written in order, [left border | row | right border], border rows included, every
/// value read from the source (or `value`). So the output streams out once, in address order: a
/// later pass over the border rows touches a few lines per plane, far apart, that the prefetcher
/// has not fetched (on 56 x 56 planes that pass made pad about 10% slower). It writes through
/// the cache: streaming its rows (composed in a small buffer, whole lines streamed out)
/// measured 0.5-1.1x of this on outputs of 3-110 MB. With streaming `stores`, constant mode on
/// dense output rows of at least a line goes to stream_constant_rows where the CPU has it.
/// The shortest output row pad_planes_fused streams: composing lines from masked loads costs more
/// than streaming saves on short rows. 64 MiB outputs padded by one on each side of the last dim
/// (AVX-512, 2-core VM) took 2.5-2.8x the cached pass's time with rows of 128-192 bytes, 1.13x
/// at 256, 0.87-0.94x at 384-512.
inline constexpr index_t streamed_row_min_bytes = 384;

template <class T>
void pad_planes_fused(const StridedView<const T>& src_planes, const StridedView<T>& dst_planes,
                      const PadDim& ph, const PadDim& pw, PadMode mode, T value, Stores stores) {
  const index_t rank = dst_planes.dim();
  // The source row each output row of a plane copies; -1 for a constant border row.
  std::vector<index_t> source_rows(static_cast<std::size_t>(ph.size_out));
  for (index_t j = 0; j < ph.size_out; ++j)
    source_rows[static_cast<std::size_t>(j)] = source_index(mode, ph, j);
  const RowPadder<T> row_padder(pw, mode, value);
  const index_t lo = pw.lo, size_out = pw.size_out, width = pw.hi - lo;
  const index_t in_row = src_planes.strides()[rank - 2], out_row = dst_planes.strides()[rank - 2];
  auto write_plane = [&](T* out, const T* in) {
    for (index_t j = 0; j < ph.size_out; ++j) {
      T* row = out + j * out_row;
      const index_t source_row = source_rows[static_cast<std::size_t>(j)];
      if (source_row < 0)
        std::fill_n(row, size_out, value);
      else
        row_padder.write(row, in + source_row * in_row);
    }
  };
  [[maybe_unused]] const bool streamed =
      row_padder.constant && stores == Stores::streaming && out_row == size_out &&
      size_out * index_t(sizeof(T)) >= streamed_row_min_bytes && constant_rows_supported();
  [[maybe_unused]] const ConstantRows rows{.rows = ph.size_out,
                                           .row_length = size_out,
                                           .lo = lo,
                                           .width = width,
                                           .source_rows = source_rows.data(),
                                           .in_row_stride = in_row};
  // The engine walks the planes' first elements; each run is a line of planes.
  for_each_run(
      "pad",
      [&](index_t n, const std::array<index_t, 2>& stride, T* out, const T* in) {
#if TBATCH_CONSTANT_ROWS
        if (streamed) {
          stream_constant_planes(out, in + row_padder.first, n, stride, rows, value);
          return;
        }
#endif
        for (index_t i = 0; i < n; ++i)
          write_plane(out + i * stride[0], in + i * stride[1]);
      },
      dst_planes.select(rank - 1, 0).select(rank - 2, 0),
      src_planes.select(rank - 1, 0).select(rank - 2, 0));
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

/// Bytes of output per block: small enough that a block's interior is still in cache when its
/// borders are copied from it.
inline constexpr index_t pad_block_bytes = index_t(1) << 19;

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
  if (lead > 1) {  // fold the leading dims into one when both layouts allow it
    auto in_folded = layout::try_flatten(src.layout(), 0, lead - 1);
    auto out_folded = layout::try_flatten(dst.layout(), 0, lead - 1);
    if (in_folded && out_folded) {
      in = src.with_layout(std::move(*in_folded));
      out = dst.with_layout(std::move(*out_folded));
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
      Tensor<T> canvas = Tensor<T>::empty(wide);
      const std::vector<PadDim> uncropped_plan = plan_pad(src.shape(), uncropped);
      for ([[maybe_unused]] const PadDim& p : uncropped_plan)
        TBATCH_ASSERT(!p.pads() || borders_read_interior(mode, p));
      pad_blocked(src, canvas.view(), uncropped_plan, mode, value, Stores::cached);
      StridedView<const T> cropped = canvas.view();
      for (std::size_t d = 0; d < plan.size(); ++d)
        cropped = cropped.narrow(static_cast<index_t>(d), uncropped[d].before - pads[d].before,
                                 plan[d].size_out);
      copy_planned<T, T>(cropped, dst, stores);
      return;
    }
  }
  pad_blocked(src, dst, plan, mode, value, stores);
}

template <class T>
Tensor<T> pad_tensor(const Tensor<T>& x, const std::vector<DimPad>& pads, PadMode mode, T value) {
  Tensor<T> out = Tensor<T>::empty(padded_shape(x.shape(), pads, mode, "pad"));
  pad_views<T>(x.view(), out.view(), pads, mode, value, stores_for_output(out));
  return out;
}

/// The classes of equal sizes among a batch's elements (rows of shape_per_tensor), numbered
/// 0, 1, ... in order of first appearance. A hash table, so finding a row's class costs a few
/// nanoseconds whatever the number of classes.
class SizeClasses {
 public:
  explicit SizeClasses(index_t columns) : columns_(columns), slots_(64, 0) {}

  /// The class of `sizes` (columns values), and whether this call added it.
  std::pair<index_t, bool> find_or_add(const index_t* sizes) {
    const std::size_t h = hash(sizes);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = h & mask; slots_[at] != 0; at = (at + 1) & mask) {
      const index_t* known = keys_.data() + (slots_[at] - 1) * columns_;
      index_t d = 0;
      while (d < columns_ && known[d] == sizes[d])
        ++d;
      if (d == columns_) return {slots_[at] - 1, false};
    }
    keys_.insert(keys_.end(), sizes, sizes + columns_);
    ++count_;
    if (2 * count_ > static_cast<index_t>(slots_.size()))
      rehash(2 * slots_.size());
    else
      place(count_, h);
    return {count_ - 1, true};
  }

 private:
  std::size_t hash(const index_t* sizes) const {
    std::size_t h = 1469598103934665603ull;  // FNV-1a over the sizes
    for (index_t d = 0; d < columns_; ++d)
      h = (h ^ static_cast<std::size_t>(sizes[d])) * 1099511628211ull;
    return h;
  }
  void place(index_t id, std::size_t h) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = h & mask;
    while (slots_[at] != 0)
      at = (at + 1) & mask;
    slots_[at] = id;
  }
  void rehash(std::size_t size) {
    slots_.assign(size, 0);
    for (index_t c = 0; c < count_; ++c)
      place(c + 1, hash(keys_.data() + c * columns_));
  }

  index_t columns_;
  index_t count_ = 0;
  std::vector<index_t> keys_;   // columns_ sizes per class
  std::vector<index_t> slots_;  // class + 1, or 0 for an empty slot
};

/// The padded sizes of a batch's elements, checked against the mode's limits once per class of
/// equal sizes (the first failing element is named, as classes are met in element order).
struct PaddedSizes {
  Tensor<index_t> sizes;                // (B, rank - 1): the output's shape_per_tensor
  std::vector<index_t> class_of;        // each element's class
  std::vector<index_t> first_of_class;  // the first element of each class
  index_t most_rows = 0;                // the most rows (dims but the last) of an element
};

template <Batch B>
PaddedSizes padded_sizes(const B& batch, const std::vector<DimPad>& pads, PadMode mode) {
  const index_t batch_size = batch.batch_size(), columns = batch.element_rank() - 1;
  const Tensor<index_t> sizes_in = batch.shape_per_tensor();
  const index_t* in = sizes_in.data();
  PaddedSizes result{Tensor<index_t>::empty(Shape{batch_size, columns}),
                     std::vector<index_t>(static_cast<std::size_t>(batch_size)),
                     {},
                     0};
  index_t* out = result.sizes.data();
  SizeClasses classes(columns);
  for (index_t i = 0; i < batch_size; ++i) {
    const auto [c, added] = classes.find_or_add(in + i * columns);
    result.class_of[static_cast<std::size_t>(i)] = c;
    if (added) {
      result.first_of_class.push_back(i);
      const Shape shape = padded_shape(batch.shape_of(i), pads, mode, "pad", i);
      index_t rows = 1;
      for (index_t d = 0; d < columns; ++d)
        rows = checked_mul(rows, out[i * columns + d] = shape[d], "pad");
      result.most_rows = std::max(result.most_rows, rows);
    } else {
      std::copy_n(out + result.first_of_class[static_cast<std::size_t>(c)] * columns, columns,
                  out + i * columns);
    }
  }
  return result;
}

/// A batch of the same layout as `batch` for elements of `sizes` (padded and checked),
/// allocated, nothing written. Padded slots grow by the pads (max_shape + before + after);
/// packed rows follow the new sizes.
template <Batch B>
B allocate_padded_batch(const B& batch, const Tensor<index_t>& sizes,
                        const std::vector<DimPad>& pads, PadMode mode) {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<B, PackedBatch<T>>) {
    const Shape last =
        padded_shape(Shape{batch.last_dim()}, {pads.back()}, PadMode::constant, "pad");
    const Tensor<index_t> first_idx = packed_first_idx(sizes, "pad");
    Tensor<T> data = Tensor<T>::empty(Shape{first_idx.data()[sizes.size(0)], last[0]});
    return PackedBatch<T>(std::move(data), sizes, first_idx);
  } else {
    // Exact: every slot is an element, so the mode's limits apply even to an empty batch;
    // padded: the slot's sizes only need to stay >= 0.
    const Shape slot(batch.data().shape().begin() + 1, batch.data().shape().end());
    const PadMode slot_mode = std::is_same_v<B, ExactBatch<T>> ? mode : PadMode::constant;
    Shape data_shape{batch.batch_size()};
    for (index_t s : padded_shape(slot, pads, slot_mode, "pad"))
      data_shape.push_back(s);
    Tensor<T> data = Tensor<T>::empty(data_shape);
    if constexpr (std::is_same_v<B, ExactBatch<T>>)
      return ExactBatch<T>(std::move(data));
    else
      return PaddedBatch<T>(std::move(data), sizes);
  }
}

/// For each row (position over all dims but the last) of `rows_shape`, where the padded element
/// reads it from: the offset of the source row from the element's start (the element's dims
/// are `plan`, its strides `in_strides`), or -1 for a row of `value`: a constant border row, or
/// a row outside the padded element (rows_shape may be a padded batch's slot). Built with the
/// view engine: each dim's offsets spread over the others and summed.
inline Tensor<index_t> source_rows_of(const Shape& rows_shape, const std::vector<PadDim>& plan,
                                      const Strides& in_strides, PadMode mode) {
  Tensor<index_t> sources(rows_shape, index_t(0));
  const auto rows_rank = static_cast<index_t>(rows_shape.size());
  for (index_t d = 0; d < rows_rank; ++d) {
    const PadDim& p = plan[static_cast<std::size_t>(d)];
    Tensor<index_t> along = Tensor<index_t>::empty(Shape{rows_shape[d]});
    for (index_t j = 0; j < rows_shape[d]; ++j) {
      const index_t source = j < p.size_out ? source_index(mode, p, j) : -1;
      along.data()[j] = source < 0 ? -1 : source * in_strides[d];
    }
    Strides spread(std::size_t(rows_rank), 0);
    spread[d] = 1;
    for_each([](index_t& row, const index_t& part) { row = row < 0 || part < 0 ? -1 : row + part; },
             sources.view(),
             StridedView<const index_t>(along.view()).with_layout(Layout{rows_shape, spread, 0}));
  }
  return sources;
}

/// Rows an element (or a padded batch's slot) may have for pad_batch_by_rows, so that its table
/// of source rows stays small.
inline constexpr index_t pad_rows_limit = 4096;
/// Rows of source-row tables kept at once (8 bytes each) before they are dropped and rebuilt.
inline constexpr index_t pad_rows_cache = index_t(1) << 17;

/// pad of a batch whose elements are rows dense along the last dim, into `out` (allocated),
/// row by row: each output row is a source row padded by one RowPadder, or `value`. Elements of
/// a class of equal sizes share one table of source rows (source_rows_of), so an element costs
/// its rows and no planning. The output is written whole (a padded batch's slot padding
/// included) and in address order, through the cache.
template <Batch B>
void pad_batch_by_rows(const B& batch, B& out, const PaddedSizes& padded,
                       const std::vector<DimPad>& pads, PadMode mode,
                       typename B::value_type value) {
  using T = typename B::value_type;
  const index_t columns = batch.element_rank() - 1;
  Shape element_shape = Shape::filled(std::size_t(batch.element_rank()), 0);
  element_shape.set(columns, batch.last_dim());  // the other dims' sizes are per class
  const std::vector<PadDim> plan = plan_pad(element_shape, pads);
  const RowPadder<T> row_padder(plan.back(), mode, value);
  const index_t row_length = row_padder.size_out;
  const Tensor<index_t> sizes_in = batch.shape_per_tensor();
  Tensor<T> out_data = out.data();
  const Shape& out_shape = out_data.shape();
  const Shape slot_rows(out_shape.begin() + 1, out_shape.end() - 1);  // padded batches only

  auto table_of = [&](index_t c) {
    const index_t i = padded.first_of_class[static_cast<std::size_t>(c)];
    std::vector<PadDim> element_plan = plan;
    Shape rows_shape =
        std::is_same_v<B, PaddedBatch<T>> ? slot_rows : Shape::filled(std::size_t(columns), 0);
    for (index_t d = 0; d < columns; ++d) {
      PadDim& p = element_plan[static_cast<std::size_t>(d)];
      p = plan_pad(Shape{sizes_in.data()[i * columns + d]}, {DimPad{p.before, p.after}})[0];
      if constexpr (!std::is_same_v<B, PaddedBatch<T>>) rows_shape.set(d, p.size_out);
    }
    return source_rows_of(rows_shape, element_plan, batch.element(i).strides(), mode);
  };
  // The tables, one after another in `arena`; a class's span starts at -1 until it is built.
  struct Span {
    index_t start = -1, count = 0;
  };
  std::vector<Span> spans(padded.first_of_class.size());
  std::vector<index_t> arena;
  const T* in = batch.data().data();
  T* written = out_data.data();
  const BatchGeometry in_place = geometry_of(batch);
  const BatchGeometry out_place = geometry_of(out);
  for (index_t i = 0; i < batch.batch_size(); ++i) {
    Span& span = spans[static_cast<std::size_t>(padded.class_of[static_cast<std::size_t>(i)])];
    if (span.start < 0) {
      if (static_cast<index_t>(arena.size()) > pad_rows_cache) {  // many sizes: start again
        arena.clear();
        std::fill(spans.begin(), spans.end(), Span{});
      }
      const Tensor<index_t> table = table_of(padded.class_of[static_cast<std::size_t>(i)]);
      span = Span{static_cast<index_t>(arena.size()), table.numel()};
      arena.insert(arena.end(), table.data(), table.data() + span.count);
    }
    const index_t* sources = arena.data() + span.start;
    const index_t n = span.count;
    const T* element = in + in_place.start(i);
    T* target = written + out_place.start(i);
    for (index_t r = 0; r < n;) {
      if (sources[r] >= 0) {
        row_padder.write(target, element + sources[r]);
        ++r;
        target += row_length;
        continue;
      }
      index_t fills = 1;  // consecutive rows of `value` are one fill
      while (r + fills < n && sources[r + fills] < 0)
        ++fills;
      std::fill_n(target, fills * row_length, value);
      r += fills;
      target += fills * row_length;
    }
  }
}

/// pad for every batch layout, once: each element(i) is padded into element(i) of a result of
/// the same layout, so borders only ever read the element's own data. Elements with rows dense
/// along the last dim and at most pad_rows_limit rows (a padded batch: per slot) go row by row
/// (pad_batch_by_rows); larger ones through pad_views, whose per-call planning their size
/// repays.
template <Batch B>
B pad_batch(const B& batch, const std::vector<DimPad>& pads, PadMode mode,
            typename B::value_type value) {
  using T = typename B::value_type;
  constexpr bool padded_layout = std::is_same_v<B, PaddedBatch<T>>;
  const PaddedSizes padded = padded_sizes(batch, pads, mode);
  B out = allocate_padded_batch(batch, padded.sizes, pads, mode);
  const Tensor<T>& data = out.data();
  const index_t slot_rows =
      padded_layout && data.numel() > 0 ? data.numel() / data.size(0) / data.size(-1) : 0;
  const Tensor<T>& source_data = batch.data();
  if ((source_data.size(-1) <= 1 || source_data.stride(-1) == 1) &&
      std::max(padded.most_rows, slot_rows) <= pad_rows_limit) {
    pad_batch_by_rows(batch, out, padded, pads, mode, value);
    return out;
  }
  const Stores stores = stores_for_output(out.data());
  Tensor<T> target_data = out.data();
  const BatchGeometry geometry = geometry_of(out);
  for (index_t i = 0; i < batch.batch_size(); ++i) {
    const Tensor<T> source = batch.element(i);
    Tensor<T> target = out.element(i);
    pad_views<T>(source.view(), target.view(), pads, mode, value, stores);
    geometry.for_each_padding(target_data.layout(), i, [&](const Layout& box) {
      fill_view(target_data.view().with_layout(box), value, Stores::cached);
    });
  }
  return out;
}

inline constexpr const char* tensor_subject = "the tensor has";
inline constexpr const char* batch_subject = "the batch's elements have";

}  // namespace detail

/// `x` padded by `pad`, listed from the last dim backwards as in torch.nn.functional.pad and
/// PyPTO: (before_last, after_last, before_prev, after_prev, ...), even length, at most
/// 2 * rank values; dims not listed are not padded. Negative values crop. In constant mode the
/// border is `value`; the other modes take no value. Limits: reflect needs pads < size,
/// symmetric and circular pads <= size, replicate a non-empty dim. Any strided `x`; the result
/// is a new contiguous tensor of shape x.shape() with dim d grown by its before + after.
/// Errors: ValueError for an odd-length list, a pad over a mode's limit, a non-zero `value` in
/// a non-constant mode, or a `mode` that is not a PadMode; ShapeError for more pairs than dims,
/// a crop below size 0, or a size that overflows.
template <class T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<index_t>& pad, PadMode mode = PadMode::constant,
              std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_tensor(x, detail::pads_from_flat(pad, x.dim(), "pad", detail::tensor_subject),
                            mode, value);
}

/// `x` padded by one {before, after} pair per dim, first dim first (the TF / ONNX order); no
/// pairs pads nothing. ShapeError unless there are exactly rank pairs or none; otherwise the
/// same semantics and errors as the flat form.
template <class T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<std::array<index_t, 2>>& pairs,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_tensor(
      x, detail::pads_from_pairs(pairs, x.dim(), "pad", detail::tensor_subject), mode, value);
}
template <class T>
Tensor<T> pad(const Tensor<T>& x, std::initializer_list<std::array<index_t, 2>> pairs,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  return pad(x, std::vector<std::array<index_t, 2>>(pairs), mode, value);
}

/// The shape pad(x, pad, mode) has for an `x` of `shape`, checked as pad checks it, with the
/// same errors (use it to size the output of pad_into).
inline Shape pad_shape(const Shape& shape, const std::vector<index_t>& pad,
                       PadMode mode = PadMode::constant) {
  detail::check_pad_mode(mode, "pad_shape");
  return detail::padded_shape(shape,
                              detail::pads_from_flat(pad, static_cast<index_t>(shape.size()),
                                                     "pad_shape", detail::tensor_subject),
                              mode, "pad_shape");
}

/// pad into a caller-owned view `out` of shape pad_shape(x.shape(), pad, mode) (ShapeError
/// otherwise), for example a slot of a larger tensor or memory the caller owns. `out` must not
/// map two elements to one address (ValueError). Allocates nothing, except a copy of `x` when it
/// shares elements with `out` and a temporary when a crop removes data a non-constant border
/// mirrors. Other errors as pad.
template <class S, class T>
requires std::same_as<std::remove_const_t<S>, T>
void pad_into(StridedView<S> x, const std::vector<index_t>& pad, StridedView<T> out,
              PadMode mode = PadMode::constant, std::type_identity_t<T> value = T(0)) {
  detail::check_pad_mode(mode, "pad_into");
  detail::check_pad_value(mode, value, "pad_into");
  const std::vector<detail::DimPad> pads =
      detail::pads_from_flat(pad, x.dim(), "pad_into", detail::tensor_subject);
  const Shape expected = detail::padded_shape(x.shape(), pads, mode, "pad_into");
  if (!(out.shape() == expected))
    detail::fail<ShapeError>("pad_into", "out has shape ", out.shape(), " but x of shape ",
                             x.shape(), " padded by ", detail::listed(pad), " has shape ",
                             expected);
  detail::check_distinct_elements(out, "pad_into");
  Tensor<T> staging;
  detail::pad_views<T>(detail::unaliased(StridedView<const T>(x), out, staging), out, pads, mode,
                       value, detail::stores_for_output(out));
}

/// Each element of a batch padded inside its own valid extent (borders never read the batch
/// padding or a neighbour), returned in the same layout with updated shape_per_tensor /
/// first_idx. `pad` applies to the element's dims, last dim first (at most 2 * element_rank
/// values). Padded slots grow by the pads (max_shape[d] + before + after) and everything outside
/// the elements is `value`. The dense form's errors, with the limits checked per element (the
/// message names the element).
template <Batch B>
B pad(const B& batch, const std::vector<index_t>& pad, PadMode mode = PadMode::constant,
      typename B::value_type value = typename B::value_type(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_batch(
      batch, detail::pads_from_flat(pad, batch.element_rank(), "pad", detail::batch_subject), mode,
      value);
}

/// Batch pad with one {before, after} pair per element dim, first dim first (exactly
/// element_rank pairs, or none: ShapeError otherwise).
template <Batch B>
B pad(const B& batch, const std::vector<std::array<index_t, 2>>& pairs,
      PadMode mode = PadMode::constant, typename B::value_type value = typename B::value_type(0)) {
  detail::check_pad_mode(mode, "pad");
  detail::check_pad_value(mode, value, "pad");
  return detail::pad_batch(
      batch, detail::pads_from_pairs(pairs, batch.element_rank(), "pad", detail::batch_subject),
      mode, value);
}
template <Batch B>
B pad(const B& batch, std::initializer_list<std::array<index_t, 2>> pairs,
      PadMode mode = PadMode::constant, typename B::value_type value = typename B::value_type(0)) {
  return pad(batch, std::vector<std::array<index_t, 2>>(pairs), mode, value);
}

}  // namespace tbatch
