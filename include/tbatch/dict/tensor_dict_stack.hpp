#pragma once
// TensorDict's stack, cat and element-wise comparison, declared in dict/tensor_dict_class.hpp.

#include <cstddef>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/tensor_dict_indexing.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"
#endif

namespace tbatch {

#if TBATCH_DEFINITIONS

// ---------------------------------------------------------------- stack and cat

TBATCH_INLINE TensorDict TensorDict::stack(const std::vector<TensorDict>& tds, index_t dim) {
  const char* fn = "TensorDict::stack";
  if (tds.empty()) detail::fail<ValueError>(fn, {"expected a non-empty list of TensorDicts"});
  for (std::size_t i = 1; i < tds.size(); ++i)
    if (!(tds[i].batch_size_ == tds[0].batch_size_))
      detail::fail<ShapeError>(
          fn, {"stacking tensordicts requires them to have congruent batch sizes, got tds[", i,
               "].batch_size=", tds[i].batch_size_, " and tds[0].batch_size=", tds[0].batch_size_});
  const index_t d = tds[0].normalize_dim(dim, tds[0].batch_dims() + 1, fn);
  std::vector<const TensorDict*> parts;
  for (const TensorDict& td : tds)
    parts.push_back(&td);
  detail::KeyPath path;
  return joined(parts, d, true, fn, path);
}

TBATCH_INLINE TensorDict TensorDict::cat(const std::vector<TensorDict>& tds, index_t dim) {
  const char* fn = "TensorDict::cat";
  if (tds.empty()) detail::fail<ValueError>(fn, {"expected a non-empty list of TensorDicts"});
  const index_t d = tds[0].normalize_dim(dim, tds[0].batch_dims(), fn);
  for (std::size_t i = 1; i < tds.size(); ++i)
    if (!same_except(tds[i].batch_size_, tds[0].batch_size_, d))
      detail::fail<ShapeError>(fn, {"cannot concatenate tensordicts whose batch sizes differ "
                                    "outside dim ",
                                    dim, ": got tds[", i, "].batch_size=", tds[i].batch_size_,
                                    " and tds[0].batch_size=", tds[0].batch_size_});
  std::vector<const TensorDict*> parts;
  for (const TensorDict& td : tds)
    parts.push_back(&td);
  detail::KeyPath path;
  return joined(parts, d, false, fn, path);
}

// ---- stack, cat and comparison

TBATCH_INLINE bool TensorDict::same_except(const Shape& a, const Shape& b, index_t d) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (static_cast<index_t>(i) != d && a[i] != b[i]) return false;
  return true;
}

TBATCH_INLINE const TensorDict::Value* TensorDict::entry_of(const TensorDict& part,
                                                            std::size_t position,
                                                            const std::string& key) {
  if (position < part.entries_.size() && part.entries_[position].first == key)
    return &part.entries_[position].second;
  return part.find(key);
}

TBATCH_INLINE TensorDict::Names TensorDict::unified_names(
    const std::vector<const TensorDict*>& parts, const char* fn, const detail::KeyPath& path) {
  Names out = parts[0]->names_;
  for (std::size_t i = 1; i < parts.size(); ++i)
    for (std::size_t d = 0; d < out.size(); ++d) {
      const auto& name = parts[i]->names_[d];
      if (!name) continue;
      if (out[d] && *out[d] != *name)
        detail::fail<ValueError>(fn, {"batch dim ", d, detail::Where{path, "of"}, " is named '",
                                      *out[d], "' in tds[0] but '", *name, "' in tds[", i, "]"});
      out[d] = name;
    }
  check_unique_names(out, fn);
  return out;
}

TBATCH_INLINE void TensorDict::check_same_keys(const std::vector<const TensorDict*>& parts,
                                               const char* fn, const detail::KeyPath& path) {
  const TensorDict& first = *parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) {
    bool same = parts[i]->entries_.size() == first.entries_.size();
    for (std::size_t j = 0; same && j < first.entries_.size(); ++j)
      same = entry_of(*parts[i], j, first.entries_[j].first) != nullptr;
    if (!same)
      detail::fail<KeyError>(
          fn, {"got keys ", detail::KeysText{first.keys()}, " and ",
               detail::KeysText{parts[i]->keys()}, " which are incompatible (tds[0] and tds[", i,
               "]", detail::Where{path, "at"}, "); every TensorDict must have the same keys"});
  }
}

TBATCH_INLINE TensorDict TensorDict::joined(const std::vector<const TensorDict*>& parts, index_t d,
                                            bool stacking, const char* fn, detail::KeyPath& path) {
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
            fn, {"entry ", path, " is a ", value.is_tensor() ? "tensor" : "nested TensorDict",
                 " in tds[0] but a ", v->is_tensor() ? "tensor" : "nested TensorDict", " in tds[",
                 i, "]"});
      values.push_back(v);
    }
    if (value.is_dict()) {
      std::vector<const TensorDict*> children;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const TensorDict& child = values[i]->dict();
        const bool fits = stacking ? child.batch_size_ == value.dict().batch_size_
                                   : same_except(child.batch_size_, value.dict().batch_size_, d);
        if (!fits)
          detail::fail<ShapeError>(
              fn, {"the nested TensorDict ", path, " has batch_size ", child.batch_size_,
                   " in tds[", i, "] but ", value.dict().batch_size_, " in tds[0]"});
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
        detail::fail<TypeError>(
            fn, {"entry ", path, " has dtype ", t.dtype(), " in tds[", i, "] but ", head.dtype(),
                 " in tds[0]; expected the same dtype"});
      const bool fits =
          stacking ? t.shape() == head.shape() : same_except(t.shape(), head.shape(), d);
      if (!fits)
        detail::fail<ShapeError>(
            fn, {"entry ", path, " has shape ", t.shape(), " in tds[", i, "] but ", head.shape(),
                 " in tds[0]; expected ", stacking ? "equal shapes" : "equal shapes except at dim ",
                 stacking ? "" : std::to_string(d)});
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

TBATCH_INLINE TensorDict TensorDict::compared(const TensorDict& a, const TensorDict& b, bool negate,
                                              const char* fn, detail::KeyPath& path) {
  if (!(a.batch_size_ == b.batch_size_))
    detail::fail<ShapeError>(fn, {"batch sizes ", a.batch_size_, " and ", b.batch_size_, " differ",
                                  detail::Where{path, "for the nested TensorDict"}});
  bool same_keys = a.entries_.size() == b.entries_.size();
  for (std::size_t j = 0; same_keys && j < a.entries_.size(); ++j)
    same_keys = entry_of(b, j, a.entries_[j].first) != nullptr;
  if (!same_keys)
    detail::fail<KeyError>(
        fn, {"the TensorDicts have different keys: ", detail::KeysText{a.keys()}, " and ",
             detail::KeysText{b.keys()}, detail::Where{path, "in the nested TensorDict"}});
  TensorDict out;
  out.batch_size_ = a.batch_size_;
  out.names_ = a.names_;
  for (std::size_t j = 0; j < a.entries_.size(); ++j) {
    const auto& [key, value] = a.entries_[j];
    const Value& other = *entry_of(b, j, key);
    path.push(key);
    if (value.is_tensor() != other.is_tensor())
      detail::fail<TypeError>(fn, {"entry ", path,
                                   " is a tensor in one TensorDict and a nested "
                                   "TensorDict in the other"});
    if (value.is_dict()) {
      out.entries_.emplace_back(key, Value(compared(value.dict(), other.dict(), negate, fn, path)));
      path.pop();
      continue;
    }
    const AnyTensor& x = value.tensor();
    const AnyTensor& y = other.tensor();
    if (x.dtype() != y.dtype())
      detail::fail<TypeError>(fn, {"entry ", path, " has dtypes ", x.dtype(), " and ", y.dtype(),
                                   "; expected the same dtype"});
    if (!(x.shape() == y.shape()))
      detail::fail<ShapeError>(fn, {"entry ", path, " has shapes ", x.shape(), " and ", y.shape(),
                                    "; expected the same shape"});
    Tensor<bool> equal = x.equal_elements(y, fn);
    if (negate) for_each([](bool& e) { e = !e; }, equal.view());
    out.entries_.emplace_back(key, Value(std::move(equal)));
    path.pop();
  }
  return out;
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
