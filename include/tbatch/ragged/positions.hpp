#pragma once
// Where each row of a batch sits: the element it belongs to (segment_ids; torch's
// repeat_interleave of the lengths, TensorFlow's value_rowids) and its position inside that
// element (ragged_arange; the position ids of packed sequences). A row is one entry of an
// element's dims before the last, in row-major order: a packed batch's data rows.

#include "tbatch/batch/geometry.hpp"
#include "tbatch/ragged/batch_map.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace detail {

/// (rows) with, for each row of each element i in turn, value(i, r) (r the row's position in
/// the element).
template <LayoutBatch B, class Value>
Tensor<index_t> per_row(const B& batch, const Value& value) {
  const BatchGeometry g = geometry_of(batch);
  index_t total = 0;  // no overflow: every row is a row of the data
  for (index_t i = 0; i < batch.batch_size(); ++i)
    total += g.rows(i);
  Tensor<index_t> out = Tensor<index_t>::empty(Shape{total});
  index_t* at = out.data();
  for (index_t i = 0; i < batch.batch_size(); ++i)
    for (index_t r = 0, rows = g.rows(i); r < rows; ++r)
      *at++ = value(i, r);
  return out;
}

}  // namespace detail

/// The element of each row, (total rows): 0 for element 0's rows, then 1, ... (empty elements
/// have none). For a packed batch row k is data row k.
template <LayoutBatch B>
Tensor<index_t> segment_ids(const B& batch) {
  return detail::per_row(batch, [](index_t i, index_t) { return i; });
}

/// The position of each row inside its element, (total rows): 0, 1, ..., rows(0) - 1, 0, 1, ...
/// (position ids).
template <LayoutBatch B>
Tensor<index_t> ragged_arange(const B& batch) {
  return detail::per_row(batch, [](index_t, index_t r) { return r; });
}

}  // namespace tbatch
