// Elementwise maths on tensors (tbatch/math/elementwise.hpp): every operator and function
// against a plain loop written here, on random broadcast shapes (rank 0-5, size-0 and size-1
// dims) with negative, zero and permuted strides; the integer edge cases; in-place forms and
// their aliasing; where / masked_fill; the errors.
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include "math_support.hpp"

using namespace tbatch;
using tbatch::testing::broadcast_at;
using tbatch::testing::element_at;
using tbatch::testing::for_each_index;
using tbatch::testing::random_value;
using tbatch::testing::strided_tensor;
using tbatch::testing::value_of;

namespace {

/// A random output shape and two shapes that broadcast to it.
struct BroadcastCase {
  Shape out, a, b;
};
BroadcastCase random_broadcast(std::mt19937& rng) {
  const auto rank = static_cast<index_t>(rng() % 6);
  BroadcastCase c;
  for (index_t d = 0; d < rank; ++d)
    c.out.push_back(static_cast<index_t>(rng() % 8 == 0 ? 0 : 1 + rng() % 3));
  auto operand = [&] {
    const auto drop = rank == 0 ? 0 : static_cast<index_t>(rng() % (rank + 1));
    Shape s;
    for (index_t d = drop; d < rank; ++d)
      s.push_back(rng() % 3 == 0 ? 1 : c.out[static_cast<std::size_t>(d)]);
    return s;
  };
  c.a = operand();
  c.b = operand();
  // The result's shape is the broadcast of the two; a dim both left at 1 is 1.
  c.out = layout::broadcast_shapes(c.a, c.b, "test");
  return c;
}

/// The reference arithmetic, written independently of tbatch's functors: 16-bit floats in
/// float, integers wrapping through uint64.
template <class T>
T reference_binary(char op, T a, T b) {
  if constexpr (FloatingElement<T>) {
    const double x = static_cast<double>(static_cast<float>(a));
    const double y = static_cast<double>(static_cast<float>(b));
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const C cx = static_cast<C>(x), cy = static_cast<C>(y);
    switch (op) {
      case '+':
        return static_cast<T>(cx + cy);
      case '-':
        return static_cast<T>(cx - cy);
      case '*':
        return static_cast<T>(cx * cy);
      default:
        return static_cast<T>(cx / cy);
    }
  } else {
    const auto x = static_cast<std::uint64_t>(static_cast<std::int64_t>(a));
    const auto y = static_cast<std::uint64_t>(static_cast<std::int64_t>(b));
    switch (op) {
      case '+':
        return static_cast<T>(x + y);
      case '-':
        return static_cast<T>(x - y);
      case '*':
        return static_cast<T>(x * y);
      default:
        return static_cast<T>(static_cast<std::int64_t>(a) / static_cast<std::int64_t>(b));
    }
  }
}

template <class T>
bool same_value(T x, T y) {
  if constexpr (FloatingElement<T>) {
    const double dx = static_cast<double>(static_cast<float>(x));
    const double dy = static_cast<double>(static_cast<float>(y));
    return (std::isnan(dx) && std::isnan(dy)) || dx == dy;
  } else {
    return x == y;
  }
}

template <class R, class T, class Ref>
void check_against(const Tensor<R>& got, const Tensor<T>& a, const Tensor<T>& b, Ref ref) {
  REQUIRE(got.shape() == layout::broadcast_shapes(a.shape(), b.shape(), "test"));
  REQUIRE(got.is_contiguous());
  for_each_index(got.shape(), [&](const auto& idx) {
    const R want = ref(broadcast_at(a, idx), broadcast_at(b, idx));
    if (!same_value(element_at(got, idx), want)) {
      INFO("a " << a.shape() << " b " << b.shape() << " at " << detail::listed(idx));
      REQUIRE(same_value(element_at(got, idx), want));
    }
  });
}

}  // namespace

TEMPLATE_TEST_CASE("arithmetic operators broadcast like torch on strided operands", "[math]",
                   TBATCH_ARITHMETIC_DTYPES) {
  using T = TestType;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const BroadcastCase c = random_broadcast(rng);
    const auto a = strided_tensor<T>(c.a, rng, [&] { return random_value<T>(rng); });
    const auto b = strided_tensor<T>(c.b, rng, [&] { return random_value<T>(rng, true); });
    check_against(a + b, a, b, [](T x, T y) { return reference_binary('+', x, y); });
    check_against(a - b, a, b, [](T x, T y) { return reference_binary('-', x, y); });
    check_against(a * b, a, b, [](T x, T y) { return reference_binary('*', x, y); });
    check_against(a / b, a, b, [](T x, T y) { return reference_binary('/', x, y); });
    check_against(minimum(a, b), a, b, [](T x, T y) { return y < x ? y : x; });
    check_against(maximum(a, b), a, b, [](T x, T y) { return x < y ? y : x; });
    // Scalars on either side are the same as a 0-d tensor.
    const T s = random_value<T>(rng, true);
    const Tensor<T> scalar(Shape{}, s);
    CHECK(equal(a * static_cast<ScalarOf<T>>(s), a * scalar));
    CHECK(equal(static_cast<ScalarOf<T>>(s) - a, scalar - a));
    CHECK(equal(b / static_cast<ScalarOf<T>>(s), b / scalar));
  }
}

TEMPLATE_TEST_CASE("comparisons give Tensor<bool> on every dtype", "[math]", TBATCH_ALL_DTYPES) {
  using T = TestType;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    const BroadcastCase c = random_broadcast(rng);
    const auto a = strided_tensor<T>(c.a, rng, [&] { return random_value<T>(rng); });
    const auto b = strided_tensor<T>(c.b, rng, [&] { return random_value<T>(rng); });
    auto less = [](T x, T y) {
      return static_cast<double>(static_cast<float>(x)) <
             static_cast<double>(static_cast<float>(y));
    };
    auto same = [](T x, T y) {
      return static_cast<double>(static_cast<float>(x)) ==
             static_cast<double>(static_cast<float>(y));
    };
    check_against(a == b, a, b, same);
    check_against(a != b, a, b, [&](T x, T y) { return !same(x, y); });
    check_against(a < b, a, b, less);
    check_against(a <= b, a, b, [&](T x, T y) { return less(x, y) || same(x, y); });
    check_against(a > b, a, b, [&](T x, T y) { return less(y, x); });
    check_against(a >= b, a, b, [&](T x, T y) { return less(y, x) || same(x, y); });
  }
}

TEST_CASE("NaN compares unequal and propagates through minimum, maximum and clamp", "[math]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor<float> a(Shape{3}, {nan, 1.f, 2.f});
  const Tensor<float> b(Shape{3}, {1.f, nan, 2.f});
  CHECK(equal(a == b, Tensor<bool>(Shape{3}, {false, false, true})));
  CHECK(equal(a != b, Tensor<bool>(Shape{3}, {true, true, false})));
  CHECK(equal(a == a, Tensor<bool>(Shape{3}, {false, true, true})));
  const Tensor<float> lo = minimum(a, b), hi = maximum(a, b);
  CHECK((std::isnan(lo.data()[0]) && std::isnan(lo.data()[1]) && lo.data()[2] == 2.f));
  CHECK((std::isnan(hi.data()[0]) && std::isnan(hi.data()[1]) && hi.data()[2] == 2.f));
  const Tensor<float> c = clamp(a, 0.f, 1.5f);
  CHECK((std::isnan(c.data()[0]) && c.data()[1] == 1.f && c.data()[2] == 1.5f));
  CHECK(equal(clamp(Tensor<int>(Shape{3}, {-5, 3, 9}), 0, 4), Tensor<int>(Shape{3}, {0, 3, 4})));
  // lo > hi: every element becomes hi, as torch.clamp.
  CHECK(equal(clamp(Tensor<int>(Shape{2}, {-5, 9}), 4, 0), Tensor<int>(Shape{2}, {0, 0})));
}

TEST_CASE("integer arithmetic wraps, truncates and names a zero divisor", "[math]") {
  using I = std::int32_t;
  const I lowest = std::numeric_limits<I>::min(), highest = std::numeric_limits<I>::max();
  CHECK(equal(Tensor<I>(Shape{1}, highest) + 1, Tensor<I>(Shape{1}, lowest)));
  CHECK(equal(-Tensor<I>(Shape{1}, lowest), Tensor<I>(Shape{1}, lowest)));
  CHECK(equal(abs(Tensor<I>(Shape{2}, {lowest, -3})), Tensor<I>(Shape{2}, {lowest, 3})));
  CHECK(equal(Tensor<I>(Shape{1}, lowest) / -1, Tensor<I>(Shape{1}, lowest)));
  CHECK(equal(Tensor<I>(Shape{4}, {7, -7, 7, -7}) / Tensor<I>(Shape{4}, {2, 2, -2, -2}),
              Tensor<I>(Shape{4}, {3, -3, -3, 3})));
  CHECK(equal(Tensor<std::uint16_t>(Shape{1}, 65535) * std::uint16_t(65535),
              Tensor<std::uint16_t>(Shape{1}, 1)));
  CHECK(equal(Tensor<std::int8_t>(Shape{1}, 100) + std::int8_t(100),
              Tensor<std::int8_t>(Shape{1}, -56)));
  CHECK(equal(pow(Tensor<I>(Shape{3}, {2, -3, 0}), 3), Tensor<I>(Shape{3}, {8, -27, 0})));
  CHECK(equal(pow(Tensor<std::int64_t>(Shape{1}, 3), std::int64_t(40)),
              Tensor<std::int64_t>(Shape{1}, std::int64_t(12157665459056928801ull))));
  TBATCH_CHECK_THROWS_WITH(
      Tensor<I>(Shape{2, 2}, {1, 2, 3, 4}) / Tensor<I>(Shape{2}, {5, 0}), ValueError,
      "operator/: integer division by zero: the divisor b is 0 at position [1]");
  TBATCH_CHECK_THROWS_WITH(Tensor<I>(Shape{2}, {1, 2}) / 0, ValueError, "division by zero");
  TBATCH_CHECK_THROWS_WITH(pow(Tensor<I>(Shape{2}, {1, 2}), Tensor<I>(Shape{2}, {1, -1})),
                           ValueError, "negative exponent: b is -1 at position [1]");
  Tensor<I> x(Shape{2}, {4, 6});
  TBATCH_CHECK_THROWS_WITH(x /= Tensor<I>(Shape{2}, {2, 0}), ValueError, "operator/=");
  CHECK(equal(x, Tensor<I>(Shape{2}, {4, 6})));  // checked before anything is written
  // Floats divide by zero as IEEE does.
  CHECK(std::isinf((Tensor<float>(Shape{1}, 1.f) / 0.f).data()[0]));
}

TEMPLATE_TEST_CASE("unary functions match the standard library", "[math]", float, double,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(3);
  const Shape shape{3, 5};
  const auto x = strided_tensor<T>(shape, rng, [&] {
    return static_cast<T>(std::uniform_real_distribution<float>(-4.f, 4.f)(rng));
  });
  const auto positive = strided_tensor<T>(shape, rng, [&] {
    return static_cast<T>(std::uniform_real_distribution<float>(0.01f, 9.f)(rng));
  });
  // float and double take Eigen's vectorised functions, within a few ulp of the standard
  // library's; the 16-bit types compute in float with it and round, so they match exactly.
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const double tolerance = std::is_same_v<T, double> ? 1e-14 : std::is_same_v<T, float> ? 1e-6 : 0;
  auto check = [&](const Tensor<T>& got, const Tensor<T>& in, auto fn) {
    REQUIRE(got.shape() == in.shape());
    for_each_index(in.shape(), [&](const auto& idx) {
      const T want = static_cast<T>(fn(static_cast<C>(element_at(in, idx))));
      const auto g = static_cast<double>(static_cast<C>(element_at(got, idx)));
      const auto w = static_cast<double>(static_cast<C>(want));
      INFO("input " << static_cast<double>(static_cast<C>(element_at(in, idx))) << " got " << g
                    << " want " << w);
      REQUIRE(std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w)));
    });
  };
  check(neg(x), x, [](auto v) { return -v; });
  check(-x, x, [](auto v) { return -v; });
  check(abs(x), x, [](auto v) { return std::abs(v); });
  check(sign(x), x, [](auto v) { return decltype(v)((v > 0) - (v < 0)); });
  check(relu(x), x, [](auto v) { return v < 0 ? decltype(v)(0) : v; });
  check(floor(x), x, [](auto v) { return std::floor(v); });
  check(ceil(x), x, [](auto v) { return std::ceil(v); });
  check(round(x), x, [](auto v) { return std::nearbyint(v); });
  check(exp(x), x, [](auto v) { return std::exp(v); });
  check(expm1(x), x, [](auto v) { return std::expm1(v); });
  check(sin(x), x, [](auto v) { return std::sin(v); });
  check(cos(x), x, [](auto v) { return std::cos(v); });
  check(tanh(x), x, [](auto v) { return std::tanh(v); });
  check(sigmoid(x), x, [](auto v) { return decltype(v)(1) / (decltype(v)(1) + std::exp(-v)); });
  check(sqrt(positive), positive, [](auto v) { return std::sqrt(v); });
  check(rsqrt(positive), positive, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
  check(log(positive), positive, [](auto v) { return std::log(v); });
  check(log1p(positive), positive, [](auto v) { return std::log1p(v); });
  check(pow(positive, 1.5f), positive, [](auto v) { return std::pow(v, decltype(v)(1.5)); });
  // round is half to even, as torch.round.
  CHECK(equal(round(Tensor<T>(Shape{4}, {T(0.5f), T(1.5f), T(2.5f), T(-0.5f)})),
              Tensor<T>(Shape{4}, {T(0.f), T(2.f), T(2.f), T(-0.f)})));
  // sqrt is correctly rounded, as IEEE's: exact on squares, equal to std::sqrt on the rest
  // (37 values: the vectorised loop and its tail).
  std::vector<T> squares, values;
  for (int i = 0; i < 37; ++i) {
    squares.push_back(static_cast<T>(static_cast<float>(i * i)));
    values.push_back(static_cast<T>(0.37f * static_cast<float>(i) + 0.01f));
  }
  const Tensor<T> roots = sqrt(Tensor<T>(Shape{37}, squares));
  const Tensor<T> others = sqrt(Tensor<T>(Shape{37}, values));
  for (int i = 0; i < 37; ++i) {
    CHECK(static_cast<double>(roots.data()[i]) == i);
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    CHECK(others.data()[i] ==
          static_cast<T>(std::sqrt(static_cast<C>(values[static_cast<std::size_t>(i)]))));
  }
}

TEMPLATE_TEST_CASE("integer unary functions", "[math]", std::int8_t, std::int64_t, std::uint8_t,
                   std::uint32_t) {
  using T = TestType;
  std::mt19937 rng(5);
  const auto x = strided_tensor<T>(Shape{4, 3}, rng, [&] { return random_value<T>(rng); });
  for_each_index(x.shape(), [&](const auto& idx) {
    const T v = element_at(x, idx);
    const auto wide = static_cast<std::int64_t>(v);
    CHECK(element_at(abs(x), idx) == static_cast<T>(wide < 0 ? -wide : wide));
    CHECK(element_at(sign(x), idx) == static_cast<T>((wide > 0) - (wide < 0)));
    CHECK(element_at(relu(x), idx) == static_cast<T>(wide < 0 ? 0 : wide));
    CHECK(element_at(neg(x), idx) == static_cast<T>(-static_cast<std::uint64_t>(wide)));
    CHECK(element_at(floor(x), idx) == v);
    CHECK(element_at(clamp(x, 1, 4), idx) == static_cast<T>(std::clamp<std::int64_t>(wide, 1, 4)));
  });
}

TEST_CASE("logical operations on Tensor<bool>", "[math]") {
  const Tensor<bool> a(Shape{2, 2}, {true, true, false, false});
  const Tensor<bool> b(Shape{2}, {true, false});
  CHECK(equal(logical_and(a, b), Tensor<bool>(Shape{2, 2}, {true, false, false, false})));
  CHECK(equal(logical_or(a, b), Tensor<bool>(Shape{2, 2}, {true, true, true, false})));
  CHECK(equal(logical_not(a), Tensor<bool>(Shape{2, 2}, {false, false, true, true})));
  CHECK(equal(a == b, Tensor<bool>(Shape{2, 2}, {true, false, false, true})));
}

TEST_CASE("in-place operators and the aliasing rule", "[math][aliasing]") {
  Tensor<float> x(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  x += Tensor<float>(Shape{3}, {10, 20, 30});
  CHECK(equal(x, Tensor<float>(Shape{2, 3}, {11, 22, 33, 14, 25, 36})));
  x *= 2.f;
  x -= 1.f;
  x /= Tensor<float>(Shape{2, 1}, {1, 2});
  CHECK(equal(x, Tensor<float>(Shape{2, 3}, {21, 43, 65, 13.5f, 24.5f, 35.5f})));

  // The same elements, position for position: no copy needed, the right answer.
  Tensor<int> y(Shape{4}, {1, 2, 3, 4});
  y += y;
  CHECK(equal(y, Tensor<int>(Shape{4}, {2, 4, 6, 8})));
  // Reversed: every element is read as it was before the call.
  y += y.slice(0, std::nullopt, std::nullopt, -1);
  CHECK(equal(y, Tensor<int>(Shape{4}, {10, 10, 10, 10})));
  // A shifted window of the same buffer.
  Tensor<int> z(Shape{5}, {1, 2, 3, 4, 5});
  Tensor<int> head = z.narrow(0, 1, 4);
  head += z.narrow(0, 0, 4);
  CHECK(equal(z, Tensor<int>(Shape{5}, {1, 3, 5, 7, 9})));
  // Row 0 broadcast over the tensor it belongs to.
  Tensor<int> m(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  m -= m.select(0, 0);
  CHECK(equal(m, Tensor<int>(Shape{3, 2}, {0, 0, 2, 2, 4, 4})));

  // An expanded destination holds one address twice (rule 1).
  Tensor<float> row(Shape{1, 3}, 1.f);
  Tensor<float> expanded = row.expand({4, 3});
  TBATCH_CHECK_THROWS_WITH(expanded += 1.f, ValueError, "operator+=");
  // b must broadcast to a's shape: the result's shape cannot grow.
  Tensor<float> small(Shape{3}, 1.f);
  TBATCH_CHECK_THROWS_WITH(small += Tensor<float>(Shape{2, 3}, 1.f), ShapeError,
                           "b of shape [2, 3] does not broadcast to the shape [3]");
}

TEST_CASE("where and masked_fill", "[math]") {
  const Tensor<bool> mask(Shape{3}, {true, false, true});
  const Tensor<float> a(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(equal(where(mask, a, 0.f), Tensor<float>(Shape{2, 3}, {1, 0, 3, 4, 0, 6})));
  CHECK(equal(where(mask, -1.f, a), Tensor<float>(Shape{2, 3}, {-1, 2, -1, -1, 5, -1})));
  CHECK(equal(where(a > 3.f, a, Tensor<float>(Shape{2, 1}, {7, 8})),
              Tensor<float>(Shape{2, 3}, {7, 7, 7, 4, 5, 6})));
  CHECK(equal(masked_fill(a, mask, 9.f), Tensor<float>(Shape{2, 3}, {9, 2, 9, 9, 5, 9})));
  Tensor<float> b = a.clone();
  CHECK(&masked_fill_(b, b > 4.f, 0.f) == &b);
  CHECK(equal(b, Tensor<float>(Shape{2, 3}, {1, 2, 3, 4, 0, 0})));
  // A mask that is the tensor itself is read as it was before the call.
  Tensor<bool> flags(Shape{4}, {true, false, true, false});
  masked_fill_(flags, flags.slice(0, std::nullopt, std::nullopt, -1), true);
  CHECK(equal(flags, Tensor<bool>(Shape{4}, {true, true, true, true})));
  // The mask broadcasts to x; x does not grow.
  TBATCH_CHECK_THROWS_WITH(
      masked_fill(Tensor<float>(Shape{3}, 1.f), Tensor<bool>(Shape{2, 3}, true), 0.f), ShapeError,
      "masked_fill: mask of shape [2, 3] does not broadcast to the shape [3]");
  // Random broadcast against a loop.
  std::mt19937 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    const BroadcastCase c = random_broadcast(rng);
    const auto cond = strided_tensor<bool>(c.a, rng, [&] { return rng() % 2 == 0; });
    const auto x =
        strided_tensor<std::int16_t>(c.b, rng, [&] { return random_value<std::int16_t>(rng); });
    const Tensor<std::int16_t> got = where(cond, x, std::int16_t(-100));
    check_against(got, cond.cast<std::int16_t>(), x,
                  [](std::int16_t c0, std::int16_t v) { return c0 != 0 ? v : std::int16_t(-100); });
  }
}

TEST_CASE("shapes that do not broadcast name both shapes and the dim", "[math]") {
  const Tensor<float> a(Shape{2, 3}, 1.f), b(Shape{4}, 1.f);
  TBATCH_CHECK_THROWS_WITH(
      a + b, ShapeError,
      "operator+: shapes [2, 3] and [4] cannot be broadcast together (dim 1: 3 vs 4)");
  TBATCH_CHECK_THROWS_WITH(a < b, ShapeError, "operator<: shapes [2, 3] and [4]");
  TBATCH_CHECK_THROWS_WITH(where(Tensor<bool>(Shape{5}, true), a, 0.f), ShapeError,
                           "where: shapes");
}

TEST_CASE("size-0 and 0-d operands", "[math]") {
  const Tensor<float> empty(Shape{0, 3});
  CHECK((empty + Tensor<float>(Shape{3}, 1.f)).shape() == Shape{0, 3});
  CHECK((exp(empty)).shape() == Shape{0, 3});
  const Tensor<double> s(Shape{}, 2.0);
  const Tensor<double> r = s * s + 1.0;
  CHECK(r.dim() == 0);
  CHECK(r.data()[0] == 5.0);
}

TEST_CASE("elementwise fuses an expression of several operands in one pass", "[math]") {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 30; ++trial) {
    const BroadcastCase c = random_broadcast(rng);
    const auto flags = strided_tensor<bool>(c.a, rng, [&] { return rng() % 2 == 0; });
    const auto x = strided_tensor<float>(c.b, rng, [&] { return random_value<float>(rng); });
    const auto k =
        strided_tensor<std::int32_t>(c.out, rng, [&] { return random_value<std::int32_t>(rng); });
    const Tensor<double> got = elementwise(
        [](bool f, float v, std::int32_t i) { return f ? double(v) * i : -1.0; }, flags, x, k);
    REQUIRE(got.shape() == c.out);
    for_each_index(got.shape(), [&](const auto& idx) {
      const double want =
          broadcast_at(flags, idx) ? double(broadcast_at(x, idx)) * broadcast_at(k, idx) : -1.0;
      REQUIRE(element_at(got, idx) == want);
    });
  }
  const Tensor<float> a(Shape{2, 2}, {1, 2, 3, 4}), b(Shape{2}, {10, 20}), z(Shape{2, 2}, 0.5f);
  CHECK(equal(addcmul(z, a, b), Tensor<float>(Shape{2, 2}, {10.5f, 40.5f, 30.5f, 80.5f})));
  CHECK(equal(addcmul(z, a, b, 0.5f), Tensor<float>(Shape{2, 2}, {5.5f, 20.5f, 15.5f, 40.5f})));
  TBATCH_CHECK_THROWS_WITH(
      elementwise([](float u, float v) { return u + v; }, a, Tensor<float>(Shape{3})), ShapeError,
      "elementwise: shapes [2, 2] and [3]");
}

TEST_CASE("large outputs written with streaming stores equal those written through the cache",
          "[math][streaming]") {
  std::mt19937 rng(17);
  // Odd sizes and a broadcast operand: runs start and end mid-line and span several chunks.
  // The binary operators stream; the functions, where and elementwise write through the cache
  // at any threshold, which the last lines check.
  const auto a =
      strided_tensor<float>(Shape{3, 2053}, rng, [&] { return random_value<float>(rng); });
  const auto b =
      strided_tensor<float>(Shape{2053}, rng, [&] { return random_value<float>(rng, true); });
  const auto d =
      strided_tensor<double>(Shape{5, 777}, rng, [&] { return random_value<double>(rng); });
  const auto h =
      strided_tensor<Eigen::half>(Shape{4099}, rng, [&] { return random_value<Eigen::half>(rng); });
  tbatch::testing::check_streaming_matches_cached([&] { return a + b; });
  tbatch::testing::check_streaming_matches_cached([&] { return a / b; });
  tbatch::testing::check_streaming_matches_cached([&] { return a < b; });
  tbatch::testing::check_streaming_matches_cached([&] { return exp(d); });
  tbatch::testing::check_streaming_matches_cached([&] { return sigmoid(a); });
  tbatch::testing::check_streaming_matches_cached([&] { return h * 3.f; });
  tbatch::testing::check_streaming_matches_cached([&] { return where(a > 0.f, a, b); });
  tbatch::testing::check_streaming_matches_cached(
      [&] { return elementwise([](float x, float y) { return x * y + 1.f; }, a, b); });
}

// Golden cases from torch: tests/golden/math_golden.txt, written by make_math_golden.py.
#ifndef TBATCH_MATH_GOLDEN_DIR
#error "TBATCH_MATH_GOLDEN_DIR must name tests/golden"
#endif

namespace {

struct GoldenTensor {
  Shape shape;
  std::vector<double> values;  // exact for every value of the dtypes used
};

struct GoldenCase {
  std::string name, op, dtype;
  std::map<std::string, GoldenTensor> tensors;  // a, b, c, out
};

std::vector<GoldenCase> read_math_golden() {
  std::ifstream in(std::string(TBATCH_MATH_GOLDEN_DIR) + "/math_golden.txt");
  REQUIRE(in.good());
  std::vector<GoldenCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    if (tag == "case") {
      cases.emplace_back();
      words >> cases.back().name >> cases.back().op >> cases.back().dtype;
      continue;
    }
    REQUIRE(!cases.empty());
    GoldenTensor t;
    index_t rank = 0, numel = 0;
    words >> rank;
    for (index_t d = 0; d < rank; ++d) {
      index_t size = 0;
      words >> size;
      t.shape.push_back(size);
    }
    words >> numel;
    for (index_t i = 0; i < numel; ++i) {
      std::string word;
      words >> word;
      t.values.push_back(std::strtod(word.c_str(), nullptr));
    }
    REQUIRE(static_cast<index_t>(t.values.size()) == t.shape.numel());
    cases.back().tensors[tag] = t;
  }
  return cases;
}

template <class T>
Tensor<T> golden_tensor(const GoldenTensor& g) {
  Tensor<T> t(g.shape);
  for (std::size_t i = 0; i < g.values.size(); ++i) {
    if constexpr (FloatingElement<T>)
      t.data()[i] = static_cast<T>(static_cast<float>(g.values[i]));
    else
      t.data()[i] = static_cast<T>(static_cast<std::int64_t>(g.values[i]));
  }
  if constexpr (std::is_same_v<T, double>)
    for (std::size_t i = 0; i < g.values.size(); ++i)
      t.data()[i] = g.values[i];
  return t;
}

/// A golden reduction, softmax or scan: op "<name>@<dims>", dims "all" or a comma-separated list.
template <class T>
void run_golden_reduction(const GoldenCase& c) {
  const std::size_t at = c.op.find('@');
  const std::string name = c.op.substr(0, at), spec = c.op.substr(at + 1);
  std::vector<index_t> dims;
  if (spec != "all") {
    std::istringstream list(spec);
    for (std::string d; std::getline(list, d, ',');)
      dims.push_back(std::stoll(d));
  }
  const Tensor<T> a = golden_tensor<T>(c.tensors.at("a"));
  const bool every = dims.empty();
  auto reduce = [&](auto fn_all, auto fn_dims) {
    return every ? fn_all(a).template cast<double>()
                 : fn_dims(a, Dims(dims)).template cast<double>();
  };
  std::optional<Tensor<double>> got;
  bool exact = !FloatingElement<T>;
  if (name == "sum")
    got = reduce([](const auto& x) { return sum(x); },
                 [](const auto& x, const Dims& d) { return sum(x, d); });
  if (name == "cumsum") got = cumsum(a, dims.at(0)).template cast<double>();
  if constexpr (ArithmeticElement<T>) {
    if (name == "prod")
      got = reduce([](const auto& x) { return prod(x); },
                   [](const auto& x, const Dims& d) { return prod(x, d); });
    if (name == "amax")
      got = reduce([](const auto& x) { return amax(x); },
                   [](const auto& x, const Dims& d) { return amax(x, d); });
    if (name == "argmax" || name == "argmin") {
      const bool largest = name == "argmax";
      got = (every ? (largest ? argmax(a) : argmin(a))
                   : (largest ? argmax(a, dims.at(0)) : argmin(a, dims.at(0))))
                .template cast<double>();
      exact = true;
    }
  }
  if constexpr (FloatingElement<T>) {
    if (name == "softmax") got = softmax(a, dims.at(0)).template cast<double>();
    if (name == "log_softmax") got = log_softmax(a, dims.at(0)).template cast<double>();
    if (name == "mean")
      got = reduce([](const auto& x) { return mean(x); },
                   [](const auto& x, const Dims& d) { return mean(x, d); });
    if (name == "logsumexp")
      got = reduce([](const auto& x) { return logsumexp(x); },
                   [](const auto& x, const Dims& d) { return logsumexp(x, d); });
  }
  REQUIRE(got.has_value());
  const GoldenTensor& want = c.tensors.at("out");
  REQUIRE(got->shape() == want.shape);
  // Within four units in the last place of T: the order of a sum and exp's rounding differ.
  const double ulp = std::is_same_v<T, Eigen::half> ? 0x1p-10
                     : std::is_same_v<T, float>     ? 0x1p-23
                     : std::is_same_v<T, double>    ? 0x1p-52
                                                    : 0.0;
  for (std::size_t i = 0; i < want.values.size(); ++i) {
    const double g = got->data()[i], w = want.values[i];
    INFO("element " << i << ": got " << g << ", torch " << w);
    if (std::isnan(w))
      CHECK(std::isnan(g));
    else if (exact)
      CHECK(g == w);
    else
      CHECK(std::abs(g - w) <= 4 * ulp * std::max(std::abs(w), 1.0));
  }
}

template <class T>
void run_golden(const GoldenCase& c) {
  INFO("golden case " << c.name);
  if (c.op.find('@') != std::string::npos) {
    run_golden_reduction<T>(c);
    return;
  }
  const Tensor<T> a = golden_tensor<T>(c.tensors.at("a"));
  auto b = [&] { return golden_tensor<T>(c.tensors.at("b")); };
  const std::map<std::string, std::function<Tensor<T>()>> ops = [&] {
    std::map<std::string, std::function<Tensor<T>()>> m;
    if constexpr (ArithmeticElement<T>) {
      m["add"] = [&] { return a + b(); };
      m["sub"] = [&] { return a - b(); };
      m["mul"] = [&] { return a * b(); };
      m["div"] = [&] { return a / b(); };
      m["minimum"] = [&] { return minimum(a, b()); };
      m["maximum"] = [&] { return maximum(a, b()); };
      m["pow"] = [&] { return pow(a, b()); };
      m["round"] = [&] { return round(a); };
      m["sign"] = [&] { return sign(a); };
      m["where"] = [&] {
        return where(golden_tensor<std::uint8_t>(c.tensors.at("c")) != std::uint8_t(0), a, b());
      };
    }
    if constexpr (FloatingElement<T>) {
      m["exp"] = [&] { return exp(a); };
      m["sqrt"] = [&] { return sqrt(a); };
      m["log"] = [&] { return log(a); };
      m["tanh"] = [&] { return tanh(a); };
      m["sigmoid"] = [&] { return sigmoid(a); };
      m["sin"] = [&] { return sin(a); };
    }
    return m;
  }();
  const GoldenTensor& want = c.tensors.at("out");
  if (c.op == "lt" || c.op == "eq") {
    const Tensor<bool> got = c.op == "lt" ? a < b() : a == b();
    REQUIRE(equal(got, golden_tensor<bool>(want)));
    return;
  }
  REQUIRE(ops.count(c.op) == 1);
  const Tensor<T> got = ops.at(c.op)();
  REQUIRE(got.shape() == want.shape);
  // Transcendental functions: within one unit in the last place of T (Eigen's, the standard
  // library's and torch's vectorised functions round differently); the rest exactly.
  const bool transcendental = c.op == "exp" || c.op == "sqrt" || c.op == "log" || c.op == "tanh" ||
                              c.op == "sigmoid" || c.op == "sin" || c.op == "pow";
  for (std::size_t i = 0; i < want.values.size(); ++i) {
    const double g = static_cast<double>(static_cast<float>(got.data()[i]));
    const double w = want.values[i];
    INFO("element " << i << ": got " << g << ", torch " << w);
    if (std::isnan(w)) {
      CHECK(std::isnan(g));
    } else if (transcendental) {
      const double ulp = std::is_same_v<T, Eigen::half>       ? 0x1p-10
                         : std::is_same_v<T, Eigen::bfloat16> ? 0x1p-7
                                                              : 0x1p-23;
      CHECK(std::abs(g - w) <= ulp * std::max(std::abs(w), 0x1p-14));
    } else {
      CHECK((g == w && std::signbit(g) == std::signbit(w)));
    }
  }
}

}  // namespace

TEST_CASE("golden cases from torch", "[math][golden]") {
  const std::vector<GoldenCase> cases = read_math_golden();
  REQUIRE(cases.size() >= 65);
  for (const GoldenCase& c : cases) {
    if (c.dtype == "float32")
      run_golden<float>(c);
    else if (c.dtype == "float64")
      run_golden<double>(c);
    else if (c.dtype == "float16")
      run_golden<Eigen::half>(c);
    else if (c.dtype == "bfloat16")
      run_golden<Eigen::bfloat16>(c);
    else if (c.dtype == "int8")
      run_golden<std::int8_t>(c);
    else if (c.dtype == "int16")
      run_golden<std::int16_t>(c);
    else if (c.dtype == "int32")
      run_golden<std::int32_t>(c);
    else if (c.dtype == "int64")
      run_golden<std::int64_t>(c);
    else if (c.dtype == "uint8")
      run_golden<std::uint8_t>(c);
    else
      FAIL("unknown dtype " << c.dtype);
  }
}
