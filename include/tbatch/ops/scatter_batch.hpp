#pragma once
// The ragged-aware scatter into the rows of a batch's elements.

#include "tbatch/base/config.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <optional>
#include <string>
#include <type_traits>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/reduce_combiners.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/view/engine.hpp"
#endif

namespace tbatch {
namespace detail {

/// Ragged-aware scatter, written once for every layout and compiled once per element width
/// (adding: per dtype): update k is row local_index[k] of element element_index[k] of the batch
/// whose `data` `geometry` places; the element's place and strides in the data (what its view
/// would say, from the metadata) tell where that row lives.
TBATCH_INLINE void scatter_elements_raw(const char* function, const BatchGeometry& geometry,
                                        const RawView& data, const Tensor<index_t>& element_index,
                                        const Tensor<index_t>& local_index, const RawView& updates,
                                        bool overwrite);

#if TBATCH_DEFINITIONS
// Its body for the element type T, to which the library's entry point dispatches.
template <class T>
void scatter_elements_raw(const char* function, const BatchGeometry& geometry, const RawView& data,
                          const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
                          const RawView& updates, bool overwrite) {
  if (data.dtype == DType::boolean && !overwrite)
    fail_bool_reduction(function, "overwrite=false (adding updates)");
  const index_t batch_size = geometry.batch_size();
  const index_t coords = geometry.columns();  // coordinates of a row inside an element
  const index_t last_dim = geometry.last_dim();
  // Element e's full shape, as the batch's shape_of(e) says it.
  auto shape_of = [&](index_t e) {
    Shape shape;
    for (index_t c = 0; c < coords; ++c)
      shape.push_back(geometry.size(e, c));
    shape.push_back(last_dim);
    return shape;
  };
  if (element_index.dim() != 1)
    fail<ShapeError>(function, {"element_index must be 1-d, got shape ", element_index.shape()});
  const index_t n = element_index.size(0);
  const bool flat_local = coords == 1 && local_index.dim() == 1;
  if (!(flat_local || local_index.shape() == Shape{n, coords}))
    fail<ShapeError>(
        function, {"local_index has shape ", local_index.shape(), " but ", n,
                   " updates into elements of rank ", coords + 1, " need [", n, ", ", coords, "]",
                   coords == 1 ? concat(" or [", n, "]") : std::string()});
  if (!(updates.layout.shape == Shape{n, last_dim}))
    fail<ShapeError>(function,
                     {"updates has shape ", updates.layout.shape, " but ", n,
                      " updates of rows of size ", last_dim, " need [", n, ", ", last_dim, "]"});

  // Each element's place, sizes and strides come from the metadata (the batch geometry), so the
  // cost is per update, never per element. The offset of each update's target row is found
  // while its indices are checked, before anything is written, so later writes cannot change it
  // even when an index tensor shares memory with the data.
  const Tensor<index_t> element_of = element_index.contiguous();
  const Tensor<index_t> local = (flat_local ? local_index.unsqueeze(1) : local_index).contiguous();
  const index_t* targets_in = element_of.data();
  const index_t* positions_in = local.data();
  const index_t data_offset = data.layout.offset;
  Tensor<index_t> target_rows = Tensor<index_t>::empty(Shape{n});
  index_t* row_offset = target_rows.data();
  geometry.with_kind([&](auto kind) {
    if (geometry.kind() != kind()) return;  // never: tells the compiler the kind inside the loop
    for (index_t k = 0; k < n; ++k) {
      const index_t e = targets_in[k];
      if (e < 0 || e >= batch_size)
        fail<IndexError>(function,
                         {"element_index[", k, "] = ", e, " is out of range for a batch of ",
                          batch_size, " elements", expected_range(batch_size)});
      index_t offset = data_offset + geometry.start(e);
      for (index_t c = 0; c < coords; ++c) {
        const index_t value = positions_in[k * coords + c], size = geometry.size(e, c);
        if (value < 0 || value >= size)
          fail<IndexError>(function, {flat_local ? concat("local_index[", k, "]")
                                                 : concat("local_index[", k, ", ", c, "]"),
                                      " = ", value, " is out of range for element ", e,
                                      ", whose dim ", c, " has size ", size, " (element shape ",
                                      shape_of(e), ")", expected_range(size)});
        offset += value * geometry.stride(e, c);
      }
      row_offset[k] = offset;
    }
  });
  const StridedView<T> all = typed_view<T>(data);
  check_distinct_elements(all, function, "the batch's data");
  std::optional<Tensor<T>> staging;
  const StridedView<const T> source = unaliased_view(updates, all, staging);
  const StridedView<T> base =
      all.with_layout(Layout{Shape{n, last_dim}, {0, data.layout.strides.back()}, 0});
  const StridedView<const index_t> at = StridedView<const index_t>(target_rows.view())
                                            .with_layout(Layout{Shape{n, last_dim}, {1, 0}, 0});
  if (overwrite) {
    scatter_along(source, at, 1, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, 1, base, AssignOp<T>{});
    scatter_along(source, at, 1, base, SumOp<T>{});
  }
}
#endif  // TBATCH_DEFINITIONS

/// The thin part: the kernel of the batch's dtype itself in header-only mode (and the library),
/// the library's entry point in compiled mode.
template <Batch B>
void scatter_elements_into(const char* function, const B& batch,
                           const Tensor<index_t>& element_index, const Tensor<index_t>& local_index,
                           const Tensor<typename B::value_type>& updates, bool overwrite) {
#if TBATCH_DEFINITIONS
  scatter_elements_raw<typename B::value_type>(function, geometry_of(batch),
                                               raw_view(batch.data().view()), element_index,
                                               local_index, raw_view(updates.view()), overwrite);
#else
  scatter_elements_raw(function, geometry_of(batch), raw_view(batch.data().view()), element_index,
                       local_index, raw_view(updates.view()), overwrite);
#endif
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

// The library's entry point (compiled mode), one function for every dtype.
#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void scatter_elements_raw(const char* function, const BatchGeometry& geometry,
                                        const RawView& data, const Tensor<index_t>& element_index,
                                        const Tensor<index_t>& local_index, const RawView& updates,
                                        bool overwrite) {
  dispatch_dtype(data.dtype, [&]<class T>(std::type_identity<T>) {
    scatter_elements_raw<T>(function, geometry, data, element_index, local_index, updates,
                            overwrite);
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
