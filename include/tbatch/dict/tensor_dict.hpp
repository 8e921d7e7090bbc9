#pragma once
// TensorDict: a dictionary of tensors of any dtype, and of nested TensorDicts, that share their
// leading batch dims. Its shape ops are the view layer's layout functions applied to the batch
// dims of every entry, and its indexing is detail::plan_index over every entry's batch dims.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/core/checked_math.hpp"
#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/indexing.hpp"
#include "tbatch/core/shape.hpp"
#include "tbatch/core/small_vector.hpp"
#include "tbatch/core/tensor.hpp"
#include "tbatch/dict/any_tensor.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

class TensorDict;
class RaggedTensorDict;

/// How TensorDict::stack_ragged stores the entries whose shapes differ between the TensorDicts
/// it stacks.
enum class RaggedLayout { padded, packed };

/// A key of a TensorDict: one string, or a path of strings into nested TensorDicts
/// (Python's tuple keys). Converts from "a", std::string, {"a", "b"} and a vector of strings.
class NestedKey {
 public:
  NestedKey(const char* key) {
    if (key == nullptr)
      detail::fail<KeyError>("NestedKey", "the key is a null pointer; expected a string");
    parts_.emplace_back(key);
  }
  NestedKey(std::string key) { parts_.push_back(std::move(key)); }
  NestedKey(std::vector<std::string> path) : parts_(std::move(path)) {}
  NestedKey(std::initializer_list<std::string> path) : parts_(path) {}

  const std::vector<std::string>& parts() const { return parts_; }
  std::size_t size() const { return parts_.size(); }
  bool empty() const { return parts_.empty(); }
  bool is_nested() const { return parts_.size() > 1; }
  const std::string& operator[](std::size_t i) const { return parts_[i]; }
  const std::string& back() const { return parts_.back(); }

  friend bool operator==(const NestedKey& a, const NestedKey& b) { return a.parts_ == b.parts_; }
  /// 'a' for one part, ('a', 'b') for a path, as Python prints them.
  friend std::ostream& operator<<(std::ostream& out, const NestedKey& key) {
    if (key.size() == 1) return out << '\'' << key.parts_[0] << '\'';
    out << '(';
    for (std::size_t i = 0; i < key.size(); ++i)
      out << (i ? ", " : "") << '\'' << key.parts_[i] << '\'';
    return out << ')';
  }

 private:
  std::vector<std::string> parts_;
};

/// One entry of TensorDict::refine_names / rename: a name, no name (std::nullopt) or Ellipsis
/// (the existing names of the dims it stands for).
class DimName {
 public:
  DimName(const char* name) {
    if (name != nullptr) name_ = std::string(name);
  }
  DimName(std::string name) : name_(std::move(name)) {}
  DimName(std::optional<std::string> name) : name_(std::move(name)) {}
  DimName(std::nullopt_t) {}
  DimName(EllipsisT) : ellipsis_(true) {}

  bool is_ellipsis() const { return ellipsis_; }
  const std::optional<std::string>& name() const { return name_; }

 private:
  std::optional<std::string> name_;
  bool ellipsis_ = false;
};

namespace detail {

using DimNames = std::vector<std::optional<std::string>>;

/// Prints dim names as Python does: ['robot', None].
struct NamesText {
  const DimNames& names;
  friend std::ostream& operator<<(std::ostream& out, const NamesText& t) {
    out << '[';
    for (std::size_t i = 0; i < t.names.size(); ++i) {
      out << (i ? ", " : "");
      if (t.names[i])
        out << '\'' << *t.names[i] << '\'';
      else
        out << "None";
    }
    return out << ']';
  }
};

/// Prints keys as Python does: ['a', 'b'].
struct KeysText {
  std::vector<std::string> keys;
  friend std::ostream& operator<<(std::ostream& out, const KeysText& t) {
    out << '[';
    for (std::size_t i = 0; i < t.keys.size(); ++i)
      out << (i ? ", " : "") << '\'' << t.keys[i] << '\'';
    return out << ']';
  }
};

/// The keys leading to the entry a recursive walk is at, printed like a NestedKey.
class KeyPath {
 public:
  void push(const std::string& key) { parts_.push_back(&key); }
  void pop() { parts_.pop_back(); }
  bool empty() const { return parts_.empty(); }
  NestedKey key() const {
    std::vector<std::string> parts;
    for (const std::string* p : parts_)
      parts.push_back(*p);
    return NestedKey(std::move(parts));
  }
  friend std::ostream& operator<<(std::ostream& out, const KeyPath& path) {
    return out << path.key();
  }

 private:
  // Inline up to depth 8: every walk over the entries keeps one, for its error messages only.
  detail::SmallVector<const std::string*, 8> parts_;
};

/// Prints " <word> <key>" when the walk is inside a nested TensorDict, nothing at the top.
struct Where {
  const KeyPath& path;
  const char* word;
  friend std::ostream& operator<<(std::ostream& out, const Where& w) {
    if (!w.path.empty()) out << ' ' << w.word << ' ' << w.path;
    return out;
  }
};

/// Prints one index as Python spells it: 0, 1:3, ::-1, ..., None, or the index tensor.
inline std::ostream& print_index(std::ostream& out, const TensorIndex& index) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, index_t>) {
          out << v;
        } else if constexpr (std::is_same_v<V, Slice>) {
          if (v.start) out << *v.start;
          out << ':';
          if (v.stop) out << *v.stop;
          if (v.step != 1) out << ':' << v.step;
        } else if constexpr (std::is_same_v<V, EllipsisT>) {
          out << "...";
        } else if constexpr (std::is_same_v<V, NewAxisT>) {
          out << "None";
        } else {
          out << v;
        }
      },
      index.value());
  return out;
}

/// A whole index expression: the index itself when there is one, else a tuple.
struct IndexText {
  std::initializer_list<TensorIndex> indices;
  friend std::ostream& operator<<(std::ostream& out, const IndexText& t) {
    if (t.indices.size() == 1) return print_index(out, *t.indices.begin());
    out << '(';
    bool first = true;
    for (const auto& index : t.indices) {
      out << (first ? "" : ", ");
      print_index(out, index);
      first = false;
    }
    return out << ')';
  }
};

/// Owns a nested TensorDict; copies deep-copy the structure (the tensors still share buffers).
class DictBox {
 public:
  explicit DictBox(TensorDict dict);
  DictBox(const DictBox& other);
  DictBox(DictBox&& other) noexcept;
  DictBox& operator=(const DictBox& other);
  DictBox& operator=(DictBox&& other) noexcept;
  ~DictBox();

  TensorDict& get() { return *dict_; }
  const TensorDict& get() const { return *dict_; }

 private:
  std::unique_ptr<TensorDict> dict_;
};

inline bool starts_with(const Shape& shape, const Shape& prefix) {
  return shape.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), shape.begin());
}

}  // namespace detail

/// A dictionary of tensors (any of the twelve dtypes) and nested TensorDicts whose leading dims
/// all equal batch_size(). Copying a TensorDict copies its keys and structure; the tensors share
/// their buffers, as Tensor copies do, and clone() copies the data.
class TensorDict {
 public:
  using Names = std::vector<std::optional<std::string>>;

  /// An entry value: any Tensor<T>, an AnyTensor, or a nested TensorDict.
  class Value {
   public:
    template <Element T>
    Value(Tensor<T> tensor) : value_(std::in_place_index<0>, std::move(tensor)) {}
    Value(const AnyTensor& tensor) : value_(tensor) {}
    Value(AnyTensor&& tensor) : value_(std::move(tensor)) {}
    Value(TensorDict dict);

    bool is_tensor() const { return value_.index() == 0; }
    bool is_dict() const { return value_.index() == 1; }
    const AnyTensor& tensor() const { return std::get<0>(value_); }
    AnyTensor& tensor() { return std::get<0>(value_); }
    const TensorDict& dict() const { return std::get<1>(value_).get(); }
    TensorDict& dict() { return std::get<1>(value_).get(); }

   private:
    std::variant<AnyTensor, detail::DictBox> value_;
  };
  using Item = std::pair<std::string, Value>;

  /// Walks the first batch dim: each step is the TensorDict of one batch element (a view).
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = TensorDict;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = TensorDict;

    Iterator() = default;
    TensorDict operator*() const { return dict_->index({position_}); }
    Iterator& operator++() {
      ++position_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++position_;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) {
      return a.dict_ == b.dict_ && a.position_ == b.position_;
    }

   private:
    friend class TensorDict;
    Iterator(const TensorDict* dict, index_t position) : dict_(dict), position_(position) {}
    const TensorDict* dict_ = nullptr;
    index_t position_ = 0;
  };

  // ---------------------------------------------------------------- construction

  /// No entries, batch_size {} (never inferred: see auto_batch_size_).
  TensorDict() = default;
  /// No entries; one name (or std::nullopt) per batch dim, or none at all for no names.
  explicit TensorDict(Shape batch_size, Names names = {}) : batch_size_(std::move(batch_size)) {
    checked_numel(batch_size_, "TensorDict");
    names_ = checked_names(std::move(names), batch_dims(), "TensorDict", true);
  }
  /// Entries {{"key", tensor or TensorDict}, ...}, each checked against `batch_size`.
  TensorDict(std::initializer_list<Item> items, Shape batch_size = {}, Names names = {})
      : TensorDict(std::move(batch_size), std::move(names)) {
    for (const Item& item : items) {
      if (find(item.first))
        detail::fail<KeyError>("TensorDict", "key '", item.first, "' is given more than once");
      set_value(item.first, item.second, "TensorDict");
    }
  }

  // ---------------------------------------------------------------- batch size

  const Shape& batch_size() const { return batch_size_; }
  /// Same as batch_size() (Python's td.shape).
  const Shape& shape() const { return batch_size_; }
  index_t batch_dims() const { return static_cast<index_t>(batch_size_.size()); }
  /// Same as batch_dims() (Python's td.dim()).
  index_t dim() const { return batch_dims(); }
  /// Number of batch elements (1 for batch_size {}), not the number of values in the tensors.
  index_t numel() const { return batch_size_.numel(); }
  /// Size of the first batch dim, 0 when there is none (Python's len(td)).
  index_t size() const { return batch_size_.empty() ? 0 : batch_size_[0]; }
  /// Size of batch dim `dim` (negative counts from the end).
  index_t size(index_t dim) const {
    return batch_size_[normalize_dim(dim, batch_dims(), "TensorDict::size")];
  }

  /// A new batch size every entry is compatible with ({} always is). ShapeError naming the
  /// first entry that is not. Names of kept dims stay; new dims have none.
  void set_batch_size(Shape batch_size) {
    const char* fn = "TensorDict::set_batch_size";
    checked_numel(batch_size, fn);
    for (const auto& [key, value] : entries_) {
      if (value.is_tensor() && !detail::starts_with(value.tensor().shape(), batch_size))
        detail::fail<ShapeError>(fn, "the Tensor ", key, " has shape ", value.tensor().shape(),
                                 " which is incompatible with the batch-size ", batch_size, ".");
      if (value.is_dict() && !detail::starts_with(value.dict().batch_size_, batch_size))
        detail::fail<ShapeError>(fn, "the TensorDict ", key, " has batch-size ",
                                 value.dict().batch_size_,
                                 " which is incompatible with the batch-size ", batch_size, ".");
    }
    names_.resize(batch_size.size());
    batch_size_ = std::move(batch_size);
    propagate_names(fn);
  }

  /// Sets the batch size to the longest leading dims all entries share (nested TensorDicts
  /// first get their own longest batch size), at most `batch_dims` dims. A TensorDict without
  /// entries keeps its batch size (cut to `batch_dims`).
  TensorDict& auto_batch_size_(std::optional<index_t> batch_dims = std::nullopt) {
    if (batch_dims && *batch_dims < 0)
      detail::fail<ValueError>("TensorDict::auto_batch_size_", "batch_dims ", *batch_dims,
                               " must be >= 0");
    fit_batch_size(batch_dims);
    return *this;
  }

  // ---------------------------------------------------------------- entries

  /// Stores `value` (sharing its buffer) at `key`; a nested key creates missing intermediate
  /// TensorDicts. ShapeError when the value's leading dims are not the batch size.
  template <Element T>
  void set(const NestedKey& key, Tensor<T> value) {
    set_tensor(key, AnyTensor(std::move(value)), "TensorDict::set");
  }
  void set(const NestedKey& key, AnyTensor value) {
    set_tensor(key, std::move(value), "TensorDict::set");
  }
  /// Stores a nested TensorDict, whose batch size must start with this one's; it takes this
  /// TensorDict's names for the shared dims.
  void set(const NestedKey& key, TensorDict value) {
    set_dict(key, std::move(value), "TensorDict::set");
  }
  /// Stores a nested TensorDict made of `items` with the batch size of its parent (Python's
  /// `td["target"] = {"joints": ...}`).
  void set(const NestedKey& key, std::initializer_list<Item> items) {
    const char* fn = "TensorDict::set";
    const TensorDict& holder = check_set_path(key, fn);
    TensorDict value;
    value.batch_size_ = holder.batch_size_;
    value.names_ = holder.names_;
    for (const Item& item : items) {
      if (value.find(item.first))
        detail::fail<KeyError>(fn, "key '", item.first, "' is given more than once");
      value.set_value(item.first, item.second, fn);
    }
    set_dict(key, std::move(value), fn);
  }

  /// The tensor at `key` (sharing its buffer). KeyError when missing, TypeError when it is a
  /// nested TensorDict or has another dtype.
  template <Element T>
  Tensor<T> get(const NestedKey& key) const {
    const char* fn = "TensorDict::get";
    const AnyTensor& tensor = tensor_at(key, fn);
    if (tensor.holds<T>()) return tensor.get<T>(fn);
    detail::fail<TypeError>(fn, "entry ", key, " has dtype ", tensor.dtype(),
                            ", not the requested ", dtype_name_of<T>);
  }
  /// The tensor at `key` whatever its dtype.
  AnyTensor get_any(const NestedKey& key) const { return tensor_at(key, "TensorDict::get_any"); }
  /// The nested TensorDict at `key` (a copy of its structure sharing the tensors).
  TensorDict get_dict(const NestedKey& key) const {
    const char* fn = "TensorDict::get_dict";
    const Value& value = lookup_or_throw(key, fn);
    if (!value.is_dict())
      detail::fail<TypeError>(fn, "entry ", key, " is a tensor, not a nested TensorDict; use get");
    return value.dict();
  }
  /// True when `key` (a top-level key, or a path into nested TensorDicts) is present.
  bool contains(const NestedKey& key) const {
    check_key(key, "TensorDict::contains");
    return lookup(key) != nullptr;
  }
  /// True when the entry at `key` is a nested TensorDict; KeyError when missing.
  bool is_dict(const NestedKey& key) const {
    return lookup_or_throw(key, "TensorDict::is_dict").is_dict();
  }
  /// Top-level keys in insertion order.
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& item : entries_)
      out.push_back(item.first);
    return out;
  }
  /// Keys as paths; include_nested walks into nested TensorDicts (depth first), leaves_only
  /// skips the nested TensorDicts themselves.
  std::vector<NestedKey> keys(bool include_nested, bool leaves_only = false) const {
    std::vector<NestedKey> out;
    std::vector<std::string> prefix;
    collect_keys(include_nested, leaves_only, prefix, out);
    return out;
  }
  /// Removes `key`; KeyError when missing or when its TensorDict is locked.
  void erase(const NestedKey& key) {
    const char* fn = "TensorDict::erase";
    lookup_or_throw(key, fn);
    TensorDict* holder = this;
    for (std::size_t i = 0; i + 1 < key.size(); ++i)
      holder = &holder->find(key[i])->dict();
    if (holder->locked_)
      detail::fail<KeyError>(fn, "cannot remove key ", key,
                             " from a locked TensorDict; call unlock_() first");
    holder->entries_.erase(
        std::find_if(holder->entries_.begin(), holder->entries_.end(),
                     [&](const Item& item) { return item.first == key.back(); }));
  }
  /// A TensorDict with only `keys` (paths keep the nested TensorDicts on the way, with only the
  /// selected entries), in this TensorDict's key order. KeyError for a missing key if strict.
  TensorDict select(const std::vector<NestedKey>& keys, bool strict = true) const {
    const char* fn = "TensorDict::select";
    std::vector<const std::vector<std::string>*> paths;
    for (const NestedKey& key : keys) {
      if (strict)
        lookup_or_throw(key, fn);
      else
        check_key(key, fn);
      paths.push_back(&key.parts());
    }
    return filtered(paths, 0, true);
  }
  /// A TensorDict without `keys` (missing keys are ignored).
  TensorDict exclude(const std::vector<NestedKey>& keys) const {
    std::vector<const std::vector<std::string>*> paths;
    for (const NestedKey& key : keys) {
      check_key(key, "TensorDict::exclude");
      paths.push_back(&key.parts());
    }
    return filtered(paths, 0, false);
  }
  /// Sets every entry of `other` (merging into nested TensorDicts present in both). All or
  /// nothing: on an error this TensorDict is unchanged.
  TensorDict& update(const TensorDict& other) {
    TensorDict staged = *this;
    std::vector<std::string> prefix;
    staged.update_at(other, prefix);
    *this = std::move(staged);
    return *this;
  }
  /// True when there are no tensors (nested TensorDicts without tensors count as empty).
  bool is_empty() const {
    for (const auto& item : entries_)
      if (item.second.is_tensor() || !item.second.dict().is_empty()) return false;
    return true;
  }

  /// A locked TensorDict (and its nested ones) rejects new and removed keys (KeyError); values
  /// of existing keys can still be replaced and written.
  TensorDict& lock_() {
    set_locked(true);
    return *this;
  }
  TensorDict& unlock_() {
    set_locked(false);
    return *this;
  }
  bool is_locked() const { return locked_; }

  // ---------------------------------------------------------------- indexing

  /// Indexes the batch dims of every entry at once: integers, Slice, Ellipsis and NewAxis give
  /// views of the entries, index tensors and boolean masks (over leading batch dims) copies.
  /// The result's batch size is the indexed batch shape; feature dims are untouched. IndexError
  /// when batch_dims() == 0, for an index out of range, too many indices (more than the batch
  /// dims) or a mask of the wrong shape.
  TensorDict index(std::initializer_list<TensorIndex> indices) const {
    const char* fn = "TensorDict::index";
    require_batch_dims(indices, fn);
    const index_t indexable = batch_dims();
    // The new batch size and names follow from any plan of these indices over the batch dims:
    // the first top-level tensor's (whose indexed shape ends with its feature dims), else the
    // batch shape's own.
    const AnyTensor* probe = nullptr;
    for (const Item& item : entries_)
      if (item.second.is_tensor()) {
        probe = &item.second.tensor();
        break;
      }
    detail::IndexPlan plan = detail::plan_index(
        probe ? probe->layout() : layout::contiguous(batch_size_), indices, indexable, fn);
    const Shape shape = detail::indexed_shape(plan);
    const Shape batch(shape.begin(), shape.end() - (probe ? probe->dim() - indexable : 0));
    // The probe's own entry reuses its plan (the names below are computed before any entry).
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      if (&t == probe) return t.index_planned(std::move(plan));
      return t.index_planned(detail::plan_index(t.layout(), indices, indexable, fn));
    };
    detail::KeyPath path;
    return map_tensors(batch, names_after_index(indices, plan, batch.size()), indexable, op, path);
  }

  /// Writes the entries of `value`, a TensorDict with the indexed batch size, into the indexed
  /// batch elements of the same keys (keys of this TensorDict absent from `value` are left
  /// alone). Writing into a TensorDict without entries first creates zero-filled entries shaped
  /// like the value's (lazy pre-allocation). Checks everything before writing anything:
  /// IndexError as for index(); ShapeError when value's batch size is not the indexed one;
  /// KeyError for a key of value missing here; TypeError for a dtype that differs; ValueError
  /// when an indexed entry is an expanded (broadcast) view.
  void index_put(std::initializer_list<TensorIndex> indices, const TensorDict& value) {
    const char* fn = "TensorDict::index_put";
    require_batch_dims(indices, fn);
    const index_t indexable = batch_dims();
    const Shape target = detail::indexed_shape(
        detail::plan_index(layout::contiguous(batch_size_), indices, indexable, fn));
    if (!(value.batch_size_ == target))
      detail::fail<ShapeError>(fn, "the value has batch_size ", value.batch_size_,
                               " but the indexed batch_size is ", target,
                               "; expected a TensorDict of the indexed batch size");
    TensorDict staged;
    TensorDict* destination = this;
    if (entries_.empty() && !value.entries_.empty()) {
      if (locked_)
        detail::fail<KeyError>(fn, "cannot create the keys ", detail::KeysText{value.keys()},
                               " in a locked TensorDict; call unlock_() first");
      staged = *this;
      staged.preallocate_like(value, static_cast<index_t>(target.size()), staged.batch_size_,
                              staged.names_);
      destination = &staged;
    }
    std::vector<PendingWrite> writes;
    detail::KeyPath path;
    destination->plan_writes(value, indices, indexable, fn, writes, path);
    for (PendingWrite& w : writes)
      w.target.index_put_planned(w.plan, w.value, fn);
    if (destination == &staged) *this = std::move(staged);
  }
  /// Writes `value`, broadcast to each entry's indexed shape and converted to its dtype, into
  /// every tensor. ValueError when an element does not fit an entry's dtype.
  template <Element T>
  void index_put(std::initializer_list<TensorIndex> indices, const Tensor<T>& value) {
    const char* fn = "TensorDict::index_put";
    require_batch_dims(indices, fn);
    const index_t indexable = batch_dims();
    detail::plan_index(layout::contiguous(batch_size_), indices, indexable, fn);
    std::vector<PendingWrite> writes;
    auto plan_one = [&](AnyTensor& t, const detail::KeyPath& path) {
      detail::IndexPlan plan = detail::plan_index(t.layout(), indices, indexable, fn);
      check_writable(plan.basic, path, fn);
      check_broadcast(value.shape(), detail::indexed_shape(plan), path, fn);
      std::optional<AnyTensor> converted = t.converted_like(value);
      if (!converted) {
        if (value.numel() == 1)
          detail::fail<ValueError>(fn, "the value ", detail::widen(value.contiguous().data()[0]),
                                   " does not fit the dtype ", t.dtype(), " of entry ", path);
        detail::fail<ValueError>(fn, "the value of dtype ", dtype_name_of<T>,
                                 " has elements that do not fit the dtype ", t.dtype(),
                                 " of entry ", path);
      }
      writes.push_back(PendingWrite{t, std::move(plan), std::move(*converted)});
    };
    detail::KeyPath path;
    for_each_leaf(plan_one, path);
    for (PendingWrite& w : writes)
      w.target.index_put_planned(w.plan, w.value, fn);
  }
  /// Sets the indexed batch elements of every tensor to `value` (converted to each dtype).
  template <Element S>
  void index_put(std::initializer_list<TensorIndex> indices, S value) {
    index_put(indices, Tensor<S>(Shape{}, value));
  }

  // ---------------------------------------------------------------- shape ops over batch dims

  /// The batch dims reshaped to `sizes` (one -1 allowed): views where the strides allow, else
  /// copies. Names are erased. ShapeError when the element count differs.
  TensorDict reshape(const std::vector<index_t>& sizes) const {
    const char* fn = "TensorDict::reshape";
    const Shape batch = layout::infer_size(sizes, numel(), fn);
    const index_t bd = batch_dims();
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return t.reshaped(with_features(batch, t.shape(), bd), fn);
    };
    detail::KeyPath path;
    return map_tensors(batch, Names(batch.size()), bd, op, path);
  }
  /// As reshape, but never copies: ShapeError naming the first entry that cannot be a view.
  TensorDict view(const std::vector<index_t>& sizes) const {
    const char* fn = "TensorDict::view";
    const Shape batch = layout::infer_size(sizes, numel(), fn);
    const index_t bd = batch_dims();
    auto op = [&](const AnyTensor& t, const detail::KeyPath& path) -> AnyTensor {
      if (auto viewed = layout::try_view(t.layout(), with_features(batch, t.shape(), bd), fn))
        return t.with_layout(std::move(*viewed));
      detail::fail<ShapeError>(fn, "entry ", path, " of shape ", t.shape(), " and strides ",
                               detail::listed(t.strides()), " cannot be viewed with batch_size ",
                               batch, " without copying; use reshape, which copies when it must");
    };
    detail::KeyPath path;
    return map_tensors(batch, Names(batch.size()), bd, op, path);
  }
  /// Reorders the batch dims: batch dim i of the result is batch dim dims[i]. Views. ShapeError
  /// unless dims has batch_dims() entries; ValueError for a repeated dim; IndexError for a dim
  /// out of range.
  TensorDict permute(const std::vector<index_t>& dims) const {
    const char* fn = "TensorDict::permute";
    const index_t bd = batch_dims();
    if (static_cast<index_t>(dims.size()) != bd)
      detail::fail<ShapeError>(fn, "got ", dims.size(), " dims ", detail::listed(dims),
                               " for batch_dims ", bd, "; expected a permutation of all ", bd,
                               " batch dims");
    std::vector<index_t> order(bd);
    std::vector<bool> seen(bd, false);
    Shape batch;
    Names names;
    for (index_t i = 0; i < bd; ++i) {
      const index_t d = normalize_dim(dims[i], bd, fn);
      if (seen[d])
        detail::fail<ValueError>(fn, "dim ", dims[i], " appears more than once in ",
                                 detail::listed(dims));
      seen[d] = true;
      order[i] = d;
      batch.push_back(batch_size_[d]);
      names.push_back(names_[d]);
    }
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      std::vector<index_t> full = order;
      for (index_t d = bd; d < t.dim(); ++d)
        full.push_back(d);
      return t.with_layout(layout::permute(t.layout(), full));
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// Swaps batch dims a and b. Views.
  TensorDict transpose(index_t a, index_t b) const {
    const char* fn = "TensorDict::transpose";
    const index_t bd = batch_dims();
    const index_t da = normalize_dim(a, bd, fn), db = normalize_dim(b, bd, fn);
    Shape batch = batch_size_;
    batch.set(da, batch_size_[db]);
    batch.set(db, batch_size_[da]);
    Names names = names_;
    std::swap(names[da], names[db]);
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return t.with_layout(layout::transpose(t.layout(), da, db));
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// Inserts a batch dim of size 1 at `dim` (in [-batch_dims-1, batch_dims]), without a name.
  TensorDict unsqueeze(index_t dim) const {
    const char* fn = "TensorDict::unsqueeze";
    const index_t bd = batch_dims();
    const index_t d = normalize_dim(dim, bd + 1, fn);
    Shape batch = batch_size_;
    batch.insert(d, 1);
    Names names = names_;
    names.insert(names.begin() + d, std::nullopt);
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return t.with_layout(layout::unsqueeze(t.layout(), d));
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// Removes every batch dim of size 1 (feature dims are never touched).
  TensorDict squeeze() const {
    const index_t bd = batch_dims();
    std::vector<index_t> removed;
    Shape batch;
    Names names;
    for (index_t d = 0; d < bd; ++d) {
      if (batch_size_[d] == 1) {
        removed.push_back(d);
      } else {
        batch.push_back(batch_size_[d]);
        names.push_back(names_[d]);
      }
    }
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      Layout l = t.layout();
      for (auto d = removed.rbegin(); d != removed.rend(); ++d)
        l = layout::squeeze(l, *d);
      return t.with_layout(std::move(l));
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// Removes batch dim `dim` if its size is 1, else returns the same entries (as torch).
  TensorDict squeeze(index_t dim) const {
    const char* fn = "TensorDict::squeeze";
    const index_t bd = batch_dims();
    const index_t d = normalize_dim(dim, bd, fn);
    Shape batch = batch_size_;
    Names names = names_;
    const bool removes = batch_size_[d] == 1;
    if (removes) {
      batch.erase(d);
      names.erase(names.begin() + d);
    }
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return removes ? t.with_layout(layout::squeeze(t.layout(), d)) : t;
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// Merges batch dims [start, end] into one (unnamed): views where possible, else copies.
  /// IndexError for a dim out of range or start after end.
  TensorDict flatten(index_t start = 0, index_t end = -1) const {
    const char* fn = "TensorDict::flatten";
    const index_t bd = batch_dims();
    const index_t s = normalize_dim(start, bd, fn, "start dim");
    const index_t e = normalize_dim(end, bd, fn, "end dim");
    if (s > e) detail::fail<IndexError>(fn, "start dim ", start, " comes after end dim ", end);
    Shape batch;
    Names names;
    index_t merged = 1;
    for (index_t d = 0; d < bd; ++d) {
      if (d < s || d > e) {
        batch.push_back(batch_size_[d]);
        names.push_back(names_[d]);
      } else {
        merged = detail::checked_mul(merged, batch_size_[d], fn);
        if (d == e) {
          batch.push_back(merged);
          names.push_back(s == e ? names_[d] : std::nullopt);
        }
      }
    }
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      if (s == e) return t;
      if (auto viewed = layout::try_flatten(t.layout(), s, e)) return t.with_layout(*viewed);
      return t.copy_reshaped(Shape(with_features(batch, t.shape(), bd)));
    };
    detail::KeyPath path;
    return map_tensors(batch, std::move(names), bd, op, path);
  }
  /// Splits batch dim `dim` into `sizes` (one -1 allowed; the new dims have no names). Views.
  /// ShapeError for empty sizes or sizes whose product is not the dim's size.
  TensorDict unflatten(index_t dim, const std::vector<index_t>& sizes) const {
    const char* fn = "TensorDict::unflatten";
    const index_t bd = batch_dims();
    const index_t d = normalize_dim(dim, bd, fn);
    if (sizes.empty())
      detail::fail<ShapeError>(fn, "sizes must not be empty; expected sizes whose product is ",
                               batch_size_[d]);
    const Shape inner = layout::infer_size(sizes, batch_size_[d], fn);
    Shape batch;
    Names names;
    for (index_t i = 0; i < bd; ++i) {
      if (i != d) {
        batch.push_back(batch_size_[i]);
        names.push_back(names_[i]);
        continue;
      }
      for (index_t s : inner) {
        batch.push_back(s);
        names.push_back(std::nullopt);
      }
    }
    const std::vector<index_t> resolved = inner.to_vector();
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return t.with_layout(layout::unflatten(t.layout(), d, resolved));
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), std::move(names), bd, op, path);
  }
  /// One TensorDict per element of batch dim `dim`, which is removed. Views.
  std::vector<TensorDict> unbind(index_t dim = 0) const {
    const char* fn = "TensorDict::unbind";
    const index_t bd = batch_dims();
    const index_t d = normalize_dim(dim, bd, fn);
    Shape batch = batch_size_;
    batch.erase(d);
    Names names = names_;
    names.erase(names.begin() + d);
    const auto count = static_cast<std::size_t>(batch_size_[d]);
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return rebind_all(t, layout::unbind(t.layout(), d));
    };
    detail::KeyPath path;
    return map_tensors_many(std::vector<Shape>(count, batch), std::vector<Names>(count, names), bd,
                            op, path);
  }
  /// Pieces of `size` batch elements along `dim` (the last may be shorter). Views. ValueError
  /// for size <= 0.
  std::vector<TensorDict> split(index_t size, index_t dim = 0) const {
    const char* fn = "TensorDict::split";
    const index_t d = normalize_dim(dim, batch_dims(), fn);
    if (size <= 0 && !(size == 0 && batch_size_[d] == 0))
      detail::fail<ValueError>(fn, "split size ", size, " must be positive");
    return pieces(layout::split(layout::contiguous(batch_size_), size, d),
                  [&](const Layout& l) { return layout::split(l, size, d); });
  }
  /// Consecutive pieces along `dim` with the given sizes, which must sum to its size (ValueError
  /// otherwise, or for a negative size). Views.
  std::vector<TensorDict> split(const std::vector<index_t>& sizes, index_t dim = 0) const {
    const char* fn = "TensorDict::split";
    const index_t d = normalize_dim(dim, batch_dims(), fn);
    index_t total = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0)
        detail::fail<ValueError>(fn, "split size ", sizes[i], " at position ", i, " must be >= 0");
      total = detail::checked_add(total, sizes[i], fn);
    }
    if (total != batch_size_[d])
      detail::fail<ValueError>(fn, "split sizes ", detail::listed(sizes), " sum to ", total,
                               " but batch dim ", dim, " has size ", batch_size_[d]);
    return pieces(layout::split(layout::contiguous(batch_size_), sizes, d),
                  [&](const Layout& l) { return layout::split(l, sizes, d); });
  }
  /// At most `chunks` pieces of ceil(size / chunks) batch elements along `dim`. Views.
  /// ValueError for chunks <= 0.
  std::vector<TensorDict> chunk(index_t chunks, index_t dim = 0) const {
    const char* fn = "TensorDict::chunk";
    const index_t d = normalize_dim(dim, batch_dims(), fn);
    if (chunks <= 0) detail::fail<ValueError>(fn, "chunks ", chunks, " must be positive");
    return pieces(layout::chunk(layout::contiguous(batch_size_), chunks, d),
                  [&](const Layout& l) { return layout::chunk(l, chunks, d); });
  }
  /// Broadcasts size-1 batch dims and prepends new leading batch dims (-1 keeps a size). Views
  /// whose repeated elements share memory: index_put into them is a ValueError; clone() first.
  /// ShapeError for fewer sizes than batch dims or a size that does not broadcast.
  TensorDict expand(const std::vector<index_t>& sizes) const {
    const char* fn = "TensorDict::expand";
    const index_t bd = batch_dims();
    const index_t n = static_cast<index_t>(sizes.size());
    if (n < bd)
      detail::fail<ShapeError>(fn, "got ", n, " sizes ", detail::listed(sizes), " for batch_dims ",
                               bd, "; expected at least ", bd, " (new leading dims come first)");
    const index_t lead = n - bd;
    Shape batch;
    Names names(lead);
    for (index_t i = 0; i < n; ++i) {
      const index_t want = sizes[i];
      if (i < lead) {
        if (want < 0)
          detail::fail<ShapeError>(fn, "size ", want, " at new leading dim ", i, " must be >= 0");
        batch.push_back(want);
        continue;
      }
      const index_t have = batch_size_[i - lead];
      if (want == -1 || want == have)
        batch.push_back(have);
      else if (have == 1 && want >= 0)
        batch.push_back(want);
      else
        detail::fail<ShapeError>(fn, "size ", want, " at dim ", i,
                                 " does not match the existing batch size ", have, " of batch dim ",
                                 i - lead, " (only size-1 dims expand; -1 keeps a size)");
      names.push_back(names_[i - lead]);
    }
    checked_numel(batch, fn);
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      return t.with_layout(layout::expand(t.layout(), with_features(batch, t.shape(), bd)));
    };
    detail::KeyPath path;
    return map_tensors(batch, std::move(names), bd, op, path);
  }
  /// Tiles the batch dims `repeats` times (as torch.Tensor.repeat; extra leading repeats add
  /// batch dims). Always copies.
  TensorDict repeat(const std::vector<index_t>& repeats) const {
    const char* fn = "TensorDict::repeat";
    const index_t bd = batch_dims();
    const index_t n = static_cast<index_t>(repeats.size());
    if (n < bd)
      detail::fail<ShapeError>(fn, "got ", n, " repeats ", detail::listed(repeats),
                               " for batch_dims ", bd, "; expected at least ", bd);
    const index_t lead = n - bd;
    Shape batch;
    for (index_t i = 0; i < n; ++i) {
      if (repeats[i] < 0)
        detail::fail<ValueError>(fn, "repeat ", repeats[i], " at dim ", i, " must be >= 0");
      batch.push_back(detail::checked_mul(repeats[i], i < lead ? 1 : batch_size_[i - lead], fn));
    }
    checked_numel(batch, fn);
    Names names(lead);
    names.insert(names.end(), names_.begin(), names_.end());
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      const std::vector<index_t> target = with_features(batch, t.shape(), bd);
      checked_numel(Shape(target), fn);
      Layout l = t.layout();
      for (index_t i = 0; i < lead; ++i)
        l = layout::unsqueeze(l, 0);
      for (index_t i = 0; i < n; ++i)
        l = layout::unsqueeze(l, 2 * i);
      std::vector<index_t> sizes;
      for (index_t i = 0; i < n; ++i) {
        sizes.push_back(repeats[i]);
        sizes.push_back(l.shape[2 * i + 1]);
      }
      for (index_t d = 2 * n; d < l.dim(); ++d)
        sizes.push_back(l.shape[d]);
      return t.with_layout(layout::expand(l, sizes)).copy_reshaped(Shape(target));
    };
    detail::KeyPath path;
    return map_tensors(batch, std::move(names), bd, op, path);
  }
  /// Repeats each element of batch dim `dim` `repeats` times in place (as torch); without a dim
  /// the batch dims are flattened first. Always copies.
  TensorDict repeat_interleave(index_t repeats, std::optional<index_t> dim = std::nullopt) const {
    const char* fn = "TensorDict::repeat_interleave";
    if (repeats < 0) detail::fail<ValueError>(fn, "repeats ", repeats, " must be >= 0");
    if (!dim) return reshape({numel()}).repeat_interleave(repeats, 0);
    const index_t d = normalize_dim(*dim, batch_dims(), fn);
    const index_t size = batch_size_[d];
    Tensor<index_t> positions =
        Tensor<index_t>::empty(Shape{detail::checked_mul(size, repeats, fn)});
    for (index_t i = 0, k = 0; i < size; ++i)
      for (index_t r = 0; r < repeats; ++r)
        positions.data()[k++] = i;
    return gathered_along(d, positions, fn);
  }
  /// Repeats element i of batch dim `dim` repeats[i] times (`repeats`: one count per element,
  /// or a single count for all).
  TensorDict repeat_interleave(const Tensor<index_t>& repeats,
                               std::optional<index_t> dim = std::nullopt) const {
    const char* fn = "TensorDict::repeat_interleave";
    if (!dim) return reshape({numel()}).repeat_interleave(repeats, 0);
    const index_t d = normalize_dim(*dim, batch_dims(), fn);
    const index_t size = batch_size_[d];
    if (repeats.dim() > 1)
      detail::fail<ShapeError>(fn, "repeats must be 0-d or 1-d, got shape ", repeats.shape());
    if (repeats.numel() != 1 && repeats.numel() != size)
      detail::fail<ShapeError>(fn, "repeats has ", repeats.numel(), " elements but batch dim ",
                               *dim, " has size ", size, "; expected ", size, " or 1");
    const std::vector<index_t> counts = repeats.to_vector();
    index_t total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] < 0)
        detail::fail<ValueError>(fn, "repeats[", i, "] = ", counts[i], " must be >= 0");
      total = detail::checked_add(total, counts[i], fn);
    }
    if (counts.size() == 1) total = detail::checked_mul(counts[0], size, fn);
    Tensor<index_t> positions = Tensor<index_t>::empty(Shape{total});
    for (index_t i = 0, k = 0; i < size; ++i)
      for (index_t r = 0; r < counts[counts.size() == 1 ? 0 : i]; ++r)
        positions.data()[k++] = i;
    return gathered_along(d, positions, fn);
  }
  /// Copies of every tensor (contiguous, sharing nothing with this TensorDict). Unlocked.
  TensorDict clone() const {
    auto op = [](const AnyTensor& t, const detail::KeyPath&) { return t.clone(); };
    detail::KeyPath path;
    return map_tensors(batch_size_, names_, batch_dims(), op, path);
  }
  /// Every tensor contiguous (shared when it already is).
  TensorDict contiguous() const {
    auto op = [](const AnyTensor& t, const detail::KeyPath&) { return t.contiguous(); };
    detail::KeyPath path;
    return map_tensors(batch_size_, names_, batch_dims(), op, path);
  }

  /// Stacks TensorDicts of equal batch sizes and keys along a new batch dim `dim` (copies):
  /// batch size [..., tds.size(), ...]. ValueError for an empty list or conflicting names;
  /// ShapeError for different batch sizes or entry shapes; KeyError for different keys;
  /// TypeError for different dtypes.
  static TensorDict stack(const std::vector<TensorDict>& tds, index_t dim = 0) {
    const char* fn = "TensorDict::stack";
    if (tds.empty()) detail::fail<ValueError>(fn, "expected a non-empty list of TensorDicts");
    for (std::size_t i = 1; i < tds.size(); ++i)
      if (!(tds[i].batch_size_ == tds[0].batch_size_))
        detail::fail<ShapeError>(
            fn, "stacking tensordicts requires them to have congruent batch sizes, got tds[", i,
            "].batch_size=", tds[i].batch_size_, " and tds[0].batch_size=", tds[0].batch_size_);
    const index_t d = tds[0].normalize_dim(dim, tds[0].batch_dims() + 1, fn);
    std::vector<const TensorDict*> parts;
    for (const TensorDict& td : tds)
      parts.push_back(&td);
    detail::KeyPath path;
    return joined(parts, d, true, fn, path);
  }
  /// Concatenates TensorDicts along existing batch dim `dim`; their batch sizes must match
  /// elsewhere and their keys and entry shapes (but dim) must agree (copies). The same errors as
  /// stack.
  static TensorDict cat(const std::vector<TensorDict>& tds, index_t dim = 0) {
    const char* fn = "TensorDict::cat";
    if (tds.empty()) detail::fail<ValueError>(fn, "expected a non-empty list of TensorDicts");
    const index_t d = tds[0].normalize_dim(dim, tds[0].batch_dims(), fn);
    for (std::size_t i = 1; i < tds.size(); ++i)
      if (!same_except(tds[i].batch_size_, tds[0].batch_size_, d))
        detail::fail<ShapeError>(fn,
                                 "cannot concatenate tensordicts whose batch sizes differ "
                                 "outside dim ",
                                 dim, ": got tds[", i, "].batch_size=", tds[i].batch_size_,
                                 " and tds[0].batch_size=", tds[0].batch_size_);
    std::vector<const TensorDict*> parts;
    for (const TensorDict& td : tds)
      parts.push_back(&td);
    detail::KeyPath path;
    return joined(parts, d, false, fn, path);
  }

  /// Stacks TensorDicts whose entries may differ in shape along a new first batch dim
  /// (Python's lazy stack): entries of one shape in every TensorDict become dense tensors, the
  /// others a PaddedBatch or PackedBatch (`layout`) of the per-TensorDict tensors. Every
  /// TensorDict needs the same keys and batch_dims; a ragged entry needs one rank.
  static RaggedTensorDict stack_ragged(const std::vector<TensorDict>& tds,
                                       RaggedLayout layout = RaggedLayout::padded);

  // ---------------------------------------------------------------- names

  /// One name (or std::nullopt) per batch dim.
  const Names& names() const { return names_; }
  bool has_names() const {
    return std::any_of(names_.begin(), names_.end(), [](const auto& n) { return n.has_value(); });
  }
  /// Exactly one name (or std::nullopt) per batch dim (ValueError otherwise); names are unique.
  /// Nested TensorDicts take them for the shared dims.
  void set_names(Names names) {
    const char* fn = "TensorDict::set_names";
    TensorDict staged = *this;
    staged.names_ = checked_names(std::move(names), batch_dims(), fn, false);
    staged.propagate_names(fn);
    *this = std::move(staged);
  }
  void clear_names() {
    names_.assign(batch_size_.size(), std::nullopt);
    propagate_names("TensorDict::clear_names");
  }
  /// Names the unnamed dims: `names` has one entry per batch dim, or fewer and one Ellipsis that
  /// keeps the existing names of the dims it stands for. A named dim can only keep its name.
  TensorDict refine_names(std::initializer_list<DimName> names) const {
    const char* fn = "TensorDict::refine_names";
    const Names wanted = expand_name_pattern(names, fn);
    Names refined = names_;
    for (std::size_t d = 0; d < refined.size(); ++d) {
      if (!wanted[d]) continue;
      if (refined[d] && *refined[d] != *wanted[d])
        detail::fail<ValueError>(fn, "cannot refine batch dim ", d, " named '", *refined[d],
                                 "' to '", *wanted[d], "'; only unnamed dims take a new name");
      refined[d] = wanted[d];
    }
    return renamed(std::move(refined), fn);
  }
  /// New names for all batch dims (an Ellipsis keeps the names of the dims it stands for).
  TensorDict rename(std::initializer_list<DimName> names) const {
    const char* fn = "TensorDict::rename";
    return renamed(expand_name_pattern(names, fn), fn);
  }
  /// Renames dims by their current name: {{"agent", "robot"}} (std::nullopt removes a name).
  TensorDict rename(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& mapping) const {
    const char* fn = "TensorDict::rename";
    Names out = names_;
    for (const auto& [from, to] : mapping) {
      const auto at = std::find(names_.begin(), names_.end(), std::optional<std::string>(from));
      if (at == names_.end())
        detail::fail<ValueError>(fn, "no batch dim is named '", from, "'; the names are ",
                                 detail::NamesText{names_});
      out[at - names_.begin()] = to;
    }
    return renamed(std::move(out), fn);
  }

  // ---------------------------------------------------------------- dict-like exceptions

  /// Iterates over the first batch dim; TypeError when batch_dims() == 0.
  Iterator begin() const {
    if (batch_dims() == 0)
      detail::fail<TypeError>("TensorDict::begin",
                              "iteration over a TensorDict with batch_dims==0 is not permitted; "
                              "iterate over keys() instead");
    return Iterator(this, 0);
  }
  Iterator end() const { return Iterator(this, size()); }

  /// No conversion to bool, so that a comparison cannot pass as a condition by accident: reduce
  /// a comparison with all() or any(), test for keys with keys().empty().
  explicit operator bool() const = delete;

  /// True when every element of every tensor is non-zero (true without tensors).
  bool all() const {
    bool result = true;
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      result = result && t.all_nonzero();
    };
    detail::KeyPath path;
    for_each_leaf(op, path);
    return result;
  }
  /// True when some element of some tensor is non-zero.
  bool any() const {
    bool result = false;
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      result = result || t.any_nonzero();
    };
    detail::KeyPath path;
    for_each_leaf(op, path);
    return result;
  }

  /// Element-wise comparison of every entry: a TensorDict of Tensor<bool> with the same keys.
  /// KeyError when the keys differ, TypeError / ShapeError when an entry's dtype or shape does.
  friend TensorDict operator==(const TensorDict& a, const TensorDict& b) {
    detail::KeyPath path;
    return compared(a, b, false, "TensorDict::operator==", path);
  }
  friend TensorDict operator!=(const TensorDict& a, const TensorDict& b) {
    detail::KeyPath path;
    return compared(a, b, true, "TensorDict::operator!=", path);
  }

  friend std::ostream& operator<<(std::ostream& out, const TensorDict& td) {
    out << "TensorDict(fields={";
    bool first = true;
    for (const auto& [key, value] : td.entries_) {
      out << (first ? "" : ", ") << key << ": ";
      first = false;
      if (value.is_tensor())
        out << "Tensor(shape=" << value.tensor().shape() << ", dtype=" << value.tensor().dtype()
            << ')';
      else
        out << value.dict();
    }
    out << "}, batch_size=" << td.batch_size_;
    if (td.has_names()) out << ", names=" << detail::NamesText{td.names_};
    return out << ')';
  }

 private:
  struct PendingWrite {
    AnyTensor target;
    detail::IndexPlan plan;
    AnyTensor value;
  };

  // ---- lookup

  const Value* find(const std::string& key) const {
    for (const Item& item : entries_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  Value* find(const std::string& key) {
    for (Item& item : entries_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  static void check_key(const NestedKey& key, const char* fn) {
    if (key.empty())
      detail::fail<KeyError>(fn, "the key is an empty path; expected at least one string");
  }
  static NestedKey prefix_of(const NestedKey& key, std::size_t length) {
    return NestedKey(std::vector<std::string>(key.parts().begin(), key.parts().begin() + length));
  }
  const Value* lookup(const NestedKey& key) const {
    const TensorDict* dict = this;
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      const Value* value = dict->find(key[i]);
      if (value == nullptr || value->is_tensor()) return nullptr;
      dict = &value->dict();
    }
    return dict->find(key.back());
  }
  const Value& lookup_or_throw(const NestedKey& key, const char* fn) const {
    check_key(key, fn);
    const TensorDict* dict = this;
    for (std::size_t i = 0;; ++i) {
      const Value* value = dict->find(key[i]);
      if (value == nullptr) {
        if (i == 0)
          detail::fail<KeyError>(fn, "key ", key, " not found in TensorDict with keys ",
                                 detail::KeysText{dict->keys()});
        detail::fail<KeyError>(fn, "key ", key, " not found: the nested TensorDict ",
                               prefix_of(key, i), " has keys ", detail::KeysText{dict->keys()});
      }
      if (i + 1 == key.size()) return *value;
      if (value->is_tensor())
        detail::fail<KeyError>(fn, "key ", key, " not found: ", prefix_of(key, i + 1),
                               " is a tensor, not a nested TensorDict");
      dict = &value->dict();
    }
  }
  const AnyTensor& tensor_at(const NestedKey& key, const char* fn) const {
    const Value& value = lookup_or_throw(key, fn);
    if (!value.is_tensor())
      detail::fail<TypeError>(fn, "entry ", key,
                              " is a nested TensorDict, not a tensor; use get_dict");
    return value.tensor();
  }

  // ---- setting

  /// Checks that `key` can be set and returns the TensorDict whose batch size the value must
  /// start with: the one holding the key's last part, or the deepest existing one on the path
  /// (whose batch size missing intermediate TensorDicts will get).
  const TensorDict& check_set_path(const NestedKey& key, const char* fn) const {
    check_key(key, fn);
    const TensorDict* dict = this;
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      const Value* value = dict->find(key[i]);
      if (value == nullptr) {
        if (dict->locked_)
          detail::fail<KeyError>(fn, "cannot add key ", key, " to a locked TensorDict (",
                                 prefix_of(key, i + 1), " would be created); call unlock_() first");
        return *dict;
      }
      if (value->is_tensor())
        detail::fail<TypeError>(fn, "cannot set key ", key, ": ", prefix_of(key, i + 1),
                                " is a tensor, not a nested TensorDict");
      dict = &value->dict();
    }
    if (dict->locked_ && dict->find(key.back()) == nullptr)
      detail::fail<KeyError>(fn, "cannot add key ", key,
                             " to a locked TensorDict; call unlock_() first");
    return *dict;
  }
  /// The TensorDict that holds `key`'s last part, creating missing intermediate ones (with
  /// their parent's batch size and names). Call after check_set_path.
  TensorDict& holder_for_set(const NestedKey& key) {
    TensorDict* dict = this;
    for (std::size_t i = 0; i + 1 < key.size(); ++i) {
      Value* value = dict->find(key[i]);
      if (value == nullptr) {
        TensorDict created;
        created.batch_size_ = dict->batch_size_;
        created.names_ = dict->names_;
        dict->entries_.emplace_back(key[i], Value(std::move(created)));
        value = &dict->entries_.back().second;
      }
      dict = &value->dict();
    }
    return *dict;
  }
  void put(const std::string& key, Value value) {
    if (Value* existing = find(key))
      *existing = std::move(value);
    else
      entries_.emplace_back(key, std::move(value));
  }
  void set_tensor(const NestedKey& key, AnyTensor value, const char* fn) {
    const TensorDict& holder = check_set_path(key, fn);
    if (!detail::starts_with(value.shape(), holder.batch_size_))
      detail::fail<ShapeError>(fn, "batch dimension mismatch, got batch_size=", holder.batch_size_,
                               " and value.shape=", value.shape(), " for key ", key,
                               ". The leading dimensions of a value must match the batch size.");
    holder_for_set(key).put(key.back(), Value(std::move(value)));
  }
  void set_dict(const NestedKey& key, TensorDict value, const char* fn) {
    const TensorDict& holder = check_set_path(key, fn);
    if (!detail::starts_with(value.batch_size_, holder.batch_size_))
      detail::fail<ShapeError>(fn, "batch dimension mismatch, got batch_size=", holder.batch_size_,
                               " and value.batch_size=", value.batch_size_, " for key ", key,
                               ". A nested TensorDict's batch size must start with its "
                               "parent's.");
    std::copy(holder.names_.begin(), holder.names_.end(), value.names_.begin());
    check_unique_names(value.names_, fn);
    value.propagate_names(fn);
    TensorDict& target = holder_for_set(key);
    if (target.locked_) value.set_locked(true);
    target.put(key.back(), Value(std::move(value)));
  }
  void set_value(const std::string& key, const Value& value, const char* fn) {
    if (value.is_tensor())
      set_tensor(key, value.tensor(), fn);
    else
      set_dict(key, value.dict(), fn);
  }
  void update_at(const TensorDict& other, std::vector<std::string>& prefix) {
    for (const auto& [key, value] : other.entries_) {
      prefix.push_back(key);
      const NestedKey full(prefix);
      const Value* mine = lookup(full);
      if (value.is_dict() && mine != nullptr && mine->is_dict())
        update_at(value.dict(), prefix);
      else if (value.is_tensor())
        set_tensor(full, value.tensor(), "TensorDict::update");
      else
        set_dict(full, value.dict(), "TensorDict::update");
      prefix.pop_back();
    }
  }
  void set_locked(bool locked) {
    locked_ = locked;
    for (Item& item : entries_)
      if (item.second.is_dict()) item.second.dict().set_locked(locked);
  }
  void collect_keys(bool include_nested, bool leaves_only, std::vector<std::string>& prefix,
                    std::vector<NestedKey>& out) const {
    for (const auto& [key, value] : entries_) {
      prefix.push_back(key);
      if (value.is_tensor() || !leaves_only) out.emplace_back(prefix);
      if (value.is_dict() && include_nested)
        value.dict().collect_keys(include_nested, leaves_only, prefix, out);
      prefix.pop_back();
    }
  }
  /// Keeps (select) or drops (exclude) the entries whose path is in `paths`; `depth` is the
  /// path position this TensorDict is at.
  TensorDict filtered(const std::vector<const std::vector<std::string>*>& paths, std::size_t depth,
                      bool keep) const {
    TensorDict out;
    out.batch_size_ = batch_size_;
    out.names_ = names_;
    for (const auto& [key, value] : entries_) {
      bool whole = false;
      std::vector<const std::vector<std::string>*> deeper;
      for (const auto* path : paths) {
        if ((*path)[depth] != key) continue;
        if (path->size() == depth + 1)
          whole = true;
        else
          deeper.push_back(path);
      }
      if (whole) {
        if (keep) out.entries_.emplace_back(key, value);
      } else if (!deeper.empty() && value.is_dict()) {
        out.entries_.emplace_back(key, Value(value.dict().filtered(deeper, depth + 1, keep)));
      } else if (!keep) {
        out.entries_.emplace_back(key, value);
      }
    }
    return out;
  }

  // ---- batch size and names helpers

  static void checked_numel(const Shape& shape, const char* fn) {
    index_t n = 1;
    for (index_t s : shape)
      n = detail::checked_mul(n, s, fn);
  }
  /// Maps a possibly negative dim into [0, rank), where rank is batch_dims() (+1 for ops that
  /// insert a dim); IndexError naming `fn` otherwise.
  index_t normalize_dim(index_t dim, index_t rank, const char* fn,
                        const char* argument = "dim") const {
    if (dim >= -rank && dim < rank) return dim < 0 ? dim + rank : dim;
    if (rank == 0)
      detail::fail<IndexError>(fn, argument, " ", dim,
                               " is given but the TensorDict has batch_dims==0, so it has no "
                               "batch dim to use");
    detail::fail<IndexError>(fn, argument, " ", dim, " is out of range (expected ", -rank, " to ",
                             rank - 1, " for batch_dims ", batch_dims(), ")");
  }
  static void check_unique_names(const Names& names, const char* fn) {
    for (std::size_t i = 0; i < names.size(); ++i)
      for (std::size_t j = i + 1; j < names.size(); ++j)
        if (names[i] && names[j] && *names[i] == *names[j])
          detail::fail<ValueError>(fn, "name '", *names[i], "' is given to batch dims ", i, " and ",
                                   j, "; names must be unique");
  }
  static Names checked_names(Names names, index_t batch_dims, const char* fn,
                             bool empty_means_unnamed) {
    if (names.empty() && empty_means_unnamed) return Names(batch_dims);
    if (static_cast<index_t>(names.size()) != batch_dims)
      detail::fail<ValueError>(fn, "got ", names.size(), " names ", detail::NamesText{names},
                               " for batch_dims ", batch_dims,
                               "; expected one name (or std::nullopt) per batch dim");
    check_unique_names(names, fn);
    return names;
  }
  /// Gives every nested TensorDict this one's names for the shared batch dims.
  void propagate_names(const char* fn) {
    for (Item& item : entries_) {
      if (!item.second.is_dict()) continue;
      TensorDict& child = item.second.dict();
      std::copy(names_.begin(), names_.end(), child.names_.begin());
      check_unique_names(child.names_, fn);
      child.propagate_names(fn);
    }
  }
  Names expand_name_pattern(std::initializer_list<DimName> pattern, const char* fn) const {
    const index_t bd = batch_dims();
    index_t ellipses = 0, named = 0;
    for (const DimName& p : pattern)
      (p.is_ellipsis() ? ellipses : named) += 1;
    if (ellipses > 1)
      detail::fail<ValueError>(fn, "names can contain at most one Ellipsis, got ", ellipses);
    if (ellipses == 0 && named != bd)
      detail::fail<ValueError>(fn, "got ", named, " names for batch_dims ", bd,
                               "; expected one name (or std::nullopt) per batch dim");
    if (named > bd)
      detail::fail<ValueError>(fn, "got ", named, " names besides the Ellipsis for batch_dims ", bd,
                               "; expected at most ", bd);
    Names out;
    for (const DimName& p : pattern) {
      if (!p.is_ellipsis()) {
        out.push_back(p.name());
        continue;
      }
      for (index_t k = 0; k < bd - named; ++k)
        out.push_back(names_[out.size()]);
    }
    return out;
  }
  TensorDict renamed(Names names, const char* fn) const {
    check_unique_names(names, fn);
    TensorDict out = *this;
    out.names_ = std::move(names);
    out.propagate_names(fn);
    return out;
  }
  void fit_batch_size(std::optional<index_t> cap) {
    std::optional<Shape> common;
    for (Item& item : entries_) {
      if (item.second.is_dict()) item.second.dict().fit_batch_size(cap);
      const Shape& shape =
          item.second.is_tensor() ? item.second.tensor().shape() : item.second.dict().batch_size_;
      if (!common) {
        common = shape;
        continue;
      }
      std::size_t length = 0;
      while (length < common->size() && length < shape.size() && (*common)[length] == shape[length])
        ++length;
      *common = Shape(common->begin(), common->begin() + length);
    }
    Shape batch = common ? std::move(*common) : batch_size_;
    if (cap && static_cast<index_t>(batch.size()) > *cap)
      batch = Shape(batch.begin(), batch.begin() + *cap);
    names_.resize(batch.size());
    batch_size_ = std::move(batch);
    propagate_names("TensorDict::auto_batch_size_");
  }

  // ---- the per-entry walk behind every shape op and index

  /// batch + the feature dims of an entry of shape `shape` whose first `prefix` dims were the
  /// batch dims being transformed.
  static std::vector<index_t> with_features(const Shape& batch, const Shape& shape,
                                            index_t prefix) {
    std::vector<index_t> sizes(batch.begin(), batch.end());
    sizes.insert(sizes.end(), shape.begin() + prefix, shape.end());
    return sizes;
  }
  /// A TensorDict holding fn(tensor, path) for every tensor at any depth. `batch` and `names`
  /// are the new top-level batch size and names, `prefix` the number of (top-level) batch dims
  /// fn transforms; every TensorDict gets `batch` plus its own batch dims beyond `prefix`.
  template <class Fn>
  TensorDict map_tensors(const Shape& batch, const Names& names, index_t prefix, Fn& fn,
                         detail::KeyPath& path) const {
    TensorDict out;
    out.batch_size_ = batch;
    out.names_ = names;
    for (index_t d = prefix; d < batch_dims(); ++d) {
      out.batch_size_.push_back(batch_size_[d]);
      out.names_.push_back(names_[d]);
    }
    out.entries_.reserve(entries_.size());
    for (const auto& [key, value] : entries_) {
      path.push(key);
      if (value.is_tensor())  // built in place: no temporary Value to move and destroy
        out.entries_.emplace_back(std::piecewise_construct, std::forward_as_tuple(key),
                                  std::forward_as_tuple(fn(value.tensor(), path)));
      else
        out.entries_.emplace_back(key,
                                  Value(value.dict().map_tensors(batch, names, prefix, fn, path)));
      path.pop();
    }
    return out;
  }
  /// As map_tensors for ops with several results: fn returns one tensor per result.
  template <class Fn>
  std::vector<TensorDict> map_tensors_many(const std::vector<Shape>& batches,
                                           const std::vector<Names>& names, index_t prefix, Fn& fn,
                                           detail::KeyPath& path) const {
    std::vector<TensorDict> outs(batches.size());
    for (std::size_t k = 0; k < outs.size(); ++k) {
      outs[k].batch_size_ = batches[k];
      outs[k].names_ = names[k];
      for (index_t d = prefix; d < batch_dims(); ++d) {
        outs[k].batch_size_.push_back(batch_size_[d]);
        outs[k].names_.push_back(names_[d]);
      }
    }
    for (const auto& [key, value] : entries_) {
      path.push(key);
      if (value.is_tensor()) {
        std::vector<AnyTensor> results = fn(value.tensor(), path);
        for (std::size_t k = 0; k < outs.size(); ++k)
          outs[k].entries_.emplace_back(key, Value(std::move(results[k])));
      } else {
        std::vector<TensorDict> results =
            value.dict().map_tensors_many(batches, names, prefix, fn, path);
        for (std::size_t k = 0; k < outs.size(); ++k)
          outs[k].entries_.emplace_back(key, Value(std::move(results[k])));
      }
      path.pop();
    }
    return outs;
  }
  static std::vector<AnyTensor> rebind_all(const AnyTensor& t, std::vector<Layout> layouts) {
    std::vector<AnyTensor> out;
    out.reserve(layouts.size());
    for (Layout& l : layouts)
      out.push_back(t.with_layout(std::move(l)));
    return out;
  }
  /// The results of split / chunk: `batch_pieces` are the op applied to the batch layout,
  /// `op(layout)` the same op applied to an entry's layout.
  template <class Op>
  std::vector<TensorDict> pieces(const std::vector<Layout>& batch_pieces, Op&& op) const {
    std::vector<Shape> batches;
    for (const Layout& l : batch_pieces)
      batches.push_back(l.shape);
    std::vector<Names> names(batches.size(), names_);
    auto fn = [&](const AnyTensor& t, const detail::KeyPath&) {
      return rebind_all(t, op(t.layout()));
    };
    detail::KeyPath path;
    return map_tensors_many(std::move(batches), std::move(names), batch_dims(), fn, path);
  }
  /// Gathers `positions` along batch dim `d` of every entry (copies).
  TensorDict gathered_along(index_t d, const Tensor<index_t>& positions, const char* fn) const {
    Shape batch = batch_size_;
    batch.set(d, positions.numel());
    auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
      const Layout moved = layout::transpose(t.layout(), 0, d);
      const AnyTensor gathered = t.with_layout(moved).index_planned(
          detail::plan_index(moved, {TensorIndex(positions)}, 1, fn));
      if (d == 0) return gathered;
      return gathered.with_layout(layout::transpose(gathered.layout(), 0, d)).contiguous();
    };
    detail::KeyPath path;
    return map_tensors(std::move(batch), names_, batch_dims(), op, path);
  }

  // ---- indexing helpers

  /// The checks of an index expression that the view layer would report under its own name.
  void require_batch_dims(std::initializer_list<TensorIndex> indices, const char* fn) const {
    if (batch_dims() == 0)
      detail::fail<IndexError>(fn,
                               "indexing a tensordict with batch_dims==0 is not permitted. "
                               "Got index ",
                               detail::IndexText{indices}, ".");
    std::size_t position = 0;
    for (const auto& index : indices) {
      if (const Slice* s = std::get_if<Slice>(&index.value()); s != nullptr && s->step == 0)
        detail::fail<ValueError>(fn, "slice step 0 at index position ", position,
                                 " must be non-zero");
      ++position;
    }
  }
  /// The names of the batch dims after indexing: an integer drops its dim's name, NewAxis adds
  /// an unnamed dim, a single 1-d index tensor or mask keeps its dim's name, other gathered dims
  /// have none.
  Names names_after_index(std::initializer_list<TensorIndex> indices, const detail::IndexPlan& plan,
                          std::size_t rank) const {
    if (!has_names()) return Names(rank);
    const index_t bd = batch_dims();
    index_t consumed = 0;
    for (const auto& index : indices)
      consumed += detail::consumed_dims(index);
    Names basic;
    index_t dim = 0;
    for (const auto& index : indices) {
      std::visit(
          [&](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, index_t>) {
              ++dim;
            } else if constexpr (std::is_same_v<V, Slice> || std::is_same_v<V, Tensor<index_t>>) {
              basic.push_back(names_[dim++]);
            } else if constexpr (std::is_same_v<V, EllipsisT>) {
              for (index_t k = 0; k < bd - consumed; ++k)
                basic.push_back(names_[dim++]);
            } else if constexpr (std::is_same_v<V, NewAxisT>) {
              basic.push_back(std::nullopt);
            } else if (v.dim() == 0) {
              basic.push_back(std::nullopt);
            } else {
              for (index_t k = 0; k < v.dim(); ++k)
                basic.push_back(names_[dim++]);
            }
          },
          index.value());
    }
    while (dim < bd)
      basic.push_back(names_[dim++]);
    if (!plan.has_advanced()) return basic;
    Names gathered(plan.gathered.size());
    if (plan.advanced_dims.size() == 1 && gathered.size() == 1)
      gathered[0] = basic[plan.advanced_dims[0]];
    const index_t first = plan.advanced_dims.front(), last = plan.advanced_dims.back();
    Names out;
    if (!plan.keeps_position) out = gathered;
    for (index_t d = 0; d < static_cast<index_t>(basic.size()); ++d) {
      if (plan.keeps_position && d == first)
        out.insert(out.end(), gathered.begin(), gathered.end());
      const bool advanced = plan.keeps_position
                                ? (d >= first && d <= last)
                                : std::find(plan.advanced_dims.begin(), plan.advanced_dims.end(),
                                            d) != plan.advanced_dims.end();
      if (!advanced) out.push_back(basic[d]);
    }
    return out;
  }
  static void check_writable(const Layout& target, const detail::KeyPath& path, const char* fn) {
    for (index_t d = 0; d < target.dim(); ++d)
      if (target.shape[d] > 1 && target.strides[d] == 0)
        detail::fail<ValueError>(fn, "entry ", path, " is an expanded view (stride 0 at dim ", d,
                                 " of the indexed part) whose elements share memory; writing "
                                 "into it is not permitted; clone() it first");
  }
  static void check_broadcast(const Shape& value, const Shape& target, const detail::KeyPath& path,
                              const char* fn) {
    if (!layout::broadcasts_to(value, target))
      detail::fail<ShapeError>(fn, "the value of shape ", value, " for entry ", path,
                               " cannot be broadcast to its indexed shape ", target);
  }
  /// Zero-filled entries shaped like `value`'s: `outer` and `outer_names` (the top-level batch
  /// size and names) replace the first `indexed_dims` dims of each of the value's shapes.
  void preallocate_like(const TensorDict& value, index_t indexed_dims, const Shape& outer,
                        const Names& outer_names) {
    for (const auto& [key, v] : value.entries_) {
      if (v.is_tensor()) {
        entries_.emplace_back(
            key,
            Value(AnyTensor::zeros(v.tensor().dtype(),
                                   Shape(with_features(outer, v.tensor().shape(), indexed_dims)))));
        continue;
      }
      TensorDict child;
      child.batch_size_ = Shape(with_features(outer, v.dict().batch_size_, indexed_dims));
      child.names_ = outer_names;
      for (std::size_t d = indexed_dims; d < v.dict().names_.size(); ++d)
        child.names_.push_back(v.dict().names_[d]);
      child.preallocate_like(v.dict(), indexed_dims, outer, outer_names);
      entries_.emplace_back(key, Value(std::move(child)));
    }
  }
  void plan_writes(const TensorDict& value, std::initializer_list<TensorIndex> indices,
                   index_t indexable, const char* fn, std::vector<PendingWrite>& writes,
                   detail::KeyPath& path) {
    for (const auto& [key, v] : value.entries_) {
      path.push(key);
      Value* mine = find(key);
      if (mine == nullptr)
        detail::fail<KeyError>(fn, "key ", path, " of the value is not in the TensorDict, whose ",
                               "keys there are ", detail::KeysText{keys()});
      if (mine->is_tensor() != v.is_tensor())
        detail::fail<TypeError>(
            fn, "entry ", path, " is a ", mine->is_tensor() ? "tensor" : "nested TensorDict",
            " but the value's is a ", v.is_tensor() ? "tensor" : "nested TensorDict");
      if (v.is_tensor()) {
        AnyTensor& target = mine->tensor();
        if (target.dtype() != v.tensor().dtype())
          detail::fail<TypeError>(fn, "entry ", path, " has dtype ", target.dtype(),
                                  " but the value's has dtype ", v.tensor().dtype(),
                                  "; expected the same dtype");
        detail::IndexPlan plan = detail::plan_index(target.layout(), indices, indexable, fn);
        check_writable(plan.basic, path, fn);
        check_broadcast(v.tensor().shape(), detail::indexed_shape(plan), path, fn);
        writes.push_back(PendingWrite{target, std::move(plan), v.tensor()});
      } else {
        mine->dict().plan_writes(v.dict(), indices, indexable, fn, writes, path);
      }
      path.pop();
    }
  }
  template <class Fn>
  void for_each_leaf(Fn& fn, detail::KeyPath& path) {
    for (auto& [key, value] : entries_) {
      path.push(key);
      if (value.is_tensor())
        fn(value.tensor(), path);
      else
        value.dict().for_each_leaf(fn, path);
      path.pop();
    }
  }
  template <class Fn>
  void for_each_leaf(Fn& fn, detail::KeyPath& path) const {
    for (const auto& [key, value] : entries_) {
      path.push(key);
      if (value.is_tensor())
        fn(value.tensor(), path);
      else
        value.dict().for_each_leaf(fn, path);
      path.pop();
    }
  }

  // ---- stack, cat and comparison

  static bool same_except(const Shape& a, const Shape& b, index_t d) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (static_cast<index_t>(i) != d && a[i] != b[i]) return false;
    return true;
  }
  /// The entry `key` of parts[i], which is usually at the same position as in parts[0].
  static const Value* entry_of(const TensorDict& part, std::size_t position,
                               const std::string& key) {
    if (position < part.entries_.size() && part.entries_[position].first == key)
      return &part.entries_[position].second;
    return part.find(key);
  }
  /// Names shared by all parts: per dim, the name any part gives it (names must not conflict).
  static Names unified_names(const std::vector<const TensorDict*>& parts, const char* fn,
                             const detail::KeyPath& path) {
    Names out = parts[0]->names_;
    for (std::size_t i = 1; i < parts.size(); ++i)
      for (std::size_t d = 0; d < out.size(); ++d) {
        const auto& name = parts[i]->names_[d];
        if (!name) continue;
        if (out[d] && *out[d] != *name)
          detail::fail<ValueError>(fn, "batch dim ", d, detail::Where{path, "of"}, " is named '",
                                   *out[d], "' in tds[0] but '", *name, "' in tds[", i, "]");
        out[d] = name;
      }
    check_unique_names(out, fn);
    return out;
  }
  static void check_same_keys(const std::vector<const TensorDict*>& parts, const char* fn,
                              const detail::KeyPath& path) {
    const TensorDict& first = *parts[0];
    for (std::size_t i = 1; i < parts.size(); ++i) {
      bool same = parts[i]->entries_.size() == first.entries_.size();
      for (std::size_t j = 0; same && j < first.entries_.size(); ++j)
        same = entry_of(*parts[i], j, first.entries_[j].first) != nullptr;
      if (!same)
        detail::fail<KeyError>(
            fn, "got keys ", detail::KeysText{first.keys()}, " and ",
            detail::KeysText{parts[i]->keys()}, " which are incompatible (tds[0] and tds[", i, "]",
            detail::Where{path, "at"}, "); every TensorDict must have the same keys");
    }
  }
  /// stack (`stacking`) or cat of `parts` along batch dim `d`.
  static TensorDict joined(const std::vector<const TensorDict*>& parts, index_t d, bool stacking,
                           const char* fn, detail::KeyPath& path) {
    const TensorDict& first = *parts[0];
    check_same_keys(parts, fn, path);
    TensorDict out;
    out.entries_.reserve(first.entries_.size());
    out.names_ = unified_names(parts, fn, path);
    out.batch_size_ = first.batch_size_;
    if (stacking) {
      out.batch_size_.insert(d, static_cast<index_t>(parts.size()));
      out.names_.insert(out.names_.begin() + d, std::nullopt);
    } else {
      index_t total = 0;
      for (const TensorDict* part : parts)
        total = detail::checked_add(total, part->batch_size_[d], fn);
      out.batch_size_.set(d, total);
    }
    for (std::size_t j = 0; j < first.entries_.size(); ++j) {
      const auto& [key, value] = first.entries_[j];
      path.push(key);
      detail::SmallVector<const Value*, 16> values;  // no allocation per entry for up to 16 parts
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const Value* v = entry_of(*parts[i], j, key);
        if (v->is_tensor() != value.is_tensor())
          detail::fail<TypeError>(
              fn, "entry ", path, " is a ", value.is_tensor() ? "tensor" : "nested TensorDict",
              " in tds[0] but a ", v->is_tensor() ? "tensor" : "nested TensorDict", " in tds[", i,
              "]");
        values.push_back(v);
      }
      if (value.is_dict()) {
        std::vector<const TensorDict*> children;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          const TensorDict& child = values[i]->dict();
          const bool fits = stacking ? child.batch_size_ == value.dict().batch_size_
                                     : same_except(child.batch_size_, value.dict().batch_size_, d);
          if (!fits)
            detail::fail<ShapeError>(fn, "the nested TensorDict ", path, " has batch_size ",
                                     child.batch_size_, " in tds[", i, "] but ",
                                     value.dict().batch_size_, " in tds[0]");
          children.push_back(&child);
        }
        out.entries_.emplace_back(key, Value(joined(children, d, stacking, fn, path)));
        path.pop();
        continue;
      }
      const AnyTensor& head = value.tensor();
      for (std::size_t i = 1; i < parts.size(); ++i) {
        const AnyTensor& t = values[i]->tensor();
        if (t.dtype() != head.dtype())
          detail::fail<TypeError>(fn, "entry ", path, " has dtype ", t.dtype(), " in tds[", i,
                                  "] but ", head.dtype(), " in tds[0]; expected the same dtype");
        const bool fits =
            stacking ? t.shape() == head.shape() : same_except(t.shape(), head.shape(), d);
        if (!fits)
          detail::fail<ShapeError>(fn, "entry ", path, " has shape ", t.shape(), " in tds[", i,
                                   "] but ", head.shape(), " in tds[0]; expected ",
                                   stacking ? "equal shapes" : "equal shapes except at dim ",
                                   stacking ? "" : std::to_string(d));
      }
      Shape shape = head.shape();
      if (stacking)
        shape.insert(d, static_cast<index_t>(parts.size()));
      else
        shape.set(d, out.batch_size_[d]);
      AnyTensor result = AnyTensor::empty(head.dtype(), shape);
      if (stacking) {
        // Piece i is select(result, d, i), which is piece 0 moved by i strides of dim d: one
        // layout for all the pieces.
        Layout piece = layout::select(result.layout(), d, 0);
        const index_t step = result.strides()[d];
        for (std::size_t i = 0; i < parts.size(); ++i, piece.offset += step)
          result.assign_at(piece, values[i]->tensor(), fn);
      } else {
        index_t offset = 0;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          const AnyTensor& t = values[i]->tensor();
          result.assign_at(layout::narrow(result.layout(), d, offset, t.shape()[d]), t, fn);
          offset += t.shape()[d];
        }
      }
      out.entries_.emplace_back(std::piecewise_construct, std::forward_as_tuple(key),
                                std::forward_as_tuple(std::move(result)));
      path.pop();
    }
    return out;
  }
  static TensorDict compared(const TensorDict& a, const TensorDict& b, bool negate, const char* fn,
                             detail::KeyPath& path) {
    if (!(a.batch_size_ == b.batch_size_))
      detail::fail<ShapeError>(fn, "batch sizes ", a.batch_size_, " and ", b.batch_size_, " differ",
                               detail::Where{path, "for the nested TensorDict"});
    bool same_keys = a.entries_.size() == b.entries_.size();
    for (std::size_t j = 0; same_keys && j < a.entries_.size(); ++j)
      same_keys = entry_of(b, j, a.entries_[j].first) != nullptr;
    if (!same_keys)
      detail::fail<KeyError>(
          fn, "the TensorDicts have different keys: ", detail::KeysText{a.keys()}, " and ",
          detail::KeysText{b.keys()}, detail::Where{path, "in the nested TensorDict"});
    TensorDict out;
    out.batch_size_ = a.batch_size_;
    out.names_ = a.names_;
    for (std::size_t j = 0; j < a.entries_.size(); ++j) {
      const auto& [key, value] = a.entries_[j];
      const Value& other = *entry_of(b, j, key);
      path.push(key);
      if (value.is_tensor() != other.is_tensor())
        detail::fail<TypeError>(fn, "entry ", path,
                                " is a tensor in one TensorDict and a nested "
                                "TensorDict in the other");
      if (value.is_dict()) {
        out.entries_.emplace_back(key,
                                  Value(compared(value.dict(), other.dict(), negate, fn, path)));
        path.pop();
        continue;
      }
      const AnyTensor& x = value.tensor();
      const AnyTensor& y = other.tensor();
      if (x.dtype() != y.dtype())
        detail::fail<TypeError>(fn, "entry ", path, " has dtypes ", x.dtype(), " and ", y.dtype(),
                                "; expected the same dtype");
      if (!(x.shape() == y.shape()))
        detail::fail<ShapeError>(fn, "entry ", path, " has shapes ", x.shape(), " and ", y.shape(),
                                 "; expected the same shape");
      Tensor<bool> equal = x.equal_elements(y, fn);
      if (negate) for_each([](bool& e) { e = !e; }, equal.view());
      out.entries_.emplace_back(key, Value(std::move(equal)));
      path.pop();
    }
    return out;
  }

  std::vector<Item> entries_;
  Shape batch_size_;
  Names names_;
  bool locked_ = false;
};

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
    return element_batch_sizes_[i];
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
    const Entry& entry = entry_at(key, fn);
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
    const Entry& entry = entry_at(key, fn);
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
    const Entry& entry = entry_at(key, fn);
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
    const Entry& entry = entry_at(key, fn);
    const Tensor<T>& data = typed<T>(entry, key, fn);
    std::vector<Tensor<T>> out;
    for (index_t i = 0; i < size(); ++i)
      out.push_back(element_of<T>(entry, data, i));
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
    TensorDict out(element_batch_sizes_[i]);
    for (const Item& item : items_) {
      if (item.dict) {
        out.set(item.key, item.dict->element(i));
        continue;
      }
      const Entry& entry = *item.tensor;
      out.set(item.key, entry.data.visit([&](const auto& data) {
        using T = typename std::decay_t<decltype(data)>::value_type;
        return AnyTensor(element_of<T>(entry, data, i));
      }));
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

 private:
  friend class TensorDict;

  struct Entry {
    bool ragged = false;
    AnyTensor data;                    // dense: the stacked tensor; ragged: the batch's data
    Tensor<index_t> shape_per_tensor;  // ragged entries
    Tensor<index_t> first_idx;         // ragged entries of a packed RaggedTensorDict
    bool unit_last_dim = false;        // the batch's elements are the tensors + a dim of size 1
  };
  struct Item {
    std::string key;
    std::optional<Entry> tensor;
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
  const Entry& entry_at(const NestedKey& key, const char* fn) const {
    const Item& item = item_at(key, fn);
    if (!item.tensor)
      detail::fail<TypeError>(fn, "entry ", key,
                              " is a nested RaggedTensorDict, not a tensor; use get_dict");
    return *item.tensor;
  }
  template <Element T>
  static Tensor<T> typed(const Entry& entry, const NestedKey& key, const char* fn) {
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
  template <Element T>
  Tensor<T> element_of(const Entry& entry, const Tensor<T>& data, index_t i) const {
    if (!entry.ragged) return data.select(0, i);
    const Tensor<T> element =
        layout_ == RaggedLayout::packed
            ? PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx).element(i)
            : PaddedBatch<T>(data, entry.shape_per_tensor).element(i);
    return entry.unit_last_dim ? element.select(-1, 0) : element;
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
  static Entry stacked_entry(const std::vector<AnyTensor>& tensors, RaggedLayout layout,
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
    Entry entry;
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
    head.visit([&](const auto& first) {
      using T = typename std::decay_t<decltype(first)>::value_type;
      std::vector<Tensor<T>> list;
      for (const AnyTensor& t : tensors)
        list.push_back(entry.unit_last_dim ? t.get<T>(fn).unsqueeze(-1) : t.get<T>(fn));
      if (layout == RaggedLayout::packed) {
        PackedBatch<T> batch = list_to_packed(list);
        entry.data = batch.data();
        entry.shape_per_tensor = batch.shape_per_tensor();
        entry.first_idx = batch.first_idx();
      } else {
        PaddedBatch<T> batch = list_to_padded(list, T(0));
        entry.data = batch.data();
        entry.shape_per_tensor = batch.shape_per_tensor();
      }
    });
    return entry;
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

/// Element-wise comparison of two TensorDicts (same as a == b): reduce it with all() or any().
inline TensorDict all_equal(const TensorDict& a, const TensorDict& b) {
  return a == b;
}

inline TensorDict::Value::Value(TensorDict dict)
    : value_(std::in_place_index<1>, std::move(dict)) {}

namespace detail {
inline DictBox::DictBox(TensorDict dict) : dict_(std::make_unique<TensorDict>(std::move(dict))) {}
inline DictBox::DictBox(const DictBox& other) : dict_(std::make_unique<TensorDict>(*other.dict_)) {}
inline DictBox::DictBox(DictBox&& other) noexcept = default;
inline DictBox& DictBox::operator=(const DictBox& other) {
  if (this != &other) dict_ = std::make_unique<TensorDict>(*other.dict_);
  return *this;
}
inline DictBox& DictBox::operator=(DictBox&& other) noexcept = default;
inline DictBox::~DictBox() = default;
}  // namespace detail

}  // namespace tbatch
