#pragma once
// Selection on batches: masked_select (entries or rows of each element where a mask holds, as a
// packed batch) and the batch-dim operations index_select, slice, split and cat. A slice (and
// index_select of a contiguous ascending range) is a view of the batch's data; other selections
// copy the data once. docs/ragged.md is the guide.

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/conversions_common.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/math/joins.hpp"
#include "tbatch/math/masked_select.hpp"
#include "tbatch/ragged/batch_map.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/copy.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {
namespace detail {

/// Element i's mask, of layout `mask`, as a view at x's element shape `shape`: the mask itself
/// (entries), or a (L_i, 1) mask broadcast along the element's dims after the first (rows).
/// ShapeError naming the element when its sizes do not pair.
TBATCH_INLINE Layout element_mask(const Layout& mask, const Shape& shape, bool rows, index_t i);

/// The batch of the elements [start, start + count) of x, a view of its data.
template <class T>
ExactBatch<T> slice_elements(const ExactBatch<T>& x, index_t start, index_t count) {
  return ExactBatch<T>(x.data().narrow(0, start, count));
}
template <class T>
PaddedBatch<T> slice_elements(const PaddedBatch<T>& x, index_t start, index_t count) {
  return PaddedBatch<T>(x.data().narrow(0, start, count),
                        x.shape_per_tensor().narrow(0, start, count), ValidMetadata{});
}
template <class T>
PackedBatch<T> slice_elements(const PackedBatch<T>& x, index_t start, index_t count) {
  // The elements' rows: from the first's start to the last's end, rebased to start at 0.
  const Tensor<index_t> bounds = x.first_idx().narrow(0, start, count + 1);
  const index_t first_row = bounds.data()[0];
  return PackedBatch<T>(x.data().narrow(0, first_row, bounds.data()[count] - first_row),
                        x.shape_per_tensor().narrow(0, start, count).contiguous(),
                        bounds - first_row, ValidMetadata{});
}

/// `index` (-size to size) as a position 0 to size; IndexError naming `argument` otherwise.
TBATCH_INLINE index_t batch_position(index_t index, index_t size, const char* function,
                                     const char* argument);

/// IndexError naming the first of `indices` (1-d) outside [0, size); ShapeError unless 1-d.
TBATCH_INLINE void check_element_indices(const Tensor<index_t>& indices, index_t size);

/// ShapeError unless every batch of `list` holds elements of list[0]'s rank and last dim.
template <class B>
void check_joinable(const std::vector<B>& list) {
  if (list.empty())
    fail<ValueError>("cat", {"the list of batches is empty; expected at least one batch"});
  for (std::size_t j = 1; j < list.size(); ++j)
    if (list[j].element_rank() != list[0].element_rank() ||
        list[j].last_dim() != list[0].last_dim())
      fail<ShapeError>("cat", {"batch ", j, " holds elements of rank ", list[j].element_rank(),
                               " with last dim ", list[j].last_dim(), " but batch 0 of rank ",
                               list[0].element_rank(), " with last dim ", list[0].last_dim(),
                               "; a concatenation needs one element rank and last dim"});
}

template <class B>
std::vector<Tensor<ValueOf<B>>> data_list(const std::vector<B>& list) {
  std::vector<Tensor<ValueOf<B>>> out;
  for (const B& b : list)
    out.push_back(b.data());
  return out;
}
template <class B>
Tensor<index_t> shape_per_tensor_list(const std::vector<B>& list) {
  std::vector<Tensor<index_t>> sizes;
  for (const B& b : list)
    sizes.push_back(b.shape_per_tensor());
  return cat(sizes, 0);
}

}  // namespace detail

/// Each element's entries where `mask` holds, in index order, as a packed batch (torch's
/// masked_select, per element). `mask` is a bool batch of any layout with as many elements:
/// - element i's mask of element i's shape selects entries: element i becomes (n_i, 1), a
///   sequence of n_i scalars;
/// - a (L_i, 1) mask against an element (L_i, ...) selects rows (TensorFlow's boolean_mask):
///   element i becomes (n_i, ...).
/// ShapeError naming the first element whose mask fits neither.
template <LayoutBatch B, LayoutBatch M>
PackedBatch<detail::ValueOf<B>> masked_select(const B& x, const M& mask) {
  using T = detail::ValueOf<B>;
  detail::require_bool_mask<detail::ValueOf<M>>();
  const index_t batch = x.batch_size(), rank = x.element_rank();
  if (mask.batch_size() != batch)
    detail::fail<ShapeError>(
        "masked_select", {"the mask holds ", mask.batch_size(), " elements but the batch ", batch,
                          "; expected one mask per element"});
  const bool rows = !(mask.element_rank() == rank && mask.last_dim() == x.last_dim());
  if (rows && !(mask.element_rank() == 2 && mask.last_dim() == 1 && rank >= 2))
    detail::fail<ShapeError>(
        "masked_select",
        {"the mask holds elements of rank ", mask.element_rank(), " with last dim ",
         mask.last_dim(), " but the batch of rank ", rank, " with last dim ", x.last_dim(),
         "; expected masks of the elements' shapes (select entries) or (L_i, 1) "
         "(select rows)"});
  const detail::BatchGeometry gx = detail::geometry_of(x), gm = detail::geometry_of(mask);
  // Counts first: they are the result's metadata and size its data.
  std::vector<Layout> masks;
  masks.reserve(static_cast<std::size_t>(batch));
  const index_t columns = rows ? rank - 1 : 1;
  Tensor<index_t> shape_per_tensor = Tensor<index_t>::empty(Shape{batch, columns});
  Tensor<index_t> first_idx = Tensor<index_t>::empty(Shape{batch + 1});
  index_t* first = first_idx.data();
  first[0] = 0;
  for (index_t i = 0; i < batch; ++i) {
    const Layout own = gm.element(i);
    const Shape& shape = gx.element(i).shape;
    masks.push_back(detail::element_mask(own, shape, rows, i));
    index_t* sizes = shape_per_tensor.data() + i * columns;
    // Entries: n_i scalars. Rows: n_i rows of the element's dims after the first.
    sizes[0] = detail::count_true(
        detail::RawView{const_cast<bool*>(mask.data().element_pointer()), own, DType::boolean});
    for (index_t d = 1; d < columns; ++d)
      sizes[d] = shape[static_cast<std::size_t>(d)];
    detail::append_running_sum(first, i, detail::row_count(sizes, columns, "masked_select"),
                               "masked_select");
  }
  const index_t width = rows ? x.last_dim() : 1;
  // One row more than the elements need: the kernel may write one value past the last.
  Tensor<T> data = Tensor<T>::empty(Shape{first[batch] + 1, width});
  for (index_t i = 0; i < batch; ++i)
    detail::run_masked_select<T>(
        detail::element_view(x.data(), gx, i),
        StridedView<const bool>(mask.data().element_pointer(), masks[static_cast<std::size_t>(i)]),
        data.data() + first[i] * width);
  return PackedBatch<T>(data.narrow(0, 0, first[batch]), std::move(shape_per_tensor),
                        std::move(first_idx), detail::ValidMetadata{});
}

/// The elements [start, stop) of x (negative values count from the end), a view of its data
/// sharing its storage. IndexError for a bound outside [-B, B], ValueError when start > stop.
template <LayoutBatch B>
B slice(const B& x, index_t start, index_t stop) {
  const index_t size = x.batch_size();
  const index_t begin = detail::batch_position(start, size, "slice", "start");
  const index_t end = detail::batch_position(stop, size, "slice", "stop");
  if (begin > end)
    detail::fail<ValueError>("slice", {"start ", start, " comes after stop ", stop,
                                       " in a batch of ", size, " elements"});
  return detail::slice_elements(x, begin, end - begin);
}

/// x cut along the batch dim into consecutive batches of `sizes` elements each (views of x's
/// data). ValueError for a negative size, ShapeError when the sizes do not add up to B.
template <LayoutBatch B>
std::vector<B> split(const B& x, const std::vector<index_t>& sizes) {
  index_t total = 0;
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    if (sizes[j] < 0)
      detail::fail<ValueError>("split", {"sizes[", j, "] is ", sizes[j], "; expected sizes >= 0"});
    total += sizes[j];
  }
  if (total != x.batch_size())
    detail::fail<ShapeError>("split", {"sizes ", detail::listed(sizes), " add up to ", total,
                                       " but the batch has ", x.batch_size(), " elements"});
  std::vector<B> out;
  index_t start = 0;
  for (index_t size : sizes) {
    out.push_back(detail::slice_elements(x, start, size));
    start += size;
  }
  return out;
}

/// The elements of x at `indices` (1-d; any order, repeats allowed), as a batch of x's layout:
/// reorder, take or repeat elements (torchrec's permute). A packed batch's contiguous ascending
/// range is a view; otherwise the data is copied once (a padded batch keeps its slots and their
/// padding). IndexError naming the first index outside [0, B).
template <LayoutBatch B>
B index_select(const B& x, const Tensor<index_t>& indices) {
  detail::check_element_indices(indices, x.batch_size());
  const Tensor<index_t> positions = indices.contiguous();
  const index_t count = positions.size(0);
  const index_t* at = positions.data();
  bool range = true;
  for (index_t k = 1; k < count && range; ++k)
    range = at[k] == at[k - 1] + 1;
  if constexpr (detail::kind_of<B> == detail::BatchKind::exact) {
    return B(x.data().index({positions}));
  } else if constexpr (detail::kind_of<B> == detail::BatchKind::padded) {
    return B(x.data().index({positions}), x.shape_per_tensor().index({positions}),
             detail::ValidMetadata{});
  } else {
    if (range) return detail::slice_elements(x, count == 0 ? 0 : at[0], count);
    // Each element's rows are one run in the input and in the result: one copy per element.
    return detail::packed_selection(x, positions);
  }
}
template <LayoutBatch B>
B index_select(const B& x, const std::vector<index_t>& indices) {
  return index_select(x, Tensor<index_t>(Shape{static_cast<index_t>(indices.size())}, indices));
}

/// The batches of `list` one after the other along the batch dim, copied into one batch of
/// their layout. They must hold elements of one rank and last dim (ShapeError naming the first
/// that does not; exact batches: one element shape). A padded result's slots are the largest of
/// the batches' slots: each batch's slots are copied with their padding, 0 where slots grew.
/// ValueError for an empty list.
template <LayoutBatch B>
B cat(const std::vector<B>& list) {
  detail::check_joinable(list);
  if constexpr (detail::kind_of<B> == detail::BatchKind::exact) {
    return B(cat(detail::data_list(list), 0));
  } else if constexpr (detail::kind_of<B> == detail::BatchKind::padded) {
    using T = detail::ValueOf<B>;
    std::vector<index_t> sizes(list[0].data().shape().begin(), list[0].data().shape().end());
    sizes[0] = 0;
    for (const B& b : list) {
      sizes[0] += b.batch_size();
      for (std::size_t d = 1; d < sizes.size(); ++d)
        sizes[d] = std::max(sizes[d], b.data().shape()[d]);
    }
    const Shape shape(sizes);
    Tensor<T> data = Tensor<T>::zeros(shape);
    index_t start = 0;
    for (const B& b : list) {
      Tensor<T> slots = data.narrow(0, start, b.batch_size());
      for (index_t d = 1; d < slots.dim(); ++d)
        slots = slots.narrow(d, 0, b.data().size(d));
      copy(b.data().view(), slots.view());
      start += b.batch_size();
    }
    return B(std::move(data), detail::shape_per_tensor_list(list), detail::ValidMetadata{});
  } else {
    const Tensor<index_t> shape_per_tensor = detail::shape_per_tensor_list(list);
    return B(cat(detail::data_list(list), 0), shape_per_tensor,
             detail::packed_first_idx(shape_per_tensor, "cat"), detail::ValidMetadata{});
  }
}

#if TBATCH_DEFINITIONS

TBATCH_INLINE Layout detail::element_mask(const Layout& mask, const Shape& shape, bool rows,
                                          index_t i) {
  if (!rows) {
    if (!(mask.shape == shape))
      fail<ShapeError>("masked_select", {"element ", i, " has shape ", shape, " but its mask ",
                                         mask.shape, "; expected the element's shape"});
    return mask;
  }
  if (mask.shape[0] != shape[0])
    fail<ShapeError>("masked_select", {"element ", i, " has shape ", shape, " but its row mask ",
                                       mask.shape, "; expected (", shape[0], ", 1)"});
  Layout out{shape, Strides(shape.size(), 0), mask.offset};
  out.strides[0] = mask.strides[0];
  return out;
}

TBATCH_INLINE index_t detail::batch_position(index_t index, index_t size, const char* function,
                                             const char* argument) {
  if (index < -size || index > size)
    fail<IndexError>(function, {argument, " is ", index, " but the batch has ", size,
                                " elements (expected ", -size, " to ", size, ")"});
  return index < 0 ? index + size : index;
}

TBATCH_INLINE void detail::check_element_indices(const Tensor<index_t>& indices, index_t size) {
  if (indices.dim() != 1)
    fail<ShapeError>("index_select", {"indices has shape ", indices.shape(),
                                      "; expected a 1-d tensor of element indices"});
  const Tensor<index_t> dense = indices.contiguous();
  for (index_t k = 0; k < dense.size(0); ++k) {
    const index_t v = dense.data()[k];
    if (v < 0 || v >= size)
      fail<IndexError>("index_select", {"indices[", k, "] is ", v, " but the batch has ", size,
                                        " elements (expected 0 to ", size - 1, ")"});
  }
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
