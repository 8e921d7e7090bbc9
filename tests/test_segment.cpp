// Tests of ops/segment.hpp: torch-made golden cases for segment_reduce
// (tests/golden/scatter/segment_reduce.txt), randomised comparisons over every dtype against plain
// loops written here (raw values of several ranks and layouts, packed batches, empty segments,
// segments across the kernel's row blocks), segment_argmax / segment_argmin tie and NaN rules,
// and every error path.

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

  std::string word(const std::string& key) const { return fields.at(key).at(0); }
  template <class T>
  Tensor<T> tensor(const std::string& key) const {
    Shape shape;
    for (const auto& s : fields.at(key + "_shape"))
      shape.push_back(std::stoll(s));
    std::vector<T> values;
    if (fields.count(key))
      for (const auto& s : fields.at(key))
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
    if (!(words >> key) || key[0] == '#' || key == "end") continue;
    if (key == "case") {
      cases.emplace_back();
      words >> cases.back().name;
      continue;
    }
    auto& values = cases.back().fields[key];
    for (std::string w; words >> w;)
      values.push_back(w);
  }
  return cases;
}

constexpr Reduce all_reduces[] = {Reduce::sum, Reduce::prod, Reduce::mean, Reduce::amax,
                                  Reduce::amin};

// ---- the tests' own plain loops ----------------------------------------------------------

Tensor<index_t> offsets_of(const std::vector<index_t>& lengths) {
  std::vector<index_t> first{0};
  for (index_t n : lengths)
    first.push_back(first.back() + n);
  return Tensor<index_t>(Shape{static_cast<index_t>(first.size())}, first);
}

/// Small values: -4..4 for signed and floating types, 0..8 for unsigned ones.
template <class T>
Tensor<T> small_values(const Shape& shape, std::mt19937& rng, int span = 4) {
  constexpr bool negative =
      std::is_signed_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;
  std::uniform_int_distribution<int> dist(negative ? -span : 0, negative ? span : 2 * span);
  Tensor<T> out(shape);
  for (index_t i = 0; i < out.numel(); ++i)
    out.data()[i] = value_of<T>(dist(rng));
  return out;
}

template <class T>
T ref_combine(Reduce reduce, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
    if (reduce == Reduce::prod) return static_cast<T>(x * y);
    if (reduce == Reduce::amax) return static_cast<T>(std::max(x, y));
    if (reduce == Reduce::amin) return static_cast<T>(std::min(x, y));
    return static_cast<T>(x + y);
  } else {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const F x = static_cast<F>(a), y = static_cast<F>(b);
    if (reduce == Reduce::prod) return static_cast<T>(x * y);
    if (reduce == Reduce::amax) return y > x ? b : a;
    if (reduce == Reduce::amin) return y < x ? b : a;
    return static_cast<T>(x + y);
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

template <class T>
double to_double(T v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<double>(v);
  else
    return static_cast<double>(static_cast<float>(v));
}

Shape inner_shape(const Shape& values_shape) {
  return Shape(values_shape.begin() + 1, values_shape.end());
}

std::vector<index_t> with_front(index_t front, const std::vector<index_t>& rest) {
  std::vector<index_t> out{front};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

/// segment_reduce by its definition: each segment's rows folded in order; empty -> 0.
template <class T>
Tensor<T> reference_segment_reduce(const Tensor<T>& values, const Tensor<index_t>& first_idx,
                                   Reduce reduce) {
  const std::vector<index_t> first = first_idx.to_vector();
  const index_t segments = static_cast<index_t>(first.size()) - 1;
  Shape out_shape{segments};
  for (index_t s : inner_shape(values.shape()))
    out_shape.push_back(s);
  Tensor<T> out(out_shape);
  for (index_t e = 0; e < segments; ++e) {
    if (first[e] == first[e + 1]) continue;
    for_each_index(inner_shape(values.shape()), [&](const std::vector<index_t>& p) {
      T acc = element_at(values, with_front(first[e], p));
      for (index_t r = first[e] + 1; r < first[e + 1]; ++r)
        acc = ref_combine(reduce, acc, element_at(values, with_front(r, p)));
      if (reduce == Reduce::mean) acc = ref_mean(acc, first[e + 1] - first[e]);
      element_ref(out, with_front(e, p)) = acc;
    });
  }
  return out;
}

/// segment_argmax / argmin by definition: the first row that is strictly better wins.
template <class T>
Tensor<index_t> reference_arg(const Tensor<T>& values, const Tensor<index_t>& first_idx, bool max) {
  const std::vector<index_t> first = first_idx.to_vector();
  const index_t segments = static_cast<index_t>(first.size()) - 1;
  Shape out_shape{segments};
  const Shape inner = inner_shape(values.shape());
  for (index_t s : inner)
    out_shape.push_back(s);
  Tensor<index_t> out(out_shape, index_t(-1));
  for (index_t e = 0; e < segments; ++e)
    for_each_index(inner, [&](const std::vector<index_t>& p) {
      index_t best = -1;
      for (index_t r = first[e]; r < first[e + 1]; ++r) {
        const double v = to_double(element_at(values, with_front(r, p)));
        const double b = best < 0 ? 0 : to_double(element_at(values, with_front(best, p)));
        const bool better = std::isnan(v) ? !std::isnan(b) : (max ? v > b : v < b);
        if (best < 0 || better) best = r;
      }
      element_ref(out, with_front(e, p)) = best;
    });
  return out;
}

/// A tensor with the values of `t` whose memory is laid out in reverse dim order.
template <class T>
Tensor<T> reversed_layout_copy(const Tensor<T>& t) {
  std::vector<index_t> order;
  for (index_t d = t.dim(); d-- > 0;)
    order.push_back(d);
  Tensor<T> view = Tensor<T>::empty(t.permute(order).shape()).permute(order);
  copy(t.view(), view.view());
  return view;
}

}  // namespace

TEST_CASE("segment_reduce: torch golden cases", "[segment_reduce][golden]") {
  const auto cases = read_golden("segment_reduce.txt");
  REQUIRE(cases.size() >= 15);
  for (const auto& c : cases) {
    INFO("golden case " << c.name);
    REQUIRE(c.word("dtype") == "float32");
    Reduce reduce = Reduce::sum;
    for (Reduce r : all_reduces)
      if (reduce_name(r) == c.word("reduce")) reduce = r;
    REQUIRE(reduce_name(reduce) == c.word("reduce"));
    const Tensor<float> values = c.tensor<float>("values");
    const Tensor<index_t> first_idx = c.tensor<index_t>("first_idx");
    CHECK(equal(segment_reduce(values, first_idx, reduce), c.tensor<float>("out")));
  }
}

TEST_CASE("segment_reduce: a small worked example", "[segment_reduce]") {
  // Segments: rows 0-1, none, rows 2-4.
  const Tensor<float> values(Shape{5, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor<index_t> first_idx(Shape{4}, {0, 2, 2, 5});
  CHECK(equal(segment_reduce(values, first_idx, Reduce::sum),
              Tensor<float>(Shape{3, 2}, {4, 6, 0, 0, 21, 24})));
  CHECK(equal(segment_reduce(values, first_idx, Reduce::mean),
              Tensor<float>(Shape{3, 2}, {2, 3, 0, 0, 7, 8})));
  CHECK(equal(segment_reduce(values, first_idx, Reduce::prod),
              Tensor<float>(Shape{3, 2}, {3, 8, 0, 0, 315, 480})));
  CHECK(equal(segment_reduce(values, first_idx, Reduce::amax),
              Tensor<float>(Shape{3, 2}, {3, 4, 0, 0, 9, 10})));
  CHECK(equal(segment_reduce(values, first_idx, Reduce::amin),
              Tensor<float>(Shape{3, 2}, {1, 2, 0, 0, 5, 6})));
  CHECK(
      equal(segment_argmax(values, first_idx), Tensor<index_t>(Shape{3, 2}, {1, 1, -1, -1, 4, 4})));
  CHECK(
      equal(segment_argmin(values, first_idx), Tensor<index_t>(Shape{3, 2}, {0, 0, -1, -1, 2, 2})));
}

TEST_CASE("segment_reduce: integer means floor, sums wrap", "[segment_reduce]") {
  const Tensor<std::int32_t> values(Shape{5}, {-3, -4, 7, 1, 1});
  const Tensor<index_t> first_idx(Shape{3}, {0, 2, 5});
  // (-3 - 4) / 2 = -3.5 floors to -4; 9 / 3 = 3.
  CHECK(equal(segment_reduce(values, first_idx, Reduce::mean),
              Tensor<std::int32_t>(Shape{2}, {-4, 3})));
  const Tensor<std::uint8_t> bytes(Shape{3}, {200, 100, 7});
  CHECK(equal(segment_reduce(bytes, Tensor<index_t>(Shape{2}, {0, 3}), Reduce::sum),
              Tensor<std::uint8_t>(Shape{1}, 51)));  // 307 mod 256
}

TEMPLATE_TEST_CASE("segment_reduce: NaN propagates and argmax picks the first NaN",
                   "[segment_reduce]", float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const Tensor<T> values(Shape{4}, std::vector<T>{T(1), nan, T(5), nan});
  const Tensor<index_t> first_idx(Shape{2}, {0, 4});
  for (Reduce reduce : {Reduce::amax, Reduce::amin, Reduce::sum})
    CHECK(std::isnan(static_cast<float>(segment_reduce(values, first_idx, reduce).to_vector()[0])));
  CHECK(equal(segment_argmax(values, first_idx), Tensor<index_t>(Shape{1}, 1)));
  CHECK(equal(segment_argmin(values, first_idx), Tensor<index_t>(Shape{1}, 1)));
}

TEMPLATE_TEST_CASE("segment_reduce: randomised against the reference loop",
                   "[segment_reduce][random]", TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  std::mt19937 rng(71);
  for (int trial = 0; trial < 10; ++trial) {
    std::vector<index_t> lengths;
    const index_t segments = static_cast<index_t>(rng() % 7);
    for (index_t e = 0; e < segments; ++e)
      lengths.push_back(rng() % 3 == 0 ? 0 : static_cast<index_t>(rng() % 5));
    const Tensor<index_t> first_idx = offsets_of(lengths);
    const index_t rows = first_idx.to_vector().back();
    Shape shape{rows};
    for (int d = 0; d < trial % 3; ++d)
      shape.push_back(1 + static_cast<index_t>(rng() % 3));
    for (Reduce reduce : all_reduces) {
      const Tensor<T> values = small_values<T>(shape, rng, reduce == Reduce::prod ? 2 : 4);
      INFO("trial " << trial << " shape " << shape << " lengths " << first_idx << " " << reduce);
      const Tensor<T> expected = reference_segment_reduce(values, first_idx, reduce);
      CHECK(equal(segment_reduce(values, first_idx, reduce), expected));
      if (values.dim() >= 2)
        CHECK(equal(segment_reduce(reversed_layout_copy(values), first_idx, reduce), expected));
    }
    const Tensor<T> values = small_values<T>(shape, rng, 1);  // many ties
    INFO("trial " << trial << " shape " << shape << " lengths " << first_idx);
    CHECK(equal(segment_argmax(values, first_idx), reference_arg(values, first_idx, true)));
    CHECK(equal(segment_argmin(values, first_idx), reference_arg(values, first_idx, false)));
    if (values.dim() >= 2) {  // rows that are not one dense run take the engine's walk
      CHECK(equal(segment_argmax(reversed_layout_copy(values), first_idx),
                  reference_arg(values, first_idx, true)));
      CHECK(equal(segment_argmin(reversed_layout_copy(values), first_idx),
                  reference_arg(values, first_idx, false)));
    }
  }
}

TEMPLATE_TEST_CASE("segment_reduce: packed batches, one row per element", "[segment_reduce][batch]",
                   float, std::int64_t, Eigen::half, std::uint8_t) {
  using T = TestType;
  std::mt19937 rng(83);
  std::vector<Tensor<T>> list;
  for (index_t rows : {3, 0, 1, 4, 0})
    list.push_back(small_values<T>(Shape{rows, 2}, rng));
  const PackedBatch<T> packed = list_to_packed(list);
  for (Reduce reduce : all_reduces) {
    INFO(reduce);
    const Tensor<T> out = segment_reduce(packed, reduce);
    REQUIRE(out.shape() == Shape{5, 2});
    CHECK(equal(out, reference_segment_reduce(packed.data(), packed.first_idx(), reduce)));
    CHECK(equal(out.select(0, 1), Tensor<T>(Shape{2})));  // the empty element gives 0
  }
  CHECK(equal(segment_argmax(packed), reference_arg(packed.data(), packed.first_idx(), true)));
  CHECK(equal(segment_argmin(packed), reference_arg(packed.data(), packed.first_idx(), false)));
  CHECK(equal(segment_argmax(packed).select(0, 4), Tensor<index_t>(Shape{2}, index_t(-1))));
  // Elements of rank 3 reduce over all their rows.
  const PackedBatch<T> cubes = list_to_packed(std::vector<Tensor<T>>{
      small_values<T>(Shape{2, 3, 2}, rng), small_values<T>(Shape{1, 1, 2}, rng)});
  CHECK(equal(segment_reduce(cubes, Reduce::sum),
              reference_segment_reduce(cubes.data(), cubes.first_idx(), Reduce::sum)));
}

TEMPLATE_TEST_CASE("segment_reduce: wide rows take the chunked kernels", "[segment_reduce][random]",
                   TBATCH_ARITHMETIC_DTYPES) {
  // Rows of 70 elements hold whole 64-byte chunks and a tail for every dtype.
  using T = TestType;
  std::mt19937 rng(89);
  const Tensor<index_t> first_idx = offsets_of({3, 0, 1, 6, 2});
  for (Reduce reduce : all_reduces) {
    INFO(reduce);
    const Tensor<T> values = small_values<T>(Shape{12, 70}, rng, reduce == Reduce::prod ? 2 : 4);
    CHECK(equal(segment_reduce(values, first_idx, reduce),
                reference_segment_reduce(values, first_idx, reduce)));
  }
  const Tensor<T> ties = small_values<T>(Shape{12, 70}, rng, 1);
  CHECK(equal(segment_argmax(ties, first_idx), reference_arg(ties, first_idx, true)));
  CHECK(equal(segment_argmin(ties, first_idx), reference_arg(ties, first_idx, false)));
  if constexpr (!std::is_integral_v<T>) {  // NaN in a chunk: propagates, and its row is the arg
    Tensor<T> with_nan = ties.clone();
    with_nan(4, 20) = std::numeric_limits<T>::quiet_NaN();
    with_nan(7, 69) = std::numeric_limits<T>::quiet_NaN();
    with_nan(8, 69) = std::numeric_limits<T>::quiet_NaN();
    const auto amax = segment_reduce(with_nan, first_idx, Reduce::amax);
    const auto amin = segment_reduce(with_nan, first_idx, Reduce::amin);
    CHECK(std::isnan(static_cast<float>(amax(3, 20))));  // row 4 is in segment 3
    CHECK(std::isnan(static_cast<float>(amin(3, 20))));
    CHECK(std::isnan(static_cast<float>(amin(3, 69))));
    CHECK(static_cast<float>(amax(2, 20)) == static_cast<float>(ties(3, 20)));  // one row
    CHECK(segment_argmax(with_nan, first_idx)(3, 20) == 4);
    CHECK(equal(segment_argmax(with_nan, first_idx), reference_arg(with_nan, first_idx, true)));
    CHECK(equal(segment_argmin(with_nan, first_idx), reference_arg(with_nan, first_idx, false)));
    CHECK(segment_argmax(with_nan, first_idx)(3, 69) == 7);
  }
}

TEMPLATE_TEST_CASE("segment_reduce: strided values against the reference loop",
                   "[segment_reduce][random]", float, std::int32_t, double, Eigen::half) {
  // Runs with a step, rest dims that do not merge (several 2-D blocks) and column-major rows.
  using T = TestType;
  std::mt19937 rng(101);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<index_t> lengths;
    for (index_t e = 0, segments = 1 + static_cast<index_t>(rng() % 6); e < segments; ++e)
      lengths.push_back(rng() % 4 == 0 ? 0 : static_cast<index_t>(rng() % 6));
    const Tensor<index_t> first_idx = offsets_of(lengths);
    const index_t rows = first_idx.to_vector().back();
    for (Reduce reduce : all_reduces) {
      const int span = reduce == Reduce::prod ? 2 : 4;
      const std::vector<Tensor<T>> layouts{
          small_values<T>(Shape{rows, 40}, rng, span).slice(1, 1, 40, 2),
          small_values<T>(Shape{rows, 2, 3, 5}, rng, span).narrow(2, 0, 2).narrow(3, 1, 3),
          reversed_layout_copy(small_values<T>(Shape{rows, 3, 20}, rng, span))};
      for (const Tensor<T>& values : layouts) {
        INFO("trial " << trial << " shape " << values.shape() << " lengths " << first_idx << " "
                      << reduce);
        CHECK(equal(segment_reduce(values, first_idx, reduce),
                    reference_segment_reduce(values, first_idx, reduce)));
      }
    }
    const Tensor<T> ties = small_values<T>(Shape{rows, 2, 3, 40}, rng, 1).slice(3, 0, 40, 3);
    INFO("trial " << trial << " lengths " << first_idx);
    CHECK(equal(segment_argmax(ties, first_idx), reference_arg(ties, first_idx, true)));
    CHECK(equal(segment_argmin(ties, first_idx), reference_arg(ties, first_idx, false)));
  }
}

TEST_CASE("segment_reduce: segments across row blocks and no segments", "[segment_reduce]") {
  std::mt19937 rng(97);
  // 1500 + 1 + 2000 + 0 + 700 rows: segments straddle the kernel's 1024-row blocks.
  const Tensor<index_t> first_idx = offsets_of({1500, 1, 2000, 0, 700});
  const Tensor<double> values = small_values<double>(Shape{4201, 3}, rng);
  for (Reduce reduce : all_reduces) {
    INFO(reduce);
    CHECK(equal(segment_reduce(values, first_idx, reduce),
                reference_segment_reduce(values, first_idx, reduce)));
  }
  CHECK(equal(segment_argmax(values, first_idx), reference_arg(values, first_idx, true)));
  // The same values laid out column-major take the engine's walk in blocks of rows.
  const Tensor<double> columns = reversed_layout_copy(values);
  for (Reduce reduce : all_reduces) {
    INFO(reduce << " on column-major values");
    CHECK(equal(segment_reduce(columns, first_idx, reduce),
                reference_segment_reduce(values, first_idx, reduce)));
  }
  const Tensor<double> cube =
      reversed_layout_copy(values.reshape({4201, 3, 1}).expand({4201, 3, 2}));
  CHECK(equal(segment_argmin(cube, first_idx), reference_arg(cube, first_idx, false)));
  // B = 0: first_idx = [0] and no rows.
  CHECK(
      segment_reduce(Tensor<float>(Shape{0, 4}), Tensor<index_t>(Shape{1}), Reduce::amax).shape() ==
      Shape{0, 4});
  CHECK(segment_argmin(Tensor<float>(Shape{0}), Tensor<index_t>(Shape{1})).shape() == Shape{0});
}

TEST_CASE("segment_reduce: errors", "[segment_reduce][errors]") {
  const Tensor<float> values(Shape{4, 2}, 1.f);
  const Tensor<index_t> first_idx(Shape{3}, {0, 1, 4});
  TBATCH_CHECK_THROWS_WITH(segment_reduce(values, first_idx, static_cast<Reduce>(-1)), ValueError,
                           "segment_reduce: reduce -1 is not one of sum, prod, mean, amax, amin");
  TBATCH_CHECK_THROWS_WITH(
      segment_reduce(Tensor<bool>(Shape{4}), first_idx, Reduce::sum), TypeError,
      "segment_reduce: reduce sum is not defined for bool tensors; convert to an integer type");
  TBATCH_CHECK_THROWS_WITH(segment_argmax(Tensor<bool>(Shape{4}), first_idx), TypeError,
                           "segment_argmax: an arg reduction is not defined for bool tensors");
  TBATCH_CHECK_THROWS_WITH(segment_reduce(Tensor<float>(Shape{}, 1.f), first_idx, Reduce::sum),
                           ShapeError, "segment_reduce: values must have rank >= 1");
  TBATCH_CHECK_THROWS_WITH(segment_argmin(Tensor<float>(Shape{}, 1.f), first_idx), ShapeError,
                           "segment_argmin: values must have rank >= 1");
  TBATCH_CHECK_THROWS_WITH(segment_reduce(values, Tensor<index_t>(Shape{0}), Reduce::sum),
                           ShapeError,
                           "segment_reduce: first_idx must be 1-d with B + 1 entries (0, then each "
                           "segment's end), got shape [0]");
  TBATCH_CHECK_THROWS_WITH(segment_reduce(values, Tensor<index_t>(Shape{3, 1}), Reduce::sum),
                           ShapeError, "got shape [3, 1]");
  TBATCH_CHECK_THROWS_WITH(
      segment_reduce(values, Tensor<index_t>(Shape{3}, {1, 2, 4}), Reduce::sum), ValueError,
      "segment_reduce: first_idx[0] = 1, expected 0");
  TBATCH_CHECK_THROWS_WITH(
      segment_argmax(values, Tensor<index_t>(Shape{4}, {0, 3, 2, 4})), ValueError,
      "segment_argmax: first_idx must not decrease, but first_idx[2] = 2 < first_idx[1] = 3");
  TBATCH_CHECK_THROWS_WITH(
      segment_reduce(values, Tensor<index_t>(Shape{3}, {0, 1, 5}), Reduce::mean), ValueError,
      "segment_reduce: first_idx[2] = 5 but values has 4 rows; the last offset must be the row "
      "count");
}
