#pragma once
// RaggedTensorDict: TensorDicts whose entries may differ in shape, stacked along a new first
// batch dim by TensorDict::stack_ragged into dense tensors and padded or packed batches. Its
// non-template members are defined in dict/ragged_tensor_dict.hpp.

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
  TBATCH_INLINE const Shape& batch_size_of(index_t i) const;

  TBATCH_INLINE std::vector<std::string> keys() const;
  TBATCH_INLINE bool contains(const NestedKey& key) const;
  TBATCH_INLINE bool is_dict(const NestedKey& key) const;
  /// True when the tensor entry at `key` differs in shape between the stacked TensorDicts.
  TBATCH_INLINE bool is_ragged(const NestedKey& key) const;
  TBATCH_INLINE DType dtype(const NestedKey& key) const;
  /// A dense entry: the stacked tensor. ShapeError for a ragged entry.
  template <Element T>
  Tensor<T> get(const NestedKey& key) const {
    const char* fn = "RaggedTensorDict::get";
    const StoredEntry& entry = entry_at(key, fn);
    if (entry.ragged)
      detail::fail<ShapeError>(fn, {"entry ", key,
                                    " differs in shape between the stacked TensorDicts; use "
                                    "to_padded, to_packed or to_list"});
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
  TBATCH_INLINE RaggedTensorDict get_dict(const NestedKey& key) const;
  /// Stacked TensorDict i (its tensors view this RaggedTensorDict's data).
  TBATCH_INLINE TensorDict element(index_t i) const;
  /// Every stacked TensorDict.
  TBATCH_INLINE std::vector<TensorDict> unbind() const;
  /// TensorDict::apply on the stacked entries: fn(t) for a dense entry's stacked Tensor<T> and
  /// fn(b) for a ragged entry's batch b (PaddedBatch<T> or PackedBatch<T>, as layout() says),
  /// which may return a batch of that layout, a dense Tensor (B, ...) or a reduction's result.
  /// A ragged result whose elements all have one shape becomes a dense entry. TypeError naming
  /// the entry that fn does not take; ShapeError when a result does not fit the batch sizes.
  template <class Fn>
  RaggedTensorDict apply(Fn&& fn) const;

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
  TBATCH_INLINE Stored stored() const;

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

  TBATCH_INLINE const Item* find(const std::string& key) const;
  TBATCH_INLINE const Item& item_at(const NestedKey& key, const char* fn) const;
  TBATCH_INLINE const StoredEntry& entry_at(const NestedKey& key, const char* fn) const;
  template <Element T>
  static Tensor<T> typed(const StoredEntry& entry, const NestedKey& key, const char* fn) {
    if (entry.data.holds<T>()) return entry.data.get<T>(fn);
    detail::fail<TypeError>(fn, {"entry ", key, " has dtype ", entry.data.dtype(),
                                 ", not the requested ", dtype_name_of<T>});
  }
  template <Element T>
  static ExactBatch<T> exact(const Tensor<T>& data, const NestedKey& key, const char* fn) {
    if (data.dim() < 2)
      detail::fail<ShapeError>(fn,
                               {"entry ", key, " holds 0-d tensors (stacked shape ", data.shape(),
                                "); padded and packed batches need elements of "
                                "rank >= 1"});
    return ExactBatch<T>(data);
  }
  /// The batch geometry of a ragged entry whose data is laid out as `data`.
  static TBATCH_INLINE detail::BatchGeometry geometry_of(const StoredEntry& entry,
                                                         const Layout& data, RaggedLayout layout);
  /// Entry of stacked TensorDict i: a view of the stored data, untyped.
  TBATCH_INLINE AnyTensor element_of(const StoredEntry& entry, index_t i) const;

  // `printed` comes from operator<<, so that this function instantiates no printer itself.
  TBATCH_INLINE void append_text(std::string& text, std::size_t indent,
                                 detail::PrintedTensor (*printed)(const AnyTensor&)) const;
  /// The shapes of a ragged entry's tensors; elided as a tensor of as many sizes would be.
  TBATCH_INLINE void append_element_shapes(std::string& text, const StoredEntry& entry) const;

  /// Builds the stack of `parts` (keys, kinds and batch_dims checked here; `path` locates
  /// nested ones in messages).
  static TBATCH_INLINE RaggedTensorDict stacked(const std::vector<const TensorDict*>& parts,
                                                RaggedLayout layout, const char* fn,
                                                detail::KeyPath& path);
  static TBATCH_INLINE StoredEntry stacked_entry(const std::vector<AnyTensor>& tensors,
                                                 RaggedLayout layout, const char* fn,
                                                 const detail::KeyPath& path);

  /// from_stored of the dict at `prefix`, whose enclosing dict's elements have the batch sizes
  /// `parent` (null at the top).
  template <class Reject>
  static RaggedTensorDict built(const Stored& stored, RaggedLayout layout,
                                const std::string& prefix, const std::vector<Shape>* parent,
                                const Reject& reject) {
    auto bad = [&](const auto&... why) {
      reject(prefix, detail::concat(why...));
      detail::fail<ValueError>("RaggedTensorDict::from_stored", {"reject returned"});
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

}  // namespace tbatch
