#pragma once
// RaggedTensorDict: TensorDicts whose entries may differ in shape, stacked along a new first
// batch dim by TensorDict::stack_ragged (defined here) into dense tensors and padded or packed
// batches.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"
#include "tbatch/dict/tensor_dict_stack.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/tensor/tensor_text.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// TensorDicts stacked along a new first batch dim by TensorDict::stack_ragged, whose entries
/// may differ in shape between them. batch_size() has -1 for the dims whose size differs.
/// Dense entries are stacked tensors; ragged entries are a PaddedBatch or PackedBatch whose
/// element i is the entry of TensorDict i. Those batches share the last dim (kaolin's layouts):
/// a ragged entry whose last dim differs too (one without feature dims, say) gets a trailing
/// dim of size 1 in its padded and packed forms; to_list and element(i) give the tensors as
/// they were. Immutable; element(i) gives TensorDict i back.
class RaggedTensorDict {
 public:
  /// The number of stacked TensorDicts, then each batch dim's size, -1 where they differ.
  const std::vector<index_t>& batch_size() const { return batch_size_; }
  index_t batch_dims() const { return static_cast<index_t>(batch_size_.size()); }
  /// The number of stacked TensorDicts.
  index_t size() const { return batch_size_[0]; }
  RaggedLayout layout() const { return layout_; }
  /// The batch size of stacked TensorDict i.
  const Shape& batch_size_of(index_t i) const {
    detail::check_element_index(i, size(), "RaggedTensorDict::batch_size_of");
    return element_batch_sizes_[static_cast<std::size_t>(i)];
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const Item& item : items_)
      out.push_back(item.key);
    return out;
  }
  bool contains(const NestedKey& key) const {
    if (key.empty())
      detail::fail<KeyError>("RaggedTensorDict::contains",
                             "the key is an empty path; expected at least one string");
    const RaggedTensorDict* dict = this;
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      const Item* item = dict->find(key[i]);
      if (item == nullptr || !item->dict) return false;
      dict = item->dict.get();
    }
    return dict->find(key.back()) != nullptr;
  }
  bool is_dict(const NestedKey& key) const {
    return item_at(key, "RaggedTensorDict::is_dict").dict != nullptr;
  }
  /// True when the tensor entry at `key` differs in shape between the stacked TensorDicts.
  bool is_ragged(const NestedKey& key) const {
    return entry_at(key, "RaggedTensorDict::is_ragged").ragged;
  }
  DType dtype(const NestedKey& key) const {
    return entry_at(key, "RaggedTensorDict::dtype").data.dtype();
  }
  /// A dense entry: the stacked tensor. ShapeError for a ragged entry.
  template <Element T>
  Tensor<T> get(const NestedKey& key) const {
    const char* fn = "RaggedTensorDict::get";
    const StoredEntry& entry = entry_at(key, fn);
    if (entry.ragged)
      detail::fail<ShapeError>(fn, "entry ", key,
                               " differs in shape between the stacked TensorDicts; use "
                               "to_padded, to_packed or to_list");
    return typed<T>(entry, key, fn);
  }
  /// The entry as a padded batch (a view of the stored batch when it is padded with
  /// `padding_value` already, or dense).
  template <Element T>
  PaddedBatch<T> to_padded(const NestedKey& key, T padding_value = T(0)) const {
    const char* fn = "RaggedTensorDict::to_padded";
    const StoredEntry& entry = entry_at(key, fn);
    const Tensor<T>& data = typed<T>(entry, key, fn);
    if (!entry.ragged) return tbatch::to_padded(exact(data, key, fn), padding_value);
    if (layout_ == RaggedLayout::packed)
      return tbatch::to_padded(PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx),
                               padding_value);
    PaddedBatch<T> stored(data, entry.shape_per_tensor);
    if (detail::widen(padding_value) == detail::widen(T(0))) return stored;
    return tbatch::to_padded(stored, padding_value);
  }
  /// The entry as a packed batch (a view of the stored batch when it is packed).
  template <Element T>
  PackedBatch<T> to_packed(const NestedKey& key) const {
    const char* fn = "RaggedTensorDict::to_packed";
    const StoredEntry& entry = entry_at(key, fn);
    const Tensor<T>& data = typed<T>(entry, key, fn);
    if (!entry.ragged) return tbatch::to_packed(exact(data, key, fn));
    if (layout_ == RaggedLayout::packed)
      return PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx);
    return tbatch::to_packed(PaddedBatch<T>(data, entry.shape_per_tensor));
  }
  /// The entry of each stacked TensorDict (views).
  template <Element T>
  std::vector<Tensor<T>> to_list(const NestedKey& key) const {
    const char* fn = "RaggedTensorDict::to_list";
    const StoredEntry& entry = entry_at(key, fn);
    typed<T>(entry, key, fn);
    std::vector<Tensor<T>> out;
    for (index_t i = 0; i < size(); ++i)
      out.push_back(element_of(entry, i).get<T>(fn));
    return out;
  }
  /// A nested RaggedTensorDict.
  RaggedTensorDict get_dict(const NestedKey& key) const {
    const char* fn = "RaggedTensorDict::get_dict";
    const Item& item = item_at(key, fn);
    if (!item.dict)
      detail::fail<TypeError>(fn, "entry ", key, " is a tensor, not a nested RaggedTensorDict");
    return *item.dict;
  }
  /// Stacked TensorDict i (its tensors view this RaggedTensorDict's data).
  TensorDict element(index_t i) const {
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
  /// Every stacked TensorDict.
  std::vector<TensorDict> unbind() const {
    std::vector<TensorDict> out;
    for (index_t i = 0; i < size(); ++i)
      out.push_back(element(i));
    return out;
  }

  /// A tensor entry as stored.
  struct StoredEntry {
    bool ragged = false;
    AnyTensor data;                    // dense: the stacked tensor; ragged: the batch's data
    Tensor<index_t> shape_per_tensor;  // ragged entries
    Tensor<index_t> first_idx;         // ragged entries of a packed RaggedTensorDict
    bool unit_last_dim = false;        // the batch's elements are the tensors + a dim of size 1
  };
  /// A RaggedTensorDict as stored: its batch sizes and its items, tensor entries or dicts.
  struct Stored {
    struct Item {
      std::string key;
      std::optional<StoredEntry> tensor;
      std::shared_ptr<const Stored> dict;
    };
    std::vector<index_t> batch_size;
    std::vector<Shape> element_batch_sizes;
    std::vector<Item> items;
  };

  /// This RaggedTensorDict as stored (sharing its tensors), as io::put saves it.
  Stored stored() const {
    Stored out{batch_size_, element_batch_sizes_, {}};
    for (const Item& item : items_)
      out.items.push_back(
          {item.key, item.tensor,
           item.dict ? std::make_shared<const Stored>(item.dict->stored()) : nullptr});
    return out;
  }

  /// The RaggedTensorDict of `stored` in `layout` (sharing its tensors), checked to be one that
  /// stack_ragged builds: batch sizes that agree with each other, with the nested dicts' and
  /// with the tensors; unique keys; each entry's ragged and unit_last_dim flags as stack_ragged
  /// sets them. The first problem is passed to reject(prefix, why), which must throw: `prefix`
  /// locates the nested dict (its keys, each followed by '.'; empty at the top) and `why` says
  /// what is wrong ("has key 'x' twice"). The batch constructors check each ragged entry's
  /// shape_per_tensor and first_idx against its data, with their own errors.
  template <class Reject>
  static RaggedTensorDict from_stored(const Stored& stored, RaggedLayout layout,
                                      const Reject& reject) {
    return built(stored, layout, "", nullptr, reject);
  }

  /// "RaggedTensorDict(batch_size=[...], layout=...," then per entry "key: dtype, shape=[...],"
  /// (dense) or "key: dtype, ragged, element_shapes=[...], data_shape=[...]," (ragged) and the
  /// stored data below it; nested RaggedTensorDicts are indented by 2.
  // A template so that only programs that print a RaggedTensorDict compile the twelve printers.
  template <class Char, class Traits>
  friend std::basic_ostream<Char, Traits>& operator<<(std::basic_ostream<Char, Traits>& out,
                                                      const RaggedTensorDict& dict) {
    std::string text;
    dict.append_text(text, 0, [](const AnyTensor& data) {
      return data.visit([](const auto& tensor) { return detail::printed(tensor); });
    });
    return detail::write_text(out, text);
  }

 private:
  friend class TensorDict;

  struct Item {
    std::string key;
    std::optional<StoredEntry> tensor;
    std::shared_ptr<const RaggedTensorDict> dict;
  };

  const Item* find(const std::string& key) const {
    for (const Item& item : items_)
      if (item.key == key) return &item;
    return nullptr;
  }
  const Item& item_at(const NestedKey& key, const char* fn) const {
    if (key.empty())
      detail::fail<KeyError>(fn, "the key is an empty path; expected at least one string");
    const RaggedTensorDict* dict = this;
    for (std::size_t i = 0;; ++i) {
      const Item* item = dict->find(key[i]);
      if (item == nullptr)
        detail::fail<KeyError>(fn, "key ", key, " not found in RaggedTensorDict with keys ",
                               detail::KeysText{dict->keys()});
      if (i + 1 == key.size()) return *item;
      if (!item->dict)
        detail::fail<KeyError>(fn, "key ", key, " not found: '", key[i],
                               "' is a tensor, not a nested RaggedTensorDict");
      dict = item->dict.get();
    }
  }
  const StoredEntry& entry_at(const NestedKey& key, const char* fn) const {
    const Item& item = item_at(key, fn);
    if (!item.tensor)
      detail::fail<TypeError>(fn, "entry ", key,
                              " is a nested RaggedTensorDict, not a tensor; use get_dict");
    return *item.tensor;
  }
  template <Element T>
  static Tensor<T> typed(const StoredEntry& entry, const NestedKey& key, const char* fn) {
    if (entry.data.holds<T>()) return entry.data.get<T>(fn);
    detail::fail<TypeError>(fn, "entry ", key, " has dtype ", entry.data.dtype(),
                            ", not the requested ", dtype_name_of<T>);
  }
  template <Element T>
  static ExactBatch<T> exact(const Tensor<T>& data, const NestedKey& key, const char* fn) {
    if (data.dim() < 2)
      detail::fail<ShapeError>(fn, "entry ", key, " holds 0-d tensors (stacked shape ",
                               data.shape(),
                               "); padded and packed batches need elements of "
                               "rank >= 1");
    return ExactBatch<T>(data);
  }
  /// The batch geometry of a ragged entry whose data is laid out as `data`.
  static detail::BatchGeometry geometry_of(const StoredEntry& entry, const Layout& data,
                                           RaggedLayout layout) {
    return layout == RaggedLayout::packed
               ? detail::BatchGeometry::packed(data, entry.shape_per_tensor, entry.first_idx)
               : detail::BatchGeometry::padded(data, entry.shape_per_tensor);
  }
  /// Entry of stacked TensorDict i: a view of the stored data, untyped.
  AnyTensor element_of(const StoredEntry& entry, index_t i) const {
    const Layout& data = entry.data.layout();
    if (!entry.ragged) return entry.data.with_layout(layout::select(data, 0, i));
    Layout element = geometry_of(entry, data, layout_).element(i);
    if (entry.unit_last_dim) element = layout::select(element, element.dim() - 1, 0);
    return entry.data.with_layout(std::move(element));
  }

  // `printed` comes from operator<<, so that this function instantiates no printer itself.
  void append_text(std::string& text, std::size_t indent,
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
  /// The shapes of a ragged entry's tensors; elided as a tensor of as many sizes would be.
  void append_element_shapes(std::string& text, const StoredEntry& entry) const {
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

  /// Builds the stack of `parts` (keys, kinds and batch_dims checked here; `path` locates
  /// nested ones in messages).
  static RaggedTensorDict stacked(const std::vector<const TensorDict*>& parts, RaggedLayout layout,
                                  const char* fn, detail::KeyPath& path) {
    const TensorDict& first = *parts[0];
    RaggedTensorDict out;
    out.layout_ = layout;
    out.batch_size_.push_back(static_cast<index_t>(parts.size()));
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i]->batch_dims() != first.batch_dims())
        detail::fail<ShapeError>(fn, "tds[", i, "] has batch_size ", parts[i]->batch_size(),
                                 " but tds[0] has ", first.batch_size(), detail::Where{path, "at"},
                                 "; stacking needs the same number of batch dims");
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
        detail::fail<KeyError>(fn, "got keys ", detail::KeysText{keys}, " and ",
                               detail::KeysText{other}, " which are incompatible (tds[0] and tds[",
                               i, "]", detail::Where{path, "at"},
                               "); every TensorDict must have the same keys");
    }
    for (const std::string& key : keys) {
      path.push(key);
      Item item;
      item.key = key;
      const bool nested = first.is_dict(key);
      for (std::size_t i = 1; i < parts.size(); ++i)
        if (parts[i]->is_dict(key) != nested)
          detail::fail<TypeError>(fn, "entry ", path, " is a ",
                                  nested ? "nested TensorDict" : "tensor", " in tds[0] but a ",
                                  nested ? "tensor" : "nested TensorDict", " in tds[", i, "]");
      if (nested) {
        std::vector<TensorDict> children;
        for (const TensorDict* part : parts)
          children.push_back(part->get_dict(key));
        std::vector<const TensorDict*> child_parts;
        for (const TensorDict& child : children)
          child_parts.push_back(&child);
        item.dict =
            std::make_shared<const RaggedTensorDict>(stacked(child_parts, layout, fn, path));
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
  static StoredEntry stacked_entry(const std::vector<AnyTensor>& tensors, RaggedLayout layout,
                                   const char* fn, const detail::KeyPath& path) {
    const AnyTensor& head = tensors[0];
    bool same_shape = true;
    for (std::size_t i = 1; i < tensors.size(); ++i) {
      const AnyTensor& t = tensors[i];
      if (t.dtype() != head.dtype())
        detail::fail<TypeError>(fn, "entry ", path, " has dtype ", t.dtype(), " in tds[", i,
                                "] but ", head.dtype(), " in tds[0]; expected the same dtype");
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
        detail::fail<ShapeError>(fn, "entry ", path, " has shape ", shape, " in tds[", i, "] but ",
                                 head.shape(),
                                 " in tds[0]; a ragged entry needs one rank in every TensorDict");
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

  /// from_stored of the dict at `prefix`, whose enclosing dict's elements have the batch sizes
  /// `parent` (null at the top).
  template <class Reject>
  static RaggedTensorDict built(const Stored& stored, RaggedLayout layout,
                                const std::string& prefix, const std::vector<Shape>* parent,
                                const Reject& reject) {
    auto bad = [&](const auto&... why) {
      reject(prefix, detail::concat(why...));
      detail::fail<ValueError>("RaggedTensorDict::from_stored", "reject returned");
    };
    RaggedTensorDict out;
    out.layout_ = layout;
    if (stored.batch_size.empty()) bad("has an empty batch_size");
    for (const index_t size : stored.batch_size)
      if (size < -1) bad("has a bad batch size");
    out.batch_size_ = stored.batch_size;
    const index_t count = out.batch_size_[0];
    if (count < 1)
      bad("has batch_size[0] ", count, "; a RaggedTensorDict stacks at least one TensorDict");
    for (const Shape& shape : stored.element_batch_sizes) {
      const std::size_t i = out.element_batch_sizes_.size();
      for (const index_t size : shape)
        if (size < 0) bad("has a bad batch size");
      if (index_t(shape.size()) + 1 != out.batch_dims())
        bad("has element batch sizes of another rank");
      index_t numel = 1;
      for (const index_t size : shape)
        if (detail::multiply_overflows(numel, size, numel))
          bad("has element ", i, " of batch size ", shape, ", whose size overflows");
      if (parent && i < parent->size() && !detail::starts_with(shape, (*parent)[i]))
        bad("has element ", i, " of batch size ", shape, ", but its parent's is ", (*parent)[i]);
      out.element_batch_sizes_.push_back(shape);
    }
    const std::vector<Shape>& sizes = out.element_batch_sizes_;
    if (index_t(sizes.size()) != count)
      bad("has a number of element batch sizes other than batch_size[0]");
    if (parent && parent->size() != sizes.size()) bad("has a nested dict of another size");
    // Each batch dim's size is the elements' common size, or -1 where they differ.
    std::vector<index_t> common{count};
    for (std::size_t d = 0; d + 1 < out.batch_size_.size(); ++d) {
      common.push_back(sizes[0][d]);
      for (const Shape& size : sizes)
        if (size[d] != sizes[0][d]) common.back() = -1;
    }
    if (common != out.batch_size_) {
      std::string claimed, actual;
      detail::append_sizes(claimed, out.batch_size_.data(), out.batch_size_.size());
      detail::append_sizes(actual, common.data(), common.size());
      bad("has batch_size ", claimed, ", but its elements' batch sizes make it ", actual);
    }
    const bool same_batch_sizes = std::find(common.begin(), common.end(), -1) == common.end();
    // Element i's tensor of an entry must start with element i's batch size.
    auto check_batch = [&](index_t i, const Shape& element, const std::string& name) {
      if (!detail::starts_with(element, sizes[std::size_t(i)]))
        bad("has element ", i, " of batch size ", sizes[std::size_t(i)], ", but its entry '", name,
            "' has shape ", element);
    };
    for (const Stored::Item& stored_item : stored.items) {
      if (out.find(stored_item.key) != nullptr) bad("has key '", stored_item.key, "' twice");
      const std::string name = prefix + stored_item.key;
      Item item;
      item.key = stored_item.key;
      if (stored_item.dict) {
        item.dict = std::make_shared<const RaggedTensorDict>(
            built(*stored_item.dict, layout, name + ".", &sizes, reject));
        out.items_.push_back(std::move(item));
        continue;
      }
      if (!stored_item.tensor) bad("has item '", name, "' that is neither a tensor nor a dict");
      const StoredEntry& entry = *stored_item.tensor;
      if (!entry.ragged) {
        if (entry.unit_last_dim) bad("has dense entry '", name, "' with unit_last_dim set");
        if (entry.data.dim() < 1 || entry.data.size(0) != count)
          bad("has a dense entry whose first dim is not the number of elements");
        const Shape& stacked = entry.data.shape();
        const Shape element(stacked.begin() + 1, stacked.end());
        // One shape for all: with equal batch sizes element 0 stands for all; otherwise some
        // element's batch size is not a prefix of it, and the scan stops there.
        for (index_t i = 0; i < count; ++i) {
          check_batch(i, element, name);
          if (same_batch_sizes) break;
        }
      } else {
        // The batch constructors check the metadata against the data.
        entry.data.visit([&](const auto& data) {
          using T = typename std::decay_t<decltype(data)>::value_type;
          const index_t batch =
              layout == RaggedLayout::packed
                  ? PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx).batch_size()
                  : PaddedBatch<T>(data, entry.shape_per_tensor).batch_size();
          if (batch != count) bad("has a ragged entry with another number of elements");
        });
        check_ragged(entry, name, bad, check_batch);
      }
      item.tensor = entry;
      out.items_.push_back(std::move(item));
    }
    return out;
  }

  /// The shapes of a ragged entry's tensors differ, and its unit_last_dim flag is set exactly
  /// when their last dims differ. The batch's shape_per_tensor holds each element's dims but
  /// the last, which the data holds once: with the flag, the elements are the tensors plus a
  /// trailing dim of size 1, and the rows are the tensors' whole shapes.
  template <class Bad, class CheckBatch>
  static void check_ragged(const StoredEntry& entry, const std::string& name, const Bad& bad,
                           const CheckBatch& check_batch) {
    const Tensor<index_t> rows = entry.shape_per_tensor.contiguous();
    const index_t count = rows.size(0), rank = rows.size(1), last = entry.data.size(-1);
    const index_t* at = rows.data();
    auto tensor_shape = [&](index_t i) {
      Shape shape(at + i * rank, at + (i + 1) * rank);
      if (!entry.unit_last_dim) shape.push_back(last);
      return shape;
    };
    bool differ = false;
    for (index_t i = 1; i < count && !differ; ++i)
      differ = !std::equal(at + i * rank, at + (i + 1) * rank, at);
    if (entry.unit_last_dim) {
      if (last != 1)
        bad("has entry '", name, "' with unit_last_dim set, but its data's last dim is ", last,
            ", not 1");
      bool last_dims_differ = false;
      for (index_t i = 1; rank >= 1 && i < count; ++i)
        last_dims_differ = last_dims_differ || at[i * rank + rank - 1] != at[rank - 1];
      if (!last_dims_differ)
        bad("has entry '", name, "' with unit_last_dim set, but its tensors' last dims are all ",
            rank >= 1 ? at[rank - 1] : index_t(1));
    }
    if (!differ)
      bad("has ragged entry '", name, "' whose tensors all have shape ", tensor_shape(0));
    for (index_t i = 0; i < count; ++i)
      check_batch(i, tensor_shape(i), name);
  }

  std::vector<index_t> batch_size_;
  std::vector<Shape> element_batch_sizes_;
  RaggedLayout layout_ = RaggedLayout::padded;
  std::vector<Item> items_;
};

inline RaggedTensorDict TensorDict::stack_ragged(const std::vector<TensorDict>& tds,
                                                 RaggedLayout layout) {
  const char* fn = "TensorDict::stack_ragged";
  if (tds.empty()) detail::fail<ValueError>(fn, "expected a non-empty list of TensorDicts");
  std::vector<const TensorDict*> parts;
  for (const TensorDict& td : tds)
    parts.push_back(&td);
  detail::KeyPath path;
  return RaggedTensorDict::stacked(parts, layout, fn, path);
}

}  // namespace tbatch
