#pragma once
// Helpers of the maths tests (test_math.cpp, test_reductions.cpp): strided operands with random
// layouts, broadcast reads and small random values.
#include <algorithm>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

namespace tbatch::testing {

/// The element of `t` that broadcasts to multi-index `idx` of a tensor of rank idx.size().
template <class T>
T broadcast_at(const Tensor<T>& t, const std::vector<index_t>& idx) {
  std::vector<index_t> own(static_cast<std::size_t>(t.dim()));
  const std::size_t lead = idx.size() - own.size();
  for (std::size_t d = 0; d < own.size(); ++d)
    own[d] = t.size(static_cast<index_t>(d)) == 1 ? 0 : idx[lead + d];
  return element_at(t, own);
}

/// A tensor of `shape` with values from `make`, laid out as a random strided view: a reversed
/// dim, a permuted buffer, or an expanded size-1 dim where the shape allows.
template <class T, class Make>
Tensor<T> strided_tensor(const Shape& shape, std::mt19937& rng, Make make) {
  const index_t rank = static_cast<index_t>(shape.size());
  std::vector<index_t> order(static_cast<std::size_t>(rank));
  for (index_t d = 0; d < rank; ++d)
    order[static_cast<std::size_t>(d)] = d;
  std::shuffle(order.begin(), order.end(), rng);
  Shape stored;
  for (index_t d : order)
    stored.push_back(shape[static_cast<std::size_t>(d)]);
  Tensor<T> buffer(stored);
  std::vector<index_t> inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    inverse[static_cast<std::size_t>(order[i])] = static_cast<index_t>(i);
  Tensor<T> t = rank > 0 ? buffer.permute(inverse) : buffer;
  if (rank > 0 && rng() % 2 == 0)
    t = t.slice(static_cast<index_t>(rng() % rank), std::nullopt, std::nullopt, -1);
  for_each_index(t.shape(), [&](const auto& idx) { element_ref(t, idx) = make(); });
  return t;
}

/// A random value of T: small integers (signed ones of both signs), non-zero when asked.
template <class T>
T random_value(std::mt19937& rng, bool nonzero = false) {
  while (true) {
    int v = static_cast<int>(rng() % 13);
    if constexpr (std::is_signed_v<T> || FloatingElement<T>) v -= 6;
    if (nonzero && v == 0) continue;
    if constexpr (std::is_same_v<T, bool>)
      return v % 2 != 0;
    else
      return static_cast<T>(v);
  }
}

}  // namespace tbatch::testing
