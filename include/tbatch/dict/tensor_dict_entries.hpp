#pragma once
// TensorDict's bookkeeping, declared in dict/tensor_dict_class.hpp: looking entries up by key or
// path, setting, filtering and merging them, and checking batch sizes, dims and names.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#endif

namespace tbatch {

#if TBATCH_DEFINITIONS

// ---- lookup

TBATCH_INLINE const TensorDict::Value* TensorDict::find(const std::string& key) const {
  for (const Item& item : entries_)
    if (item.first == key) return &item.second;
  return nullptr;
}

TBATCH_INLINE TensorDict::Value* TensorDict::find(const std::string& key) {
  for (Item& item : entries_)
    if (item.first == key) return &item.second;
  return nullptr;
}

TBATCH_INLINE void TensorDict::check_key(const NestedKey& key, const char* fn) {
  if (key.empty())
    detail::fail<KeyError>(fn, {"the key is an empty path; expected at least one string"});
}

TBATCH_INLINE NestedKey TensorDict::prefix_of(const NestedKey& key, std::size_t length) {
  return NestedKey(std::vector<std::string>(
      key.parts().begin(), key.parts().begin() + static_cast<std::ptrdiff_t>(length)));
}

TBATCH_INLINE const TensorDict::Value* TensorDict::lookup(const NestedKey& key) const {
  const TensorDict* dict = this;
  for (std::size_t i = 0; i + 1 < key.size(); ++i) {
    const Value* value = dict->find(key[i]);
    if (value == nullptr || value->is_tensor()) return nullptr;
    dict = &value->dict();
  }
  return dict->find(key.back());
}

TBATCH_INLINE const TensorDict::Value& TensorDict::lookup_or_throw(const NestedKey& key,
                                                                   const char* fn) const {
  check_key(key, fn);
  const TensorDict* dict = this;
  for (std::size_t i = 0;; ++i) {
    const Value* value = dict->find(key[i]);
    if (value == nullptr) {
      if (i == 0)
        detail::fail<KeyError>(fn, {"key ", key, " not found in TensorDict with keys ",
                                    detail::KeysText{dict->keys()}});
      detail::fail<KeyError>(fn, {"key ", key, " not found: the nested TensorDict ",
                                  prefix_of(key, i), " has keys ", detail::KeysText{dict->keys()}});
    }
    if (i + 1 == key.size()) return *value;
    if (value->is_tensor())
      detail::fail<KeyError>(fn, {"key ", key, " not found: ", prefix_of(key, i + 1),
                                  " is a tensor, not a nested TensorDict"});
    dict = &value->dict();
  }
}

TBATCH_INLINE const AnyTensor& TensorDict::tensor_at(const NestedKey& key, const char* fn) const {
  const Value& value = lookup_or_throw(key, fn);
  if (!value.is_tensor())
    detail::fail<TypeError>(fn,
                            {"entry ", key, " is a nested TensorDict, not a tensor; use get_dict"});
  return value.tensor();
}

// ---- setting

TBATCH_INLINE const TensorDict& TensorDict::check_set_path(const NestedKey& key,
                                                           const char* fn) const {
  check_key(key, fn);
  const TensorDict* dict = this;
  for (std::size_t i = 0; i + 1 < key.size(); ++i) {
    const Value* value = dict->find(key[i]);
    if (value == nullptr) {
      if (dict->locked_)
        detail::fail<KeyError>(
            fn, {"cannot add key ", key, " to a locked TensorDict (", prefix_of(key, i + 1),
                 " would be created); call unlock_() first"});
      return *dict;
    }
    if (value->is_tensor())
      detail::fail<TypeError>(fn, {"cannot set key ", key, ": ", prefix_of(key, i + 1),
                                   " is a tensor, not a nested TensorDict"});
    dict = &value->dict();
  }
  if (dict->locked_ && dict->find(key.back()) == nullptr)
    detail::fail<KeyError>(
        fn, {"cannot add key ", key, " to a locked TensorDict; call unlock_() first"});
  return *dict;
}

TBATCH_INLINE TensorDict& TensorDict::holder_for_set(const NestedKey& key) {
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

TBATCH_INLINE void TensorDict::put(const std::string& key, Value value) {
  if (Value* existing = find(key))
    *existing = std::move(value);
  else
    entries_.emplace_back(key, std::move(value));
}

TBATCH_INLINE void TensorDict::set_tensor(const NestedKey& key, AnyTensor value, const char* fn) {
  const TensorDict& holder = check_set_path(key, fn);
  const Value* existing = holder.find(key.back());
  if (holder.locked_ && existing != nullptr && existing->is_dict())
    detail::fail<KeyError>(fn,
                           {"cannot replace the nested TensorDict at key ", key,
                            " with a tensor in a locked TensorDict (its keys would be removed); "
                            "call unlock_() first"});
  if (!detail::starts_with(value.shape(), holder.batch_size_))
    detail::fail<ShapeError>(fn,
                             {"batch dimension mismatch, got batch_size=", holder.batch_size_,
                              " and value.shape=", value.shape(), " for key ", key,
                              ". The leading dimensions of a value must match the batch size."});
  holder_for_set(key).put(key.back(), Value(std::move(value)));
}

TBATCH_INLINE void TensorDict::set_dict(const NestedKey& key, TensorDict value, const char* fn) {
  const TensorDict& holder = check_set_path(key, fn);
  if (const Value* existing = holder.find(key.back()); holder.locked_ && existing != nullptr) {
    if (existing->is_tensor())
      detail::fail<KeyError>(fn,
                             {"cannot replace the tensor at key ", key,
                              " with a TensorDict in a locked TensorDict (keys would be added); "
                              "call unlock_() first"});
    if (!same_key_set(existing->dict(), value))
      detail::fail<KeyError>(
          fn, {"cannot replace the nested TensorDict at key ", key, " (keys ",
               detail::KeysText{existing->dict().keys()}, ") with one of other keys (",
               detail::KeysText{value.keys()}, ") in a locked TensorDict; call unlock_() first"});
  }
  if (!detail::starts_with(value.batch_size_, holder.batch_size_))
    detail::fail<ShapeError>(fn, {"batch dimension mismatch, got batch_size=", holder.batch_size_,
                                  " and value.batch_size=", value.batch_size_, " for key ", key,
                                  ". A nested TensorDict's batch size must start with its "
                                  "parent's."});
  std::copy(holder.names_.begin(), holder.names_.end(), value.names_.begin());
  check_unique_names(value.names_, fn);
  value.propagate_names(fn);
  TensorDict& target = holder_for_set(key);
  if (target.locked_) value.set_locked(true);
  target.put(key.back(), Value(std::move(value)));
}

TBATCH_INLINE bool TensorDict::same_key_set(const TensorDict& a, const TensorDict& b) {
  auto paths = [](const TensorDict& td) {
    std::vector<std::vector<std::string>> out;
    for (const NestedKey& key : td.keys(true))
      out.push_back(key.parts());
    std::sort(out.begin(), out.end());
    return out;
  };
  return paths(a) == paths(b);
}

TBATCH_INLINE void TensorDict::set_value(const std::string& key, const Value& value,
                                         const char* fn) {
  if (value.is_tensor())
    set_tensor(key, value.tensor(), fn);
  else
    set_dict(key, value.dict(), fn);
}

TBATCH_INLINE void TensorDict::update_at(const TensorDict& other,
                                         std::vector<std::string>& prefix) {
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

TBATCH_INLINE void TensorDict::set_locked(bool locked) {
  locked_ = locked;
  for (Item& item : entries_)
    if (item.second.is_dict()) item.second.dict().set_locked(locked);
}

TBATCH_INLINE void TensorDict::collect_keys(bool include_nested, bool leaves_only,
                                            std::vector<std::string>& prefix,
                                            std::vector<NestedKey>& out) const {
  for (const auto& [key, value] : entries_) {
    prefix.push_back(key);
    if (value.is_tensor() || !leaves_only) out.emplace_back(prefix);
    if (value.is_dict() && include_nested)
      value.dict().collect_keys(include_nested, leaves_only, prefix, out);
    prefix.pop_back();
  }
}

TBATCH_INLINE TensorDict TensorDict::filtered(
    const std::vector<const std::vector<std::string>*>& paths, std::size_t depth, bool keep) const {
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

TBATCH_INLINE void TensorDict::checked_numel(const Shape& shape, const char* fn) {
  index_t n = 1;
  for (index_t s : shape)
    n = detail::checked_mul(n, s, fn);
}

TBATCH_INLINE index_t TensorDict::normalize_dim(index_t dim, index_t rank, const char* fn,
                                                const char* argument) const {
  if (dim >= -rank && dim < rank) return dim < 0 ? dim + rank : dim;
  if (rank == 0)
    detail::fail<IndexError>(fn, {argument, " ", dim,
                                  " is given but the TensorDict has batch_dims==0, so it has no "
                                  "batch dim to use"});
  detail::fail<IndexError>(fn, {argument, " ", dim, " is out of range (expected ", -rank, " to ",
                                rank - 1, " for batch_dims ", batch_dims(), ")"});
}

TBATCH_INLINE void TensorDict::check_unique_names(const Names& names, const char* fn) {
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = i + 1; j < names.size(); ++j)
      if (names[i] && names[j] && *names[i] == *names[j])
        detail::fail<ValueError>(fn, {"name '", *names[i], "' is given to batch dims ", i, " and ",
                                      j, "; names must be unique"});
}

TBATCH_INLINE TensorDict::Names TensorDict::checked_names(Names names, index_t batch_dims,
                                                          const char* fn,
                                                          bool empty_means_unnamed) {
  if (names.empty() && empty_means_unnamed) return Names(static_cast<std::size_t>(batch_dims));
  if (static_cast<index_t>(names.size()) != batch_dims)
    detail::fail<ValueError>(
        fn, {"got ", names.size(), " names ", detail::NamesText{names}, " for batch_dims ",
             batch_dims, "; expected one name (or std::nullopt) per batch dim"});
  check_unique_names(names, fn);
  return names;
}

TBATCH_INLINE void TensorDict::propagate_names(const char* fn) {
  for (Item& item : entries_) {
    if (!item.second.is_dict()) continue;
    TensorDict& child = item.second.dict();
    std::copy(names_.begin(), names_.end(), child.names_.begin());
    check_unique_names(child.names_, fn);
    child.propagate_names(fn);
  }
}

TBATCH_INLINE TensorDict::Names TensorDict::expand_name_pattern(
    std::initializer_list<DimName> pattern, const char* fn) const {
  const index_t bd = batch_dims();
  index_t ellipses = 0, named = 0;
  for (const DimName& p : pattern)
    (p.is_ellipsis() ? ellipses : named) += 1;
  if (ellipses > 1)
    detail::fail<ValueError>(fn, {"names can contain at most one Ellipsis, got ", ellipses});
  if (ellipses == 0 && named != bd)
    detail::fail<ValueError>(fn, {"got ", named, " names for batch_dims ", bd,
                                  "; expected one name (or std::nullopt) per batch dim"});
  if (named > bd)
    detail::fail<ValueError>(fn, {"got ", named, " names besides the Ellipsis for batch_dims ", bd,
                                  "; expected at most ", bd});
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

TBATCH_INLINE TensorDict TensorDict::renamed(Names names, const char* fn) const {
  check_unique_names(names, fn);
  TensorDict out = *this;
  out.names_ = std::move(names);
  out.propagate_names(fn);
  return out;
}

TBATCH_INLINE void TensorDict::fit_batch_size(std::optional<index_t> cap) {
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

// ---- members declared with the class

TBATCH_INLINE void TensorDict::set_batch_size(Shape batch_size) {
  const char* fn = "TensorDict::set_batch_size";
  checked_numel(batch_size, fn);
  for (const auto& [key, value] : entries_) {
    if (value.is_tensor() && !detail::starts_with(value.tensor().shape(), batch_size))
      detail::fail<ShapeError>(fn,
                               {"the Tensor ", key, " has shape ", value.tensor().shape(),
                                " which is incompatible with the batch-size ", batch_size, "."});
    if (value.is_dict() && !detail::starts_with(value.dict().batch_size_, batch_size))
      detail::fail<ShapeError>(
          fn, {"the TensorDict ", key, " has batch-size ", value.dict().batch_size_,
               " which is incompatible with the batch-size ", batch_size, "."});
  }
  names_.resize(batch_size.size());
  batch_size_ = std::move(batch_size);
  propagate_names(fn);
}

TBATCH_INLINE TensorDict& TensorDict::auto_batch_size_(std::optional<index_t> batch_dims) {
  if (batch_dims && *batch_dims < 0)
    detail::fail<ValueError>("TensorDict::auto_batch_size_",
                             {"batch_dims ", *batch_dims, " must be >= 0"});
  fit_batch_size(batch_dims);
  return *this;
}

TBATCH_INLINE void TensorDict::erase(const NestedKey& key) {
  const char* fn = "TensorDict::erase";
  lookup_or_throw(key, fn);
  TensorDict* holder = this;
  for (std::size_t i = 0; i + 1 < key.size(); ++i)
    holder = &holder->find(key[i])->dict();
  if (holder->locked_)
    detail::fail<KeyError>(
        fn, {"cannot remove key ", key, " from a locked TensorDict; call unlock_() first"});
  holder->entries_.erase(std::find_if(holder->entries_.begin(), holder->entries_.end(),
                                      [&](const Item& item) { return item.first == key.back(); }));
}

TBATCH_INLINE TensorDict TensorDict::select(const std::vector<NestedKey>& keys, bool strict) const {
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

TBATCH_INLINE TensorDict TensorDict::exclude(const std::vector<NestedKey>& keys) const {
  std::vector<const std::vector<std::string>*> paths;
  for (const NestedKey& key : keys) {
    check_key(key, "TensorDict::exclude");
    paths.push_back(&key.parts());
  }
  return filtered(paths, 0, false);
}

TBATCH_INLINE std::ostream& operator<<(std::ostream& out, const TensorDict& td) {
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

// ---- names

TBATCH_INLINE void TensorDict::set_names(Names names) {
  const char* fn = "TensorDict::set_names";
  TensorDict staged = *this;
  staged.names_ = checked_names(std::move(names), batch_dims(), fn, false);
  staged.propagate_names(fn);
  *this = std::move(staged);
}
TBATCH_INLINE void TensorDict::clear_names() {
  names_.assign(batch_size_.size(), std::nullopt);
  propagate_names("TensorDict::clear_names");
}
TBATCH_INLINE TensorDict TensorDict::refine_names(std::initializer_list<DimName> names) const {
  const char* fn = "TensorDict::refine_names";
  const Names wanted = expand_name_pattern(names, fn);
  Names refined = names_;
  for (std::size_t d = 0; d < refined.size(); ++d) {
    if (!wanted[d]) continue;
    if (refined[d] && *refined[d] != *wanted[d])
      detail::fail<ValueError>(fn, {"cannot refine batch dim ", d, " named '", *refined[d],
                                    "' to '", *wanted[d], "'; only unnamed dims take a new name"});
    refined[d] = wanted[d];
  }
  return renamed(std::move(refined), fn);
}
TBATCH_INLINE TensorDict TensorDict::rename(std::initializer_list<DimName> names) const {
  const char* fn = "TensorDict::rename";
  return renamed(expand_name_pattern(names, fn), fn);
}
TBATCH_INLINE TensorDict TensorDict::rename(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& mapping) const {
  const char* fn = "TensorDict::rename";
  Names out = names_;
  for (const auto& [from, to] : mapping) {
    const auto at = std::find(names_.begin(), names_.end(), std::optional<std::string>(from));
    if (at == names_.end())
      detail::fail<ValueError>(
          fn, {"no batch dim is named '", from, "'; the names are ", detail::NamesText{names_}});
    out[static_cast<std::size_t>(at - names_.begin())] = to;
  }
  return renamed(std::move(out), fn);
}

// ---- all() and any(), which reduce an element-wise comparison

TBATCH_INLINE bool TensorDict::all() const {
  bool result = true;
  auto op = [&](const AnyTensor& t, const detail::KeyPath&) { result = result && t.all_nonzero(); };
  detail::KeyPath path;
  for_each_leaf(op, path);
  return result;
}
TBATCH_INLINE bool TensorDict::any() const {
  bool result = false;
  auto op = [&](const AnyTensor& t, const detail::KeyPath&) { result = result || t.any_nonzero(); };
  detail::KeyPath path;
  for_each_leaf(op, path);
  return result;
}

// ---- members defined in the class's declaration

TBATCH_INLINE TensorDict::TensorDict(Shape batch_size, Names names)
    : batch_size_(std::move(batch_size)) {
  checked_numel(batch_size_, "TensorDict");
  names_ = checked_names(std::move(names), batch_dims(), "TensorDict", true);
}

TBATCH_INLINE TensorDict::TensorDict(std::initializer_list<Item> items, Shape batch_size,
                                     Names names)
    : TensorDict(std::move(batch_size), std::move(names)) {
  for (const Item& item : items) {
    if (find(item.first))
      detail::fail<KeyError>("TensorDict", {"key '", item.first, "' is given more than once"});
    set_value(item.first, item.second, "TensorDict");
  }
}

TBATCH_INLINE void TensorDict::set(const NestedKey& key, std::initializer_list<Item> items) {
  const char* fn = "TensorDict::set";
  const TensorDict& holder = check_set_path(key, fn);
  TensorDict value;
  value.batch_size_ = holder.batch_size_;
  value.names_ = holder.names_;
  for (const Item& item : items) {
    if (value.find(item.first))
      detail::fail<KeyError>(fn, {"key '", item.first, "' is given more than once"});
    value.set_value(item.first, item.second, fn);
  }
  set_dict(key, std::move(value), fn);
}

TBATCH_INLINE TensorDict TensorDict::get_dict(const NestedKey& key) const {
  const char* fn = "TensorDict::get_dict";
  const Value& value = lookup_or_throw(key, fn);
  if (!value.is_dict())
    detail::fail<TypeError>(fn, {"entry ", key, " is a tensor, not a nested TensorDict; use get"});
  return value.dict();
}

TBATCH_INLINE bool TensorDict::contains(const NestedKey& key) const {
  check_key(key, "TensorDict::contains");
  return lookup(key) != nullptr;
}

TBATCH_INLINE std::vector<std::string> TensorDict::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& item : entries_)
    out.push_back(item.first);
  return out;
}

TBATCH_INLINE std::vector<NestedKey> TensorDict::keys(bool include_nested, bool leaves_only) const {
  std::vector<NestedKey> out;
  std::vector<std::string> prefix;
  collect_keys(include_nested, leaves_only, prefix, out);
  return out;
}

TBATCH_INLINE TensorDict& TensorDict::update(const TensorDict& other) {
  TensorDict staged = *this;
  std::vector<std::string> prefix;
  staged.update_at(other, prefix);
  *this = std::move(staged);
  return *this;
}

TBATCH_INLINE bool TensorDict::is_empty() const {
  for (const auto& item : entries_)
    if (item.second.is_tensor() || !item.second.dict().is_empty()) return false;
  return true;
}

TBATCH_INLINE TensorDict::Iterator TensorDict::begin() const {
  if (batch_dims() == 0)
    detail::fail<TypeError>("TensorDict::begin",
                            {"iteration over a TensorDict with batch_dims==0 is not permitted; "
                             "iterate over keys() instead"});
  return Iterator(this, 0);
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
