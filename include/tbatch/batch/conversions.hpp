#pragma once
// Conversions between lists and the three batch layouts (kaolin.ops.batch names and
// semantics). Every conversion allocates its output once, fills only the padding no element
// overwrites, and copies each element with the view engine.

#include <algorithm>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/parallel.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/view/engine.hpp"

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

/// The many-small-elements path of the conversions: `n` elements copied to `out` as one run,
/// then `padding` more elements (if any) set to `padding_value`. No view or layout is built,
/// which is most of the cost of an element of a few rows.
/// The caller orders streaming stores (for_each_element fences once per block).
template <class T>
void write_run(Stores stores, T* out, const T* in, index_t n, index_t padding = 0,
               T padding_value = T()) {
  if (n > 0) copy_row_with(stores, out, in, n);
  if (padding > 0) fill_row_with(stores, out + n, padding, padding_value);
}

/// Calls body(start, end) for the `count` elements of a conversion writing `out`, in blocks
/// [start, end) of about 64 KiB of output (one task each with OpenMP above 1 MiB), and orders
/// each block's streaming stores with one fence: a fence per element of a few rows costs more
/// than its copy.
template <class T, class Body>
void for_each_element_block(index_t count, const Tensor<T>& out, Stores stores, Body&& body) {
  const index_t bytes = out.numel() * index_t(sizeof(T));
  const index_t per_element = count == 0 ? 1 : std::max<index_t>(1, bytes / count);
  const index_t block = std::clamp<index_t>((index_t(64) << 10) / per_element, 1, 256);
  parallel_for(0, count, block, bytes > parallel_min_bytes, [&](index_t start) {
    body(start, std::min(start + block, count));
    if (stores == Stores::streaming) streaming_fence();
  });
}

/// Element i through views: the padding `to` gives around it, then its values. Kept out of
/// write_elements' loop, whose one-run path is then a few instructions around the copy.
template <class T, class Source>
[[gnu::noinline]] void write_element_views(const BatchGeometry& to, const StridedView<T>& all,
                                           const Source& from, index_t i, T padding_value,
                                           Stores stores) {
  to.for_each_padding(all.layout(), i, [&](const Layout& box) {
    fill_view(all.with_layout(box), padding_value, stores);
  });
  copy_views(from.view(i), all.with_layout(to.element(i)), stores);
}

/// Writes the elements `from` gives into `out`, where the geometry `to` (over out's layout)
/// places them, and fills the padding `to` gives around them with `padding_value`.
/// `from.first(i)` is element i as one run of data (or null) and `from.view(i)` its view: an
/// element that is one run on both sides is one copy and one fill; any other goes through views.
/// The stores follow the whole output's size.
template <class T, class Source>
void write_elements(const BatchGeometry& to, Tensor<T>& out, const Source& from,
                    T padding_value = T()) {
  const StridedView<T> all = out.view();
  const Stores stores = stores_for_output(out);
  T* const base = out.data();
  for_each_element_block(to.batch_size(), out, stores, [&](index_t start, index_t end) {
    // Local copies of the geometries: the copies below cannot write them, so they stay in
    // registers instead of being reloaded after every element.
    const BatchGeometry place_of = to;
    const Source source = from;
    const Stores block_stores = stores;
    const T padding = padding_value;
    for (index_t i = start; i < end; ++i) {
      const ElementRun place = place_of.run(i);
      const T* first = place.valid() ? source.first(i) : nullptr;
      if (first != nullptr)
        write_run(block_stores, base + place.start, first, place.count, place.tail, padding);
      else
        write_element_views(place_of, all, source, i, padding, block_stores);
    }
  });
}

/// The elements of a list (Tensor<T> or StridedView<const T> items) as write_elements reads them.
template <class Item>
struct ListSource {
  const Item* items;
  auto first(index_t i) const {
    const Item& item = items[i];
    return item.is_contiguous() ? item.data() : nullptr;
  }
  auto view(index_t i) const { return element_view(items[i]); }
};

/// The elements of a batch's data (any layout, by its geometry) as write_elements reads them.
template <class T>
struct BatchSource {
  BatchGeometry geometry;
  const T* base;  // data.data()
  const Tensor<T>& data;
  const T* first(index_t i) const {
    const ElementRun run = geometry.run(i);
    return run.valid() ? base + run.start : nullptr;
  }
  StridedView<const T> view(index_t i) const {
    return StridedView<const T>(data.view()).with_layout(geometry.element(i));
  }
};

/// Writes `elements` into padded `out` (validated by the caller to hold them), each into its box
/// with `padding_value` around it.
template <class Item, class T>
void write_padded(const std::vector<Item>& elements, const Tensor<index_t>& shape_per_tensor,
                  Tensor<T>& out, T padding_value) {
  write_elements(BatchGeometry::padded(out.layout(), shape_per_tensor), out,
                 ListSource<Item>{elements.data()}, padding_value);
}

/// Stacks same-shaped tensors into (B, shape...); ShapeError naming the first that differs.
template <class T>
Tensor<T> stack_equal(const std::vector<Tensor<T>>& list, const char* function) {
  if (list.empty()) return Tensor<T>(Shape{0, 0});
  const Shape& shape = list.front().shape();
  Shape stacked{static_cast<index_t>(list.size())};
  for (index_t s : shape)
    stacked.push_back(s);
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!(list[i].shape() == shape))
      fail<ShapeError>(function, "element ", i, " has shape ", list[i].shape(),
                       " but element 0 has ", shape, "; an exact batch needs equal shapes");
  Tensor<T> out = Tensor<T>::empty(stacked);
  write_elements(BatchGeometry::exact(out.layout()), out, ListSource<Tensor<T>>{list.data()});
  return out;
}

/// The elements of a list as a padded batch into `out` (already shaped).
template <class Item, class T>
PaddedBatch<T> padded_from_elements(const std::vector<Item>& elements,
                                    Tensor<index_t> shape_per_tensor, Tensor<T> out,
                                    T padding_value) {
  write_padded(elements, shape_per_tensor, out, padding_value);
  return PaddedBatch<T>(std::move(out), std::move(shape_per_tensor), ValidMetadata{});
}

/// The elements of `batch` into `out`, placed by `to`, the geometry of a batch of another layout
/// over out (padding filled with padding_value).
template <class B, class T>
void write_from_batch(const B& batch, const BatchGeometry& to, Tensor<T>& out,
                      T padding_value = T()) {
  const BatchGeometry from = geometry_of(batch);
  write_elements(to, out, BatchSource<T>{from, batch.data().data(), batch.data()}, padding_value);
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

/// `list`, or, when some of its items share elements with `out`, `staging` holding the list
/// with those items copied into `copies` (rule 2 of view/aliasing.hpp).
template <class Item, class T>
const std::vector<Item>& unaliased(const std::vector<Item>& list, const StridedView<T>& out,
                                   std::vector<Item>& staging, std::vector<Tensor<T>>& copies) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!may_share_elements(element_view(list[i]), out)) continue;
    staging = list;
    for (std::size_t j = i; j < list.size(); ++j) {
      if (!may_share_elements(element_view(list[j]), out)) continue;
      copies.push_back(Tensor<T>::from_view(element_view(list[j])));
      if constexpr (std::is_same_v<Item, Tensor<T>>)
        staging[j] = copies.back();
      else
        staging[j] = StridedView<const T>(copies.back().view());
    }
    return staging;
  }
  return list;
}

template <class Item, class T = typename ListItem<Item>::value_type>
PaddedBatch<T> padded_from_list(const std::vector<Item>& list, T padding_value,
                                const std::vector<index_t>& max_shape) {
  Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list, "list_to_padded");
  const index_t rank = list.empty() ? 1 + static_cast<index_t>(max_shape.size()) : list[0].dim();
  const index_t last_dim = list.empty() ? 0 : list[0].size(-1);
  if (list.empty()) shape_per_tensor = Tensor<index_t>(Shape{0, rank - 1});
  Tensor<T> out = Tensor<T>::empty(batched_shape(
      static_cast<index_t>(list.size()), fill_max_shape(shape_per_tensor, max_shape), last_dim));
  return padded_from_elements(list, std::move(shape_per_tensor), std::move(out), padding_value);
}

template <class Item, class T = typename ListItem<Item>::value_type>
PaddedBatch<T> padded_into_from_list(const std::vector<Item>& list_in, T padding_value,
                                     Tensor<T> out) {
  const Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list_in, "list_to_padded_into");
  check_distinct_elements(out.view(), "list_to_padded_into");
  std::vector<Item> staging;
  std::vector<Tensor<T>> copies;
  const std::vector<Item>& list = unaliased(list_in, out.view(), staging, copies);
  const index_t batch = static_cast<index_t>(list.size());
  if (out.dim() < 2 || out.size(0) != batch ||
      (!list.empty() && (out.dim() != list[0].dim() + 1 || out.size(-1) != list[0].size(-1))))
    fail<ShapeError>("list_to_padded_into", "out has shape ", out.shape(), " but ", batch,
                     " tensors of rank ", list.empty() ? 0 : list[0].dim(), " need shape (", batch,
                     ", max_shape..., ", list.empty() ? 0 : list[0].size(-1), ")");
  for (std::size_t i = 0; i < list.size(); ++i)
    for (index_t d = 0; d + 1 < list[i].dim(); ++d)
      if (list[i].size(d) > out.size(d + 1))
        fail<ShapeError>("list_to_padded_into", "out has size ", out.size(d + 1), " at dim ", d + 1,
                         " but tensor ", i, " has ", list[i].size(d), " there (out shape ",
                         out.shape(), ")");
  // Read out's rank before out is moved into the call (argument order is unspecified).
  Tensor<index_t> shapes =
      list.empty() ? Tensor<index_t>(Shape{0, out.dim() - 2}) : shape_per_tensor;
  return padded_from_elements(list, std::move(shapes), std::move(out), padding_value);
}

template <class Item, class T = typename ListItem<Item>::value_type>
PackedBatch<T> packed_from_list(const std::vector<Item>& list) {
  const Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list, "list_to_packed");
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "list_to_packed");
  const index_t last_dim = list.empty() ? 0 : list[0].size(-1);
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[list.size()], last_dim});
  write_elements(BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out,
                 ListSource<Item>{list.data()});
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

template <class Item, class T = typename ListItem<Item>::value_type>
PackedBatch<T> packed_into_from_list(const std::vector<Item>& list_in, Tensor<T> out) {
  const Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list_in, "list_to_packed_into");
  check_distinct_elements(out.view(), "list_to_packed_into");
  std::vector<Item> staging;
  std::vector<Tensor<T>> copies;
  const std::vector<Item>& list = unaliased(list_in, out.view(), staging, copies);
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "list_to_packed_into");
  const Shape needed{first_idx.data()[list.size()], list.empty() ? out.size(-1) : list[0].size(-1)};
  if (!(out.shape() == needed))
    fail<ShapeError>("list_to_packed_into", "out has shape ", out.shape(), " but the list needs ",
                     needed);
  write_elements(BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out,
                 ListSource<Item>{list.data()});
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

}  // namespace detail

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
  using T = typename B::value_type;
  if constexpr (std::is_same_v<B, PackedBatch<T>>) {
    return batch;
  } else {
    const Tensor<index_t> shape_per_tensor = batch.shape_per_tensor();
    const Tensor<index_t> first_idx = detail::packed_first_idx(shape_per_tensor, "to_packed");
    if constexpr (std::is_same_v<B, ExactBatch<T>>) {
      if (batch.data().is_contiguous())
        return PackedBatch<T>(
            batch.data().reshape({first_idx.data()[batch.batch_size()], batch.last_dim()}),
            shape_per_tensor, first_idx);
    }
    Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[batch.batch_size()], batch.last_dim()});
    detail::write_from_batch(
        batch, detail::BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out);
    return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, detail::ValidMetadata{});
  }
}

/// Any batch as a padded batch (B, max_shape..., last_dim) with `padding_value` and optional
/// `max_shape` (rank - 1 values, -1 = that dim's maximum). An exact batch without max_shape is
/// viewed, not copied. A max_shape below some element is a ValueError (no truncation), one of
/// the wrong length a ShapeError.
template <Batch B>
PaddedBatch<typename B::value_type> to_padded(const B& batch, typename B::value_type padding_value,
                                              const std::vector<index_t>& max_shape = {}) {
  using T = typename B::value_type;
  const Tensor<index_t> shape_per_tensor = batch.shape_per_tensor();
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    if (max_shape.empty()) return PaddedBatch<T>(batch.data(), shape_per_tensor);
  }
  Tensor<T> out = Tensor<T>::empty(detail::batched_shape(
      batch.batch_size(), fill_max_shape(shape_per_tensor, max_shape), batch.last_dim()));
  detail::write_from_batch(batch, detail::BatchGeometry::padded(out.layout(), shape_per_tensor),
                           out, padding_value);
  return PaddedBatch<T>(std::move(out), shape_per_tensor, detail::ValidMetadata{});
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
      detail::fail<ShapeError>("to_exact", "an empty batch has no element shape to stack");
    const Shape shape = batch.shape_of(0);
    for (index_t i = 1; i < batch.batch_size(); ++i)
      if (!(batch.shape_of(i) == shape))
        detail::fail<ShapeError>("to_exact", "element ", i, " has shape ", batch.shape_of(i),
                                 " but element 0 has ", shape,
                                 "; an exact batch needs equal shapes");
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
    detail::fail<ShapeError>("tile_to_packed", "values must have shape (B) or (B, 1), got ",
                             values.shape());
  if (numel_per_tensor.dim() != 1 || numel_per_tensor.size(0) != values.size(0))
    detail::fail<ShapeError>("tile_to_packed", "numel_per_tensor has shape ",
                             numel_per_tensor.shape(), " but values has ", values.size(0),
                             " entries; expected shape [", values.size(0), "]");
  const Tensor<index_t> first_idx = get_first_idx(numel_per_tensor);
  const index_t batch = values.size(0);
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[batch], 1});
  // The output is a packed batch of (count, 1) elements: its geometry places each run.
  const Tensor<index_t> shape_per_tensor = numel_per_tensor.reshape({batch, 1});
  const detail::BatchGeometry rows =
      detail::BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx);
  const Tensor<T> flat_values = values.reshape({-1});
  const T* value = flat_values.data();
  const index_t value_stride = flat_values.stride(0);
  const detail::Stores stores = detail::stores_for_output(out);
  T* const base = out.data();
  detail::for_each_element_block(batch, out, stores, [&](index_t start, index_t end) {
    for (index_t i = start; i < end; ++i) {
      const detail::ElementRun run = rows.run(i);
      detail::write_run(stores, base + run.start, value, 0, run.count, value[i * value_stride]);
    }
  });
  return out;
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
