#pragma once
// RaggedTensorDict (dict/ragged_tensor_dict_class.hpp) with its members, and the definition of
// TensorDict::stack_ragged.

#include "tbatch/base/config.hpp"
#include "tbatch/dict/ragged_tensor_dict_class.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"

// The TensorDict members the bodies call (set, get_any, ...) are defined along this chain.
#if TBATCH_DEFINITIONS
#include "tbatch/dict/tensor_dict_stack.hpp"
#endif

namespace tbatch {

#if TBATCH_DEFINITIONS

TBATCH_INLINE const Shape& RaggedTensorDict::batch_size_of(index_t i) const {
  detail::check_element_index(i, size(), "RaggedTensorDict::batch_size_of");
  return element_batch_sizes_[static_cast<std::size_t>(i)];
}

TBATCH_INLINE bool RaggedTensorDict::is_dict(const NestedKey& key) const {
  return item_at(key, "RaggedTensorDict::is_dict").dict != nullptr;
}

TBATCH_INLINE bool RaggedTensorDict::is_ragged(const NestedKey& key) const {
  return entry_at(key, "RaggedTensorDict::is_ragged").ragged;
}

TBATCH_INLINE DType RaggedTensorDict::dtype(const NestedKey& key) const {
  return entry_at(key, "RaggedTensorDict::dtype").data.dtype();
}

TBATCH_INLINE std::vector<std::string> RaggedTensorDict::keys() const {
  std::vector<std::string> out;
  for (const Item& item : items_)
    out.push_back(item.key);
  return out;
}

TBATCH_INLINE bool RaggedTensorDict::contains(const NestedKey& key) const {
  if (key.empty())
    detail::fail<KeyError>("RaggedTensorDict::contains",
                           {"the key is an empty path; expected at least one string"});
  const RaggedTensorDict* dict = this;
  for (std::size_t i = 0; i + 1 < key.size(); ++i) {
    const Item* item = dict->find(key[i]);
    if (item == nullptr || !item->dict) return false;
    dict = item->dict.get();
  }
  return dict->find(key.back()) != nullptr;
}

TBATCH_INLINE RaggedTensorDict RaggedTensorDict::get_dict(const NestedKey& key) const {
  const char* fn = "RaggedTensorDict::get_dict";
  const Item& item = item_at(key, fn);
  if (!item.dict)
    detail::fail<TypeError>(fn, {"entry ", key, " is a tensor, not a nested RaggedTensorDict"});
  return *item.dict;
}

TBATCH_INLINE TensorDict RaggedTensorDict::element(index_t i) const {
  detail::check_element_index(i, size(), "RaggedTensorDict::element");
  TensorDict out(element_batch_sizes_[static_cast<std::size_t>(i)]);
  for (const Item& item : items_) {
    if (item.dict) {
      out.set(item.key, item.dict->element(i));
      continue;
    }
    out.set(item.key, element_of(*item.tensor, i));
  }
  return out;
}

TBATCH_INLINE std::vector<TensorDict> RaggedTensorDict::unbind() const {
  std::vector<TensorDict> out;
  for (index_t i = 0; i < size(); ++i)
    out.push_back(element(i));
  return out;
}

TBATCH_INLINE RaggedTensorDict::Stored RaggedTensorDict::stored() const {
  Stored out{batch_size_, element_batch_sizes_, {}};
  for (const Item& item : items_)
    out.items.push_back(
        {item.key, item.tensor,
         item.dict ? std::make_shared<const Stored>(item.dict->stored()) : nullptr});
  return out;
}

TBATCH_INLINE const RaggedTensorDict::Item* RaggedTensorDict::find(const std::string& key) const {
  for (const Item& item : items_)
    if (item.key == key) return &item;
  return nullptr;
}

TBATCH_INLINE const RaggedTensorDict::Item& RaggedTensorDict::item_at(const NestedKey& key,
                                                                      const char* fn) const {
  if (key.empty())
    detail::fail<KeyError>(fn, {"the key is an empty path; expected at least one string"});
  const RaggedTensorDict* dict = this;
  for (std::size_t i = 0;; ++i) {
    const Item* item = dict->find(key[i]);
    if (item == nullptr)
      detail::fail<KeyError>(fn, {"key ", key, " not found in RaggedTensorDict with keys ",
                                  detail::KeysText{dict->keys()}});
    if (i + 1 == key.size()) return *item;
    if (!item->dict)
      detail::fail<KeyError>(fn, {"key ", key, " not found: '", key[i],
                                  "' is a tensor, not a nested RaggedTensorDict"});
    dict = item->dict.get();
  }
}

TBATCH_INLINE const RaggedTensorDict::StoredEntry& RaggedTensorDict::entry_at(
    const NestedKey& key, const char* fn) const {
  const Item& item = item_at(key, fn);
  if (!item.tensor)
    detail::fail<TypeError>(
        fn, {"entry ", key, " is a nested RaggedTensorDict, not a tensor; use get_dict"});
  return *item.tensor;
}

TBATCH_INLINE detail::BatchGeometry RaggedTensorDict::geometry_of(const StoredEntry& entry,
                                                                  const Layout& data,
                                                                  RaggedLayout layout) {
  return layout == RaggedLayout::packed
             ? detail::BatchGeometry::packed(data, entry.shape_per_tensor, entry.first_idx)
             : detail::BatchGeometry::padded(data, entry.shape_per_tensor);
}

TBATCH_INLINE AnyTensor RaggedTensorDict::element_of(const StoredEntry& entry, index_t i) const {
  const Layout& data = entry.data.layout();
  if (!entry.ragged) return entry.data.with_layout(layout::select(data, 0, i));
  Layout element = geometry_of(entry, data, layout_).element(i);
  if (entry.unit_last_dim) element = layout::select(element, element.dim() - 1, 0);
  return entry.data.with_layout(std::move(element));
}

TBATCH_INLINE void RaggedTensorDict::append_text(
    std::string& text, std::size_t indent,
    detail::PrintedTensor (*printed)(const AnyTensor&)) const {
  text += "RaggedTensorDict(batch_size=";
  detail::append_sizes(text, batch_size_.data(), batch_size_.size());
  text += layout_ == RaggedLayout::packed ? ", layout=packed" : ", layout=padded";
  for (const Item& item : items_) {
    text += ",\n";
    text.append(indent + 2, ' ');
    text += item.key;
    text += ": ";
    if (item.dict) {
      item.dict->append_text(text, indent + 2, printed);
      continue;
    }
    const StoredEntry& entry = *item.tensor;
    const std::string_view dtype = dtype_name(entry.data.dtype());
    text.append(dtype.data(), dtype.size());
    if (entry.ragged) {
      text += ", ragged, element_shapes=";
      append_element_shapes(text, entry);
      text += ", data_shape=";
    } else {
      text += ", shape=";
    }
    detail::append_shape(text, entry.data.shape());
    detail::append_field(text, indent + 4, "data", printed(entry.data));
  }
  text += ')';
}

TBATCH_INLINE void RaggedTensorDict::append_element_shapes(std::string& text,
                                                           const StoredEntry& entry) const {
  const index_t sizes = size() * element_of(entry, 0).dim();
  const bool elide = sizes > detail::print_threshold && size() > 2 * detail::print_edge;
  text += '[';
  for (index_t i = 0; i < size(); ++i) {
    if (i > 0) text += ", ";
    if (elide && i == detail::print_edge) {
      text += "..., ";
      i = size() - detail::print_edge;
    }
    detail::append_shape(text, element_of(entry, i).shape());
  }
  text += ']';
}

TBATCH_INLINE RaggedTensorDict
RaggedTensorDict::stacked(const std::vector<const TensorDict*>& parts, RaggedLayout layout,
                          const char* fn, detail::KeyPath& path) {
  const TensorDict& first = *parts[0];
  RaggedTensorDict out;
  out.layout_ = layout;
  out.batch_size_.push_back(static_cast<index_t>(parts.size()));
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i]->batch_dims() != first.batch_dims())
      detail::fail<ShapeError>(
          fn, {"tds[", i, "] has batch_size ", parts[i]->batch_size(), " but tds[0] has ",
               first.batch_size(), detail::Where{path, "at"},
               "; stacking needs the same number of batch dims"});
    out.element_batch_sizes_.push_back(parts[i]->batch_size());
  }
  for (index_t d = 0; d < first.batch_dims(); ++d) {
    index_t size = first.batch_size()[d];
    for (const TensorDict* part : parts)
      if (part->batch_size()[d] != size) size = -1;
    out.batch_size_.push_back(size);
  }
  const std::vector<std::string> keys = first.keys();
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::vector<std::string> other = parts[i]->keys();
    bool same = other.size() == keys.size();
    for (std::size_t j = 0; same && j < keys.size(); ++j)
      same = parts[i]->contains(keys[j]);
    if (!same)
      detail::fail<KeyError>(
          fn, {"got keys ", detail::KeysText{keys}, " and ", detail::KeysText{other},
               " which are incompatible (tds[0] and tds[", i, "]", detail::Where{path, "at"},
               "); every TensorDict must have the same keys"});
  }
  for (const std::string& key : keys) {
    path.push(key);
    Item item;
    item.key = key;
    const bool nested = first.is_dict(key);
    for (std::size_t i = 1; i < parts.size(); ++i)
      if (parts[i]->is_dict(key) != nested)
        detail::fail<TypeError>(
            fn, {"entry ", path, " is a ", nested ? "nested TensorDict" : "tensor",
                 " in tds[0] but a ", nested ? "tensor" : "nested TensorDict", " in tds[", i, "]"});
    if (nested) {
      std::vector<TensorDict> children;
      for (const TensorDict* part : parts)
        children.push_back(part->get_dict(key));
      std::vector<const TensorDict*> child_parts;
      for (const TensorDict& child : children)
        child_parts.push_back(&child);
      item.dict = std::make_shared<const RaggedTensorDict>(stacked(child_parts, layout, fn, path));
    } else {
      std::vector<AnyTensor> tensors;
      for (const TensorDict* part : parts)
        tensors.push_back(part->get_any(key));
      item.tensor = stacked_entry(tensors, layout, fn, path);
    }
    out.items_.push_back(std::move(item));
    path.pop();
  }
  return out;
}

TBATCH_INLINE RaggedTensorDict::StoredEntry RaggedTensorDict::stacked_entry(
    const std::vector<AnyTensor>& tensors, RaggedLayout layout, const char* fn,
    const detail::KeyPath& path) {
  const AnyTensor& head = tensors[0];
  bool same_shape = true;
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    const AnyTensor& t = tensors[i];
    if (t.dtype() != head.dtype())
      detail::fail<TypeError>(fn, {"entry ", path, " has dtype ", t.dtype(), " in tds[", i,
                                   "] but ", head.dtype(), " in tds[0]; expected the same dtype"});
    same_shape = same_shape && t.shape() == head.shape();
  }
  StoredEntry entry;
  if (same_shape) {
    Shape shape = head.shape();
    shape.insert(0, static_cast<index_t>(tensors.size()));
    entry.data = AnyTensor::empty(head.dtype(), shape);
    for (std::size_t i = 0; i < tensors.size(); ++i)
      entry.data.assign_at(layout::select(entry.data.layout(), 0, static_cast<index_t>(i)),
                           tensors[i], fn);
    return entry;
  }
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    const Shape& shape = tensors[i].shape();
    if (shape.size() != head.shape().size())
      detail::fail<ShapeError>(
          fn, {"entry ", path, " has shape ", shape, " in tds[", i, "] but ", head.shape(),
               " in tds[0]; a ragged entry needs one rank in every TensorDict"});
    // Padded and packed batches share the last dim: without one, add a dim of size 1.
    entry.unit_last_dim = entry.unit_last_dim || shape.back() != head.shape().back();
  }
  entry.ragged = true;
  // The batch is built untyped, as list_to_packed / list_to_padded(list, 0) would build it:
  // zero bits are zero in every dtype.
  std::vector<AnyTensor> elements;
  for (const AnyTensor& t : tensors)
    elements.push_back(entry.unit_last_dim ? t.with_layout(layout::unsqueeze(t.layout(), t.dim()))
                                           : t);
  const index_t batch = static_cast<index_t>(elements.size());
  const index_t last_dim = elements[0].size(-1);
  entry.shape_per_tensor = detail::shape_per_tensor_of(elements, fn);
  if (layout == RaggedLayout::packed) {
    entry.first_idx = detail::packed_first_idx(entry.shape_per_tensor, fn);
    entry.data = AnyTensor::empty(head.dtype(), Shape{entry.first_idx(batch), last_dim});
  } else {
    entry.data = AnyTensor::zeros(
        head.dtype(),
        detail::batched_shape(batch, fill_max_shape(entry.shape_per_tensor, {}), last_dim));
  }
  const detail::BatchGeometry geometry = geometry_of(entry, entry.data.layout(), layout);
  for (index_t i = 0; i < batch; ++i)
    entry.data.assign_at(geometry.element(i), elements[static_cast<std::size_t>(i)], fn);
  return entry;
}

TBATCH_INLINE RaggedTensorDict TensorDict::stack_ragged(const std::vector<TensorDict>& tds,
                                                        RaggedLayout layout) {
  const char* fn = "TensorDict::stack_ragged";
  if (tds.empty()) detail::fail<ValueError>(fn, {"expected a non-empty list of TensorDicts"});
  std::vector<const TensorDict*> parts;
  for (const TensorDict& td : tds)
    parts.push_back(&td);
  detail::KeyPath path;
  return RaggedTensorDict::stacked(parts, layout, fn, path);
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
