#pragma once
// apply (tensordict's): a dict of the same keys holding fn of every entry. TensorDict hands fn
// each tensor; RaggedTensorDict hands it a dense entry's stacked tensor and a ragged entry's
// padded or packed batch, so that the maths on batches maps over a dict.

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/ragged_tensor_dict_class.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"
#include "tbatch/math/joins.hpp"
#include "tbatch/ragged/reductions.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace detail {

/// A Tensor<T> whose conversions to other element types are deleted rather than failing on
/// use: fn takes a tensor of dtype T when it takes a TensorProbe<T>, not through a conversion.
template <class T>
struct TensorProbe : Tensor<T> {
  template <Element U>
  requires(!std::same_as<U, T>) operator Tensor<U>() const = delete;
};

/// fn applied to `t` as the Tensor<T> of its dtype, or as the AnyTensor itself.
template <class Fn>
AnyTensor apply_to(Fn& fn, const AnyTensor& t, const KeyPath& path, const char* function) {
  return dispatch_dtype(t.dtype(), [&]<class T>(std::type_identity<T>) -> AnyTensor {
    if constexpr (std::is_invocable_v<Fn&, const TensorProbe<T>&>)
      return AnyTensor(fn(t.get<T>()));
    else if constexpr (std::is_invocable_v<Fn&, const AnyTensor&>)
      return AnyTensor(fn(t));
    else
      fail<TypeError>(function,
                      {"entry ", path, " has dtype ", t.dtype(),
                       ", which the function does not take (it takes neither a Tensor of that "
                       "dtype nor an AnyTensor)"});
  });
}

using StoredEntry = RaggedTensorDict::StoredEntry;

/// A dense result of fn on an entry.
inline void store_result(AnyTensor result, bool, StoredEntry& out) {
  out = StoredEntry{false, std::move(result), {}, {}, false};
}
template <Element U>
void store_result(const Tensor<U>& result, bool, StoredEntry& out) {
  store_result(AnyTensor(result), false, out);
}
/// A batch result: ragged, or a dense entry when its elements share one shape (without the
/// trailing dim of size 1 when the entry's tensors had none).
template <LayoutBatch B>
void store_result(const B& result, bool unit_last_dim, StoredEntry& out) {
  using U = ValueOf<B>;
  const index_t count = result.batch_size();
  bool equal = true;
  for (index_t i = 1; i < count && equal; ++i)
    equal = result.shape_of(i) == result.shape_of(0);
  if (equal && count > 0) {
    std::vector<Tensor<U>> tensors = result.to_list();
    if (unit_last_dim && result.last_dim() == 1)
      for (Tensor<U>& t : tensors)
        t = t.squeeze(-1);
    store_result(AnyTensor(stack(tensors, 0)), false, out);
    return;
  }
  out.ragged = true;
  out.data = AnyTensor(result.data());
  out.shape_per_tensor = result.shape_per_tensor();
  if constexpr (kind_of<B> == BatchKind::packed) out.first_idx = result.first_idx();
  out.unit_last_dim = unit_last_dim && result.last_dim() == 1;
}
template <class U, LayoutBatch B>
void store_result(const BatchReduction<U, B>& result, bool unit_last_dim, StoredEntry& out) {
  if (result.is_dense())
    store_result(result.tensor(), unit_last_dim, out);
  else
    store_result(result.batch(), unit_last_dim, out);
}

/// fn applied to a ragged entry's batch B of element type T.
template <class B, class Fn>
void apply_to_batch(Fn& fn, const B& batch, const StoredEntry& entry, StoredEntry& out,
                    const KeyPath& path) {
  if constexpr (std::is_invocable_v<Fn&, const B&>)
    store_result(fn(batch), entry.unit_last_dim, out);
  else
    fail<TypeError>("RaggedTensorDict::apply",
                    {"entry ", path, " is a ragged ",
                     kind_of<B> == BatchKind::packed ? "PackedBatch<" : "PaddedBatch<",
                     dtype_name_of<ValueOf<B>>, ">, which the function does not take"});
}

/// `stored` with fn applied to every tensor entry at any depth.
template <class Fn>
RaggedTensorDict::Stored applied_stored(const RaggedTensorDict::Stored& stored, RaggedLayout layout,
                                        Fn& fn, KeyPath& path) {
  RaggedTensorDict::Stored out{stored.batch_size, stored.element_batch_sizes, {}};
  for (const RaggedTensorDict::Stored::Item& item : stored.items) {
    path.push(item.key);
    RaggedTensorDict::Stored::Item result{item.key, std::nullopt, nullptr};
    if (item.dict) {
      result.dict = std::make_shared<const RaggedTensorDict::Stored>(
          applied_stored(*item.dict, layout, fn, path));
    } else {
      // Built apart and moved in (clang does not see the nested aggregate as default
      // constructible for optional::emplace).
      const StoredEntry& entry = *item.tensor;
      StoredEntry applied{false, AnyTensor(), {}, {}, false};
      if (!entry.ragged)
        store_result(apply_to(fn, entry.data, path, "RaggedTensorDict::apply"), false, applied);
      else
        entry.data.visit([&](const auto& data) {
          using T = typename std::decay_t<decltype(data)>::value_type;
          if (layout == RaggedLayout::packed)
            apply_to_batch(
                fn, PackedBatch<T>(data, entry.shape_per_tensor, entry.first_idx, ValidMetadata{}),
                entry, applied, path);
          else
            apply_to_batch(fn, PaddedBatch<T>(data, entry.shape_per_tensor, ValidMetadata{}), entry,
                           applied, path);
        });
      result.tensor = std::move(applied);
    }
    out.items.push_back(std::move(result));
    path.pop();
  }
  return out;
}

}  // namespace detail

template <class Fn>
TensorDict TensorDict::apply(Fn&& fn) const {
  detail::KeyPath path;
  return applied(fn, path);
}

template <class Fn>
TensorDict TensorDict::applied(Fn& fn, detail::KeyPath& path) const {
  TensorDict out;
  out.batch_size_ = batch_size_;
  out.names_ = names_;
  out.entries_.reserve(entries_.size());
  for (const auto& [key, value] : entries_) {
    path.push(key);
    if (value.is_tensor()) {
      AnyTensor result = detail::apply_to(fn, value.tensor(), path, "TensorDict::apply");
      const Shape& shape = result.shape();
      if (shape.size() < batch_size_.size() ||
          !std::equal(batch_size_.begin(), batch_size_.end(), shape.begin()))
        detail::fail<ShapeError>(
            "TensorDict::apply",
            {"the result for entry ", path, " has shape ", shape, " but the batch size is ",
             batch_size_, "; expected a result whose leading dims are the batch size"});
      out.entries_.emplace_back(key, Value(std::move(result)));
    } else {
      out.entries_.emplace_back(key, Value(value.dict().applied(fn, path)));
    }
    path.pop();
  }
  return out;
}

template <class Fn>
RaggedTensorDict RaggedTensorDict::apply(Fn&& fn) const {
  detail::KeyPath path;
  const Stored result = detail::applied_stored(stored(), layout_, fn, path);
  return from_stored(result, layout_, [](const std::string& prefix, const std::string& why) {
    detail::fail<ShapeError>(
        "RaggedTensorDict::apply",
        {"the result", prefix.empty() ? std::string() : " at '" + prefix + "'", " ", why});
  });
}

}  // namespace tbatch
