#include <random>

#include "test_support.hpp"

using namespace tbatch;
using tbatch::testing::iota;
using tbatch::testing::value_of;

namespace {
Tensor<index_t> positions(std::vector<index_t> values) {
  const index_t n = values.size();
  return Tensor<index_t>(Shape{n}, values);
}
}  // namespace

TEMPLATE_TEST_CASE("basic indexing gives views with torch's shapes", "[indexing]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> a = iota<T>({2, 3, 4});
  Tensor<T> row = a.index({1});
  CHECK(row.shape() == Shape{3, 4});
  CHECK(row.shares_storage_with(a));
  CHECK(row(0, 0) == value_of<T>(12));
  CHECK(a.index({Slice{}, 1}).shape() == Shape{2, 4});
  Tensor<T> last = a.index({Ellipsis, 2});
  CHECK(last.shape() == Shape{2, 3});
  CHECK(last(1, 2) == value_of<T>(22));
  CHECK(a.index({NewAxis, 0}).shape() == Shape{1, 3, 4});
  CHECK(a.index({Ellipsis, NewAxis}).shape() == Shape{2, 3, 4, 1});
  CHECK(a.index({-1, Slice{std::nullopt, std::nullopt, -1}, Slice{1, 3}}).shape() == Shape{3, 2});
  CHECK(a.index({-1, Slice{std::nullopt, std::nullopt, -1}, Slice{1, 3}})(0, 0) == value_of<T>(21));
  CHECK(a.index({}).shape() == a.shape());
}

TEMPLATE_TEST_CASE("advanced indexing follows torch's placement rules", "[indexing]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> a = iota<T>({2, 3, 4});
  // One index tensor: rows reordered, a copy.
  Tensor<T> swapped = a.index({positions({1, 0})});
  CHECK(swapped.shape() == Shape{2, 3, 4});
  CHECK(!swapped.shares_storage_with(a));
  CHECK(swapped(0, 0, 0) == value_of<T>(12));
  // Non-adjacent index tensors: the gathered dim goes first (torch: a[[1,0], :, [0,3]]).
  Tensor<T> apart = a.index({positions({1, 0}), Slice{}, positions({0, 3})});
  CHECK(apart.shape() == Shape{2, 3});
  const std::vector<int> apart_expected{12, 16, 20, 3, 7, 11};
  for (index_t k = 0; k < 6; ++k)
    CHECK(apart.to_vector()[k] == value_of<T>(apart_expected[k]));
  // Adjacent index tensors keep their place (torch: a[:, [0,2], [1,3]] -> [[1,11],[13,23]]).
  Tensor<T> together = a.index({Slice{}, positions({0, 2}), positions({1, 3})});
  CHECK(together.shape() == Shape{2, 2});
  const std::vector<int> together_expected{1, 11, 13, 23};
  for (index_t k = 0; k < 4; ++k)
    CHECK(together.to_vector()[k] == value_of<T>(together_expected[k]));
  // Index tensors broadcast: (2,1) with (2,) -> (2,2).
  Tensor<T> broadcast = a.index({Slice{}, Tensor<index_t>({2, 1}, {0, 2}), positions({1, -1})});
  CHECK(broadcast.shape() == Shape{2, 2, 2});
  CHECK(broadcast(1, 1, 1) == value_of<T>(23));
  CHECK(broadcast(0, 0, 1) == value_of<T>(3));
  // An integer between index tensors is basic indexing (torch): a[[0,1], 1, [2,3]] -> [6, 19].
  Tensor<T> mixed = a.index({positions({0, 1}), 1, positions({2, 3})});
  CHECK(mixed.shape() == Shape{2});
  CHECK(mixed(0) == value_of<T>(6));
  CHECK(mixed(1) == value_of<T>(19));
  // A 0-d index tensor removes its dim, like an integer, but copies.
  CHECK(a.index({Tensor<index_t>(Shape{}, index_t(1))}).shape() == Shape{3, 4});
}

TEMPLATE_TEST_CASE("boolean masks select like torch", "[indexing]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  const Tensor<T> a = iota<T>({2, 3, 4});
  Tensor<bool> mask({2, 3}, std::vector<bool>{true, false, true, false, false, true});
  Tensor<T> picked = a.index({mask});
  CHECK(picked.shape() == Shape{3, 4});
  CHECK(picked(1, 0) == value_of<T>(8));
  CHECK(picked(2, 3) == value_of<T>(23));
  Tensor<bool> last({4}, std::vector<bool>{false, true, true, false});
  CHECK(a.index({Ellipsis, last}).shape() == Shape{2, 3, 2});
  CHECK(a.index({Tensor<bool>(Shape{}, true)}).shape() == Shape{1, 2, 3, 4});
  CHECK(a.index({Tensor<bool>(Shape{}, false)}).shape() == Shape{0, 2, 3, 4});
  TBATCH_CHECK_THROWS_WITH(a.index({Tensor<bool>(Shape{3})}), IndexError,
                           "the shape of the mask [3] at dim 0 does not match");
}

TEMPLATE_TEST_CASE("index_put and index_fill write through every index kind", "[indexing]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> a(Shape{3, 4});
  a.index_fill({1}, value_of<T>(1));
  CHECK(a(1, 3) == value_of<T>(1));
  CHECK(a(0, 3) == value_of<T>(0));
  a.index_put({Slice{}, 0}, Tensor<T>({3}, {value_of<T>(5), value_of<T>(6), value_of<T>(7)}));
  CHECK(a(2, 0) == value_of<T>(7));
  // Scalar value broadcasts over gathered rows.
  a.index_put({positions({0, 2})}, Tensor<T>(Shape{}, value_of<T>(9)));
  CHECK(a(0, 2) == value_of<T>(9));
  CHECK(a(2, 3) == value_of<T>(9));
  CHECK(a(1, 1) == value_of<T>(1));
  // Duplicate positions: the last write wins (deterministic order).
  Tensor<T> b(Shape{3});
  b.index_put({positions({1, 1})}, Tensor<T>({2}, {value_of<T>(2), value_of<T>(3)}));
  CHECK(b(1) == value_of<T>(3));
  Tensor<bool> mask({3, 4}, false);
  mask.at({2, 1}) = true;
  a.index_fill({mask}, value_of<T>(4));
  CHECK(a(2, 1) == value_of<T>(4));
  TBATCH_CHECK_THROWS_WITH(a.index_put({0}, Tensor<T>(Shape{3})), ShapeError,
                           "value of shape [3] cannot be broadcast to the indexed shape [4]");
}

TEMPLATE_TEST_CASE("index_put takes a scalar with every index kind, as TensorDict::index_put does",
                   "[indexing]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<bool> mask({3, 4}, false);
  mask.at({0, 1}) = true;
  mask.at({2, 3}) = true;
  auto check = [](std::initializer_list<TensorIndex> indices) {
    Tensor<T> by_scalar = iota<T>({3, 4});
    Tensor<T> by_tensor = iota<T>({3, 4});
    by_scalar.index_put(indices, value_of<T>(1));
    by_tensor.index_put(indices, Tensor<T>(Shape{}, value_of<T>(1)));
    CHECK(equal(by_scalar, by_tensor));
  };
  check({1});
  check({Slice{}, 2});
  check({positions({0, 2})});
  check({Slice{}, positions({3, 1})});
  check({mask});
  check({Ellipsis});
  // Any element type converts when T holds the value.
  Tensor<T> a = iota<T>({3, 4});
  a.index_put({mask}, 0);
  CHECK(a(0, 1) == value_of<T>(0));
  CHECK(a(2, 3) == value_of<T>(0));
  CHECK(a(2, 2) == value_of<T>(10));
}

TEST_CASE("index_put of a scalar checks that the dtype holds it", "[indexing][errors]") {
  Tensor<float> x = iota<float>({2, 3});
  x.index_put({x.index({Slice{}}).cast<bool>()}, 0.f);  // the documented form: zero the nonzero
  CHECK(equal(x, Tensor<float>(Shape{2, 3}, 0.0f)));
  Tensor<std::int8_t> small(Shape{4});
  TBATCH_CHECK_THROWS_WITH(small.index_put({0}, 300), ValueError,
                           "index_put: the value 300 does not fit int8 (range [-128, 127])");
  TBATCH_CHECK_THROWS_WITH(small.index_put({0}, std::nan("")), ValueError,
                           "index_put: the value nan does not fit int8");
  TBATCH_CHECK_THROWS_WITH(small.index_put({4}, 1), IndexError,
                           "index_put: index 4 is out of range for dim 0");
  CHECK(equal(small, Tensor<std::int8_t>(Shape{4})));
  Tensor<float> expanded = Tensor<float>(Shape{1}).expand({3});
  TBATCH_CHECK_THROWS_WITH(expanded.index_put({0}, 1.0f), ValueError, "index_put");
}

TEST_CASE("advanced indexing equals a plain gather on random tensors", "[indexing]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    const index_t n0 = 1 + rng() % 5, n1 = 1 + rng() % 5, n2 = 1 + rng() % 5, p = rng() % 6;
    const Tensor<std::int32_t> a = tbatch::testing::random_tensor<std::int32_t>({n0, n1, n2}, rng);
    std::vector<index_t> i0(p), i2(p), i1(p);
    for (index_t k = 0; k < p; ++k) {
      i0[k] = index_t(rng() % (2 * n0)) - n0;
      i1[k] = rng() % n1;
      i2[k] = rng() % n2;
    }
    const Tensor<std::int32_t> apart = a.index({positions(i0), Slice{}, positions(i2)});
    REQUIRE(apart.shape() == Shape{p, n1});
    for (index_t k = 0; k < p; ++k)
      for (index_t j = 0; j < n1; ++j)
        CHECK(apart(k, j) == a(i0[k] < 0 ? i0[k] + n0 : i0[k], j, i2[k]));
    const Tensor<std::int32_t> together =
        a.transpose(0, 2).index({Slice{}, positions(i1), positions(i0)});
    REQUIRE(together.shape() == Shape{n2, p});
    for (index_t i = 0; i < n2; ++i)
      for (index_t k = 0; k < p; ++k)
        CHECK(together(i, k) == a(i0[k] < 0 ? i0[k] + n0 : i0[k], i1[k], i));
  }
}

TEST_CASE("indexing rejects bad indices with clear messages", "[indexing][errors]") {
  Tensor<float> a(Shape{2, 3});
  TBATCH_CHECK_THROWS_WITH(a.index({0, 0, 0}), IndexError, "too many indices: 3 dims indexed");
  TBATCH_CHECK_THROWS_WITH(a.index({Ellipsis, Ellipsis}), IndexError, "single ellipsis");
  TBATCH_CHECK_THROWS_WITH(a.index({2}), IndexError, "index: index 2 is out of range for dim 0");
  TBATCH_CHECK_THROWS_WITH(a.index({Slice{}, positions({0, 3})}), IndexError,
                           "index 3 is out of bounds for dim 1 with size 3");
  TBATCH_CHECK_THROWS_WITH(a.index({positions({0, 1}), positions({0, 1, 2})}), ShapeError,
                           "cannot be broadcast");
  TBATCH_CHECK_THROWS_WITH(a.index({Slice{0, 1, 0}}), ValueError, "step 0");
  TBATCH_CHECK_THROWS_WITH(a.index_fill({positions({-3})}, 1.0f), IndexError,
                           "index_fill: index -3 is out of bounds");
}
