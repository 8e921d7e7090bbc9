// Tests of ops/scatter.hpp: the reference's Paddle scatter examples, Paddle's scatter_nd_add
// examples, torch-made golden cases for scatter_reduce and index_add (tests/golden/scatter/),
// randomised comparisons over every dtype against plain loops written here, the in-place
// variants, the ragged-aware scatter on padded / packed / exact batches, and every error path.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "test_support.hpp"

#ifndef TBATCH_SCATTER_GOLDEN_DIR
#error "TBATCH_SCATTER_GOLDEN_DIR must name tests/golden/scatter"
#endif

using namespace tbatch;
using tbatch::testing::element_at;
using tbatch::testing::element_ref;
using tbatch::testing::for_each_index;
using tbatch::testing::value_of;

namespace {

// ---- golden records (format documented in tests/golden/make_scatter_golden.py) -------------

struct GoldenCase {
  std::string name;
  std::map<std::string, std::vector<std::string>> fields;

  const std::vector<std::string>& field(const std::string& key) const {
    const auto it = fields.find(key);
    if (it == fields.end()) FAIL("golden case " << name << " has no field " << key);
    return it->second;
  }
  index_t scalar(const std::string& key) const { return std::stoll(field(key).at(0)); }
  std::string word(const std::string& key) const { return field(key).at(0); }
  template <class T>
  Tensor<T> tensor(const std::string& key) const {
    Shape shape;
    for (const auto& s : field(key + "_shape"))
      shape.push_back(std::stoll(s));
    std::vector<T> values;
    for (const auto& s : fields.count(key) ? field(key) : std::vector<std::string>{})
      values.push_back(std::is_floating_point_v<T> ? static_cast<T>(std::stod(s))
                                                   : static_cast<T>(std::stoll(s)));
    return Tensor<T>(shape, values);
  }
};

std::vector<GoldenCase> read_golden(const std::string& file) {
  std::ifstream in(std::string(TBATCH_SCATTER_GOLDEN_DIR) + "/" + file);
  REQUIRE(in.good());
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#') continue;
    if (key == "case") {
      cases.emplace_back();
      words >> cases.back().name;
      continue;
    }
    if (key == "end") continue;
    auto& values = cases.back().fields[key];
    for (std::string w; words >> w;)
      values.push_back(w);
  }
  return cases;
}

Reduce reduce_named(const std::string& name) {
  for (Reduce r : {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax, Reduce::amin})
    if (reduce_name(r) == name) return r;
  FAIL("unknown reduce " << name);
  return Reduce::sum;
}

// ---- the tests' own plain loops ----------------------------------------------------------

/// Values in a small range: -5..5 for signed types, 0..10 otherwise (exact in every type).
template <class T>
Tensor<T> small_values(const Shape& shape, std::mt19937& rng, int lo = -5, int hi = 5) {
  if (!std::is_signed_v<T> && !std::is_floating_point_v<T> && !std::is_same_v<T, Eigen::half> &&
      !std::is_same_v<T, Eigen::bfloat16>) {
    hi -= lo;
    lo = 0;
  }
  std::uniform_int_distribution<int> dist(lo, hi);
  Tensor<T> out(shape);
  for (index_t i = 0, n = out.numel(); i < n; ++i)
    out.data()[i] = value_of<T>(dist(rng));
  return out;
}

Tensor<index_t> random_indices(const Shape& shape, index_t size, std::mt19937& rng) {
  std::uniform_int_distribution<index_t> dist(0, size - 1);
  Tensor<index_t> out(shape);
  for (index_t i = 0, n = out.numel(); i < n; ++i)
    out.data()[i] = dist(rng);
  return out;
}

/// a op b in T, written independently of the library: integers through int64 then wrapped to T,
/// half / bfloat16 through float.
template <class T>
T ref_combine(Reduce reduce, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
    switch (reduce) {
      case Reduce::prod:
        return static_cast<T>(x * y);
      case Reduce::amax:
        return static_cast<T>(std::max(x, y));
      case Reduce::amin:
        return static_cast<T>(std::min(x, y));
      default:
        return static_cast<T>(x + y);
    }
  } else {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const F x = static_cast<F>(a), y = static_cast<F>(b);
    switch (reduce) {
      case Reduce::prod:
        return static_cast<T>(x * y);
      case Reduce::amax:
        return y > x ? b : a;
      case Reduce::amin:
        return y < x ? b : a;
      default:
        return static_cast<T>(x + y);
    }
  }
}

template <class T>
T ref_mean(T sum, index_t count) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::int64_t>(
        std::floor(static_cast<double>(sum) / static_cast<double>(count))));
  else if constexpr (std::is_same_v<T, double>)
    return sum / static_cast<double>(count);
  else
    return static_cast<T>(static_cast<float>(sum) / static_cast<float>(count));
}

/// torch.scatter_reduce by its definition: every slot's hits, in index order, then reduced.
template <class T>
Tensor<T> reference_scatter_reduce(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                                   const Tensor<T>& src, Reduce reduce, bool include_self) {
  Tensor<T> out = self.clone();
  const index_t d = dim < 0 ? dim + self.dim() : dim;
  std::map<std::vector<index_t>, std::vector<T>> hits;
  for_each_index(index.shape(), [&](const std::vector<index_t>& p) {
    std::vector<index_t> slot = p;
    slot[d] = element_at(index, p);
    hits[slot].push_back(element_at(src, p));
  });
  for (auto& [slot, values] : hits) {
    T& target = element_ref(out, slot);
    std::vector<T> all;
    if (include_self) all.push_back(target);
    all.insert(all.end(), values.begin(), values.end());
    T acc = all[0];
    for (std::size_t i = 1; i < all.size(); ++i)
      acc = ref_combine(reduce, acc, all[i]);
    if (reduce == Reduce::mean) acc = ref_mean(acc, static_cast<index_t>(all.size()));
    target = acc;
  }
  return out;
}

/// Reduce::mean by plain loops: every slot's sum and count over its hits in index order (self's
/// value first when include_self), then the division; slots never hit keep self. Sums and
/// counts sit in arrays of self's size, so large shapes stay fast.
template <class T>
Tensor<T> reference_scatter_mean(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                                 const Tensor<T>& src, bool include_self) {
  Tensor<T> out = self.clone();
  REQUIRE(out.is_contiguous());
  const index_t d = dim < 0 ? dim + self.dim() : dim;
  std::vector<T> sums(static_cast<std::size_t>(out.numel()), T(0));
  std::vector<index_t> counts(sums.size(), 0);
  std::vector<index_t> slot;
  for_each_index(index.shape(), [&](const std::vector<index_t>& p) {
    slot = p;
    slot[static_cast<std::size_t>(d)] = element_at(index, p);
    const auto at = static_cast<std::size_t>(tbatch::testing::element_offset(out, slot));
    if (counts[at] == 0 && include_self) {
      sums[at] = element_at(self, slot);
      counts[at] = 1;
    }
    sums[at] = ref_combine(Reduce::sum, sums[at], element_at(src, p));
    ++counts[at];
  });
  for (std::size_t at = 0; at < sums.size(); ++at)
    if (counts[at] > 0) out.data()[at] = ref_mean(sums[at], counts[at]);
  return out;
}

/// Paddle's scatter by the reference's pseudo code.
template <class T>
Tensor<T> reference_scatter(const Tensor<T>& x, const std::vector<index_t>& index,
                            const Tensor<T>& updates, bool overwrite) {
  Tensor<T> out = x.clone();
  const index_t row = x.numel() / std::max<index_t>(x.size(0), 1);
  const Tensor<T> u = updates.contiguous();
  if (!overwrite)
    for (index_t i : index)
      for (index_t c = 0; c < row; ++c)
        out.data()[i * row + c] = T(0);
  for (std::size_t k = 0; k < index.size(); ++k)
    for (index_t c = 0; c < row; ++c) {
      T& target = out.data()[index[k] * row + c];
      const T value = u.data()[static_cast<index_t>(k) * row + c];
      if constexpr (std::is_same_v<T, bool>)
        target = value;
      else
        target = overwrite ? value : ref_combine(Reduce::sum, target, value);
    }
  return out;
}

/// A non-contiguous tensor with the values of `t` (rank >= 2): its memory has dims 0 and 1
/// swapped.
template <class T>
Tensor<T> transposed_copy(const Tensor<T>& t) {
  std::vector<index_t> order;
  for (index_t d = 0; d < t.dim(); ++d)
    order.push_back(d);
  std::swap(order[0], order[1]);
  Tensor<T> view = Tensor<T>::empty(t.permute(order).shape()).permute(order);
  copy(t.view(), view.view());
  return view;
}

/// Random index and src shapes for scatter_reduce into `self_shape` along `d`: along d the index
/// has 1 to `longest` entries (longer or shorter than self); elsewhere it may stop short of self's
/// size, whose slots beyond it are never hit. src is the index's shape, one larger at random dims.
std::pair<Shape, Shape> random_scatter_shapes(std::mt19937& rng, const Shape& self_shape, index_t d,
                                              index_t longest) {
  Shape index_shape, src_shape;
  for (index_t k = 0; k < static_cast<index_t>(self_shape.size()); ++k) {
    const index_t size = k == d ? 1 + static_cast<index_t>(rng() % std::uint64_t(longest))
                                : 1 + static_cast<index_t>(rng() % std::uint64_t(self_shape[k]));
    index_shape.push_back(size);
    src_shape.push_back(size + static_cast<index_t>(rng() % 2));
  }
  return {index_shape, src_shape};
}

}  // namespace

// ---- Paddle scatter ---------------------------------------------------------------------

TEMPLATE_TEST_CASE("scatter: the reference's example", "[scatter][golden]",
                   TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  const Tensor<T> x(Shape{3, 2}, std::vector<T>{T(1), T(1), T(2), T(2), T(3), T(3)});
  const Tensor<index_t> index(Shape{4}, {2, 1, 0, 1});
  const Tensor<T> updates(Shape{4, 2},
                          std::vector<T>{T(1), T(1), T(2), T(2), T(3), T(3), T(4), T(4)});
  CHECK(equal(scatter(x, index, updates, false),
              Tensor<T>(Shape{3, 2}, std::vector<T>{T(3), T(3), T(6), T(6), T(1), T(1)})));
  CHECK(equal(scatter(x, index, updates, true),
              Tensor<T>(Shape{3, 2}, std::vector<T>{T(3), T(3), T(4), T(4), T(1), T(1)})));
  CHECK(equal(scatter(x, index, updates), scatter(x, index, updates, true)));
  // x is not modified by the out-of-place form.
  CHECK(equal(x, Tensor<T>(Shape{3, 2}, std::vector<T>{T(1), T(1), T(2), T(2), T(3), T(3)})));
}

TEMPLATE_TEST_CASE("scatter: the reference's second example", "[scatter][golden]", float, double,
                   Eigen::half, Eigen::bfloat16, std::int16_t, std::int32_t, std::int64_t,
                   std::uint16_t, std::uint32_t) {
  using T = TestType;
  auto make = [](Shape shape, std::vector<int> v) {
    std::vector<T> values;
    for (int e : v)
      values.push_back(value_of<T>(e));
    return Tensor<T>(shape, values);
  };
  const Tensor<T> x = make(Shape{3, 2}, {100, 200, 300, 400, 500, 600});
  const Tensor<index_t> index(Shape{4}, {2, 1, 0, 1});
  const Tensor<T> updates = make(Shape{4, 2}, {10, 11, 21, 22, 33, 34, 40, 41});
  CHECK(equal(scatter(x, index, updates, false), make(Shape{3, 2}, {33, 34, 61, 63, 10, 11})));
  CHECK(equal(scatter(x, index, updates, true), make(Shape{3, 2}, {33, 34, 40, 41, 10, 11})));
}

TEST_CASE("scatter: index forms, unreferenced rows, last write wins", "[scatter]") {
  const Tensor<float> x(Shape{4, 3}, 7.f);
  SECTION("a 0-d index scatters one row of shape x.shape[1:]") {
    const Tensor<float> out =
        scatter(x, Tensor<index_t>(Shape{}, 2), Tensor<float>(Shape{3}, {1.f, 2.f, 3.f}));
    CHECK(equal(out, Tensor<float>(Shape{4, 3}, {7, 7, 7, 7, 7, 7, 1, 2, 3, 7, 7, 7})));
  }
  SECTION("an [N, 1] index works like a 1-d one") {
    const Tensor<index_t> column(Shape{3, 1}, {3, 0, 3});
    const Tensor<float> updates(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 8, 9, 10});
    CHECK(equal(scatter(x, column, updates),
                Tensor<float>(Shape{4, 3}, {4, 5, 6, 7, 7, 7, 7, 7, 7, 8, 9, 10})));
    CHECK(equal(scatter(x, column, updates, false),
                Tensor<float>(Shape{4, 3}, {4, 5, 6, 7, 7, 7, 7, 7, 7, 9, 11, 13})));
  }
  SECTION("an empty index leaves x unchanged") {
    CHECK(equal(scatter(x, Tensor<index_t>(Shape{0}), Tensor<float>(Shape{0, 3})), x));
    CHECK(equal(scatter(x, Tensor<index_t>(Shape{0}), Tensor<float>(Shape{0, 3}), false), x));
  }
  SECTION("1-d x scatters scalars") {
    const Tensor<int> v(Shape{5}, {1, 2, 3, 4, 5});
    CHECK(
        equal(scatter(v, Tensor<index_t>(Shape{3}, {4, 0, 4}), Tensor<int>(Shape{3}, {10, 20, 30})),
              Tensor<int>(Shape{5}, {20, 2, 3, 4, 30})));
    CHECK(equal(scatter(v, Tensor<index_t>(Shape{3}, {4, 0, 4}),
                        Tensor<int>(Shape{3}, {10, 20, 30}), false),
                Tensor<int>(Shape{5}, {20, 2, 3, 4, 40})));
  }
  SECTION("bool tensors scatter with overwrite") {
    const Tensor<bool> b(Shape{3, 2}, false);
    CHECK(equal(scatter(b, Tensor<index_t>(Shape{2}, {1, 1}),
                        Tensor<bool>(Shape{2, 2}, {true, false, false, true})),
                Tensor<bool>(Shape{3, 2}, {false, false, false, true, false, false})));
  }
}

TEMPLATE_TEST_CASE("scatter: randomised against the reference loop", "[scatter][random]",
                   TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 25; ++trial) {
    const index_t rows = 1 + trial % 6, n = trial % 9;
    Shape x_shape{rows};
    const index_t rank = 1 + trial % 3;
    for (index_t d = 1; d < rank; ++d)
      x_shape.push_back(1 + (trial + d) % 4);
    const Tensor<T> x = small_values<T>(x_shape, rng);
    const Tensor<index_t> index = random_indices(Shape{n}, rows, rng);
    Shape u_shape = x_shape;
    u_shape.set(0, n);
    Tensor<T> updates = small_values<T>(u_shape, rng);
    if (rank >= 2 && trial % 2 == 0) updates = transposed_copy(updates);
    const std::vector<index_t> idx = index.to_vector();
    INFO("trial " << trial << " x " << x_shape << " n " << n);
    CHECK(equal(scatter(x, index, updates, true), reference_scatter(x, idx, updates, true)));
    if constexpr (!std::is_same_v<T, bool>)
      CHECK(equal(scatter(x, index, updates, false), reference_scatter(x, idx, updates, false)));
  }
}

TEMPLATE_TEST_CASE("scatter: wide rows and repeated targets take the chunked row kernels",
                   "[scatter][random]", TBATCH_ALL_DTYPES) {
  // Rows of 70 elements hold whole 64-byte chunks and a tail for every dtype; consecutive
  // repeated indices are combined through one accumulator.
  using T = TestType;
  std::mt19937 rng(17);
  const Tensor<T> x = small_values<T>(Shape{5, 70}, rng);
  const std::vector<index_t> targets{3, 3, 3, 0, 1, 1, 4, 3, 2, 2};
  const Tensor<index_t> index(Shape{10}, targets);
  const Tensor<T> updates = small_values<T>(Shape{10, 70}, rng);
  CHECK(equal(scatter(x, index, updates), reference_scatter(x, targets, updates, true)));
  if constexpr (!std::is_same_v<T, bool>) {
    CHECK(equal(scatter(x, index, updates, false), reference_scatter(x, targets, updates, false)));
    Tensor<T> expected = x.clone();
    for (index_t k = 0; k < 10; ++k)
      for (index_t j = 0; j < 70; ++j)
        expected(targets[k], j) = ref_combine(Reduce::sum, expected(targets[k], j), updates(k, j));
    CHECK(equal(index_add(x, 0, index, updates), expected));
    // scatter_reduce with the index broadcast along each row takes the same row kernel.
    const Tensor<index_t> rows = index.unsqueeze(1).expand({10, 70});
    for (Reduce reduce : {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax, Reduce::amin})
      for (bool include_self : {true, false}) {
        INFO(reduce << " include_self " << include_self);
        const int hi = reduce == Reduce::prod ? 2 : 5;
        const Tensor<T> self = small_values<T>(Shape{5, 70}, rng, -hi, hi);
        const Tensor<T> src = small_values<T>(Shape{10, 70}, rng, -hi, hi);
        CHECK(
            equal(scatter_reduce(self, 0, rows, src, reduce, include_self),
                  reference_scatter_reduce(self, 0, rows.contiguous(), src, reduce, include_self)));
      }
  }
}

TEMPLATE_TEST_CASE("scatter_reduce amax and amin propagate every NaN of the 16-bit floats",
                   "[scatter]", Eigen::half, Eigen::bfloat16) {
  // All 65536 bit patterns, each reduced with a 0 of self: NaN exactly where Eigen's own test
  // says so (quiet and signalling NaNs of either sign; infinities are not NaN).
  using T = TestType;
  Tensor<T> src = Tensor<T>::empty(Shape{65536});
  for (std::uint32_t bits = 0; bits < 65536; ++bits)
    src.data()[bits] = Eigen::numext::bit_cast<T>(static_cast<std::uint16_t>(bits));
  const Tensor<index_t> index = arange<index_t>(65536);
  const Tensor<T> self(Shape{65536}, T(0.f));
  index_t nans = 0;
  for (index_t i = 0; i < 65536; ++i)
    nans += Eigen::numext::isnan(src.data()[i]);
  CHECK(nans == (std::is_same_v<T, Eigen::half> ? 2046 : 254));
  for (Reduce reduce : {Reduce::amax, Reduce::amin}) {
    INFO(reduce);
    const Tensor<T> out = scatter_reduce(self, 0, index, src, reduce, true);
    index_t mismatches = 0;  // NaN where src is NaN, else max(0, src) or min(0, src)
    for (index_t i = 0; i < 65536; ++i) {
      const float x = static_cast<float>(src.data()[i]), got = static_cast<float>(out.data()[i]);
      const float expected = reduce == Reduce::amax ? std::max(0.f, x) : std::min(0.f, x);
      mismatches += std::isnan(x) ? !std::isnan(got) : got != expected;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("scatter_: writes in place, into views, and stages aliased inputs",
          "[scatter][inplace]") {
  SECTION("returns the same tensor and touches only referenced rows of a view") {
    Tensor<float> big(Shape{6, 4}, 1.f);
    Tensor<float> middle = big.slice(1, 1, 3);  // 6 x 2 view with row stride 4
    const Tensor<index_t> index(Shape{3}, {5, 0, 5});
    const Tensor<float> updates(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
    Tensor<float>& result = scatter_(middle, index, updates, false);
    CHECK(&result == &middle);
    CHECK(middle.shares_storage_with(big));
    CHECK(equal(big, Tensor<float>(Shape{6, 4}, {1, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                                 1, 1, 1, 1, 1, 1, 1, 1, 1, 6, 8, 1})));
  }
  SECTION("updates that alias x are read before x is written") {
    Tensor<int> x(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
    const Tensor<int> expected = scatter(x, Tensor<index_t>(Shape{3}, {1, 2, 0}), x.clone(), true);
    const Tensor<int> same_rows = x;  // shares x's buffer
    scatter_(x, Tensor<index_t>(Shape{3}, {1, 2, 0}), same_rows, true);
    CHECK(equal(x, expected));
    CHECK(equal(x, Tensor<int>(Shape{3, 2}, {5, 6, 1, 2, 3, 4})));
  }
  SECTION("an index that aliases an int64 x is read before x is written") {
    Tensor<index_t> x(Shape{3}, {2, 0, 1});
    const Tensor<index_t> index = x;  // the same buffer
    scatter_(x, index, Tensor<index_t>(Shape{3}, {7, 8, 9}));
    CHECK(equal(x, Tensor<index_t>(Shape{3}, {8, 9, 7})));
  }
  SECTION("a failed call leaves x unchanged") {
    Tensor<float> x(Shape{3, 2}, 1.f);
    CHECK_THROWS_AS(scatter_(x, Tensor<index_t>(Shape{2}, {0, 3}), Tensor<float>(Shape{2, 2}, 5.f)),
                    IndexError);
    CHECK(equal(x, Tensor<float>(Shape{3, 2}, 1.f)));
  }
}

TEST_CASE("scatter: errors", "[scatter][errors]") {
  const Tensor<float> x(Shape{3, 2}, 1.f);
  const Tensor<float> two(Shape{2, 2}, 1.f);
  TBATCH_CHECK_THROWS_WITH(
      scatter(Tensor<float>(Shape{}, 1.f), Tensor<index_t>(Shape{1}, 0), Tensor<float>(Shape{1})),
      ShapeError, "scatter: x must have rank >= 1, got shape []");
  TBATCH_CHECK_THROWS_WITH(scatter(x, Tensor<index_t>(Shape{1, 2}, {0, 1}), two), ShapeError,
                           "scatter: index must be 0-d, 1-d or of shape [N, 1], got shape [1, 2]");
  TBATCH_CHECK_THROWS_WITH(
      scatter(x, Tensor<index_t>(Shape{2}, {0, 1}), Tensor<float>(Shape{2, 3})), ShapeError,
      "scatter: updates has shape [2, 3] but index of shape [2] and x of shape [3, 2] need [2, 2]");
  TBATCH_CHECK_THROWS_WITH(scatter(x, Tensor<index_t>(Shape{}, 0), two), ShapeError, "need [2]");
  TBATCH_CHECK_THROWS_WITH(scatter(x, Tensor<index_t>(Shape{2}, {0, 3}), two), IndexError,
                           "scatter: index[1] = 3 is out of range for dim 0 of x with size 3 "
                           "(expected 0 to 2)");
  TBATCH_CHECK_THROWS_WITH(scatter(x, Tensor<index_t>(Shape{2, 1}, {-1, 0}), two), IndexError,
                           "scatter: index[0, 0] = -1 is out of range for dim 0 of x");
  TBATCH_CHECK_THROWS_WITH(scatter(x, Tensor<index_t>(Shape{}, 5), Tensor<float>(Shape{2})),
                           IndexError, "scatter: index = 5 is out of range");
  TBATCH_CHECK_THROWS_WITH(
      scatter(Tensor<float>(Shape{0, 2}), Tensor<index_t>(Shape{1}, 0), Tensor<float>(Shape{1, 2})),
      IndexError, "with size 0 (it is empty, so no index is valid)");
  TBATCH_CHECK_THROWS_WITH(scatter(Tensor<bool>(Shape{3, 2}), Tensor<index_t>(Shape{1}, 0),
                                   Tensor<bool>(Shape{1, 2}), false),
                           TypeError,
                           "scatter: overwrite=false (adding updates) is not defined "
                           "for bool tensors");
  Tensor<float> broadcast = Tensor<float>(Shape{1, 2}, 0.f).expand({3, 2});
  TBATCH_CHECK_THROWS_WITH(
      scatter_(broadcast, Tensor<index_t>(Shape{1}, 0), Tensor<float>(Shape{1, 2})), ValueError,
      "scatter_: x has shape [3, 2] and strides [0, 1], which put several of its elements at "
      "one address");
}

// ---- Paddle scatter_nd_add --------------------------------------------------------------

TEST_CASE("scatter_nd_add: Paddle's documented examples", "[scatter_nd_add][golden]") {
  // index [[1], [2], [3], [1]] into a vector: duplicates accumulate.
  CHECK(equal(scatter_nd_add(Tensor<int>(Shape{6}, {0, 1, 2, 3, 4, 5}),
                             Tensor<index_t>(Shape{4, 1}, {1, 2, 3, 1}),
                             Tensor<int>(Shape{4}, {9, 10, 11, 12})),
              Tensor<int>(Shape{6}, {0, 22, 12, 14, 4, 5})));
  // index [[], []] (Q = 0): every update slice is the whole of x.
  CHECK(equal(
      scatter_nd_add(Tensor<int>(Shape{2, 2}, {65, 17, -14, -25}), Tensor<index_t>(Shape{2, 0}),
                     Tensor<int>(Shape{2, 2, 2}, {-1, -2, 1, 2, 3, 4, -3, -4})),
      Tensor<int>(Shape{2, 2}, {67, 19, -16, -27})));
  // x [3, 5, 9, 10], index [[1, 1], [0, 1], [1, 3]]: updates of shape [3, 9, 10].
  std::mt19937 rng(5);
  const Tensor<float> x = small_values<float>(Shape{3, 5, 9, 10}, rng);
  const Tensor<float> updates = small_values<float>(Shape{3, 9, 10}, rng);
  const Tensor<float> out =
      scatter_nd_add(x, Tensor<index_t>(Shape{3, 2}, {1, 1, 0, 1, 1, 3}), updates);
  Tensor<float> expected = x.clone();
  const index_t at[3][2] = {{1, 1}, {0, 1}, {1, 3}};
  for (int k = 0; k < 3; ++k)
    for_each_index(Shape{9, 10}, [&](const std::vector<index_t>& p) {
      element_ref(expected, {at[k][0], at[k][1], p[0], p[1]}) +=
          element_at(updates, {k, p[0], p[1]});
    });
  CHECK(equal(out, expected));
}

TEMPLATE_TEST_CASE("scatter_nd_add: randomised against the reference loop",
                   "[scatter_nd_add][random]", TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  std::mt19937 rng(23);
  for (int trial = 0; trial < 20; ++trial) {
    const Shape x_shape{1 + trial % 4, 2 + trial % 3, 3};
    const index_t q = trial % 4;  // 0 .. rank
    const Shape lead = trial % 5 == 0 ? Shape{2, 3} : Shape{static_cast<index_t>(trial % 7)};
    Shape index_shape = lead;
    index_shape.push_back(q);
    Tensor<index_t> index(index_shape);
    for (index_t i = 0; i < index.numel(); ++i)
      index.data()[i] = std::uniform_int_distribution<index_t>(0, x_shape[i % q] - 1)(rng);
    Shape u_shape = lead;
    for (std::size_t d = q; d < x_shape.size(); ++d)
      u_shape.push_back(x_shape[d]);
    const Tensor<T> x = small_values<T>(x_shape, rng);
    const Tensor<T> updates = small_values<T>(u_shape, rng);

    // The loop: update slice k (updates seen as [K] + x.shape[q:]) adds into x[index[k]].
    Tensor<T> expected = x.clone();
    const index_t count = lead.numel();
    const Tensor<index_t> flat_index = index.reshape({count, q});
    const Shape rest(x_shape.begin() + q, x_shape.end());
    std::vector<index_t> flat_sizes{count};
    flat_sizes.insert(flat_sizes.end(), rest.begin(), rest.end());
    const Tensor<T> flat_updates = updates.reshape(flat_sizes);
    for (index_t k = 0; k < count; ++k)
      for_each_index(rest, [&](const std::vector<index_t>& p) {
        std::vector<index_t> target, source{k};
        for (index_t c = 0; c < q; ++c)
          target.push_back(flat_index.data()[k * q + c]);
        target.insert(target.end(), p.begin(), p.end());
        source.insert(source.end(), p.begin(), p.end());
        T& slot = element_ref(expected, target);
        slot = ref_combine(Reduce::sum, slot, element_at(flat_updates, source));
      });
    INFO("trial " << trial << " q " << q << " index " << index_shape);
    CHECK(equal(scatter_nd_add(x, index, updates), expected));
    Tensor<T> in_place = x.clone();
    CHECK(&scatter_nd_add_(in_place, index, updates) == &in_place);
    CHECK(equal(in_place, expected));
  }
}

TEST_CASE("scatter_nd_add: errors", "[scatter_nd_add][errors]") {
  const Tensor<float> x(Shape{3, 4}, 1.f);
  TBATCH_CHECK_THROWS_WITH(scatter_nd_add(x, Tensor<index_t>(Shape{}, 0), x), ShapeError,
                           "scatter_nd_add: index must have rank >= 1");
  TBATCH_CHECK_THROWS_WITH(scatter_nd_add(x, Tensor<index_t>(Shape{1, 3}), Tensor<float>(Shape{1})),
                           ShapeError, "scatter_nd_add: index.shape[-1] = 3 exceeds the rank 2");
  TBATCH_CHECK_THROWS_WITH(
      scatter_nd_add(x, Tensor<index_t>(Shape{2, 1}), Tensor<float>(Shape{2, 3})), ShapeError,
      "updates has shape [2, 3] but index of shape [2, 1] and x of shape [3, 4] need [2, 4] "
      "(index.shape[:-1] + x.shape[1:])");
  TBATCH_CHECK_THROWS_WITH(
      scatter_nd_add(x, Tensor<index_t>(Shape{2, 2}, {0, 1, 2, 4}), Tensor<float>(Shape{2})),
      IndexError,
      "scatter_nd_add: index[1, 1] = 4 is out of range for dim 1 of x with size 4 (expected 0 to "
      "3)");
  TBATCH_CHECK_THROWS_WITH(
      scatter_nd_add(x, Tensor<index_t>(Shape{2, 2}, {0, 9, -1, 0}), Tensor<float>(Shape{2})),
      IndexError, "index[0, 1] = 9");
  TBATCH_CHECK_THROWS_WITH(
      scatter_nd_add(Tensor<bool>(Shape{2}), Tensor<index_t>(Shape{1, 1}), Tensor<bool>(Shape{1})),
      TypeError, "scatter_nd_add: adding updates is not defined for bool");
}

// ---- torch scatter_reduce -------------------------------------------------------------------

template <class T>
void check_scatter_reduce_golden(const GoldenCase& c) {
  INFO("golden case " << c.name);
  const index_t dim = c.scalar("dim");
  const Reduce reduce = reduce_named(c.word("reduce"));
  const bool include_self = c.scalar("include_self") != 0;
  const Tensor<T> self = c.tensor<T>("self");
  const Tensor<index_t> index = c.tensor<index_t>("index");
  const Tensor<T> src = c.tensor<T>("src");
  const Tensor<T> expected = c.tensor<T>("out");
  CHECK(equal(scatter_reduce(self, dim, index, src, reduce, include_self), expected));
  Tensor<T> in_place = self.clone();
  scatter_reduce_(in_place, dim, index, src, reduce, include_self);
  CHECK(equal(in_place, expected));
}

TEST_CASE("scatter_reduce: torch golden cases", "[scatter_reduce][golden]") {
  const auto cases = read_golden("scatter_reduce.txt");
  REQUIRE(cases.size() >= 100);
  int float_cases = 0, int_cases = 0;
  for (const auto& c : cases) {
    if (c.word("dtype") == "float32") {
      check_scatter_reduce_golden<float>(c);
      ++float_cases;
    } else {
      REQUIRE(c.word("dtype") == "int64");
      check_scatter_reduce_golden<std::int64_t>(c);
      ++int_cases;
    }
  }
  CHECK(float_cases >= 50);
  CHECK(int_cases >= 50);
}

TEST_CASE("scatter_reduce: torch's documented examples", "[scatter_reduce][golden]") {
  const Tensor<float> src(Shape{6}, {1, 2, 3, 4, 5, 6});
  const Tensor<index_t> index(Shape{6}, {0, 1, 0, 1, 2, 1});
  const Tensor<float> input(Shape{4}, {1, 2, 3, 4});
  CHECK(equal(scatter_reduce(input, 0, index, src, Reduce::sum),
              Tensor<float>(Shape{4}, {5, 14, 8, 4})));
  CHECK(equal(scatter_reduce(input, 0, index, src, Reduce::sum, false),
              Tensor<float>(Shape{4}, {4, 12, 5, 4})));
  const Tensor<float> input2(Shape{4}, {5, 4, 3, 2});
  CHECK(equal(scatter_reduce(input2, 0, index, src, Reduce::amax),
              Tensor<float>(Shape{4}, {5, 6, 5, 2})));
  CHECK(equal(scatter_reduce(input2, 0, index, src, Reduce::amax, false),
              Tensor<float>(Shape{4}, {3, 6, 5, 2})));
}

TEST_CASE("scatter_reduce: integer mean floors, counts include self, sums wrap",
          "[scatter_reduce]") {
  const Tensor<std::int64_t> self(Shape{3}, {1, 2, 3});
  const Tensor<index_t> index(Shape{3}, {0, 0, 1});
  const Tensor<std::int64_t> src(Shape{3}, {-4, -4, -6});
  // (1 - 4 - 4) / 3 = -7/3 floors to -3; (2 - 6) / 2 = -2; slot 2 is never hit.
  CHECK(equal(scatter_reduce(self, 0, index, src, Reduce::mean),
              Tensor<std::int64_t>(Shape{3}, {-3, -2, 3})));
  CHECK(equal(scatter_reduce(self, 0, index, src, Reduce::mean, false),
              Tensor<std::int64_t>(Shape{3}, {-4, -6, 3})));
  // float mean counts self: (1 + 2 + 4) / 3.
  CHECK(equal(scatter_reduce(Tensor<float>(Shape{2}, {1, 5}), 0, Tensor<index_t>(Shape{2}, {0, 0}),
                             Tensor<float>(Shape{2}, {2, 4}), Reduce::mean),
              Tensor<float>(Shape{2}, {7.f / 3.f, 5})));
  // int8 sums and products wrap as in torch: 127 + 127 = -2.
  const Tensor<std::int8_t> small(Shape{2}, {127, 4});
  CHECK(equal(scatter_reduce(small, 0, Tensor<index_t>(Shape{1}, 0),
                             Tensor<std::int8_t>(Shape{1}, 127), Reduce::sum),
              Tensor<std::int8_t>(Shape{2}, {-2, 4})));
  CHECK(
      equal(scatter_reduce(Tensor<std::uint16_t>(Shape{1}, 65535), 0, Tensor<index_t>(Shape{1}, 0),
                           Tensor<std::uint16_t>(Shape{1}, 65535), Reduce::prod),
            Tensor<std::uint16_t>(Shape{1}, 1)));
}

TEMPLATE_TEST_CASE("scatter_reduce: NaN propagates through amax and amin", "[scatter_reduce]",
                   float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const Tensor<T> self(Shape{4}, std::vector<T>{T(1), T(2), nan, T(4)});
  const Tensor<index_t> index(Shape{4}, {0, 0, 1, 2});
  const Tensor<T> src(Shape{4}, std::vector<T>{nan, T(5), T(1), T(9)});
  for (Reduce reduce : {Reduce::amax, Reduce::amin})
    for (bool include_self : {true, false}) {
      INFO(reduce << " include_self " << include_self);
      const auto out = scatter_reduce(self, 0, index, src, reduce, include_self).to_vector();
      // Slot 0: a NaN among the hits wins, with or without self.
      CHECK(std::isnan(static_cast<float>(out[0])));
      // Slot 1: self 2 and hit 1.
      const float one_hit = include_self && reduce == Reduce::amax ? 2.f : 1.f;
      CHECK(static_cast<float>(out[1]) == one_hit);
      // Slot 2: self is NaN, so it wins only when it takes part.
      if (include_self)
        CHECK(std::isnan(static_cast<float>(out[2])));
      else
        CHECK(static_cast<float>(out[2]) == 9.f);
      // Slot 3 is never hit.
      CHECK(static_cast<float>(out[3]) == 4.f);
    }
}

TEMPLATE_TEST_CASE("scatter_reduce: randomised against the reference loop",
                   "[scatter_reduce][random]", TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  std::mt19937 rng(31);
  for (int trial = 0; trial < 12; ++trial) {
    const index_t rank = 1 + trial % 3;
    const Shape self_shape = tbatch::testing::random_shape(rng, rank, 1, 4);
    const index_t dim = static_cast<index_t>(rng() % rank) - (trial % 2 ? rank : 0);
    const index_t d = dim < 0 ? dim + rank : dim;
    const auto [index_shape, src_shape] = random_scatter_shapes(rng, self_shape, d, 6);
    const Tensor<index_t> index = random_indices(index_shape, self_shape[d], rng);
    for (Reduce reduce : {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax, Reduce::amin})
      for (bool include_self : {true, false}) {
        const int hi = reduce == Reduce::prod ? 2 : 5;
        const Tensor<T> self = small_values<T>(self_shape, rng, -hi, hi);
        const Tensor<T> src = small_values<T>(src_shape, rng, -hi, hi);
        INFO("trial " << trial << " self " << self_shape << " dim " << dim << " index "
                      << index_shape << " src " << src_shape << " " << reduce << " include_self "
                      << include_self);
        const Tensor<T> expected =
            reference_scatter_reduce(self, dim, index, src, reduce, include_self);
        CHECK(equal(scatter_reduce(self, dim, index, src, reduce, include_self), expected));
        // In place into a non-contiguous view holding the same values.
        if (rank >= 2) {
          Tensor<T> view = transposed_copy(self);
          scatter_reduce_(view, dim, index, transposed_copy(src), reduce, include_self);
          CHECK(equal(view, expected));
        }
      }
  }
}

/// The index forms Reduce::mean treats apart: one line along `dim` broadcast over the other dims
/// (stride 0), that line copied into every position (equal lines found by value), and lines
/// that differ (random, or the copied line with one value changed at the last position).
enum class MeanIndexForm { broadcast, materialized, differs_at_end, general };

Tensor<index_t> mean_test_index(MeanIndexForm form, const Shape& shape, index_t dim,
                                index_t targets, std::mt19937& rng) {
  if (form == MeanIndexForm::general) return random_indices(shape, targets, rng);
  std::vector<index_t> line_sizes(shape.size(), 1);
  line_sizes[static_cast<std::size_t>(dim)] = shape[dim];
  const Tensor<index_t> line = random_indices(Shape(line_sizes), targets, rng);
  const Tensor<index_t> broadcast = line.expand(shape.to_vector());
  if (form == MeanIndexForm::broadcast) return broadcast;
  Tensor<index_t> copied = broadcast.contiguous();
  if (form == MeanIndexForm::differs_at_end && copied.numel() > shape[dim]) {
    index_t& last = copied.data()[copied.numel() - 1];
    last = (last + 1) % targets;
  }
  return copied;
}

TEMPLATE_TEST_CASE("scatter_reduce: mean against plain loops, for every index form",
                   "[scatter_reduce][random]", float, double, Eigen::half, std::int8_t,
                   std::int64_t, std::uint8_t) {
  using T = TestType;
  std::mt19937 rng(53);
  for (const MeanIndexForm form : {MeanIndexForm::broadcast, MeanIndexForm::materialized,
                                   MeanIndexForm::differs_at_end, MeanIndexForm::general})
    for (int trial = 0; trial < 18; ++trial) {
      const index_t rank = 1 + trial % 3;
      const index_t d = (trial / 3) % rank;  // first, middle and last dims over the trials
      const index_t dim = trial % 2 ? d - rank : d;
      const Shape self_shape = tbatch::testing::random_shape(rng, rank, 1, 5);
      const auto [index_shape, src_shape] = random_scatter_shapes(rng, self_shape, d, 8);
      const Tensor<index_t> index = mean_test_index(form, index_shape, d, self_shape[d], rng);
      for (bool include_self : {true, false}) {
        const Tensor<T> self = small_values<T>(self_shape, rng);
        const Tensor<T> src = small_values<T>(src_shape, rng);
        INFO("form " << static_cast<int>(form) << " trial " << trial << " self " << self_shape
                     << " dim " << dim << " index " << index_shape << " strides "
                     << tbatch::detail::listed(index.strides()) << " src " << src_shape
                     << " include_self " << include_self);
        const Tensor<T> expected = reference_scatter_mean(self, dim, index, src, include_self);
        CHECK(equal(scatter_reduce(self, dim, index, src, Reduce::mean, include_self), expected));
        if (rank >= 2) {
          Tensor<T> view = transposed_copy(self);
          scatter_reduce_(view, dim, index, src, Reduce::mean, include_self);
          CHECK(equal(view, expected));
        }
      }
    }
}

TEMPLATE_TEST_CASE("scatter_reduce: mean over selves larger than one block of counts",
                   "[scatter_reduce][random]", float, std::int64_t) {
  // A general index makes the counts block by block, at most detail::mean_count_block per block
  // or one line along dim; each shape here takes several blocks, cut in a different way.
  using T = TestType;
  std::mt19937 rng(59);
  struct Case {
    Shape self;
    index_t dim;
    const char* blocks;
  };
  const index_t line = detail::mean_count_block + 7000;
  const std::vector<Case> cases{
      {Shape{line, 2}, 0, "one column each: the line is longer than the bound"},
      {Shape{3, line / 3}, 1, "one row each: fewer than 8 rows fit"},
      {Shape{40, detail::mean_count_block / 37}, 1, "37 rows, then 3"},
      {Shape{2, 3, line / 3}, 2, "one of dim 0, then one row of dim 1 each"},
      {Shape{line / 32, 2, 16}, 0, "one position of dim 1 each, 16 columns whole"},
      {Shape{12, detail::mean_count_block / 16, 2}, 1, "8 positions of dim 0, then 4"},
  };
  for (const Case& c : cases) {
    REQUIRE(c.self.numel() > detail::mean_count_block);
    // An eighth as many positions along dim as self has: slots are hit once, twice or never in
    // every block, and the loops stay short under the sanitizers.
    Shape index_shape = c.self;
    index_shape.set(c.dim, c.self[c.dim] / 8);
    const Tensor<index_t> index = random_indices(index_shape, c.self[c.dim], rng);
    const Tensor<T> src = small_values<T>(index_shape, rng);
    const Tensor<T> self = small_values<T>(c.self, rng);
    for (bool include_self : {true, false}) {
      INFO("self " << c.self << " dim " << c.dim << " (" << c.blocks << ") include_self "
                   << include_self);
      CHECK(equal(scatter_reduce(self, c.dim, index, src, Reduce::mean, include_self),
                  reference_scatter_mean(self, c.dim, index, src, include_self)));
    }
  }
}

TEST_CASE("scatter_reduce: 0-d tensors behave as one-element vectors", "[scatter_reduce]") {
  const Tensor<float> self(Shape{}, 2.f);
  CHECK(equal(scatter_reduce(self, 0, Tensor<index_t>(Shape{}, 0), Tensor<float>(Shape{}, 5.f),
                             Reduce::sum),
              Tensor<float>(Shape{}, 7.f)));
  CHECK(equal(scatter_reduce(self, -1, Tensor<index_t>(Shape{1}, 0), Tensor<float>(Shape{1}, 5.f),
                             Reduce::prod, false),
              Tensor<float>(Shape{}, 5.f)));
  const Tensor<float> vector(Shape{2}, {1, 2});
  CHECK(equal(scatter_reduce(vector, 0, Tensor<index_t>(Shape{}, 1), Tensor<float>(Shape{}, 3.f),
                             Reduce::amax),
              Tensor<float>(Shape{2}, {1, 3})));
  CHECK(equal(scatter_reduce(vector, 0, Tensor<index_t>(Shape{0}), Tensor<float>(Shape{0}),
                             Reduce::mean, false),
              vector));
}

TEST_CASE("scatter_reduce_: in place, aliasing, unchanged on error", "[scatter_reduce][inplace]") {
  Tensor<float> self(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor<index_t> index(Shape{1, 3}, {1, 0, 1});
  const Tensor<float> expected = scatter_reduce(self, 0, index, self.clone(), Reduce::sum);
  Tensor<float>& result = scatter_reduce_(self, 0, index, self, Reduce::sum);  // src aliases self
  CHECK(&result == &self);
  CHECK(equal(self, expected));
  CHECK(equal(self, Tensor<float>(Shape{2, 3}, {1, 4, 3, 5, 5, 9})));
  const Tensor<float> before = self.clone();
  CHECK_THROWS_AS(
      scatter_reduce_(self, 0, Tensor<index_t>(Shape{1, 2}, {0, 2}), before, Reduce::sum),
      IndexError);
  CHECK(equal(self, before));
}

TEST_CASE("scatter_reduce: errors", "[scatter_reduce][errors]") {
  const Tensor<float> self(Shape{3, 4}, 1.f);
  const Tensor<index_t> index(Shape{2, 2}, {0, 1, 2, 0});
  const Tensor<float> src(Shape{2, 2}, 1.f);
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(self, 0, index, src, static_cast<Reduce>(9)), ValueError,
                           "scatter_reduce: reduce 9 is not one of sum, prod, mean, amax, amin");
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(Tensor<bool>(Shape{2}), 0, Tensor<index_t>(Shape{1}),
                                          Tensor<bool>(Shape{1}), Reduce::amax),
                           TypeError,
                           "scatter_reduce: reduce amax is not defined for bool tensors");
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(self, 0, Tensor<index_t>(Shape{2}), src, Reduce::sum),
                           ShapeError,
                           "scatter_reduce: self, index and src must have the same number of dims, "
                           "got 2, 1 and 2");
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(self, 2, index, src, Reduce::sum), IndexError,
                           "scatter_reduce: dim 2 is out of range for a tensor of rank 2");
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(self, 0, Tensor<index_t>(Shape{2, 3}), src, Reduce::sum),
                           ShapeError,
                           "scatter_reduce: index has size 3 at dim 1, larger than src's 2");
  TBATCH_CHECK_THROWS_WITH(scatter_reduce(self, 0, Tensor<index_t>(Shape{2, 5}),
                                          Tensor<float>(Shape{2, 5}), Reduce::sum),
                           ShapeError,
                           "scatter_reduce: index has size 5 at dim 1, larger than self's 4");
  TBATCH_CHECK_THROWS_WITH(
      scatter_reduce(self, 1, Tensor<index_t>(Shape{2, 2}, {0, 1, 4, 0}), src, Reduce::amin),
      IndexError,
      "scatter_reduce: index[1, 0] = 4 is out of range for dim 1 of self with size 4 (expected 0 "
      "to 3)");
  Tensor<float> broadcast = Tensor<float>(Shape{3, 1}, 0.f).expand({3, 4});
  TBATCH_CHECK_THROWS_WITH(scatter_reduce_(broadcast, 0, index, src, Reduce::sum), ValueError,
                           "scatter_reduce_: self has shape [3, 4] and strides [1, 0]");
}

// ---- torch index_add ----------------------------------------------------------------------

template <class T>
void check_index_add_golden(const GoldenCase& c) {
  INFO("golden case " << c.name);
  const index_t dim = c.scalar("dim");
  const T alpha = static_cast<T>(c.scalar("alpha"));
  const Tensor<T> self = c.tensor<T>("self");
  const Tensor<index_t> index = c.tensor<index_t>("index");
  const Tensor<T> source = c.tensor<T>("source");
  const Tensor<T> expected = c.tensor<T>("out");
  CHECK(equal(index_add(self, dim, index, source, alpha), expected));
  Tensor<T> in_place = self.clone();
  CHECK(&index_add_(in_place, dim, index, source, alpha) == &in_place);
  CHECK(equal(in_place, expected));
}

TEST_CASE("index_add: torch golden cases", "[index_add][golden]") {
  const auto cases = read_golden("index_add.txt");
  REQUIRE(cases.size() >= 30);
  for (const auto& c : cases) {
    if (c.word("dtype") == "float32")
      check_index_add_golden<float>(c);
    else
      check_index_add_golden<std::int64_t>(c);
  }
}

TEMPLATE_TEST_CASE("index_add: randomised against the reference loop", "[index_add][random]",
                   TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  std::mt19937 rng(41);
  for (int trial = 0; trial < 15; ++trial) {
    const index_t rank = 1 + trial % 3;
    const Shape self_shape = tbatch::testing::random_shape(rng, rank, 1, 4);
    const index_t d = static_cast<index_t>(rng() % rank);
    const index_t n = static_cast<index_t>(rng() % 7);
    Shape source_shape = self_shape;
    source_shape.set(d, n);
    const Tensor<T> self = small_values<T>(self_shape, rng);
    const Tensor<T> source = small_values<T>(source_shape, rng);
    const Tensor<index_t> index = random_indices(Shape{n}, self_shape[d], rng);
    const T alpha = value_of<T>(trial % 3 == 0 ? 2 : 1);
    Tensor<T> expected = self.clone();
    for_each_index(source_shape, [&](const std::vector<index_t>& p) {
      std::vector<index_t> target = p;
      target[d] = index.data()[p[d]];
      T& slot = element_ref(expected, target);
      slot =
          ref_combine(Reduce::sum, slot, ref_combine(Reduce::prod, alpha, element_at(source, p)));
    });
    INFO("trial " << trial << " self " << self_shape << " dim " << d << " n " << n);
    CHECK(equal(index_add(self, d, index, source, alpha), expected));
  }
}

TEST_CASE("index_add: errors", "[index_add][errors]") {
  const Tensor<float> self(Shape{3, 4}, 1.f);
  const Tensor<float> source(Shape{2, 4}, 1.f);
  const Tensor<index_t> index(Shape{2}, {0, 2});
  TBATCH_CHECK_THROWS_WITH(
      index_add(Tensor<bool>(Shape{2}), 0, Tensor<index_t>(Shape{1}), Tensor<bool>(Shape{1})),
      TypeError, "index_add: adding is not defined for bool tensors");
  TBATCH_CHECK_THROWS_WITH(index_add(self, 0, Tensor<index_t>(Shape{2, 1}), source), ShapeError,
                           "index_add: index must be 0-d or 1-d, got shape [2, 1]");
  TBATCH_CHECK_THROWS_WITH(index_add(self, 0, index, Tensor<float>(Shape{2})), ShapeError,
                           "index_add: source must have the same number of dims as self");
  TBATCH_CHECK_THROWS_WITH(index_add(self, -3, index, source), IndexError,
                           "index_add: dim -3 is out of range for a tensor of rank 2");
  TBATCH_CHECK_THROWS_WITH(index_add(self, 0, Tensor<index_t>(Shape{3}), source), ShapeError,
                           "index_add: source has size 2 at dim 0 but index has 3 entries");
  TBATCH_CHECK_THROWS_WITH(index_add(self, 0, index, Tensor<float>(Shape{2, 3})), ShapeError,
                           "(dim 1: 3 vs 4)");
  TBATCH_CHECK_THROWS_WITH(
      index_add(self, 1, Tensor<index_t>(Shape{2}, {3, 4}), Tensor<float>(Shape{3, 2})), IndexError,
      "index_add: index[1] = 4 is out of range for dim 1 of self with size 4");
  Tensor<float> broadcast = Tensor<float>(Shape{1, 4}, 0.f).expand({3, 4});
  TBATCH_CHECK_THROWS_WITH(index_add_(broadcast, 0, index, source), ValueError,
                           "index_add_: self has shape [3, 4] and strides [0, 1]");
}

// ---- ragged-aware scatter -------------------------------------------------------------------

namespace {

/// Elements of shapes (n_i, 3) or (a_i, b_i, 3) with distinct small values.
template <class T>
std::vector<Tensor<T>> ragged_list(std::mt19937& rng, index_t element_rank, index_t count) {
  std::vector<Tensor<T>> list;
  for (index_t i = 0; i < count; ++i) {
    Shape shape;
    for (index_t d = 0; d + 1 < element_rank; ++d)
      shape.push_back(static_cast<index_t>(rng() % 4));  // zero-sized elements included
    shape.push_back(3);
    list.push_back(small_values<T>(shape, rng));
  }
  return list;
}

/// Random valid (element, local row) targets into non-empty elements.
struct Targets {
  Tensor<index_t> element_index, local_index;
};
template <class T>
Targets random_targets(const std::vector<Tensor<T>>& list, index_t n, std::mt19937& rng,
                       bool flat_local) {
  std::vector<index_t> nonempty;
  for (std::size_t i = 0; i < list.size(); ++i)
    if (list[i].numel() > 0) nonempty.push_back(static_cast<index_t>(i));
  const index_t coords = list.front().dim() - 1;
  Targets t{Tensor<index_t>(Shape{n}),
            flat_local ? Tensor<index_t>(Shape{n}) : Tensor<index_t>(Shape{n, coords})};
  for (index_t k = 0; k < n; ++k) {
    const index_t e = nonempty[rng() % nonempty.size()];
    t.element_index.data()[k] = e;
    for (index_t c = 0; c < coords; ++c)
      t.local_index.data()[k * coords + c] = static_cast<index_t>(rng() % list[e].size(c));
  }
  return t;
}

/// The ragged scatter by its definition, on cloned elements.
template <class T>
std::vector<Tensor<T>> reference_ragged(const std::vector<Tensor<T>>& list, const Targets& t,
                                        const Tensor<T>& updates, bool overwrite) {
  std::vector<Tensor<T>> out;
  for (const auto& e : list)
    out.push_back(e.clone());
  const index_t n = t.element_index.numel();
  const index_t coords = list.front().dim() - 1;
  auto row_of = [&](index_t k) {
    std::vector<index_t> at;
    for (index_t c = 0; c < coords; ++c)
      at.push_back(t.local_index.data()[k * coords + c]);
    at.push_back(0);
    return at;
  };
  for (int pass = overwrite ? 1 : 0; pass < 2; ++pass)
    for (index_t k = 0; k < n; ++k) {
      Tensor<T>& element = out[t.element_index.data()[k]];
      std::vector<index_t> at = row_of(k);
      for (index_t j = 0; j < updates.size(1); ++j) {
        at.back() = j;
        T& slot = element_ref(element, at);
        const T value = updates.data()[k * updates.size(1) + j];
        if (pass == 0)
          slot = T(0);
        else if constexpr (std::is_same_v<T, bool>)
          slot = value;
        else
          slot = overwrite ? value : ref_combine(Reduce::sum, slot, value);
      }
    }
  return out;
}

template <class T>
void check_elements(const std::vector<Tensor<T>>& got, const std::vector<Tensor<T>>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(equal(got[i], expected[i]));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("scatter on batches: randomised against per-element loops",
                   "[scatter][batch][random]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(53);
  for (int trial = 0; trial < 8; ++trial) {
    const index_t element_rank = 2 + trial % 2;
    std::vector<Tensor<T>> list = ragged_list<T>(rng, element_rank, 2 + trial % 4);
    list[trial % list.size()] = small_values<T>(  // at least one non-empty element
        element_rank == 2 ? Shape{2, 3} : Shape{2, 1, 3}, rng);
    const index_t n = 1 + trial * 3;
    const Targets targets = random_targets(list, n, rng, element_rank == 2 && trial % 4 == 0);
    const Tensor<T> updates = small_values<T>(Shape{n, 3}, rng);
    const T pad = value_of<T>(9);
    for (bool overwrite : {true, false}) {
      if constexpr (std::is_same_v<T, bool>)
        if (!overwrite) continue;
      INFO("trial " << trial << " rank " << element_rank << " overwrite " << overwrite);
      const auto expected = reference_ragged(list, targets, updates, overwrite);

      const PaddedBatch<T> padded =
          list_to_padded(list, pad, std::vector<index_t>(element_rank - 1, 4));
      const PaddedBatch<T> padded_out =
          scatter(padded, targets.element_index, targets.local_index, updates, overwrite);
      check_elements(padded_out.to_list(), expected);
      // The padding is untouched.
      const Tensor<bool> mask = padded_out.mask();
      for_each_index(padded_out.data().shape(), [&](const std::vector<index_t>& p) {
        std::vector<index_t> m(p.begin(), p.end() - 1);
        if (!element_at(mask, m)) CHECK(element_at(padded_out.data(), p) == pad);
      });

      const PackedBatch<T> packed = list_to_packed(list);
      const PackedBatch<T> packed_out =
          scatter(packed, targets.element_index, targets.local_index, updates, overwrite);
      check_elements(packed_out.to_list(), expected);
      check_elements(packed.to_list(), list);  // the input batch is not modified

      PackedBatch<T> in_place = list_to_packed(list);
      CHECK(&scatter_(in_place, targets.element_index, targets.local_index, updates, overwrite) ==
            &in_place);
      check_elements(in_place.to_list(), expected);
    }
  }
}

TEST_CASE("scatter on batches: exact batches and strided data", "[scatter][batch]") {
  const ExactBatch<int> exact(Tensor<int>(Shape{2, 3, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  const ExactBatch<int> out =
      scatter(exact, Tensor<index_t>(Shape{3}, {1, 0, 1}), Tensor<index_t>(Shape{3}, {2, 0, 2}),
              Tensor<int>(Shape{3, 2}, {20, 21, 22, 23, 24, 25}), false);
  CHECK(equal(out.data(), Tensor<int>(Shape{2, 3, 2}, {22, 23, 2, 3, 4, 5, 6, 7, 8, 9, 44, 46})));
  // A padded batch whose data is a transposed view: rows are not contiguous.
  Tensor<float> storage(Shape{3, 2, 4}, 0.f);  // (last, batch, rows)
  const PaddedBatch<float> padded(storage.permute({1, 2, 0}), Tensor<index_t>(Shape{2, 1}, {2, 4}));
  const PaddedBatch<float> scattered =
      scatter(padded, Tensor<index_t>(Shape{2}, {1, 0}), Tensor<index_t>(Shape{2, 1}, {3, 1}),
              Tensor<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(scattered.element(1).select(0, 3).to_vector() == std::vector<float>{1, 2, 3});
  CHECK(scattered.element(0).select(0, 1).to_vector() == std::vector<float>{4, 5, 6});
  PaddedBatch<float> target = padded;
  scatter_(target, Tensor<index_t>(Shape{1}, 0), Tensor<index_t>(Shape{1}, 0),
           Tensor<float>(Shape{1, 3}, {7, 8, 9}));
  CHECK(storage.select(1, 0).select(1, 0).to_vector() == std::vector<float>{7, 8, 9});
}

TEST_CASE("scatter_ on batches reads every index before it writes, even from its own data",
          "[scatter][batch][aliasing]") {
  // Two elements of two rows of one int64; element_index and updates are views of the data
  // being written, so a later update must still go where its index said before any write.
  PackedBatch<index_t> batch(Tensor<index_t>(Shape{4, 1}, {1, 0, 1, 0}),
                             Tensor<index_t>(Shape{2, 1}, {2, 2}),
                             Tensor<index_t>(Shape{3}, {0, 2, 4}));
  const Tensor<index_t> local(Shape{4}, {1, 0, 0, 1});
  const Tensor<index_t> element_index = batch.data().reshape({4});
  const Tensor<index_t> updates = batch.data().slice(0, std::nullopt, std::nullopt, -1);
  // Expected: the same calls with every input copied first, from a plain loop.
  const std::vector<index_t> e{1, 0, 1, 0}, u{0, 1, 0, 1};
  std::vector<index_t> expected{1, 0, 1, 0};
  for (std::size_t k = 0; k < 4; ++k)
    expected[static_cast<std::size_t>(e[k] * 2 + local(static_cast<index_t>(k)))] = u[k];
  scatter_(batch, element_index, local, updates);
  CHECK(batch.data().reshape({4}).to_vector() == expected);
}

TEST_CASE("scatter on batches: errors name the element, local index and size",
          "[scatter][batch][errors]") {
  // Element 0 has 2 rows, element 1 has 4; the padded maximum is 4.
  const std::vector<Tensor<float>> list{Tensor<float>(Shape{2, 3}, 1.f),
                                        Tensor<float>(Shape{4, 3}, 2.f)};
  const PaddedBatch<float> padded = list_to_padded(list, 0.f);
  const PackedBatch<float> packed = list_to_packed(list);
  const Tensor<float> updates(Shape{2, 3}, 5.f);
  const Tensor<index_t> elements(Shape{2}, {1, 0});
  TBATCH_CHECK_THROWS_WITH(
      scatter(padded, elements, Tensor<index_t>(Shape{2}, {3, 2}), updates), IndexError,
      "scatter: local_index[1] = 2 is out of range for element 0, whose dim 0 has size 2 (element "
      "shape [2, 3]) (expected 0 to 1)");
  TBATCH_CHECK_THROWS_WITH(scatter(packed, elements, Tensor<index_t>(Shape{2, 1}, {4, 0}), updates),
                           IndexError,
                           "scatter: local_index[0, 0] = 4 is out of range for element 1, whose "
                           "dim 0 has size 4");
  TBATCH_CHECK_THROWS_WITH(
      scatter(packed, Tensor<index_t>(Shape{2}, {0, 2}), Tensor<index_t>(Shape{2}), updates),
      IndexError,
      "scatter: element_index[1] = 2 is out of range for a batch of 2 elements (expected 0 to 1)");
  TBATCH_CHECK_THROWS_WITH(
      scatter(packed, Tensor<index_t>(Shape{2, 1}), Tensor<index_t>(Shape{2}), updates), ShapeError,
      "scatter: element_index must be 1-d, got shape [2, 1]");
  TBATCH_CHECK_THROWS_WITH(scatter(packed, elements, Tensor<index_t>(Shape{2, 2}), updates),
                           ShapeError,
                           "scatter: local_index has shape [2, 2] but 2 updates into elements of "
                           "rank 2 need [2, 1] or [2]");
  TBATCH_CHECK_THROWS_WITH(
      scatter(packed, elements, Tensor<index_t>(Shape{2}), Tensor<float>(Shape{2, 2})), ShapeError,
      "scatter: updates has shape [2, 2] but 2 updates of rows of size 3 need [2, 3]");
  const PackedBatch<bool> bools =
      list_to_packed(std::vector<Tensor<bool>>{Tensor<bool>(Shape{1, 1})});
  TBATCH_CHECK_THROWS_WITH(scatter(bools, Tensor<index_t>(Shape{1}), Tensor<index_t>(Shape{1}),
                                   Tensor<bool>(Shape{1, 1}), false),
                           TypeError, "scatter: overwrite=false (adding updates) is not defined");
  PaddedBatch<float> target = padded;
  TBATCH_CHECK_THROWS_WITH(scatter_(target, elements, Tensor<index_t>(Shape{2}, {0, 5}), updates),
                           IndexError, "scatter_: local_index[1] = 5");
  CHECK(equal(target.data(), padded.data()));
}
