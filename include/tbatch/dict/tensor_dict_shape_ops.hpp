#pragma once
// TensorDict's shape ops over batch dims, declared in dict/tensor_dict_class.hpp: the view layer's
// layout functions applied to the batch dims of every entry (reshape, view, permute, transpose,
// unsqueeze, squeeze, flatten, unflatten, unbind, split, chunk, expand, repeat,
// repeat_interleave, clone, contiguous), and the per-entry walk behind them and index.

#include <cstddef>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/dict/keys.hpp"
#include "tbatch/dict/tensor_dict_entries.hpp"
#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"
#endif

namespace tbatch {

#if TBATCH_DEFINITIONS

// ---------------------------------------------------------------- shape ops over batch dims

TBATCH_INLINE TensorDict TensorDict::reshape(const std::vector<index_t>& sizes) const {
  const char* fn = "TensorDict::reshape";
  const Shape batch = layout::infer_size(sizes, numel(), fn);
  const index_t bd = batch_dims();
  auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
    return t.reshaped(with_features(batch, t.shape(), bd), fn);
  };
  detail::KeyPath path;
  return map_tensors(batch, Names(batch.size()), bd, op, path);
}

TBATCH_INLINE TensorDict TensorDict::view(const std::vector<index_t>& sizes) const {
  const char* fn = "TensorDict::view";
  const Shape batch = layout::infer_size(sizes, numel(), fn);
  const index_t bd = batch_dims();
  auto op = [&](const AnyTensor& t, const detail::KeyPath& path) -> AnyTensor {
    if (auto viewed = layout::try_view(t.layout(), with_features(batch, t.shape(), bd), fn))
      return t.with_layout(std::move(*viewed));
    detail::fail<ShapeError>(
        fn, {"entry ", path, " of shape ", t.shape(), " and strides ", detail::listed(t.strides()),
             " cannot be viewed with batch_size ", batch,
             " without copying; use reshape, which copies when it must"});
  };
  detail::KeyPath path;
  return map_tensors(batch, Names(batch.size()), bd, op, path);
}

TBATCH_INLINE TensorDict TensorDict::permute(const std::vector<index_t>& dims) const {
  const char* fn = "TensorDict::permute";
  const index_t bd = batch_dims();
  if (static_cast<index_t>(dims.size()) != bd)
    detail::fail<ShapeError>(
        fn, {"got ", dims.size(), " dims ", detail::listed(dims), " for batch_dims ", bd,
             "; expected a permutation of all ", bd, " batch dims"});
  std::vector<index_t> order(dims.size());
  detail::SmallVector<bool, 8> seen(dims.size(), false);
  Shape batch;
  Names names;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const index_t d = normalize_dim(dims[i], bd, fn);
    if (seen[d])
      detail::fail<ValueError>(
          fn, {"dim ", dims[i], " appears more than once in ", detail::listed(dims)});
    seen[d] = true;
    order[i] = d;
    batch.push_back(batch_size_[d]);
    names.push_back(name_of(d));
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

TBATCH_INLINE TensorDict TensorDict::transpose(index_t a, index_t b) const {
  const char* fn = "TensorDict::transpose";
  const index_t bd = batch_dims();
  const index_t da = normalize_dim(a, bd, fn), db = normalize_dim(b, bd, fn);
  Shape batch = batch_size_;
  batch.set(da, batch_size_[db]);
  batch.set(db, batch_size_[da]);
  Names names = names_;
  std::swap(names[static_cast<std::size_t>(da)], names[static_cast<std::size_t>(db)]);
  auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
    return t.with_layout(layout::transpose(t.layout(), da, db));
  };
  detail::KeyPath path;
  return map_tensors(std::move(batch), std::move(names), bd, op, path);
}

TBATCH_INLINE TensorDict TensorDict::unsqueeze(index_t dim) const {
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

TBATCH_INLINE TensorDict TensorDict::squeeze() const {
  const index_t bd = batch_dims();
  std::vector<index_t> removed;
  Shape batch;
  Names names;
  for (index_t d = 0; d < bd; ++d) {
    if (batch_size_[d] == 1) {
      removed.push_back(d);
    } else {
      batch.push_back(batch_size_[d]);
      names.push_back(name_of(d));
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

TBATCH_INLINE TensorDict TensorDict::squeeze(index_t dim) const {
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

TBATCH_INLINE TensorDict TensorDict::flatten(index_t start, index_t end) const {
  const char* fn = "TensorDict::flatten";
  const index_t bd = batch_dims();
  const index_t s = normalize_dim(start, bd, fn, "start dim");
  const index_t e = normalize_dim(end, bd, fn, "end dim");
  if (s > e) detail::fail<IndexError>(fn, {"start dim ", start, " comes after end dim ", end});
  Shape batch;
  Names names;
  index_t merged = 1;
  for (index_t d = 0; d < bd; ++d) {
    if (d < s || d > e) {
      batch.push_back(batch_size_[d]);
      names.push_back(name_of(d));
    } else {
      merged = detail::checked_mul(merged, batch_size_[d], fn);
      if (d == e) {
        batch.push_back(merged);
        names.push_back(s == e ? name_of(d) : std::nullopt);
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

TBATCH_INLINE TensorDict TensorDict::unflatten(index_t dim,
                                               const std::vector<index_t>& sizes) const {
  const char* fn = "TensorDict::unflatten";
  const index_t bd = batch_dims();
  const index_t d = normalize_dim(dim, bd, fn);
  if (sizes.empty())
    detail::fail<ShapeError>(
        fn, {"sizes must not be empty; expected sizes whose product is ", batch_size_[d]});
  const Shape inner = layout::infer_size(sizes, batch_size_[d], fn);
  Shape batch;
  Names names;
  for (index_t i = 0; i < bd; ++i) {
    if (i != d) {
      batch.push_back(batch_size_[i]);
      names.push_back(name_of(i));
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

TBATCH_INLINE std::vector<TensorDict> TensorDict::unbind(index_t dim) const {
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

TBATCH_INLINE std::vector<TensorDict> TensorDict::split(index_t size, index_t dim) const {
  const char* fn = "TensorDict::split";
  const index_t d = normalize_dim(dim, batch_dims(), fn);
  if (size <= 0 && !(size == 0 && batch_size_[d] == 0))
    detail::fail<ValueError>(fn, {"split size ", size, " must be positive"});
  return pieces(layout::split(layout::contiguous(batch_size_), size, d),
                [&](const Layout& l) { return layout::split(l, size, d); });
}

TBATCH_INLINE std::vector<TensorDict> TensorDict::split(const std::vector<index_t>& sizes,
                                                        index_t dim) const {
  const char* fn = "TensorDict::split";
  const index_t d = normalize_dim(dim, batch_dims(), fn);
  index_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      detail::fail<ValueError>(fn, {"split size ", sizes[i], " at position ", i, " must be >= 0"});
    total = detail::checked_add(total, sizes[i], fn);
  }
  if (total != batch_size_[d])
    detail::fail<ValueError>(fn, {"split sizes ", detail::listed(sizes), " sum to ", total,
                                  " but batch dim ", dim, " has size ", batch_size_[d]});
  return pieces(layout::split(layout::contiguous(batch_size_), sizes, d),
                [&](const Layout& l) { return layout::split(l, sizes, d); });
}

TBATCH_INLINE std::vector<TensorDict> TensorDict::chunk(index_t chunks, index_t dim) const {
  const char* fn = "TensorDict::chunk";
  const index_t d = normalize_dim(dim, batch_dims(), fn);
  if (chunks <= 0) detail::fail<ValueError>(fn, {"chunks ", chunks, " must be positive"});
  return pieces(layout::chunk(layout::contiguous(batch_size_), chunks, d),
                [&](const Layout& l) { return layout::chunk(l, chunks, d); });
}

TBATCH_INLINE TensorDict TensorDict::expand(const std::vector<index_t>& sizes) const {
  const char* fn = "TensorDict::expand";
  const index_t bd = batch_dims();
  const index_t n = static_cast<index_t>(sizes.size());
  if (n < bd)
    detail::fail<ShapeError>(fn,
                             {"got ", n, " sizes ", detail::listed(sizes), " for batch_dims ", bd,
                              "; expected at least ", bd, " (new leading dims come first)"});
  const index_t lead = n - bd;
  Shape batch;
  Names names(static_cast<std::size_t>(lead));
  for (index_t i = 0; i < n; ++i) {
    const index_t want = sizes[static_cast<std::size_t>(i)];
    if (i < lead) {
      if (want < 0)
        detail::fail<ShapeError>(fn, {"size ", want, " at new leading dim ", i, " must be >= 0"});
      batch.push_back(want);
      continue;
    }
    const index_t have = batch_size_[i - lead];
    if (want == -1 || want == have)
      batch.push_back(have);
    else if (have == 1 && want >= 0)
      batch.push_back(want);
    else
      detail::fail<ShapeError>(
          fn, {"size ", want, " at dim ", i, " does not match the existing batch size ", have,
               " of batch dim ", i - lead, " (only size-1 dims expand; -1 keeps a size)"});
    names.push_back(name_of(i - lead));
  }
  checked_numel(batch, fn);
  auto op = [&](const AnyTensor& t, const detail::KeyPath&) {
    return t.with_layout(layout::expand(t.layout(), with_features(batch, t.shape(), bd)));
  };
  detail::KeyPath path;
  return map_tensors(batch, std::move(names), bd, op, path);
}

TBATCH_INLINE TensorDict TensorDict::repeat(const std::vector<index_t>& repeats) const {
  const char* fn = "TensorDict::repeat";
  const index_t bd = batch_dims();
  const index_t n = static_cast<index_t>(repeats.size());
  if (n < bd)
    detail::fail<ShapeError>(fn, {"got ", n, " repeats ", detail::listed(repeats),
                                  " for batch_dims ", bd, "; expected at least ", bd});
  const index_t lead = n - bd;
  Shape batch;
  for (index_t i = 0; i < n; ++i) {
    const index_t repeat = repeats[static_cast<std::size_t>(i)];
    if (repeat < 0)
      detail::fail<ValueError>(fn, {"repeat ", repeat, " at dim ", i, " must be >= 0"});
    batch.push_back(detail::checked_mul(repeat, i < lead ? 1 : batch_size_[i - lead], fn));
  }
  checked_numel(batch, fn);
  Names names(static_cast<std::size_t>(lead));
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
      sizes.push_back(repeats[static_cast<std::size_t>(i)]);
      sizes.push_back(l.shape[2 * i + 1]);
    }
    for (index_t d = 2 * n; d < l.dim(); ++d)
      sizes.push_back(l.shape[d]);
    return t.with_layout(layout::expand(l, sizes)).copy_reshaped(Shape(target));
  };
  detail::KeyPath path;
  return map_tensors(batch, std::move(names), bd, op, path);
}

TBATCH_INLINE TensorDict TensorDict::repeat_interleave(index_t repeats,
                                                       std::optional<index_t> dim) const {
  const char* fn = "TensorDict::repeat_interleave";
  if (repeats < 0) detail::fail<ValueError>(fn, {"repeats ", repeats, " must be >= 0"});
  if (!dim) return reshape({numel()}).repeat_interleave(repeats, 0);
  const index_t d = normalize_dim(*dim, batch_dims(), fn);
  const index_t size = batch_size_[d];
  Tensor<index_t> positions = Tensor<index_t>::empty(Shape{detail::checked_mul(size, repeats, fn)});
  for (index_t i = 0, k = 0; i < size; ++i)
    for (index_t r = 0; r < repeats; ++r)
      positions.data()[k++] = i;
  return gathered_along(d, positions, fn);
}

TBATCH_INLINE TensorDict TensorDict::repeat_interleave(const Tensor<index_t>& repeats,
                                                       std::optional<index_t> dim) const {
  const char* fn = "TensorDict::repeat_interleave";
  if (!dim) return reshape({numel()}).repeat_interleave(repeats, 0);
  const index_t d = normalize_dim(*dim, batch_dims(), fn);
  const index_t size = batch_size_[d];
  if (repeats.dim() > 1)
    detail::fail<ShapeError>(fn, {"repeats must be 0-d or 1-d, got shape ", repeats.shape()});
  if (repeats.numel() != 1 && repeats.numel() != size)
    detail::fail<ShapeError>(fn, {"repeats has ", repeats.numel(), " elements but batch dim ", *dim,
                                  " has size ", size, "; expected ", size, " or 1"});
  const std::vector<index_t> counts = repeats.to_vector();
  index_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0)
      detail::fail<ValueError>(fn, {"repeats[", i, "] = ", counts[i], " must be >= 0"});
    total = detail::checked_add(total, counts[i], fn);
  }
  if (counts.size() == 1) total = detail::checked_mul(counts[0], size, fn);
  Tensor<index_t> positions = Tensor<index_t>::empty(Shape{total});
  for (index_t i = 0, k = 0; i < size; ++i)
    for (index_t r = 0; r < counts[counts.size() == 1 ? 0 : static_cast<std::size_t>(i)]; ++r)
      positions.data()[k++] = i;
  return gathered_along(d, positions, fn);
}

TBATCH_INLINE TensorDict TensorDict::clone() const {
  auto op = [](const AnyTensor& t, const detail::KeyPath&) { return t.clone(); };
  detail::KeyPath path;
  return map_tensors(batch_size_, names_, batch_dims(), op, path);
}

TBATCH_INLINE TensorDict TensorDict::contiguous() const {
  auto op = [](const AnyTensor& t, const detail::KeyPath&) { return t.contiguous(); };
  detail::KeyPath path;
  return map_tensors(batch_size_, names_, batch_dims(), op, path);
}

// ---- the per-entry walk behind every shape op and index

TBATCH_INLINE std::vector<index_t> TensorDict::with_features(const Shape& batch, const Shape& shape,
                                                             index_t prefix) {
  std::vector<index_t> sizes(batch.begin(), batch.end());
  sizes.insert(sizes.end(), shape.begin() + prefix, shape.end());
  return sizes;
}

template <class Fn>
TensorDict TensorDict::map_tensors(const Shape& batch, const Names& names, index_t prefix, Fn& fn,
                                   detail::KeyPath& path) const {
  TensorDict out;
  out.batch_size_ = batch;
  out.names_ = names;
  for (index_t d = prefix; d < batch_dims(); ++d) {
    out.batch_size_.push_back(batch_size_[d]);
    out.names_.push_back(name_of(d));
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

template <class Fn>
std::vector<TensorDict> TensorDict::map_tensors_many(const std::vector<Shape>& batches,
                                                     const std::vector<Names>& names,
                                                     index_t prefix, Fn& fn,
                                                     detail::KeyPath& path) const {
  std::vector<TensorDict> outs(batches.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    outs[k].batch_size_ = batches[k];
    outs[k].names_ = names[k];
    for (index_t d = prefix; d < batch_dims(); ++d) {
      outs[k].batch_size_.push_back(batch_size_[d]);
      outs[k].names_.push_back(name_of(d));
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

TBATCH_INLINE std::vector<AnyTensor> TensorDict::rebind_all(const AnyTensor& t,
                                                            std::vector<Layout> layouts) {
  std::vector<AnyTensor> out;
  out.reserve(layouts.size());
  for (Layout& l : layouts)
    out.push_back(t.with_layout(std::move(l)));
  return out;
}

template <class Op>
std::vector<TensorDict> TensorDict::pieces(const std::vector<Layout>& batch_pieces, Op&& op) const {
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

TBATCH_INLINE TensorDict TensorDict::gathered_along(index_t d, const Tensor<index_t>& positions,
                                                    const char* fn) const {
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

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
