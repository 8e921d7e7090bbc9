#pragma once
// The typed bodies of the conversions: each element copied by one run where its layout allows,
// through the view engine otherwise, with the padding around it filled. Included by
// conversions.hpp in header-only mode and in the library, not in a compiled-mode user file.

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/parallel.hpp"
#include "tbatch/batch/conversions_common.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/engine.hpp"

namespace tbatch::detail {

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

/// Element order[i] of a batch's data as write_elements reads element i.
template <class T>
struct SelectedSource {
  BatchSource<T> batch;
  const index_t* order;
  const T* first(index_t i) const { return batch.first(order[i]); }
  StridedView<const T> view(index_t i) const { return batch.view(order[i]); }
};

/// Writes `elements` into padded `out` (validated by the caller to hold them), each into its box
/// with `padding_value` around it.
template <class Item, class T>
void write_padded(const std::vector<Item>& elements, const Tensor<index_t>& shape_per_tensor,
                  Tensor<T>& out, T padding_value) {
  write_elements(BatchGeometry::padded(out.layout(), shape_per_tensor), out,
                 ListSource<Item>{elements.data()}, padding_value);
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

template <class Item, class T>
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

template <class Item, class T>
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
    fail<ShapeError>("list_to_padded_into",
                     {"out has shape ", out.shape(), " but ", batch, " tensors of rank ",
                      list.empty() ? 0 : list[0].dim(), " need shape (", batch, ", max_shape..., ",
                      list.empty() ? 0 : list[0].size(-1), ")"});
  for (std::size_t i = 0; i < list.size(); ++i)
    for (index_t d = 0; d + 1 < list[i].dim(); ++d)
      if (list[i].size(d) > out.size(d + 1))
        fail<ShapeError>("list_to_padded_into",
                         {"out has size ", out.size(d + 1), " at dim ", d + 1, " but tensor ", i,
                          " has ", list[i].size(d), " there (out shape ", out.shape(), ")"});
  // Read out's rank before out is moved into the call (argument order is unspecified).
  Tensor<index_t> shapes =
      list.empty() ? Tensor<index_t>(Shape{0, out.dim() - 2}) : shape_per_tensor;
  return padded_from_elements(list, std::move(shapes), std::move(out), padding_value);
}

template <class Item, class T>
PackedBatch<T> packed_from_list(const std::vector<Item>& list) {
  const Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list, "list_to_packed");
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "list_to_packed");
  const index_t last_dim = list.empty() ? 0 : list[0].size(-1);
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[list.size()], last_dim});
  write_elements(BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out,
                 ListSource<Item>{list.data()});
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

template <class Item, class T>
PackedBatch<T> packed_into_from_list(const std::vector<Item>& list_in, Tensor<T> out) {
  const Tensor<index_t> shape_per_tensor = shape_per_tensor_of(list_in, "list_to_packed_into");
  check_distinct_elements(out.view(), "list_to_packed_into");
  std::vector<Item> staging;
  std::vector<Tensor<T>> copies;
  const std::vector<Item>& list = unaliased(list_in, out.view(), staging, copies);
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "list_to_packed_into");
  const Shape needed{first_idx.data()[list.size()], list.empty() ? out.size(-1) : list[0].size(-1)};
  if (!(out.shape() == needed))
    fail<ShapeError>("list_to_packed_into",
                     {"out has shape ", out.shape(), " but the list needs ", needed});
  write_elements(BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out,
                 ListSource<Item>{list.data()});
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

template <class T>
Tensor<T> stack_equal(const std::vector<Tensor<T>>& list, const char* function) {
  if (list.empty()) return Tensor<T>(Shape{0, 0});
  const Shape& shape = list.front().shape();
  Shape stacked{static_cast<index_t>(list.size())};
  for (index_t s : shape)
    stacked.push_back(s);
  for (std::size_t i = 0; i < list.size(); ++i)
    if (!(list[i].shape() == shape))
      fail<ShapeError>(function,
                       {"element ", i, " has shape ", list[i].shape(), " but element 0 has ", shape,
                        "; an exact batch needs equal shapes"});
  Tensor<T> out = Tensor<T>::empty(stacked);
  write_elements(BatchGeometry::exact(out.layout()), out, ListSource<Tensor<T>>{list.data()});
  return out;
}

template <class B>
PackedBatch<typename B::value_type> packed_from_batch(const B& batch) {
  using T = typename B::value_type;
  const Tensor<index_t> shape_per_tensor = batch.shape_per_tensor();
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "to_packed");
  if constexpr (std::is_same_v<B, ExactBatch<T>>) {
    if (batch.data().is_contiguous())
      return PackedBatch<T>(
          batch.data().reshape({first_idx.data()[batch.batch_size()], batch.last_dim()}),
          shape_per_tensor, first_idx);
  }
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[batch.batch_size()], batch.last_dim()});
  write_from_batch(batch, BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out);
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

template <class B>
PackedBatch<typename B::value_type> packed_selection(const B& batch, const Tensor<index_t>& order) {
  using T = typename B::value_type;
  const Tensor<index_t> positions = order.contiguous();
  const Tensor<index_t> shape_per_tensor = batch.shape_per_tensor().index({positions}).contiguous();
  const Tensor<index_t> first_idx = packed_first_idx(shape_per_tensor, "index_select");
  const index_t count = positions.size(0);
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[count], batch.last_dim()});
  const SelectedSource<T> from{{geometry_of(batch), batch.data().data(), batch.data()},
                               positions.data()};
  write_elements(BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx), out, from);
  return PackedBatch<T>(std::move(out), shape_per_tensor, first_idx, ValidMetadata{});
}

template <class B>
PaddedBatch<typename B::value_type> padded_from_batch(const B& batch,
                                                      typename B::value_type padding_value,
                                                      const std::vector<index_t>& max_shape) {
  using T = typename B::value_type;
  const Tensor<index_t> shape_per_tensor = batch.shape_per_tensor();
  Tensor<T> out = Tensor<T>::empty(batched_shape(
      batch.batch_size(), fill_max_shape(shape_per_tensor, max_shape), batch.last_dim()));
  write_from_batch(batch, BatchGeometry::padded(out.layout(), shape_per_tensor), out,
                   padding_value);
  return PaddedBatch<T>(std::move(out), shape_per_tensor, ValidMetadata{});
}

template <class T>
Tensor<T> tiled_to_packed(const Tensor<T>& values, const Tensor<index_t>& numel_per_tensor) {
  const Tensor<index_t> first_idx = get_first_idx(numel_per_tensor);
  const index_t batch = values.size(0);
  Tensor<T> out = Tensor<T>::empty(Shape{first_idx.data()[batch], 1});
  // The output is a packed batch of (count, 1) elements: its geometry places each run.
  const Tensor<index_t> shape_per_tensor = numel_per_tensor.reshape({batch, 1});
  const BatchGeometry rows = BatchGeometry::packed(out.layout(), shape_per_tensor, first_idx);
  const Tensor<T> flat_values = values.reshape({-1});
  const T* value = flat_values.data();
  const index_t value_stride = flat_values.stride(0);
  const Stores stores = stores_for_output(out);
  T* const base = out.data();
  for_each_element_block(batch, out, stores, [&](index_t start, index_t end) {
    for (index_t i = start; i < end; ++i) {
      const ElementRun run = rows.run(i);
      write_run(stores, base + run.start, value, 0, run.count, value[i * value_stride]);
    }
  });
  return out;
}

}  // namespace tbatch::detail
