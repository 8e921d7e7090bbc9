#pragma once
// pad of every batch layout: each element padded inside its own valid extent.

#include <algorithm>
#include <array>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/config.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/ops/pad_plan.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <cstring>

#include "tbatch/base/tuning.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/ops/pad_kernel.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/streaming.hpp"
#endif

namespace tbatch {
namespace detail {

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

/// The kernel of pad_batch, compiled once per element width: pads each element of the batch
/// placed by `from` in `in` into the one placed by `to` in `out` (allocated for `padded`), and
/// fills a padded output's slot padding; `value` points at the bits of one element.
TBATCH_INLINE void pad_batch_raw(const BatchGeometry& from, const RawView& in,
                                 const BatchGeometry& to, const RawView& out,
                                 const PaddedSizes& padded, const std::vector<DimPad>& pads,
                                 PadMode mode, const void* value);

#if TBATCH_DEFINITIONS
/// pad of a batch whose elements are rows dense along the last dim, into `out` (allocated),
/// row by row. Elements of a class of equal sizes share one table of source rows
/// (append_source_rows); each element's output rows are one dense run (a padded batch: its whole
/// slot), from its start in the output, read from its start in the source (the batch geometry
/// places both), and RowPadder::write_rows, the fused pass's loop body, writes them from the
/// table. So an element costs its rows and no planning. The output is written whole (a padded
/// batch's slot padding included) and in address order, through the cache.
template <class T>
void pad_batch_by_rows(const BatchGeometry& from, const StridedView<const T>& in_data,
                       const BatchGeometry& to, const StridedView<T>& out_data,
                       const PaddedSizes& padded, const std::vector<DimPad>& pads, PadMode mode,
                       T value) {
  const bool padded_layout = to.kind() == BatchKind::padded;
  const auto columns = static_cast<std::size_t>(from.columns());
  const RowPadder<T> row_padder(plan_pad(Shape{from.last_dim()}, {pads.back()})[0], mode, value);
  const Shape& out_shape = out_data.shape();
  // The rows an element's output spans: its padded sizes, or a padded batch's whole slot.
  Shape rows_shape =
      padded_layout ? Shape(out_shape.begin() + 1, out_shape.end() - 1) : Shape::filled(columns, 0);
  std::vector<PadDim> row_plan(columns);
  Strides in_strides(columns);

  // The tables, one after another in `tables`; a class's span starts at -1 until it is built.
  struct Span {
    index_t start = -1, count = 0;
  };
  std::vector<Span> spans(padded.first_of_class.size());
  std::vector<index_t> tables;
  auto build = [&](index_t i) {
    for (std::size_t d = 0; d < columns; ++d) {
      const auto dim = static_cast<index_t>(d);
      row_plan[d] = plan_pad(Shape{from.size(i, dim)}, {pads[d]})[0];
      if (!padded_layout) rows_shape.set(d, row_plan[d].size_out);
      in_strides[d] = from.stride(i, dim);
    }
    const auto start = static_cast<index_t>(tables.size());
    append_source_rows(tables, rows_shape.data(), row_plan.data(), in_strides.data(), columns,
                       mode);
    return Span{start, static_cast<index_t>(tables.size()) - start};
  };
  const T* in = in_data.data();
  T* written = out_data.data();
  for (index_t i = 0; i < from.batch_size(); ++i) {
    Span& span = spans[static_cast<std::size_t>(padded.class_of[static_cast<std::size_t>(i)])];
    if (span.start < 0) {
      if (static_cast<index_t>(tables.size()) > pad_rows_cache) {  // many sizes: start again
        tables.clear();
        std::fill(spans.begin(), spans.end(), Span{});
      }
      span = build(i);
    }
    row_padder.write_rows(written + to.start(i), row_padder.size_out, in + from.start(i),
                          tables.data() + span.start, span.count);
  }
}

/// pad_batch_raw's body for the word T of the element width. Header-only mode calls it directly,
/// so a file compiles only the widths it pads; the library's pad_batch_raw dispatches to it.
template <class T>
void pad_batch_words(const BatchGeometry& from, const RawView& in, const BatchGeometry& to,
                     const RawView& out, const PaddedSizes& padded, const std::vector<DimPad>& pads,
                     PadMode mode, const void* value) {
  T fill;
  std::memcpy(&fill, value, sizeof(T));
  const StridedView<const T> source_data = typed_view<const T>(in);
  const StridedView<T> all = typed_view<T>(out);
  // Elements with rows dense along the last dim and at most pad_rows_limit rows (a padded
  // batch: per slot) go row by row; larger ones through pad_views, whose per-call planning
  // their size repays.
  const index_t slot_rows = to.kind() == BatchKind::padded && all.numel() > 0
                                ? all.numel() / all.size(0) / all.size(-1)
                                : 0;
  if ((source_data.size(-1) <= 1 || source_data.strides().back() == 1) &&
      std::max(padded.most_rows, slot_rows) <= pad_rows_limit) {
    pad_batch_by_rows(from, source_data, to, all, padded, pads, mode, fill);
    return;
  }
  const Stores stores = stores_for_output(all);
  for (index_t i = 0; i < from.batch_size(); ++i) {
    pad_views<T>(source_data.with_layout(from.element(i)), all.with_layout(to.element(i)), pads,
                 mode, fill, stores);
    to.for_each_padding(all.layout(), i, [&](const Layout& box) {
      fill_view(all.with_layout(box), fill, Stores::cached);
    });
  }
}
#endif  // TBATCH_DEFINITIONS

/// pad for every batch layout, once: each element(i) is padded into element(i) of a result of
/// the same layout, so borders only ever read the element's own data.
template <Batch B>
B pad_batch(const B& batch, const std::vector<DimPad>& pads, PadMode mode,
            typename B::value_type value) {
  const PaddedSizes padded = padded_sizes(batch, pads, mode);
  B out = allocate_padded_batch(batch, padded.sizes, pads, mode);
#if TBATCH_DEFINITIONS
  pad_batch_words<WordOf<typename B::value_type>>(geometry_of(batch), raw_view(batch.data().view()),
                                                  geometry_of(out), raw_view(out.data().view()),
                                                  padded, pads, mode, &value);
#else
  pad_batch_raw(geometry_of(batch), raw_view(batch.data().view()), geometry_of(out),
                raw_view(out.data().view()), padded, pads, mode, &value);
#endif
  return out;
}

}  // namespace detail

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

// The library's entry point (compiled mode), one function for every width.
#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void pad_batch_raw(const BatchGeometry& from, const RawView& in,
                                 const BatchGeometry& to, const RawView& out,
                                 const PaddedSizes& padded, const std::vector<DimPad>& pads,
                                 PadMode mode, const void* value) {
  dispatch_width(out.element_size(), [&]<class W>(std::type_identity<W>) {
    pad_batch_words<W>(from, in, to, out, padded, pads, mode, value);
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
