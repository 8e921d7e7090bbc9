#pragma once
// What the tests of the maths on batches share: random lists and batches of every layout (NaN
// padding, strided packed data), value comparison within a few ulp, and the element-wise check.
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "math_support.hpp"
#include "tbatch/tbatch.hpp"

namespace tbatch::testing {

/// Same shape and values within a few ulp of T (NaN equal to NaN), or exactly for integers.
template <class T>
bool same_values(const Tensor<T>& got, const Tensor<T>& want) {
  if (!(got.shape() == want.shape())) return false;
  bool ok = true;
  for_each(
      [&](const T& a, const T& b) {
        const double x = static_cast<double>(detail::widen(a));
        const double y = static_cast<double>(detail::widen(b));
        if constexpr (FloatingElement<T>) {
          const double tolerance = std::is_same_v<T, float> ? 2e-6 : 1e-13;
          ok = ok && ((std::isnan(x) && std::isnan(y)) || x == y ||
                      std::abs(x - y) <= tolerance * (1 + std::abs(y)));
        } else {
          ok = ok && x == y;
        }
      },
      got.view(), want.view());
  return ok;
}

/// B elements of rank `rank` whose dims before the last have sizes in [0, 4] (1-4 without
/// empties), last dim `last`, values from random_value.
template <class T>
std::vector<Tensor<T>> random_list(std::mt19937& rng, index_t batch, index_t rank, index_t last,
                                   bool empties = true) {
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < batch; ++i) {
    Shape shape;
    for (index_t d = 0; d + 1 < rank; ++d)
      shape.push_back(static_cast<index_t>(rng() % 5) + (empties ? 0 : 1));
    shape.push_back(last);
    list.push_back(strided_tensor<T>(shape, rng, [&] { return random_value<T>(rng, true); }));
  }
  return list;
}

/// The packed batch of `list` with its data laid out reversed or transposed (not contiguous).
template <class T>
PackedBatch<T> strided_packed(const std::vector<Tensor<T>>& list, std::mt19937& rng) {
  const PackedBatch<T> packed = list_to_packed(list);
  Tensor<T> data = packed.data();
  Tensor<T> strided = rng() % 2 ? Tensor<T>(Shape{data.size(1), data.size(0)}).transpose(0, 1)
                                : Tensor<T>(data.shape()).slice(0, std::nullopt, std::nullopt, -1);
  copy(data.view(), strided.view());
  return PackedBatch<T>(strided, packed.shape_per_tensor(), packed.first_idx());
}

/// The padding value that an op reading padding would show: NaN for floats.
template <class T>
T poison() {
  if constexpr (FloatingElement<T>)
    return std::numeric_limits<T>::quiet_NaN();
  else
    return T(7);
}

/// Element i of `batch` equals want(i) and a padded batch's padding is 0.
template <class B, class Want>
void check_elements(const B& batch, const Want& want, bool padding_zero = true) {
  using R = typename B::value_type;
  std::vector<Tensor<R>> expected;
  for (index_t i = 0; i < batch.batch_size(); ++i) {
    INFO("element " << i);
    const Tensor<R> w = want(i);
    CHECK(same_values(batch.element(i), w));
    expected.push_back(w);
  }
  if constexpr (std::is_same_v<B, PaddedBatch<R>>) {
    if (padding_zero) {
      const Shape sizes = batch.max_shape();
      const std::vector<index_t> max_shape(sizes.begin(), sizes.end());
      CHECK(same_values(batch.data(), list_to_padded(expected, R{}, max_shape).data()));
    }
  }
}

/// Calls check(batch, list) with the padded (NaN padding) and strided packed batches of a random
/// list, and with its exact batch when all elements share a shape.
template <class T, class Check>
void for_each_layout(std::mt19937& rng, index_t rank, const Check& check) {
  const index_t batch = 1 + static_cast<index_t>(rng() % 5);
  const index_t last = 1 + static_cast<index_t>(rng() % 4);
  const std::vector<Tensor<T>> list = random_list<T>(rng, batch, rank, last);
  {
    INFO("padded");
    check(list_to_padded(list, poison<T>()), list);
  }
  {
    INFO("packed");
    check(strided_packed(list, rng), list);
  }
  std::vector<Tensor<T>> same = random_list<T>(rng, 1, rank, last);
  while (static_cast<index_t>(same.size()) < batch + 1)
    same.push_back(
        strided_tensor<T>(same[0].shape(), rng, [&] { return random_value<T>(rng, true); }));
  INFO("exact");
  check(ExactBatch<T>(stack(same, 0)), same);
}

}  // namespace tbatch::testing
