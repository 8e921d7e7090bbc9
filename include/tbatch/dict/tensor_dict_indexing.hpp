#pragma once
// TensorDict's indexing, declared in dict/tensor_dict_class.hpp: index and index_put over the batch
// dims of every entry (detail::plan_index per entry), and their checks and names.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/shape.hpp"
#include "tbatch/dict/tensor_dict_shape_ops.hpp"
#include "tbatch/tensor/format.hpp"
#endif

namespace tbatch {

template <Element T>
void TensorDict::index_put(std::initializer_list<TensorIndex> indices, const Tensor<T>& value) {
  const char* fn = "TensorDict::index_put";
  require_batch_dims(indices, fn);
  const index_t indexable = batch_dims();
  detail::plan_index(layout::contiguous(batch_size_), indices, indexable, fn);
  std::vector<PendingWrite> writes;
  auto plan_one = [&](AnyTensor& t, const detail::KeyPath& path) {
    check_writable(t.layout(), path, fn);
    detail::IndexPlan plan = detail::plan_index(t.layout(), indices, indexable, fn);
    check_broadcast(value.shape(), detail::indexed_shape(plan), path, fn);
    std::optional<AnyTensor> converted = t.converted_like(value);
    if (!converted) {
      if (value.numel() == 1)
        detail::fail<ValueError>(fn, {"the value ", detail::widen(value.contiguous().data()[0]),
                                      " does not fit the dtype ", t.dtype(), " of entry ", path});
      detail::fail<ValueError>(
          fn, {"the value of dtype ", dtype_name_of<T>, " has elements that do not fit the dtype ",
               t.dtype(), " of entry ", path});
    }
    writes.push_back(PendingWrite{t, std::move(plan), std::move(*converted)});
  };
  detail::KeyPath path;
  for_each_leaf(plan_one, path);
  run_writes(writes, fn);
}

#if TBATCH_DEFINITIONS

// ---------------------------------------------------------------- indexing

TBATCH_INLINE TensorDict TensorDict::index(std::initializer_list<TensorIndex> indices) const {
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

TBATCH_INLINE void TensorDict::index_put(std::initializer_list<TensorIndex> indices,
                                         const TensorDict& value) {
  const char* fn = "TensorDict::index_put";
  require_batch_dims(indices, fn);
  const index_t indexable = batch_dims();
  const Shape target = detail::indexed_shape(
      detail::plan_index(layout::contiguous(batch_size_), indices, indexable, fn));
  if (!(value.batch_size_ == target))
    detail::fail<ShapeError>(
        fn, {"the value has batch_size ", value.batch_size_, " but the indexed batch_size is ",
             target, "; expected a TensorDict of the indexed batch size"});
  TensorDict staged;
  TensorDict* destination = this;
  if (entries_.empty() && !value.entries_.empty()) {
    if (locked_)
      detail::fail<KeyError>(fn, {"cannot create the keys ", detail::KeysText{value.keys()},
                                  " in a locked TensorDict; call unlock_() first"});
    staged = *this;
    staged.preallocate_like(value, static_cast<index_t>(target.size()), staged.batch_size_,
                            staged.names_);
    destination = &staged;
  }
  std::vector<PendingWrite> writes;
  detail::KeyPath path;
  destination->plan_writes(value, indices, indexable, fn, writes, path);
  run_writes(writes, fn);
  if (destination == &staged) *this = std::move(staged);
}

// ---- indexing helpers

TBATCH_INLINE void TensorDict::require_batch_dims(std::initializer_list<TensorIndex> indices,
                                                  const char* fn) const {
  if (batch_dims() == 0)
    detail::fail<IndexError>(fn, {"indexing a tensordict with batch_dims==0 is not permitted. "
                                  "Got index ",
                                  detail::IndexText{indices}, "."});
  std::size_t position = 0;
  for (const auto& index : indices) {
    if (const Slice* s = std::get_if<Slice>(&index.value()); s != nullptr && s->step == 0)
      detail::fail<ValueError>(fn,
                               {"slice step 0 at index position ", position, " must be non-zero"});
    ++position;
  }
}

TBATCH_INLINE TensorDict::Names TensorDict::names_after_index(
    std::initializer_list<TensorIndex> indices, const detail::IndexPlan& plan,
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
            basic.push_back(name_of(dim++));
          } else if constexpr (std::is_same_v<V, EllipsisT>) {
            for (index_t k = 0; k < bd - consumed; ++k)
              basic.push_back(name_of(dim++));
          } else if constexpr (std::is_same_v<V, NewAxisT>) {
            basic.push_back(std::nullopt);
          } else if (v.dim() == 0) {
            basic.push_back(std::nullopt);
          } else {
            for (index_t k = 0; k < v.dim(); ++k)
              basic.push_back(name_of(dim++));
          }
        },
        index.value());
  }
  while (dim < bd)
    basic.push_back(name_of(dim++));
  if (!plan.has_advanced()) return basic;
  Names gathered(plan.gathered.size());
  if (plan.advanced_dims.size() == 1 && gathered.size() == 1)
    gathered[0] = basic[static_cast<std::size_t>(plan.advanced_dims[0])];
  const index_t first = plan.advanced_dims.front(), last = plan.advanced_dims.back();
  Names out;
  if (!plan.keeps_position) out = gathered;
  for (index_t d = 0; d < static_cast<index_t>(basic.size()); ++d) {
    if (plan.keeps_position && d == first) out.insert(out.end(), gathered.begin(), gathered.end());
    const bool advanced = plan.keeps_position
                              ? (d >= first && d <= last)
                              : std::find(plan.advanced_dims.begin(), plan.advanced_dims.end(),
                                          d) != plan.advanced_dims.end();
    if (!advanced) out.push_back(basic[static_cast<std::size_t>(d)]);
  }
  return out;
}

TBATCH_INLINE void TensorDict::run_writes(std::vector<PendingWrite>& writes, const char* fn) {
  // A value read after an earlier write into its buffer is copied first, so every value is
  // read as it was before the call (view/aliasing.hpp; a write's own value is staged by the
  // engine).
  for (std::size_t i = 1; i < writes.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (writes[i].value.shares_storage_with(writes[j].target)) {
        writes[i].value = writes[i].value.clone();
        break;
      }
  for (PendingWrite& w : writes)
    w.target.index_put_planned(w.plan, w.value, fn);
}

TBATCH_INLINE void TensorDict::check_writable(const Layout& target, const detail::KeyPath& path,
                                              const char* fn) {
  if (detail::repeats_elements(target))
    detail::fail<ValueError>(fn, {"entry ", path, " has shape ", target.shape, " and strides ",
                                  detail::listed(target.strides),
                                  ", which put several of its elements at one address (an expanded "
                                  "view); writing into it is not permitted; clone() it first"});
}

TBATCH_INLINE void TensorDict::check_broadcast(const Shape& value, const Shape& target,
                                               const detail::KeyPath& path, const char* fn) {
  if (!layout::broadcasts_to(value, target))
    detail::fail<ShapeError>(fn, {"the value of shape ", value, " for entry ", path,
                                  " cannot be broadcast to its indexed shape ", target});
}

TBATCH_INLINE void TensorDict::preallocate_like(const TensorDict& value, index_t indexed_dims,
                                                const Shape& outer, const Names& outer_names) {
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
    for (auto d = static_cast<std::size_t>(indexed_dims); d < v.dict().names_.size(); ++d)
      child.names_.push_back(v.dict().names_[d]);
    child.preallocate_like(v.dict(), indexed_dims, outer, outer_names);
    entries_.emplace_back(key, Value(std::move(child)));
  }
}

TBATCH_INLINE void TensorDict::plan_writes(const TensorDict& value,
                                           std::initializer_list<TensorIndex> indices,
                                           index_t indexable, const char* fn,
                                           std::vector<PendingWrite>& writes,
                                           detail::KeyPath& path) {
  for (const auto& [key, v] : value.entries_) {
    path.push(key);
    Value* mine = find(key);
    if (mine == nullptr)
      detail::fail<KeyError>(fn, {"key ", path, " of the value is not in the TensorDict, whose ",
                                  "keys there are ", detail::KeysText{keys()}});
    if (mine->is_tensor() != v.is_tensor())
      detail::fail<TypeError>(
          fn, {"entry ", path, " is a ", mine->is_tensor() ? "tensor" : "nested TensorDict",
               " but the value's is a ", v.is_tensor() ? "tensor" : "nested TensorDict"});
    if (v.is_tensor()) {
      AnyTensor& target = mine->tensor();
      if (target.dtype() != v.tensor().dtype())
        detail::fail<TypeError>(
            fn, {"entry ", path, " has dtype ", target.dtype(), " but the value's has dtype ",
                 v.tensor().dtype(), "; expected the same dtype"});
      check_writable(target.layout(), path, fn);
      detail::IndexPlan plan = detail::plan_index(target.layout(), indices, indexable, fn);
      check_broadcast(v.tensor().shape(), detail::indexed_shape(plan), path, fn);
      writes.push_back(PendingWrite{target, std::move(plan), v.tensor()});
    } else {
      mine->dict().plan_writes(v.dict(), indices, indexable, fn, writes, path);
    }
    path.pop();
  }
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
