#pragma once
// Conversions between lists and the three batch layouts (kaolin.ops.batch names and
// semantics). Every conversion allocates its output once, fills only the padding no element
// overwrites, and copies each element with the view engine.
//
// The lists they accept and the declarations of their typed bodies are in
// conversions_common.hpp, the bodies in conversions_kernel.hpp; this header holds the public
// functions.

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/batch/conversions_common.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/batch/conversions_kernel.hpp"
#endif

namespace tbatch {

/// Pads every tensor of `list` to a common shape and stacks them: (B, max_shape..., last_dim).
/// `list` is any ElementList: tensors, or views of memory the caller owns, read without a copy.
/// `max_shape` (rank - 1 sizes, -1 = that dim's maximum) fixes the padded sizes; a size below
/// some tensor's is a ValueError. Tensors must share rank and last dim (ShapeError naming the
/// index). An empty list gives data of shape (0, 0).
template <ElementList List>
PaddedBatch<list_value_t<List>> list_to_padded(
    const List& list, std::type_identity_t<list_value_t<List>> padding_value,
    const std::vector<index_t>& max_shape = {}) {
  return detail::with_element_vector(list, [&](const auto& elements) {
    return detail::padded_from_list(elements, padding_value, max_shape);
  });
}

template <class T>
PaddedBatch<T> list_to_padded(const std::vector<Tensor<T>>& list,
                              std::type_identity_t<T> padding_value,
                              const std::vector<index_t>& max_shape = {}) {
  return detail::padded_from_list(list, padding_value, max_shape);
}

/// list_to_padded into a caller-owned tensor `out` of shape (B, max_shape..., last_dim), which
/// may be any writable view (reused across calls to avoid allocation). ShapeError when out's
/// rank, batch size or last dim do not fit the list, when a padded size of out is smaller than
/// some tensor, or when the tensors differ in rank or last dim; ValueError when out holds an
/// address twice. Tensors that share elements with `out` (re-ordering a batch into its own
/// buffer, say) are copied before out is written. Returns the batch viewing `out`.
template <ElementList List>
PaddedBatch<list_value_t<List>> list_to_padded_into(
    const List& list, std::type_identity_t<list_value_t<List>> padding_value,
    Tensor<list_value_t<List>> out) {
  return detail::with_element_vector(list, [&](const auto& elements) {
    return detail::padded_into_from_list(elements, padding_value, std::move(out));
  });
}

template <class T>
PaddedBatch<T> list_to_padded_into(const std::vector<Tensor<T>>& list,
                                   std::type_identity_t<T> padding_value, Tensor<T> out) {
  return detail::padded_into_from_list(list, padding_value, std::move(out));
}

/// Flattens every tensor of `list` (any ElementList) to (rows, last_dim) and concatenates them:
/// the packed data (sum of rows, last_dim), shape_per_tensor (B, rank - 1) and first_idx
/// (B + 1). Tensors must share rank (>= 1) and last dim (ShapeError naming the index). An empty
/// list gives data of shape (0, 0).
template <ElementList List>
PackedBatch<list_value_t<List>> list_to_packed(const List& list) {
  return detail::with_element_vector(
      list, [&](const auto& elements) { return detail::packed_from_list(elements); });
}

template <class T>
PackedBatch<T> list_to_packed(const std::vector<Tensor<T>>& list) {
  return detail::packed_from_list(list);
}

/// list_to_packed into a caller-owned tensor `out` of shape (total rows, last_dim), which may be
/// any writable view; ShapeError when out has another shape or the tensors differ in rank or
/// last dim, ValueError when out holds an address twice. Tensors that share elements with `out`
/// are copied before out is written. Returns the batch viewing `out`.
template <ElementList List>
PackedBatch<list_value_t<List>> list_to_packed_into(const List& list,
                                                    Tensor<list_value_t<List>> out) {
  return detail::with_element_vector(list, [&](const auto& elements) {
    return detail::packed_into_from_list(elements, std::move(out));
  });
}
template <class T>
PackedBatch<T> list_to_packed_into(const std::vector<Tensor<T>>& list, Tensor<T> out) {
  return detail::packed_into_from_list(list, std::move(out));
}

/// Views of each element of a padded tensor `padded` (B, max_shape..., last_dim) described by
/// `shape_per_tensor` (B, rank - 1); no copies. Throws what the PaddedBatch constructor throws
/// when the metadata does not fit the data.
template <class T>
std::vector<Tensor<T>> padded_to_list(const Tensor<T>& padded,
                                      const Tensor<index_t>& shape_per_tensor) {
  return PaddedBatch<T>(padded, shape_per_tensor).to_list();
}

/// Views of each element of a packed tensor `packed` (rows, last_dim) described by
/// `shape_per_tensor` (B, rank - 1) and `first_idx` (B + 1); no copies. Throws what the
/// PackedBatch constructor throws when the metadata does not fit the data.
template <class T>
std::vector<Tensor<T>> packed_to_list(const Tensor<T>& packed,
                                      const Tensor<index_t>& shape_per_tensor,
                                      const Tensor<index_t>& first_idx) {
  return PackedBatch<T>(packed, shape_per_tensor, first_idx).to_list();
}

/// Any batch as a packed batch: data (sum of rows, last_dim) with new first_idx. Copies each
/// element once; an exact batch of contiguous data is viewed, a packed batch returned as is.
template <Batch B>
PackedBatch<typename B::value_type> to_packed(const B& batch) {
  if constexpr (std::is_same_v<B, PackedBatch<typename B::value_type>>)
    return batch;
  else
    return detail::packed_from_batch(batch);
}

/// Any batch as a padded batch (B, max_shape..., last_dim) with `padding_value` and optional
/// `max_shape` (rank - 1 values, -1 = that dim's maximum). An exact batch without max_shape is
/// viewed, not copied. A max_shape below some element is a ValueError (no truncation), one of
/// the wrong length a ShapeError.
template <Batch B>
PaddedBatch<typename B::value_type> to_padded(const B& batch, typename B::value_type padding_value,
                                              const std::vector<index_t>& max_shape = {}) {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    if (max_shape.empty()) return PaddedBatch<T>(batch.data(), batch.shape_per_tensor());
  }
  return detail::padded_from_batch(batch, padding_value, max_shape);
}

/// Any batch whose elements all have one shape as an exact batch (B, element shape...): a view
/// when the layout allows, else a copy. ShapeError naming the first element that differs, or
/// for an empty batch (no element shape to stack).
template <Batch B>
ExactBatch<typename B::value_type> to_exact(const B& batch) {
  using T = typename B::value_type;
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    return batch;
  } else {
    if (batch.batch_size() == 0)
      detail::fail<ShapeError>("to_exact", {"an empty batch has no element shape to stack"});
    const Shape shape = batch.shape_of(0);
    for (index_t i = 1; i < batch.batch_size(); ++i)
      if (!(batch.shape_of(i) == shape))
        detail::fail<ShapeError>(
            "to_exact", {"element ", i, " has shape ", batch.shape_of(i), " but element 0 has ",
                         shape, "; an exact batch needs equal shapes"});
    std::vector<index_t> sizes{batch.batch_size()};
    sizes.insert(sizes.end(), shape.begin(), shape.end());
    if constexpr (std::is_same_v<B, PaddedBatch<T>>) {
      return ExactBatch<T>(batch.data().with_layout(detail::geometry_of(batch).common_box(shape)));
    } else {
      return ExactBatch<T>(batch.data().reshape(sizes));
    }
  }
}

/// kaolin's padded_to_packed: the valid data of each slot of `padded` (B, max_shape...,
/// last_dim), flattened and concatenated into (sum of rows, last_dim). Throws what the
/// PaddedBatch constructor throws when shape_per_tensor does not fit.
template <class T>
Tensor<T> padded_to_packed(const Tensor<T>& padded, const Tensor<index_t>& shape_per_tensor) {
  return to_packed(PaddedBatch<T>(padded, shape_per_tensor)).data();
}

/// kaolin's packed_to_padded: each element of the packed tensor (rows, last_dim) padded with
/// `padding_value` to max_shape (-1 or missing = the maximum): (B, max_shape..., last_dim).
/// Throws what the PackedBatch constructor throws for bad metadata, and ValueError /
/// ShapeError for a max_shape that is too small / of the wrong length.
template <class T>
Tensor<T> packed_to_padded(const Tensor<T>& packed, const Tensor<index_t>& shape_per_tensor,
                           const Tensor<index_t>& first_idx, std::type_identity_t<T> padding_value,
                           const std::vector<index_t>& max_shape = {}) {
  return to_padded(PackedBatch<T>(packed, shape_per_tensor, first_idx), padding_value, max_shape)
      .data();
}

// Passing a batch where these take its data tensor: one message with the fix instead of the
// deduction notes.
template <Batch B, class... Args>
Tensor<typename B::value_type> padded_to_packed(const B&, const Args&...) {
  static_assert(detail::dependent_false<B>,
                "padded_to_packed takes a padded data tensor and its shape_per_tensor; for a "
                "batch call to_packed(batch)");
  return {};
}
template <Batch B, class... Args>
Tensor<typename B::value_type> packed_to_padded(const B&, const Args&...) {
  static_assert(detail::dependent_false<B>,
                "packed_to_padded takes a packed data tensor, shape_per_tensor and first_idx; for "
                "a batch call to_padded(batch, padding_value)");
  return {};
}
template <Batch B, class... Args>
std::vector<Tensor<typename B::value_type>> padded_to_list(const B&, const Args&...) {
  static_assert(detail::dependent_false<B>,
                "padded_to_list takes a padded data tensor and its shape_per_tensor; for a batch "
                "call batch.to_list()");
  return {};
}
template <Batch B, class... Args>
std::vector<Tensor<typename B::value_type>> packed_to_list(const B&, const Args&...) {
  static_assert(detail::dependent_false<B>,
                "packed_to_list takes a packed data tensor, shape_per_tensor and first_idx; for "
                "a batch call batch.to_list()");
  return {};
}

/// Repeats values[i] numel_per_tensor[i] times: shape (sum numel_per_tensor, 1), one row per
/// packed row (kaolin's tile_to_packed). `values` is (B) or (B, 1) and numel_per_tensor (B)
/// (ShapeError otherwise); a negative count is a ValueError.
template <class T>
Tensor<T> tile_to_packed(const Tensor<T>& values, const Tensor<index_t>& numel_per_tensor) {
  if (!(values.dim() == 1 || (values.dim() == 2 && values.size(1) == 1)))
    detail::fail<ShapeError>("tile_to_packed",
                             {"values must have shape (B) or (B, 1), got ", values.shape()});
  if (numel_per_tensor.dim() != 1 || numel_per_tensor.size(0) != values.size(0))
    detail::fail<ShapeError>(
        "tile_to_packed",
        {"numel_per_tensor has shape ", numel_per_tensor.shape(), " but values has ",
         values.size(0), " entries; expected shape [", values.size(0), "]"});
  return detail::tiled_to_packed(values, numel_per_tensor);
}

/// Applies `f` (`Tensor<T>` -> `Tensor<U>`) to every element and returns the same layout: exact
/// results must share one shape (ShapeError naming the first that differs); padded results are
/// re-padded with `padding_value` (0 if not given); every layout needs results of one rank and
/// last dim (ShapeError). An empty batch gives an empty batch of the same layout, element rank
/// and last dim (f is not called).
template <Batch B, class F>
auto map_elements(
    const B& batch, F&& f,
    std::optional<typename std::invoke_result_t<F, Tensor<typename B::value_type>>::value_type>
        padding_value = std::nullopt) {
  using T = typename B::value_type;
  using Result = std::invoke_result_t<F, Tensor<T>>;
  using U = typename Result::value_type;
  if (batch.batch_size() == 0) {  // f is never called: the input's element rank and last dim
    const Tensor<index_t> no_shapes(Shape{0, batch.element_rank() - 1});
    if constexpr (std::is_same_v<B, PackedBatch<T>>)
      return PackedBatch<U>(Tensor<U>(Shape{0, batch.last_dim()}), no_shapes,
                            Tensor<index_t>(Shape{1}, 0));
    else if constexpr (std::is_same_v<B, PaddedBatch<T>>)
      return PaddedBatch<U>(Tensor<U>(batch.data().shape()), no_shapes);
    else
      return ExactBatch<U>(Tensor<U>(batch.data().shape()));
  }
  std::vector<Tensor<U>> results;
  results.reserve(static_cast<std::size_t>(batch.batch_size()));
  for (index_t i = 0; i < batch.batch_size(); ++i)
    results.push_back(f(batch.element(i)));
  if constexpr (std::is_same_v<B, PackedBatch<T>>) {
    return list_to_packed(results);
  } else if constexpr (std::is_same_v<B, PaddedBatch<T>>) {
    return list_to_padded(results, padding_value.value_or(U(0)));
  } else {
    return ExactBatch<U>(detail::stack_equal(results, "map_elements"));
  }
}

}  // namespace tbatch
