// Reductions, softmax, matmul, factories and joins (tbatch/math/): each against a plain loop
// written here, on random shapes (rank 0-5, size-0 and size-1 dims) laid out with reversed,
// permuted and expanded strides; the empty and 0-d cases; NaN and ties; the errors.
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "math_support.hpp"

using namespace tbatch;
using tbatch::testing::broadcast_at;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::random_value;
using tbatch::testing::strided_tensor;

namespace {

/// A random shape of rank 0-5, sizes 1-4 and now and then 0.
Shape random_reduction_shape(std::mt19937& rng) {
  Shape s;
  const auto rank = static_cast<index_t>(rng() % 6);
  for (index_t d = 0; d < rank; ++d)
    s.push_back(static_cast<index_t>(rng() % 10 == 0 ? 0 : 1 + rng() % 4));
  return s;
}

/// Which dims a random reduction folds: every dim (dims empty) or a non-empty subset, written
/// with negative dims half of the time.
struct Folded {
  std::vector<index_t> dims;
  std::vector<bool> mask;
};
Folded random_folded(std::mt19937& rng, const Shape& shape) {
  const auto rank = static_cast<index_t>(shape.size());
  Folded f{{}, std::vector<bool>(shape.size(), true)};
  if (rank == 0 || rng() % 4 == 0) return f;
  while (f.dims.empty()) {
    for (index_t d = 0; d < rank; ++d) {
      f.mask[static_cast<std::size_t>(d)] = rng() % 2 == 0;
      if (f.mask[static_cast<std::size_t>(d)]) f.dims.push_back(rng() % 2 ? d : d - rank);
    }
  }
  std::shuffle(f.dims.begin(), f.dims.end(), rng);
  return f;
}

/// The reference fold of x: one accumulator per element of the kept shape (row-major), each
/// element of x combined into the one it reduces to, in row-major order.
template <class A, class T, class Combine>
std::vector<A> reference_fold(const Tensor<T>& x, const std::vector<bool>& mask, A init,
                              Combine combine, Shape& kept) {
  kept = Shape{};
  for (std::size_t d = 0; d < mask.size(); ++d)
    kept.push_back(mask[d] ? 1 : x.shape()[d]);
  std::vector<A> acc(static_cast<std::size_t>(kept.numel()), init);
  for_each_index(x.shape(), [&](const std::vector<index_t>& idx) {
    index_t flat = 0;
    for (std::size_t d = 0; d < idx.size(); ++d)
      flat = flat * kept[d] + (mask[d] ? 0 : idx[d]);
    acc[static_cast<std::size_t>(flat)] =
        combine(acc[static_cast<std::size_t>(flat)], element_at(x, idx));
  });
  return acc;
}

Shape expected_shape(const Shape& kept, const std::vector<bool>& mask, bool keepdim) {
  if (keepdim) return kept;
  Shape s;
  for (std::size_t d = 0; d < mask.size(); ++d)
    if (!mask[d]) s.push_back(kept[d]);
  return s;
}

double as_double(auto v) {
  return static_cast<double>(detail::widen(v));
}

/// Within `ulps` units in the last place of T (NaN matches NaN, infinities match exactly).
template <class T>
bool close(double got, double want, double ulps = 4) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || !FloatingElement<T>) return got == want;
  const double eps = std::is_same_v<T, Eigen::half>       ? 0x1p-10
                     : std::is_same_v<T, Eigen::bfloat16> ? 0x1p-7
                     : std::is_same_v<T, float>           ? 0x1p-23
                                                          : 0x1p-52;
  return std::abs(got - want) <= ulps * eps * std::max(std::abs(want), 1.0);
}

template <class R>
void check_values(const Tensor<R>& got, const Shape& shape, const std::vector<double>& want,
                  double ulps, const char* what) {
  INFO(what << ": shape " << shape);
  REQUIRE(got.shape() == shape);
  REQUIRE(got.is_contiguous());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << as_double(got.data()[i]) << ", want " << want[i]);
    REQUIRE(close<R>(as_double(got.data()[i]), want[i], ulps));
  }
}

template <class T>
std::vector<double> rounded(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values)
    out.push_back(as_double(static_cast<T>(static_cast<float>(v))));
  if constexpr (std::is_same_v<T, double>) return values;
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("reductions over random dims match plain loops", "[math][reduce]", float, double,
                   Eigen::half, std::int32_t, std::uint8_t, std::int64_t) {
  using T = TestType;
  std::mt19937 rng(321);
  for (int iteration = 0; iteration < 60; ++iteration) {
    const Shape shape = random_reduction_shape(rng);
    const Folded f = random_folded(rng, shape);
    const bool keepdim = rng() % 2 == 0;
    const Tensor<T> x = strided_tensor<T>(shape, rng, [&] { return random_value<T>(rng); });
    INFO("shape " << shape << " dims " << detail::listed(f.dims) << " keepdim " << keepdim);
    const Dims dims(f.dims);
    auto reduce = [&](auto fn) { return f.dims.empty() ? fn(x, nullptr) : fn(x, &dims); };
    Shape kept;

    // Sums of small integers are exact in every type: compared exactly, after rounding to T.
    const auto sums = reference_fold<double>(
        x, f.mask, 0.0, [](double a, T v) { return a + as_double(v); }, kept);
    const Shape out_shape =
        f.dims.empty() ? (keepdim ? kept : Shape{}) : expected_shape(kept, f.mask, keepdim);
    const auto got_sum =
        reduce([&](const Tensor<T>& t, const Dims* d) { return d ? sum(t, *d, keepdim) : sum(t); });
    static_assert(std::is_same_v<typename decltype(got_sum)::value_type, SumType<T>>);
    if (f.dims.empty() && keepdim) continue;  // sum(x) has no keepdim form
    check_values(got_sum, out_shape, rounded<SumType<T>>(sums), 0, "sum");

    const auto maxima = reference_fold<double>(
        x, f.mask, -std::numeric_limits<double>::infinity(),
        [](double a, T v) { return std::max(a, as_double(v)); }, kept);
    const auto minima = reference_fold<double>(
        x, f.mask, std::numeric_limits<double>::infinity(),
        [](double a, T v) { return std::min(a, as_double(v)); }, kept);
    bool empty_fold = false;
    for (std::size_t d = 0; d < shape.size(); ++d)
      empty_fold = empty_fold || (f.mask[d] && shape[d] == 0);
    if (empty_fold) {
      CHECK_THROWS_AS(f.dims.empty() ? amax(x) : amax(x, dims, keepdim), ShapeError);
      CHECK_THROWS_AS(f.dims.empty() ? amin(x) : amin(x, dims, keepdim), ShapeError);
    } else {
      check_values(f.dims.empty() ? amax(x) : amax(x, dims, keepdim), out_shape, maxima, 0, "amax");
      check_values(f.dims.empty() ? amin(x) : amin(x, dims, keepdim), out_shape, minima, 0, "amin");
    }

    if constexpr (FloatingElement<T>) {
      std::vector<double> means = sums;
      const index_t folded = [&] {
        index_t c = 1;
        for (std::size_t d = 0; d < shape.size(); ++d)
          if (f.mask[d]) c *= shape[d];
        return c;
      }();
      for (double& m : means)
        m /= static_cast<double>(folded);
      check_values(f.dims.empty() ? mean(x) : mean(x, dims, keepdim), out_shape, rounded<T>(means),
                   1, "mean");
      auto lse = reference_fold<double>(
          x, f.mask, 0.0, [](double a, T v) { return a + std::exp(as_double(v)); }, kept);
      for (double& v : lse)
        v = std::log(v);
      check_values(f.dims.empty() ? logsumexp(x) : logsumexp(x, dims, keepdim), out_shape,
                   rounded<T>(lse), 4, "logsumexp");
      // Products of +-1 and 0 are exact.
      const Tensor<T> signs =
          strided_tensor<T>(shape, rng, [&] { return T(float(int(rng() % 3) - 1)); });
      const auto products = reference_fold<double>(
          signs, f.mask, 1.0, [](double a, T v) { return a * as_double(v); }, kept);
      check_values(f.dims.empty() ? prod(signs) : prod(signs, dims, keepdim), out_shape, products,
                   0, "prod");
    } else {
      // Integer products wrap modulo 2^64 in int64.
      const auto products = reference_fold<std::uint64_t>(
          x, f.mask, std::uint64_t(1),
          [](std::uint64_t a, T v) { return a * static_cast<std::uint64_t>(detail::widen(v)); },
          kept);
      std::vector<double> want;
      for (std::uint64_t p : products)
        want.push_back(static_cast<double>(static_cast<std::int64_t>(p)));
      const Tensor<std::int64_t> got = f.dims.empty() ? prod(x) : prod(x, dims, keepdim);
      REQUIRE(got.shape() == out_shape);
      for (std::size_t i = 0; i < products.size(); ++i)
        REQUIRE(got.data()[i] == static_cast<std::int64_t>(products[i]));
    }
  }
}

TEST_CASE("any, all and the sum of a Tensor<bool>", "[math][reduce]") {
  std::mt19937 rng(5);
  for (int iteration = 0; iteration < 40; ++iteration) {
    const Shape shape = random_reduction_shape(rng);
    const Folded f = random_folded(rng, shape);
    const bool keepdim = rng() % 2 == 0;
    const Tensor<bool> x = strided_tensor<bool>(shape, rng, [&] { return rng() % 3 == 0; });
    Shape kept;
    const auto anys = reference_fold<double>(
        x, f.mask, 0.0, [](double a, bool v) { return double(a || v); }, kept);
    const auto alls = reference_fold<double>(
        x, f.mask, 1.0, [](double a, bool v) { return double(a && v); }, kept);
    const auto counts = reference_fold<double>(
        x, f.mask, 0.0, [](double a, bool v) { return a + v; }, kept);
    if (f.dims.empty()) {
      check_values(any(x), Shape{}, anys, 0, "any");
      check_values(all(x), Shape{}, alls, 0, "all");
      check_values(sum(x), Shape{}, counts, 0, "sum");
      continue;
    }
    const Dims dims(f.dims);
    const Shape out_shape = expected_shape(kept, f.mask, keepdim);
    check_values(any(x, dims, keepdim), out_shape, anys, 0, "any");
    check_values(all(x, dims, keepdim), out_shape, alls, 0, "all");
    check_values(sum(x, dims, keepdim), out_shape, counts, 0, "sum");
  }
}

TEST_CASE("float sums of many elements stay accurate along any dim", "[math][reduce]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Tensor<float> x({300, 700});
  for (index_t i = 0; i < x.numel(); ++i)
    x.data()[i] = u(rng);
  std::vector<double> rows(300, 0.0), cols(700, 0.0);
  double total = 0;
  for (index_t r = 0; r < 300; ++r)
    for (index_t c = 0; c < 700; ++c) {
      const double v = x.data()[r * 700 + c];
      rows[static_cast<std::size_t>(r)] += v;
      cols[static_cast<std::size_t>(c)] += v;
      total += v;
    }
  check_values(sum(x, 1), Shape{300}, rows, 64, "rows");
  check_values(sum(x, 0), Shape{700}, cols, 64, "columns");
  check_values(sum(x.transpose(0, 1), 0), Shape{300}, rows, 64, "transposed rows");
  check_values(sum(x), Shape{}, {total}, 16, "all");
  const Tensor<float> tenths({1000000}, 0.1f);
  CHECK(std::abs(sum(tenths).item() - 100000.0) < 0.02);
  CHECK(std::abs(mean(tenths).item() - 0.1) < 1e-7);
}

TEST_CASE("reductions of empty and 0-d tensors, and their errors", "[math][reduce]") {
  const Tensor<float> empty({2, 0, 3});
  CHECK(equal(sum(empty, 1), Tensor<float>({2, 3})));
  CHECK(equal(prod(empty, {1}), Tensor<float>({2, 3}, 1.f)));
  CHECK(std::isnan(mean(empty).item()));
  CHECK(std::isinf(logsumexp(empty, 1).data()[0]));
  CHECK(logsumexp(empty, 1).data()[0] < 0);
  CHECK(sum(empty, 0).shape() == Shape{0, 3});
  CHECK(amax(empty, 0).shape() == Shape{0, 3});
  TBATCH_CHECK_THROWS_WITH(amax(empty, 1), ShapeError, "dim 1 of size 0");
  CHECK_THROWS_AS(argmax(empty, 1), ShapeError);
  TBATCH_CHECK_THROWS_WITH(argmin(Tensor<int>({2, 0})), ShapeError,
                           "dim 1 of size 0 (shape [2, 0])");
  CHECK(any(Tensor<bool>({0})).item() == false);
  CHECK(all(Tensor<bool>({0})).item() == true);

  const Tensor<double> scalar({}, {2.5});
  CHECK(sum(scalar).item() == 2.5);
  CHECK(sum(scalar, 0).item() == 2.5);
  CHECK(equal(amax(scalar, -1, true), scalar));
  CHECK(argmax(scalar, 0).item() == 0);
  CHECK(cumsum(scalar, 0).item() == 2.5);
  CHECK(softmax(scalar, 0).item() == 1.0);
  CHECK(log_softmax(scalar, -1).item() == 0.0);
  CHECK_THROWS_AS(sum(scalar, 1), IndexError);

  const Tensor<int> x({2, 3});
  TBATCH_CHECK_THROWS_WITH(sum(x, 2), IndexError, "dim 2");
  TBATCH_CHECK_THROWS_WITH(sum(x, {0, -2}), ValueError, "appears more than once");
  TBATCH_CHECK_THROWS_WITH(sum(x, std::vector<index_t>{}), ValueError, "call sum(x)");
  CHECK_THROWS_AS(argmax(x, -3), IndexError);
  CHECK_THROWS_AS(cumsum(x, 2), IndexError);
  CHECK_THROWS_AS(softmax(Tensor<float>({2}), 1), IndexError);
  TBATCH_CHECK_THROWS_WITH(x.item(), ValueError, "6 elements");
  CHECK(Tensor<int>({1, 1}, {7}).item() == 7);
  CHECK(x.dtype() == DType::int32);
}

TEMPLATE_TEST_CASE("argmax and argmin take the first extreme, NaN first of all", "[math][reduce]",
                   float, Eigen::half, std::int8_t, std::uint8_t) {
  using T = TestType;
  std::mt19937 rng(11);
  for (int iteration = 0; iteration < 50; ++iteration) {
    Shape shape = random_reduction_shape(rng);
    if (shape.empty()) shape.push_back(3);
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 0) shape.set(d, 2);
    const auto dim = static_cast<index_t>(rng() % shape.size());
    const bool keepdim = rng() % 2 == 0;
    // Few distinct values, so ties are common; NaN now and then.
    const Tensor<T> x = strided_tensor<T>(shape, rng, [&] {
      if (FloatingElement<T> && rng() % 12 == 0) return static_cast<T>(NAN);
      return static_cast<T>(rng() % 3);
    });
    INFO("shape " << shape << " dim " << dim);
    for (bool largest : {true, false}) {
      std::vector<bool> mask(shape.size(), false);
      mask[static_cast<std::size_t>(dim)] = true;
      Shape kept = shape;
      kept.set(dim, 1);
      // The reference scans the dim in order for every kept position.
      const Shape out_shape = expected_shape(kept, mask, keepdim);
      const Tensor<index_t> got = largest ? argmax(x, dim, keepdim) : argmin(x, dim, keepdim);
      REQUIRE(got.shape() == out_shape);
      index_t flat = 0;
      for_each_index(kept, [&](std::vector<index_t> idx) {
        index_t want = 0;
        double best_value = 0;
        for (index_t i = 0; i < shape[static_cast<std::size_t>(dim)]; ++i) {
          idx[static_cast<std::size_t>(dim)] = i;
          const double v = as_double(element_at(x, idx));
          const bool better = i == 0                   ? true
                              : std::isnan(best_value) ? false
                              : std::isnan(v)          ? true
                              : largest                ? v > best_value
                                                       : v < best_value;
          if (better) {
            want = i;
            best_value = v;
          }
        }
        REQUIRE(got.data()[flat++] == want);
      });
    }
  }
  const Tensor<float> ties({2, 3}, {1, 3, 3, 2, 2, 0});
  CHECK(argmax(ties).item() == 1);
  CHECK(argmin(ties).item() == 5);
  CHECK(equal(argmax(ties, 1), Tensor<index_t>({2}, {1, 0})));
  CHECK(equal(argmin(ties, 0, true), Tensor<index_t>({1, 3}, {0, 1, 1})));
}

TEMPLATE_TEST_CASE("cumsum along each dim matches a running loop", "[math][reduce]", float,
                   Eigen::half, std::int8_t, std::int64_t, bool) {
  using T = TestType;
  std::mt19937 rng(13);
  for (int iteration = 0; iteration < 40; ++iteration) {
    Shape shape = random_reduction_shape(rng);
    if (shape.empty()) continue;
    const auto dim = static_cast<index_t>(rng() % shape.size());
    const Tensor<T> x = strided_tensor<T>(shape, rng, [&] { return random_value<T>(rng); });
    const Tensor<SumType<T>> got = cumsum(x, dim - (rng() % 2 ? index_t(shape.size()) : 0));
    REQUIRE(got.shape() == shape);
    REQUIRE(got.is_contiguous());
    for_each_index(shape, [&](std::vector<index_t> idx) {
      const index_t at = idx[static_cast<std::size_t>(dim)];
      double want = 0;
      for (index_t i = 0; i <= at; ++i) {
        idx[static_cast<std::size_t>(dim)] = i;
        want += as_double(element_at(x, idx));
      }
      REQUIRE(as_double(element_at(got, idx)) == as_double(static_cast<SumType<T>>(want)));
    });
  }
}

TEMPLATE_TEST_CASE("softmax and log_softmax along any dim match a double loop", "[math][softmax]",
                   float, double, Eigen::half) {
  using T = TestType;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  for (int iteration = 0; iteration < 50; ++iteration) {
    Shape shape = random_reduction_shape(rng);
    if (shape.empty()) continue;
    const auto dim = static_cast<index_t>(rng() % shape.size());
    const Tensor<T> x = strided_tensor<T>(shape, rng, [&] { return static_cast<T>(u(rng)); });
    INFO("shape " << shape << " dim " << dim << " strides " << detail::listed(x.strides()));
    const Tensor<T> s = softmax(x, dim), ls = log_softmax(x, dim);
    REQUIRE(s.shape() == shape);
    REQUIRE(ls.shape() == shape);
    for_each_index(shape, [&](std::vector<index_t> idx) {
      const double v = as_double(element_at(x, idx));
      std::vector<index_t> j = idx;
      double total = 0;
      for (index_t i = 0; i < shape[static_cast<std::size_t>(dim)]; ++i) {
        j[static_cast<std::size_t>(dim)] = i;
        total += std::exp(as_double(element_at(x, j)));
      }
      CHECK(close<T>(as_double(element_at(s, idx)), std::exp(v) / total, 8));
      CHECK(std::abs(as_double(element_at(ls, idx)) - (v - std::log(total))) <=
            8 *
                (std::is_same_v<T, Eigen::half> ? 0x1p-10
                 : std::is_same_v<T, float>     ? 0x1p-23
                                                : 0x1p-52) *
                std::max(1.0, std::abs(v - std::log(total))));
    });
  }
  // Large logits: no overflow; NaN or +inf in a row makes the row NaN, as torch.
  const Tensor<float> big({2, 3}, {1000, 1001, 1002, 1, NAN, 2});
  const Tensor<float> s = softmax(big, 1);
  CHECK(std::abs(s.data()[2] - 0.66524096f) < 1e-6f);
  CHECK(std::isnan(s.data()[3]));
  CHECK(std::abs(log_softmax(big, 1).data()[0] + 2.40760596f) < 1e-5f);
  CHECK(std::isnan(softmax(Tensor<float>({2}, {INFINITY, 1.f}), 0).data()[1]));
  CHECK(softmax(Tensor<float>({3, 0}), 1).shape() == Shape{3, 0});
}

TEMPLATE_TEST_CASE("matmul follows torch's rules on strided operands", "[math][matmul]", float,
                   Eigen::half, std::int8_t, std::int32_t, std::int64_t) {
  using T = TestType;
  std::mt19937 rng(19);
  auto value = [&] { return static_cast<T>(static_cast<int>(rng() % 7) - 3); };
  for (int iteration = 0; iteration < 40; ++iteration) {
    const index_t n = 1 + rng() % 5, k = rng() % 5, m = 1 + rng() % 5;
    const int form = static_cast<int>(rng() % 5);
    Shape sa{n, k}, sb{k, m};
    if (form == 1) sa = Shape{k};                                // vector x matrix
    if (form == 2) sb = Shape{k};                                // matrix x vector
    if (form == 3) sa = Shape{k}, sb = Shape{k};                 // dot product
    if (form == 4) sa = Shape{2, 1, n, k}, sb = Shape{3, k, m};  // broadcast batches
    const Tensor<T> a = strided_tensor<T>(sa, rng, value), b = strided_tensor<T>(sb, rng, value);
    INFO("a " << sa << " strides " << detail::listed(a.strides()) << ", b " << sb << " strides "
              << detail::listed(b.strides()));
    const Tensor<T> got = matmul(a, b);
    const Tensor<T> a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    const Shape batch =
        layout::broadcast_shapes(Shape(a2.shape().begin(), a2.shape().end() - 2),
                                 Shape(b2.shape().begin(), b2.shape().end() - 2), "test");
    Shape full = batch;
    full.push_back(a2.size(-2));
    full.push_back(b2.size(-1));
    Shape want_shape = batch;
    if (a.dim() > 1) want_shape.push_back(a2.size(-2));
    if (b.dim() > 1) want_shape.push_back(b2.size(-1));
    REQUIRE(got.shape() == want_shape);
    index_t flat = 0;
    for_each_index(full, [&](std::vector<index_t> idx) {
      std::uint64_t acc = 0;
      double facc = 0;
      const index_t i = idx[idx.size() - 2], j = idx[idx.size() - 1];
      for (index_t p = 0; p < k; ++p) {
        std::vector<index_t> ia = idx, ib = idx;
        ia[ia.size() - 1] = p;
        ib[ib.size() - 2] = p;
        ib[ib.size() - 1] = j;
        ia[ia.size() - 2] = i;
        const T x = broadcast_at(a2, ia), y = broadcast_at(b2, ib);
        facc += as_double(x) * as_double(y);
        if constexpr (!FloatingElement<T>)
          acc += static_cast<std::uint64_t>(detail::widen(x)) *
                 static_cast<std::uint64_t>(detail::widen(y));
      }
      const T g = got.data()[flat++];
      if constexpr (FloatingElement<T>)
        REQUIRE(as_double(g) == as_double(static_cast<T>(facc)));  // small integers: exact
      else
        REQUIRE(g == static_cast<T>(acc));
    });
  }
}

TEST_CASE("matmul of large operands, transposed operands and its errors", "[math][matmul]") {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Tensor<float> a({70, 90}), b({90, 50});
  for (index_t i = 0; i < a.numel(); ++i)
    a.data()[i] = u(rng);
  for (index_t i = 0; i < b.numel(); ++i)
    b.data()[i] = u(rng);
  const Tensor<float> want = Tensor<float>::from_eigen(a.matrix() * b.matrix());
  CHECK(allclose(matmul(a, b), want, 1e-5, 1e-5));
  // A transposed operand is read in place as a column-major map.
  const Tensor<float> bt = b.transpose(0, 1).contiguous().transpose(0, 1);
  CHECK(allclose(matmul(a, bt), want, 1e-5, 1e-5));
  CHECK(allclose(matmul(a.slice(0, 0, std::nullopt, 2), b), want.slice(0, 0, std::nullopt, 2), 1e-5,
                 1e-5));
  // int8 wraps modulo 256: 100 * 3 = 300 -> 44.
  CHECK(matmul(Tensor<std::int8_t>({1}, {100}), Tensor<std::int8_t>({1}, {3})).item() == 44);

  TBATCH_CHECK_THROWS_WITH(matmul(Tensor<float>({2, 3}), Tensor<float>({2, 3})), ShapeError,
                           "cannot be multiplied (3 vs 2)");
  CHECK_THROWS_AS(matmul(Tensor<float>({}, {1.f}), Tensor<float>({1})), ShapeError);
  CHECK_THROWS_AS(matmul(Tensor<float>({2, 2, 3}), Tensor<float>({3, 3, 1})), ShapeError);
  CHECK(equal(matmul(Tensor<float>({2, 0}), Tensor<float>({0, 3})), Tensor<float>({2, 3})));
}

TEST_CASE("factories", "[math][factories]") {
  CHECK(equal(zeros<int>({2, 2}), Tensor<int>({2, 2}, 0)));
  CHECK(equal(ones<Eigen::half>({3}), Tensor<Eigen::half>({3}, Eigen::half(1))));
  CHECK(equal(full<float>({2}, 2.5f), Tensor<float>({2}, {2.5f, 2.5f})));
  const Tensor<double> x({2, 3});
  CHECK(equal(zeros_like(x), Tensor<double>({2, 3})));
  CHECK(equal(ones_like(x), Tensor<double>({2, 3}, 1.0)));
  CHECK(equal(full_like(x, 4.0), Tensor<double>({2, 3}, 4.0)));
  CHECK(empty_like(x).shape() == x.shape());
  CHECK(equal(arange<int>(5), Tensor<int>({5}, {0, 1, 2, 3, 4})));
  CHECK(equal(arange<int>(5, 0, -2), Tensor<int>({3}, {5, 3, 1})));
  CHECK(equal(arange<std::uint8_t>(250, 255, 2), Tensor<std::uint8_t>({3}, {250, 252, 254})));
  CHECK(equal(arange<std::int64_t>(-3, 3, 3), Tensor<std::int64_t>({2}, {-3, 0})));
  CHECK(allclose(arange<float>(0, 1, 0.3f), Tensor<float>({4}, {0.f, 0.3f, 0.6f, 0.9f})));
  CHECK(arange<double>(1, 1).numel() == 0);
  TBATCH_CHECK_THROWS_WITH(arange<int>(0, 3, 0), ValueError, "step");
  TBATCH_CHECK_THROWS_WITH(arange<float>(0, 3, -1), ValueError, "goes away from end");
  CHECK_THROWS_AS(arange<float>(0, INFINITY), ValueError);
}

TEST_CASE("stack, cat, split and chunk", "[math][joins]") {
  const Tensor<int> a({2, 3}, {0, 1, 2, 3, 4, 5}), b({2, 3}, {6, 7, 8, 9, 10, 11});
  CHECK(equal(stack(std::vector<Tensor<int>>{a, b}),
              Tensor<int>({2, 2, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})));
  CHECK(equal(stack(std::vector<Tensor<int>>{a, b}, -1),
              Tensor<int>({2, 3, 2}, {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11})));
  CHECK(equal(cat(std::vector<Tensor<int>>{a, b.transpose(0, 1).contiguous().transpose(0, 1)}, 1),
              Tensor<int>({2, 6}, {0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11})));
  CHECK(equal(cat(std::vector<Tensor<int>>{Tensor<int>({0}), a}), a));
  CHECK(cat(std::vector<Tensor<int>>{Tensor<int>({0})}).shape() == Shape{0});
  TBATCH_CHECK_THROWS_WITH(stack(std::vector<Tensor<int>>{a, Tensor<int>({3, 2})}), ShapeError,
                           "tensor 1 has shape [3, 2]");
  TBATCH_CHECK_THROWS_WITH(cat(std::vector<Tensor<int>>{a, Tensor<int>({3, 2})}, 1), ShapeError,
                           "differ in dim 1 only");
  CHECK_THROWS_AS(cat(std::vector<Tensor<int>>{}), ValueError);
  CHECK_THROWS_AS(stack(std::vector<Tensor<int>>{a}, 3), IndexError);

  const Tensor<int> r = arange<int>(10);
  const std::vector<Tensor<int>> parts = split(r, 4);
  REQUIRE(parts.size() == 3);
  CHECK(equal(parts[2], Tensor<int>({2}, {8, 9})));
  CHECK(parts[1].shares_storage_with(r));
  CHECK(equal(cat(parts), r));
  const auto sized = split(a, std::vector<index_t>{1, 2}, 1);
  CHECK(equal(sized[1], Tensor<int>({2, 2}, {1, 2, 4, 5})));
  TBATCH_CHECK_THROWS_WITH(split(a, std::vector<index_t>{1, 1}, 1), ShapeError, "add up to 2");
  CHECK_THROWS_AS(split(r, 0), ValueError);
  CHECK(chunk(r, 4).size() == 4);
  CHECK(chunk(arange<int>(5), 4).size() == 3);
  CHECK(chunk(Tensor<int>({0}), 3).size() == 3);
  CHECK(split(Tensor<int>({0}), 2).size() == 1);
  CHECK_THROWS_AS(chunk(r, 0), ValueError);
}
