#include <algorithm>
#include <limits>
#include <random>
#include <sstream>

#include "test_support.hpp"

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::iota;
using tbatch::testing::random_shape;
using tbatch::testing::value_of;

namespace {

// Python's slice semantics, written as a membership test over every index of the dim.
std::vector<index_t> python_slice(index_t size, std::optional<index_t> start,
                                  std::optional<index_t> stop, index_t step) {
  auto norm = [&](index_t v) { return v < 0 ? v + size : v; };
  std::vector<index_t> out;
  if (step > 0) {
    const index_t lo = start ? std::clamp<index_t>(norm(*start), 0, size) : 0;
    const index_t hi = stop ? std::clamp<index_t>(norm(*stop), 0, size) : size;
    for (index_t i = 0; i < size; ++i)
      if (i >= lo && i < hi && (i - lo) % step == 0) out.push_back(i);
  } else {
    const index_t hi = start ? std::clamp<index_t>(norm(*start), -1, size - 1) : size - 1;
    const index_t lo = stop ? std::clamp<index_t>(norm(*stop), -1, size - 1) : -1;
    for (index_t i = size - 1; i >= 0; --i)
      if (i <= hi && i > lo && (hi - i) % (-step) == 0) out.push_back(i);
  }
  return out;
}
}  // namespace

TEMPLATE_TEST_CASE("slice, select and narrow are views with the expected layout", "[layout]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> t = iota<T>({4, 6});
  Tensor<T> s = t.slice(1, 1, 5, 2);
  CHECK(s.shape() == Shape{4, 2});
  CHECK(s.strides() == Strides{6, 2});
  CHECK(s.offset() == 1);
  CHECK(s.shares_storage_with(t));
  CHECK(s(3, 1) == value_of<T>(21));

  Tensor<T> reversed = t.slice(0, std::nullopt, std::nullopt, -1);
  CHECK(reversed.strides() == Strides{-6, 1});
  CHECK(reversed(0, 0) == value_of<T>(18));
  CHECK(reversed.contiguous()(3, 5) == value_of<T>(5));

  CHECK(t.slice(0, -2, std::nullopt).shape() == Shape{2, 6});
  CHECK(t.slice(0, 10, 20).shape() == Shape{0, 6});
  CHECK(t.slice(1, 5, 1, -2).to_vector().size() == 8);

  Tensor<T> row = t.select(0, -1);
  CHECK(row.shape() == Shape{6});
  CHECK(row(0) == value_of<T>(18));
  Tensor<T> n = t.narrow(1, 2, 3);
  CHECK(n.shape() == Shape{4, 3});
  CHECK(n(1, 0) == value_of<T>(8));
  n.at({0, 0}) = value_of<T>(1);
  CHECK(t(0, 2) == value_of<T>(1));
}

TEST_CASE("slice matches Python's slice rules on random bounds and steps", "[layout]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<index_t> bound(-9, 9), step_dist(-3, 3);
  std::bernoulli_distribution missing(0.25);
  for (int trial = 0; trial < 500; ++trial) {
    const Shape shape = random_shape(rng, 3, 0, 6);
    const Tensor<std::int32_t> t = iota<std::int32_t>(shape, 1 << 20);
    const index_t dim = trial % 3;
    std::optional<index_t> start, stop;
    if (!missing(rng)) start = bound(rng);
    if (!missing(rng)) stop = bound(rng);
    index_t step = step_dist(rng);
    if (step == 0) step = 1;
    const Tensor<std::int32_t> s = t.slice(dim, start, stop, step);
    const auto picked = python_slice(shape[dim], start, stop, step);
    REQUIRE(s.size(dim) == static_cast<index_t>(picked.size()));
    for_each_index(s.shape(), [&](const std::vector<index_t>& idx) {
      std::vector<index_t> source = idx;
      source[dim] = picked[idx[dim]];
      CHECK(element_at(s, idx) == element_at(t, source));
    });
  }
}

TEMPLATE_TEST_CASE("permute, transpose, unsqueeze, squeeze and expand", "[layout]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> t = iota<T>({2, 3, 4});
  Tensor<T> p = t.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Strides{1, 12, 4});
  CHECK(p(3, 1, 2) == t(1, 2, 3));
  CHECK(t.permute({-1, -3, -2}).strides() == p.strides());
  CHECK(t.transpose(0, -1).shape() == Shape{4, 3, 2});

  Tensor<T> u = t.unsqueeze(1);
  CHECK(u.shape() == Shape{2, 1, 3, 4});
  CHECK(u.unsqueeze(-1).shape() == Shape{2, 1, 3, 4, 1});
  CHECK(u.squeeze().shape() == Shape{2, 3, 4});
  CHECK(u.squeeze(1).shape() == Shape{2, 3, 4});
  CHECK(u.squeeze(0).shape() == Shape{2, 1, 3, 4});

  Tensor<T> col = iota<T>({3, 1});
  Tensor<T> e = col.expand({2, 3, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Strides{0, 1, 0});
  CHECK(e(1, 2, 3) == value_of<T>(2));
  CHECK(col.expand({-1, 5}).shape() == Shape{3, 5});
  CHECK(e.shares_storage_with(col));
}

TEMPLATE_TEST_CASE("view_as, reshape, flatten and unflatten", "[layout]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> t = iota<T>({2, 3, 4});
  Tensor<T> v = t.view_as({6, -1});
  CHECK(v.shape() == Shape{6, 4});
  CHECK(v.shares_storage_with(t));
  CHECK(v(5, 3) == value_of<T>(23));

  // A transposed tensor can be split but not merged without a copy.
  Tensor<T> tr = t.transpose(1, 2);  // (2, 4, 3)
  CHECK(tr.view_as({2, 2, 2, 3}).strides() == Strides{12, 2, 1, 4});
  CHECK_THROWS_AS(tr.view_as({2, 12}), ShapeError);
  Tensor<T> copied = tr.reshape({2, 12});
  CHECK(!copied.shares_storage_with(t));
  CHECK(copied(1, 1) == value_of<T>(16));
  CHECK(t.reshape({24}).shares_storage_with(t));

  // Merging dims that are contiguous together is a view even when others are not.
  Tensor<T> sliced = iota<T>({4, 3, 4}).slice(0, 0, 4, 2);  // (2, 3, 4), strides (24, 4, 1)
  Tensor<T> merged = sliced.flatten(1);
  CHECK(merged.shape() == Shape{2, 12});
  CHECK(merged.strides() == Strides{24, 1});
  CHECK(sliced.flatten().shape() == Shape{24});
  CHECK(!sliced.flatten().shares_storage_with(sliced));

  Tensor<T> un = t.unflatten(2, {2, -1});
  CHECK(un.shape() == Shape{2, 3, 2, 2});
  CHECK(un.strides() == Strides{12, 4, 2, 1});
  CHECK(tr.unflatten(1, {2, 2}).strides() == Strides{12, 2, 1, 4});
  Tensor<T> scalar(Shape{}, value_of<T>(1));
  CHECK(scalar.reshape({1, 1}).shape() == Shape{1, 1});
  CHECK(Tensor<T>(Shape{0, 3}).view_as({3, 0, 5}).shape() == Shape{3, 0, 5});
  CHECK_THROWS_AS(Tensor<T>(Shape{0, 3}).view_as({3, 0, -1}), ShapeError);  // ambiguous, as torch
}

TEST_CASE("reshape equals a row-major refill on random shapes and strides", "[layout]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const Tensor<std::int32_t> base = iota<std::int32_t>(random_shape(rng, 3, 1, 5), 1 << 20);
    std::vector<index_t> order{0, 1, 2};
    std::shuffle(order.begin(), order.end(), rng);
    const Tensor<std::int32_t> t = base.permute(order);
    std::vector<std::int32_t> expected;
    for_each_index(t.shape(), [&](const auto& idx) { expected.push_back(element_at(t, idx)); });
    const Tensor<std::int32_t> r = t.reshape({-1, t.size(2)});
    CHECK(r.to_vector() == expected);
    CHECK(t.flatten().to_vector() == expected);
  }
}

TEMPLATE_TEST_CASE("split, chunk and unbind", "[layout]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  Tensor<T> t = iota<T>({5, 2});
  auto pieces = t.split(2);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[2].shape() == Shape{1, 2});
  CHECK(pieces[1](0, 1) == value_of<T>(5));
  auto sized = t.split({1, 4});
  CHECK(sized[1].shape() == Shape{4, 2});
  CHECK(sized[1].shares_storage_with(t));
  auto chunks = t.chunk(2);
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0].size(0) == 3);
  CHECK(chunks[1].size(0) == 2);
  CHECK(Tensor<T>(Shape{6}).chunk(4).size() == 3);  // as torch: ceil(6/4) = 2 per chunk
  auto rows = t.unbind(1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].shape() == Shape{5});
  CHECK(rows[1](4) == value_of<T>(9));
}

TEST_CASE("layout functions reject bad arguments with clear messages", "[layout][errors]") {
  Tensor<float> t(Shape{2, 3});
  TBATCH_CHECK_THROWS_WITH(
      t.slice(2, 0, 1), IndexError,
      "slice: dim 2 is out of range for a tensor of rank 2 (expected -2 to 1)");
  TBATCH_CHECK_THROWS_WITH(t.slice(0, 0, 1, 0), ValueError, "step 0");
  TBATCH_CHECK_THROWS_WITH(t.select(1, 3), IndexError,
                           "select: index 3 is out of range for dim 1 of size 3");
  TBATCH_CHECK_THROWS_WITH(t.narrow(1, 1, 3), IndexError, "length 3 from start 1 exceeds dim 1");
  TBATCH_CHECK_THROWS_WITH(t.permute({0}), ShapeError, "got 1 dims for a tensor of rank 2");
  TBATCH_CHECK_THROWS_WITH(t.permute({1, 1}), ValueError, "dim 1 appears more than once");
  TBATCH_CHECK_THROWS_WITH(t.unsqueeze(4), IndexError, "unsqueeze: dim 4 is out of range");
  TBATCH_CHECK_THROWS_WITH(t.expand({4, 3}), ShapeError,
                           "size 4 at dim 0 does not match the existing size 2");
  TBATCH_CHECK_THROWS_WITH(t.expand({3}), ShapeError, "must be at least the tensor's rank");
  TBATCH_CHECK_THROWS_WITH(t.reshape({4, -1}), ShapeError, "shape [4, -1] is invalid for 6");
  TBATCH_CHECK_THROWS_WITH(t.reshape({-1, -1}), ShapeError, "only one size may be -1");
  TBATCH_CHECK_THROWS_WITH(t.view_as({5}), ShapeError, "shape [5] is invalid for 6 elements");
  TBATCH_CHECK_THROWS_WITH(t.reshape({-2, 3}), ShapeError, "size -2 at dim 0 is invalid");
  TBATCH_CHECK_THROWS_WITH(t.flatten(1, 0), IndexError, "start dim 1 comes after end dim 0");
  TBATCH_CHECK_THROWS_WITH(t.unflatten(1, {2, 2}), ShapeError, "is invalid for 3 elements");
  TBATCH_CHECK_THROWS_WITH(t.split({1, 2}, 0), ValueError, "split sizes sum to 3 but dim 0");
  TBATCH_CHECK_THROWS_WITH(t.split(0), ValueError, "split size 0 must be positive");
  TBATCH_CHECK_THROWS_WITH(t.chunk(0), ValueError, "chunks 0 must be positive");
  TBATCH_CHECK_THROWS_WITH(Tensor<float>(Shape{}).unbind(0), IndexError, "rank 0");
}

TEST_CASE("Shape::numel: the nonzero sizes' product must fit, whatever the dim order",
          "[layout][errors]") {
  const index_t big = index_t(1) << 62, fits = index_t(1) << 31;
  for (const Shape& shape : {Shape{big, big, 0}, Shape{0, big, big}, Shape{big, 0, big}}) {
    std::ostringstream expected;
    expected << "Shape::numel: shape " << shape
             << " is too large: the product of its nonzero sizes overflows a 64-bit index";
    REQUIRE_THROWS_MATCHES(shape.numel(), ShapeError, Catch::Matchers::Message(expected.str()));
  }
  for (const Shape& shape : {Shape{fits, fits, 0}, Shape{0, fits, fits}, Shape{fits, 0, fits}})
    REQUIRE(shape.numel() == 0);
  REQUIRE(Shape{fits, fits}.numel() == fits * fits);
  REQUIRE(Shape{}.numel() == 1);
}

TEST_CASE("layout::extent: the span must fit in 64 bits", "[layout][errors]") {
  constexpr index_t max = std::numeric_limits<index_t>::max();
  constexpr index_t min = std::numeric_limits<index_t>::min();
  // highest - lowest + 1 == max: the largest span there is.
  const layout::Extent e = layout::extent(Layout{Shape{2}, Strides{max - 1}, 0}, "f");
  REQUIRE((e.lowest == 0 && e.highest == max - 1));
  const layout::Extent back = layout::extent(Layout{Shape{2}, Strides{-(max - 1)}, 0}, "f");
  REQUIRE((back.lowest == -(max - 1) && back.highest == 0));
  for (const Layout& l :
       {Layout{Shape{2}, Strides{max}, 0}, Layout{Shape{2}, Strides{min}, 0},
        Layout{Shape{2}, Strides{-max}, 0}, Layout{Shape{2}, Strides{1}, max},
        Layout{Shape{3}, Strides{max / 2 + 1}, 0}, Layout{Shape{2, 2}, Strides{max, min}, 0}}) {
    std::ostringstream expected;
    expected << "f: shape " << l.shape << " with strides " << l.strides << " and offset "
             << l.offset << " spans more elements than a 64-bit index holds";
    REQUIRE_THROWS_MATCHES(layout::extent(l, "f"), ShapeError,
                           Catch::Matchers::Message(expected.str()));
  }
}
