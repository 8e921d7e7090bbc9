#pragma once
// kaolin's batch metadata: shape_per_tensor, first_idx and max_shape, and their validation.

#include <algorithm>
#include <vector>

#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

namespace detail {

/// Shape of an element of a list (or batch) without its last dim, as a vector.
TBATCH_INLINE std::vector<index_t> leading_sizes(const Shape& shape);

/// Row i of a (B, k) shape_per_tensor as a Shape, with the last dim appended.
TBATCH_INLINE Shape element_shape(const Tensor<index_t>& shape_per_tensor, index_t i,
                                  index_t last_dim);

/// Number of rows (prod of the `columns` sizes at `sizes`), overflow-checked.
inline index_t row_count(const index_t* sizes, index_t columns, const char* function) {
  index_t rows = 1;
  for (index_t d = 0; d < columns; ++d)
    rows = checked_mul(rows, sizes[d], function);
  return rows;
}

/// Number of rows (prod of the sizes) of row i of shape_per_tensor (contiguous),
/// overflow-checked.
inline index_t rows_of(const Tensor<index_t>& shape_per_tensor, index_t i, const char* function) {
  const index_t columns = shape_per_tensor.size(1);
  return row_count(shape_per_tensor.data() + i * columns, columns, function);
}

/// Validates a caller-given shape_per_tensor: rank 2, `batch` rows of `element_rank - 1`
/// non-negative sizes. Returns it contiguous.
TBATCH_INLINE Tensor<index_t> checked_shape_per_tensor(const Tensor<index_t>& shape_per_tensor,
                                                       index_t batch, index_t element_rank,
                                                       const char* function);

/// get_shape_per_tensor for the public function `function`, whose name its errors carry. One
/// pass over the list (a list of many small tensors is larger than the cache): it also checks
/// what every batch layout needs, the same rank (>= 1) and the same last dim, with kaolin's
/// messages. `Item` is Tensor<T>, StridedView<const T> or AnyTensor: only shapes are read.
template <class Item>
Tensor<index_t> shape_per_tensor_of(const std::vector<Item>& list, const char* function) {
  const index_t rank = list.empty() ? 1 : list.front().dim();
  if (rank < 1)
    fail<ShapeError>(function, {"expected tensors of rank >= 1 (the last dim is the element size) "
                                "but got rank 0 at index 0"});
  const index_t last_dim = list.empty() ? 0 : list.front().shape()[rank - 1];
  const index_t columns = list.empty() ? 0 : rank - 1;
  Tensor<index_t> out = Tensor<index_t>::empty(Shape{static_cast<index_t>(list.size()), columns});
  index_t* row = out.data();
  for (std::size_t i = 0; i < list.size(); ++i, row += columns) {
    const Shape& shape = list[i].shape();
    if (index_t(shape.size()) != rank)
      fail<ShapeError>(function, {"expected all tensors to have ", rank, " dimensions but got ",
                                  shape.size(), " at index ", i});
    if (shape[rank - 1] != last_dim)
      fail<ShapeError>(function,
                       {"expected all tensors to have last dimension ", last_dim, " but got ",
                        shape[rank - 1], " at index ", i,
                        rank == 1 ? "; 1-d tensors are single elements of that many features: for "
                                    "sequences of scalars use pad_sequence, or unsqueeze(-1) each "
                                    "tensor"
                                  : ""});
    for (index_t d = 0; d < columns; ++d)
      row[d] = shape[d];
  }
  return out;
}

/// Checks offsets first[0..batch] (kaolin's first_idx, CSR offsets): first[0] is 0 and they never
/// decrease; element(i) then checks element i's own rule. ValueError naming `function`.
template <class Element>
void check_first_idx(const char* function, const index_t* first, index_t batch, Element&& element) {
  if (first[0] != 0) fail<ValueError>(function, {"first_idx[0] = ", first[0], ", expected 0"});
  for (index_t i = 0; i < batch; ++i) {
    if (first[i + 1] < first[i])
      fail<ValueError>(function, {"first_idx must not decrease, but first_idx[", i + 1,
                                  "] = ", first[i + 1], " < first_idx[", i, "] = ", first[i]});
    element(i);
  }
}

/// first[i + 1] = first[i] + n, where n is element i's row count: ValueError when n is
/// negative, ShapeError when the sum overflows, naming `function`.
inline void append_running_sum(index_t* first, index_t i, index_t n, const char* function) {
  if (n < 0)
    fail<ValueError>(function, {"numel_per_tensor[", i, "] = ", n, " is negative; expected >= 0"});
  first[i + 1] = checked_add(first[i], n, function);
}

/// Turns first[1..batch], a count per element, into first[0..batch] = 0 then their running sum
/// in place, with append_running_sum's checks and errors.
TBATCH_INLINE void running_sum_in_place(index_t* first, index_t batch, const char* function);

}  // namespace detail

/// Each tensor's shape without its last dim, as a (len(list), rank - 1) tensor.
/// ShapeError (naming the index) when ranks or last dims differ. An empty list gives (0, 0).
template <class T>
Tensor<index_t> get_shape_per_tensor(const std::vector<Tensor<T>>& list) {
  return detail::shape_per_tensor_of(list, "get_shape_per_tensor");
}

/// 0 followed by the running sum of `numel_per_tensor` (rows per element, shape (B)): shape
/// (B + 1), kaolin's first_idx. ShapeError unless numel_per_tensor is 1-d; ValueError for a
/// negative count; ShapeError when the sum overflows.
TBATCH_INLINE Tensor<index_t> get_first_idx(const Tensor<index_t>& numel_per_tensor);

/// The max shape of a batch, shape (rank - 1): per dim, the given value or (for -1 or when not
/// given) the largest size in `shape_per_tensor` (B, rank - 1). `partial_max_shape` is empty or
/// has rank - 1 values (ShapeError otherwise). A given value below some element's size is a
/// ValueError naming the dim and the element (no truncation); so are values below -1 and
/// negative sizes. ShapeError unless shape_per_tensor is 2-d.
TBATCH_INLINE Tensor<index_t> fill_max_shape(const Tensor<index_t>& shape_per_tensor,
                                             std::vector<index_t> partial_max_shape = {});

}  // namespace tbatch

#if TBATCH_DEFINITIONS

namespace tbatch {
namespace detail {

TBATCH_INLINE std::vector<index_t> leading_sizes(const Shape& shape) {
  return std::vector<index_t>(shape.begin(), shape.end() - 1);
}

TBATCH_INLINE Shape element_shape(const Tensor<index_t>& shape_per_tensor, index_t i,
                                  index_t last_dim) {
  Shape shape;
  const index_t* row = shape_per_tensor.data() + i * shape_per_tensor.size(1);
  for (index_t d = 0; d < shape_per_tensor.size(1); ++d)
    shape.push_back(row[d]);
  shape.push_back(last_dim);
  return shape;
}

TBATCH_INLINE Tensor<index_t> checked_shape_per_tensor(const Tensor<index_t>& shape_per_tensor,
                                                       index_t batch, index_t element_rank,
                                                       const char* function) {
  const Shape expected{batch, element_rank - 1};
  if (!(shape_per_tensor.shape() == expected))
    fail<ShapeError>(
        function, {"shape_per_tensor has shape ", shape_per_tensor.shape(), " but the data needs ",
                   expected, " (batch size, element rank - 1)"});
  Tensor<index_t> dense = shape_per_tensor.contiguous();
  for (index_t i = 0, n = dense.numel(); i < n; ++i)
    if (dense.data()[i] < 0)
      fail<ValueError>(function, {"shape_per_tensor[", i / expected[1], "][", i % expected[1],
                                  "] = ", dense.data()[i], " is negative; sizes must be >= 0"});
  return dense;
}

TBATCH_INLINE void running_sum_in_place(index_t* first, index_t batch, const char* function) {
  first[0] = 0;
  for (index_t i = 0; i < batch; ++i)
    append_running_sum(first, i, first[i + 1], function);
}

}  // namespace detail
}  // namespace tbatch

namespace tbatch {

TBATCH_INLINE Tensor<index_t> get_first_idx(const Tensor<index_t>& numel_per_tensor) {
  if (numel_per_tensor.dim() != 1)
    detail::fail<ShapeError>(
        "get_first_idx", {"numel_per_tensor must be 1-d, got shape ", numel_per_tensor.shape()});
  const index_t batch = numel_per_tensor.size(0);
  const Tensor<index_t> counts = numel_per_tensor.contiguous();
  Tensor<index_t> out = Tensor<index_t>::empty(Shape{batch + 1});
  std::copy_n(counts.data(), batch, out.data() + 1);
  detail::running_sum_in_place(out.data(), batch, "get_first_idx");
  return out;
}

TBATCH_INLINE Tensor<index_t> fill_max_shape(const Tensor<index_t>& shape_per_tensor,
                                             std::vector<index_t> partial_max_shape) {
  if (shape_per_tensor.dim() != 2)
    detail::fail<ShapeError>("fill_max_shape", {"shape_per_tensor must be 2-d (B, rank - 1), got ",
                                                shape_per_tensor.shape()});
  const index_t batch = shape_per_tensor.size(0), columns = shape_per_tensor.size(1);
  // An empty max_shape means -1 everywhere, read as such rather than allocated.
  const bool all_largest = partial_max_shape.empty();
  if (!all_largest && static_cast<index_t>(partial_max_shape.size()) != columns)
    detail::fail<ShapeError>(
        "fill_max_shape",
        {"max_shape ", detail::listed(partial_max_shape), " has ", partial_max_shape.size(),
         " dims but the elements have ", columns, " (rank - 1)"});
  Tensor<index_t> out = Tensor<index_t>::empty(Shape{columns});
  for (index_t d = 0; d < columns; ++d) {
    index_t largest = 0, largest_at = 0;
    for (index_t i = 0; i < batch; ++i) {
      const index_t size = shape_per_tensor(i, d);
      if (size < 0)
        detail::fail<ValueError>("fill_max_shape",
                                 {"shape_per_tensor[", i, "][", d, "] = ", size, " is negative"});
      if (size > largest) largest = size, largest_at = i;
    }
    const index_t wanted = all_largest ? -1 : partial_max_shape[static_cast<std::size_t>(d)];
    if (wanted == -1) {
      out.data()[d] = largest;
    } else if (wanted < -1) {
      detail::fail<ValueError>("fill_max_shape", {"dim ", d, " of max_shape (", wanted,
                                                  ") is invalid; expected a size >= 0 or -1"});
    } else if (wanted < largest) {
      detail::fail<ValueError>(
          "fill_max_shape", {"dim ", d, " of max_shape (", wanted, ") is smaller than for tensor ",
                             largest_at, " (", largest, ")"});
    } else {
      out.data()[d] = wanted;
    }
  }
  return out;
}

}  // namespace tbatch

#endif  // TBATCH_DEFINITIONS
