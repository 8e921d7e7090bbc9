#pragma once
// The one batch geometry: where each element of an exact, padded or packed batch sits in the
// batch's data, from the data's layout and the metadata alone. Every batch function asks it;
// nothing else works out an element's place.

#include <vector>

#include "tbatch/batch/metadata.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {

namespace detail {

enum class BatchKind { exact, padded, packed };

/// Element i as one run of contiguous data elements: `count` elements from `start` (in
/// elements from the data's offset), then `tail` elements of its slot's padding, also one run.
/// `start` is -1 when the element is not one run.
struct ElementRun {
  index_t start = -1;
  index_t count = 0;
  index_t tail = 0;
  bool valid() const { return start >= 0; }
};

/// The placement of every element of a batch whose data is laid out as `data`. A view: the
/// layout and the metadata tensors must outlive it. Element indices are unchecked
/// (0 <= i < batch_size(), 0 <= d < columns()).
class BatchGeometry {
 public:
  /// Element i is data[i].
  static BatchGeometry exact(const Layout& data) {
    BatchGeometry g(BatchKind::exact, data);
    g.batch_ = data.shape[0];
    g.columns_ = data.dim() - 2;
    g.sizes_ = data.shape.data() + 1;
    return g;
  }
  /// Element i is the box [0, shape_per_tensor[i]) of slot i (data (B, max..., last_dim)).
  static BatchGeometry padded(const Layout& data, const Tensor<index_t>& shape_per_tensor) {
    BatchGeometry g(BatchKind::padded, data);
    g.read_sizes(shape_per_tensor);
    return g;
  }
  /// Element i is rows [first_idx[i], first_idx[i + 1]) of data (rows, last_dim), unflattened
  /// to shape_per_tensor[i].
  static BatchGeometry packed(const Layout& data, const Tensor<index_t>& shape_per_tensor,
                              const Tensor<index_t>& first_idx) {
    BatchGeometry g(BatchKind::packed, data);
    g.read_sizes(shape_per_tensor);
    g.first_ = first_idx.data();
    g.first_stride_ = first_idx.dim() == 1 ? first_idx.stride(0) : 1;
    return g;
  }

  BatchKind kind() const { return kind_; }
  /// Calls f(std::integral_constant<BatchKind, K>{}) with K = kind(): a loop in f that tests the
  /// constant is compiled once per kind, and the accessors' kind checks fold away inside it.
  template <class F>
  void with_kind(F&& f) const {
    switch (kind_) {
      case BatchKind::exact:
        return f(std::integral_constant<BatchKind, BatchKind::exact>{});
      case BatchKind::padded:
        return f(std::integral_constant<BatchKind, BatchKind::padded>{});
      case BatchKind::packed:
        return f(std::integral_constant<BatchKind, BatchKind::packed>{});
    }
  }
  index_t batch_size() const { return batch_; }
  /// Dims of an element before its last (element rank - 1).
  index_t columns() const { return columns_; }
  index_t last_dim() const { return last_; }
  /// Size of dim d of element i.
  index_t size(index_t i, index_t d) const {
    return kind_ == BatchKind::exact ? sizes_[d] : sizes_[i * size_row_ + d * size_column_];
  }
  /// Rows of element i: the product of its sizes but the last (what MPI sends per element).
  index_t rows(index_t i) const {
    if (kind_ == BatchKind::packed) return first(i + 1) - first(i);
    index_t rows = 1;  // no overflow: the sizes fit in the data's dims
    for (index_t d = 0; d < columns_; ++d)
      rows *= size(i, d);
    return rows;
  }
  /// Where element i's first element is, in elements from the data's offset.
  index_t start(index_t i) const {
    return (kind_ == BatchKind::packed ? first(i) : i) * data_->strides[0];
  }
  /// Stride of dim d of element i in the data.
  index_t stride(index_t i, index_t d) const {
    if (kind_ != BatchKind::packed) return data_->strides[d + 1];
    index_t stride = data_->strides[0];
    for (index_t e = d + 1; e < columns_; ++e)
      stride *= size(i, e);
    return stride;
  }

  /// Where each element starts (start(i)) as blocks of rows (walk_blocks) see it.
  BlockStarts block_starts() const {
    if (kind_ == BatchKind::packed) return {first_, first_stride_, data_->strides[0], 0, 0};
    return BlockStarts::every(data_->strides[0]);
  }
  /// Each element's row count (rows(i)) as blocks of rows see it: packed batches, and elements
  /// of rank 2 (columns() == 1) of the others.
  BlockRows block_rows() const {
    if (kind_ == BatchKind::packed) return BlockRows::between(first_, first_stride_);
    return BlockRows::counts(sizes_, kind_ == BatchKind::exact ? 0 : size_row_);
  }

  /// Element i's layout in the data: shape (sizes..., last_dim).
  Layout element(index_t i) const {
    if (kind_ != BatchKind::packed) return box(*data_, i);
    const index_t first_row = first(i);
    if (columns_ == 0) return layout::select(*data_, 0, first_row);
    const Layout rows = layout::narrow(*data_, 0, first_row, first(i + 1) - first_row);
    // Rank 2 elements are the rows themselves: no unflatten (and none of its bookkeeping).
    if (columns_ == 1) return rows;
    std::vector<index_t> sizes(static_cast<std::size_t>(columns_));
    for (index_t d = 0; d < columns_; ++d)
      sizes[static_cast<std::size_t>(d)] = size(i, d);
    return layout::unflatten(rows, 0, sizes);
  }
  /// The box of element i in slot i of `slots`, any layout of the batch's slots (B, max...,
  /// more dims): the data, a padded output or the mask. Exact and padded batches.
  Layout box(const Layout& slots, index_t i) const {
    Layout box = layout::select(slots, 0, i);
    if (kind_ == BatchKind::padded)
      for (index_t d = 0; d < columns_; ++d)
        box = layout::narrow(box, d, 0, size(i, d));
    return box;
  }
  /// Calls fill(box) for each of the disjoint boxes of slot i of `slots` outside element i's
  /// box: per dim d, the dims before d narrowed to the element, dim d past it, later dims whole.
  template <class Fill>
  void for_each_padding(const Layout& slots, index_t i, Fill&& fill) const {
    if (kind_ != BatchKind::padded) return;
    const Layout slot = layout::select(slots, 0, i);
    for (index_t d = 0; d < columns_; ++d) {
      const index_t size_d = size(i, d), pad = slot.shape[d] - size_d;
      if (pad == 0) continue;
      Layout region = layout::narrow(slot, d, size_d, pad);
      for (index_t before = 0; before < d; ++before)
        region = layout::narrow(region, before, 0, size(i, before));
      fill(region);
    }
  }
  /// Element i as one run of the data (and its slot's padding as the run after it) when the data
  /// is contiguous and the element fills the start of its slot; invalid otherwise.
  ElementRun run(index_t i) const {
    switch (form_) {
      case RunForm::none:
        return {};
      case RunForm::rows: {
        const index_t begin = first(i), end = first(i + 1);
        return {begin * last_, (end - begin) * last_, 0};
      }
      case RunForm::slot:
        return {i * slot_, slot_, 0};
      case RunForm::slot_rows: {
        const index_t count = last_ * sizes_[i * size_row_];
        return {i * slot_, count, slot_ - count};
      }
      case RunForm::slot_box:
        break;
    }
    index_t count = last_ * size(i, 0);
    for (index_t d = 1; d < columns_; ++d) {
      const index_t size_d = size(i, d);
      if (size_d != data_->shape[d + 1]) return {};
      count *= size_d;
    }
    return {i * slot_, count, slot_ - count};
  }
  /// Every element's box when all have the sizes `sizes` (columns() values): the data with
  /// each padded dim narrowed, for viewing a batch of equal elements as an exact one.
  Layout common_box(const Shape& sizes) const {
    Layout all = *data_;
    for (index_t d = 0; d < columns_; ++d)
      all = layout::narrow(all, d + 1, 0, sizes[d]);
    return all;
  }

 private:
  BatchGeometry(BatchKind kind, const Layout& data)
      : kind_(kind), data_(&data), dense_(layout::is_contiguous(data)) {
    form_ = !dense_ ? RunForm::none : kind == BatchKind::packed ? RunForm::rows : RunForm::slot;
    last_ = data.shape[data.dim() - 1];
    index_t slot = 1;
    for (index_t d = 1; d < data.dim(); ++d)
      slot *= data.shape[d];
    slot_ = slot;
  }
  void read_sizes(const Tensor<index_t>& shape_per_tensor) {
    batch_ = shape_per_tensor.size(0);
    columns_ = shape_per_tensor.size(1);
    sizes_ = shape_per_tensor.data();
    size_row_ = shape_per_tensor.stride(0);
    size_column_ = shape_per_tensor.stride(1);
    if (form_ == RunForm::slot && kind_ == BatchKind::padded && columns_ > 0)
      form_ = columns_ == 1 ? RunForm::slot_rows : RunForm::slot_box;
  }
  index_t first(index_t i) const { return first_[i * first_stride_]; }

  // How run(i) finds element i's run, decided once from the kind, the data's density and the
  // element rank, so that a per-element loop takes one predictable branch.
  enum class RunForm : unsigned char { none, rows, slot, slot_rows, slot_box };

  BatchKind kind_;
  const Layout* data_;
  bool dense_;
  RunForm form_;
  index_t last_ = 0;
  index_t slot_ = 0;  // data elements per slot (exact and padded)
  index_t batch_ = 0, columns_ = 0;
  const index_t* sizes_ = nullptr;
  index_t size_row_ = 0, size_column_ = 1;
  const index_t* first_ = nullptr;
  index_t first_stride_ = 1;
};

/// first_idx of a packed batch of elements of the given shape_per_tensor (B, rank - 1): 0, then
/// the running sum of their row counts (overflow-checked, errors naming `function`).
TBATCH_INLINE Tensor<index_t> packed_first_idx(const Tensor<index_t>& shape_per_tensor,
                                               const char* function);

}  // namespace detail

}  // namespace tbatch

#if TBATCH_DEFINITIONS

namespace tbatch {
namespace detail {

TBATCH_INLINE Tensor<index_t> packed_first_idx(const Tensor<index_t>& shape_per_tensor,
                                               const char* function) {
  const index_t batch = shape_per_tensor.size(0);
  Tensor<index_t> out = Tensor<index_t>::empty(Shape{batch + 1});
  const index_t columns = shape_per_tensor.size(1);
  const index_t* sizes = shape_per_tensor.data();  // contiguous, as every batch keeps it
  index_t* first = out.data();
  // One pass: the row counts and their running sum.
  first[0] = 0;
  for (index_t i = 0; i < batch; ++i)  // elements of rank 2 have their size as their row count
    append_running_sum(first, i,
                       columns == 1 ? sizes[i] : row_count(sizes + i * columns, columns, function),
                       function);
  return out;
}

}  // namespace detail
}  // namespace tbatch

#endif  // TBATCH_DEFINITIONS
