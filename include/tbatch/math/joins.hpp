#pragma once
// Joining and splitting tensors along a dim, torch's names: stack and cat copy into one new
// tensor; split and chunk return views.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/copy.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// The tensors of `list` (all of one shape) along a new dim `dim` (-rank-1 to rank), copied
/// into a new contiguous tensor. ValueError for an empty list, ShapeError naming the first
/// tensor whose shape differs, IndexError for a dim out of range.
template <Element T>
Tensor<T> stack(const std::vector<Tensor<T>>& list, index_t dim = 0) {
  if (list.empty()) detail::fail<ValueError>("stack", {"needs at least one tensor, got none"});
  const Shape& shape = list.front().shape();
  for (std::size_t i = 1; i < list.size(); ++i)
    if (!(list[i].shape() == shape))
      detail::fail<ShapeError>(
          "stack", {"tensor ", i, " has shape ", list[i].shape(), " but tensor 0 has shape ", shape,
                    "; stack needs equal shapes"});
  const index_t d = layout::normalize_dim(dim, index_t(shape.size()) + 1, "stack");
  Shape out_shape = shape;
  out_shape.insert(d, index_t(list.size()));
  Tensor<T> out = Tensor<T>::empty(std::move(out_shape));
  for (std::size_t i = 0; i < list.size(); ++i)
    copy(list[i].view(), out.select(d, index_t(i)).view());
  return out;
}

/// The tensors of `list` one after the other along `dim`, copied into a new contiguous tensor:
/// their shapes must agree except in `dim`. Tensors of shape {0} are skipped, as torch does, so
/// that an empty accumulator can start a concatenation. ValueError for an empty list,
/// ShapeError naming the first tensor that does not fit, IndexError for a dim out of range.
template <Element T>
Tensor<T> cat(const std::vector<Tensor<T>>& list, index_t dim = 0) {
  if (list.empty()) detail::fail<ValueError>("cat", {"needs at least one tensor, got none"});
  auto skipped = [](const Tensor<T>& t) { return t.shape() == Shape{0}; };
  std::size_t first = 0;
  while (first < list.size() && skipped(list[first]))
    ++first;
  if (first == list.size()) return Tensor<T>::empty(Shape{0});
  const Shape& shape = list[first].shape();
  const index_t d = layout::normalize_dim(dim, index_t(shape.size()), "cat");
  Shape out_shape = shape;
  out_shape.set(d, 0);
  for (std::size_t i = first; i < list.size(); ++i) {
    const Shape& s = list[i].shape();
    if (skipped(list[i])) continue;
    bool fits = s.size() == shape.size();
    for (std::size_t k = 0; fits && k < s.size(); ++k)
      fits = index_t(k) == d || s[k] == shape[k];
    if (!fits)
      detail::fail<ShapeError>(
          "cat", {"tensor ", i, " has shape ", s, " but tensor ", first, " has shape ", shape,
                  "; they may differ in dim ", d, " only"});
    out_shape.set(d, out_shape[d] + s[d]);
  }
  Tensor<T> out = Tensor<T>::empty(std::move(out_shape));
  index_t offset = 0;
  for (std::size_t i = first; i < list.size(); ++i) {
    if (skipped(list[i])) continue;
    const index_t n = list[i].size(d);
    copy(list[i].view(), out.narrow(d, offset, n).view());
    offset += n;
  }
  return out;
}

/// x cut along `dim` into views of `sizes` elements each, which must add up to x.size(dim).
/// ValueError for a negative size, ShapeError when they do not add up.
template <Element T>
std::vector<Tensor<T>> split(const Tensor<T>& x, const std::vector<index_t>& sizes,
                             index_t dim = 0) {
  const index_t d = layout::normalize_dim(dim, x.dim(), "split");
  index_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      detail::fail<ValueError>("split", {"size ", i, " is ", sizes[i], "; sizes must be >= 0"});
    total += sizes[i];
  }
  if (total != x.size(d))
    detail::fail<ShapeError>("split",
                             {"sizes ", detail::listed(sizes), " add up to ", total, " but dim ", d,
                              " of shape ", x.shape(), " has ", x.size(d)});
  std::vector<Tensor<T>> parts;
  parts.reserve(sizes.size());
  index_t offset = 0;
  for (index_t n : sizes) {
    parts.push_back(x.narrow(d, offset, n));
    offset += n;
  }
  return parts;
}
/// x cut along `dim` into views of `split_size` elements, the last one shorter when they do not
/// divide x.size(dim) (one empty view for an empty dim). ValueError for a split_size below 1.
template <Element T, std::integral I>
std::vector<Tensor<T>> split(const Tensor<T>& x, I split_size, index_t dim = 0) {
  const index_t d = layout::normalize_dim(dim, x.dim(), "split");
  const auto size = static_cast<index_t>(split_size);
  if (size < 1) detail::fail<ValueError>("split", {"split_size ", size, " must be >= 1"});
  const index_t n = x.size(d);
  std::vector<index_t> sizes;
  for (index_t offset = 0; offset < n; offset += size)
    sizes.push_back(std::min(size, n - offset));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, d);
}

/// x cut along `dim` into at most `chunks` views of ceil(size / chunks) elements (fewer views
/// when the last ones would be empty; `chunks` empty views of an empty dim), as torch.chunk.
/// ValueError for chunks below 1.
template <Element T>
std::vector<Tensor<T>> chunk(const Tensor<T>& x, index_t chunks, index_t dim = 0) {
  if (chunks < 1) detail::fail<ValueError>("chunk", {"chunks ", chunks, " must be >= 1"});
  const index_t d = layout::normalize_dim(dim, x.dim(), "chunk");
  const index_t n = x.size(d);
  if (n == 0) return split(x, std::vector<index_t>(static_cast<std::size_t>(chunks), 0), d);
  return split(x, (n + chunks - 1) / chunks, d);
}

}  // namespace tbatch
