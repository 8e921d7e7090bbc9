#pragma once
// What the conversions between lists and batch layouts share: the lists they accept and the
// declarations of their typed bodies, which conversions_kernel.hpp defines.

#include <iterator>
#include <type_traits>
#include <vector>

#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

namespace detail {

/// Shape (B, sizes..., last_dim) as a Shape.
inline Shape batched_shape(index_t batch, const Tensor<index_t>& sizes, index_t last_dim) {
  Shape shape{batch};
  for (index_t d = 0; d < sizes.numel(); ++d)
    shape.push_back(sizes.data()[d]);
  shape.push_back(last_dim);
  return shape;
}

/// An element of a list as the read-only view the kernels copy from.
template <class T>
StridedView<const T> element_view(const Tensor<T>& element) {
  return element.view();
}
template <class T>
StridedView<const T> element_view(const StridedView<T>& element) {
  return StridedView<const T>(element);
}

/// The element type of a list item: Tensor<T>, StridedView<T> or StridedView<const T> give T.
template <class Item>
struct ListItem {};
template <class T>
struct ListItem<Tensor<T>> {
  using value_type = T;
};
template <class T>
struct ListItem<StridedView<T>> {
  using value_type = std::remove_const_t<T>;
};

template <class List>
using list_item_t = std::remove_cvref_t<decltype(*std::begin(std::declval<const List&>()))>;

}  // namespace detail

/// What list_to_padded and list_to_packed accept: a sized range (std::vector, std::array,
/// std::span, ...) of Tensor<T>, StridedView<T> or StridedView<const T>. Views over memory the
/// caller owns (Tensor::borrow, StridedView(pointer, shape, strides)) are read in place.
template <class List>
concept ElementList = requires(const List& list) {
  std::size(list);
  typename detail::ListItem<detail::list_item_t<List>>::value_type;
};

/// The element type T of an ElementList.
template <ElementList List>
using list_value_t = typename detail::ListItem<detail::list_item_t<List>>::value_type;

namespace detail {

/// Calls fn(elements) with the list as a std::vector of StridedView<const T>: the list itself
/// when it is one, else a vector of read-only views of its items (no data copied).
template <class List, class Fn>
decltype(auto) with_element_vector(const List& list, Fn&& fn) {
  using T = list_value_t<List>;
  if constexpr (std::is_same_v<List, std::vector<StridedView<const T>>>) {
    return fn(list);
  } else {
    std::vector<StridedView<const T>> views;
    views.reserve(std::size(list));
    for (const auto& item : list)
      views.push_back(element_view(item));
    return fn(views);
  }
}

/// The conversions' typed bodies (conversions_kernel.hpp), declared here: a compiled-mode file
/// calls the library's instantiations of them (every dtype) without reading their definitions.
template <class Item, class T = typename ListItem<Item>::value_type>
PaddedBatch<T> padded_from_list(const std::vector<Item>& list, T padding_value,
                                const std::vector<index_t>& max_shape);
template <class Item, class T = typename ListItem<Item>::value_type>
PaddedBatch<T> padded_into_from_list(const std::vector<Item>& list_in, T padding_value,
                                     Tensor<T> out);
template <class Item, class T = typename ListItem<Item>::value_type>
PackedBatch<T> packed_from_list(const std::vector<Item>& list);
template <class Item, class T = typename ListItem<Item>::value_type>
PackedBatch<T> packed_into_from_list(const std::vector<Item>& list_in, Tensor<T> out);
/// to_packed of an exact or padded batch.
template <class B>
PackedBatch<typename B::value_type> packed_from_batch(const B& batch);
/// The elements of `batch` at `order` (1-d, positions already checked) as a packed batch, each
/// element copied once (index_select).
template <class B>
PackedBatch<typename B::value_type> packed_selection(const B& batch, const Tensor<index_t>& order);
/// to_padded of any batch, copied (an exact batch without max_shape is viewed by to_padded).
template <class B>
PaddedBatch<typename B::value_type> padded_from_batch(const B& batch,
                                                      typename B::value_type padding_value,
                                                      const std::vector<index_t>& max_shape);
/// Stacks same-shaped tensors into (B, shape...); ShapeError naming the first that differs.
template <class T>
Tensor<T> stack_equal(const std::vector<Tensor<T>>& list, const char* function);
/// tile_to_packed of checked arguments.
template <class T>
Tensor<T> tiled_to_packed(const Tensor<T>& values, const Tensor<index_t>& numel_per_tensor);

}  // namespace detail

}  // namespace tbatch
