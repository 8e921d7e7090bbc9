#pragma once
// The ragged-aware scatter into the rows of a batch's elements.

#include <string>
#include <type_traits>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace detail {

/// Ragged-aware scatter, written once for every layout: update k is row local_index[k] of
/// element element_index[k]; the element's place and strides in the batch's data (what its view
/// would say, from the metadata) tell where that row lives.
template <Batch B>
void scatter_elements_into(const char* function, const B& batch,
                           const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
                           const Tensor<typename B::value_type>& updates, bool overwrite) {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<T, bool>) {
    if (!overwrite) fail_bool_reduction(function, "overwrite=false (adding updates)");
  }
  const index_t batch_size = batch.batch_size();
  const index_t coords = batch.element_rank() - 1;  // coordinates of a row inside an element
  const index_t last_dim = batch.last_dim();
  if (element_index.dim() != 1)
    fail<ShapeError>(function, "element_index must be 1-d, got shape ", element_index.shape());
  const index_t n = element_index.size(0);
  const bool flat_local = coords == 1 && local_index.dim() == 1;
  if (!(flat_local || local_index.shape() == Shape{n, coords}))
    fail<ShapeError>(function, "local_index has shape ", local_index.shape(), " but ", n,
                     " updates into elements of rank ", batch.element_rank(), " need [", n, ", ",
                     coords, "]", coords == 1 ? concat(" or [", n, "]") : std::string());
  if (!(updates.shape() == Shape{n, last_dim}))
    fail<ShapeError>(function, "updates has shape ", updates.shape(), " but ", n,
                     " updates of rows of size ", last_dim, " need [", n, ", ", last_dim, "]");

  // Each element's place, sizes and strides come from the metadata (the batch geometry), so the
  // cost is per update, never per element. The offset of each update's target row is found
  // while its indices are checked, before anything is written, so later writes cannot change it
  // even when an index tensor shares memory with the data.
  const Tensor<index_t> element_of = element_index.contiguous();
  const Tensor<index_t> local = (flat_local ? local_index.unsqueeze(1) : local_index).contiguous();
  const index_t* targets_in = element_of.data();
  const index_t* positions_in = local.data();
  Tensor<T> data = batch.data();
  const index_t data_offset = data.offset();
  const BatchGeometry geometry = geometry_of(batch);
  Tensor<index_t> target_rows = Tensor<index_t>::empty(Shape{n});
  index_t* row_offset = target_rows.data();
  geometry.with_kind([&](auto kind) {
    if (geometry.kind() != kind()) return;  // never: tells the compiler the kind inside the loop
    for (index_t k = 0; k < n; ++k) {
      const index_t e = targets_in[k];
      if (e < 0 || e >= batch_size)
        fail<IndexError>(function, "element_index[", k, "] = ", e,
                         " is out of range for a batch of ", batch_size, " elements",
                         expected_range(batch_size));
      index_t offset = data_offset + geometry.start(e);
      for (index_t c = 0; c < coords; ++c) {
        const index_t value = positions_in[k * coords + c], size = geometry.size(e, c);
        if (value < 0 || value >= size)
          fail<IndexError>(
              function,
              flat_local ? concat("local_index[", k, "]") : concat("local_index[", k, ", ", c, "]"),
              " = ", value, " is out of range for element ", e, ", whose dim ", c, " has size ",
              size, " (element shape ", batch.shape_of(e), ")", expected_range(size));
        offset += value * geometry.stride(e, c);
      }
      row_offset[k] = offset;
    }
  });
  check_distinct_elements(data.view(), function, "the batch's data");

  const Tensor<T> source = unaliased(updates, data.view());
  const StridedView<T> base =
      data.view().with_layout(Layout{Shape{n, last_dim}, {0, data.stride(-1)}, 0});
  const StridedView<const index_t> at = StridedView<const index_t>(target_rows.view())
                                            .with_layout(Layout{Shape{n, last_dim}, {1, 0}, 0});
  if (overwrite) {
    scatter_along(source.view(), at, 1, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, 1, base, AssignOp<T>{});
    scatter_along(source.view(), at, 1, base, SumOp<T>{});
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Ragged-aware scatter on batches.

/// Scatter into the rows of a batch's elements: update k (a row of last_dim values) goes to
/// row local_index[k] of element element_index[k]. local_index has shape [N, element_rank - 1]
/// (or [N] for elements of rank 2) and is checked against that element's own shape, never the
/// padded maximum. Same overwrite semantics as the dense scatter. Returns a new batch of the
/// same layout; padding is copied unchanged. Errors: IndexError for an element index outside
/// [0, B) or a row outside its element's own shape (naming the position and the element);
/// ShapeError for index or updates tensors of the wrong shape (updates must be [N, last_dim]).
template <Batch B>
B scatter(const B& batch, const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
          const Tensor<typename B::value_type>& updates, bool overwrite = true) {
  B out = batch.with_data(batch.data().clone());
  detail::scatter_elements_into("scatter", out, element_index, local_index, updates, overwrite);
  return out;
}

/// In-place ragged-aware scatter into the batch's data (allocates one offset per update);
/// checked before the first write, with the errors of the copying form.
template <Batch B>
B& scatter_(B& batch, const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
            const Tensor<typename B::value_type>& updates, bool overwrite = true) {
  detail::scatter_elements_into("scatter_", batch, element_index, local_index, updates, overwrite);
  return batch;
}

}  // namespace tbatch
