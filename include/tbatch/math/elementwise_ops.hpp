#pragma once
// The elementwise operations as functors: what one element of `a + b`, `x < y` or `exp(x)` is,
// for every element type that accepts the operation. The kernels (elementwise_kernel.hpp) run
// them over views; this file holds only the arithmetic and its edge cases.
//
// Results follow torch on CPU: float16 and bfloat16 are computed in float and rounded back;
// integer +, -, *, negation and abs wrap modulo 2^N (C++ leaves signed overflow undefined, so
// they are computed in an unsigned type); integer division truncates toward zero and
// INT_MIN / -1 wraps to INT_MIN; minimum, maximum and clamp propagate NaN.

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tbatch/base/dtype.hpp"

namespace tbatch::detail {

/// The type an element of T is computed in: float for the 16-bit floats, T otherwise.
template <class T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>, float,
                       T>;

/// The unsigned type in which integer arithmetic on T wraps (at least 32 bits, so that no
/// operand is promoted to a signed int that could overflow).
template <class T>
using WrapType = std::conditional_t<(sizeof(T) <= 4), std::uint32_t, std::uint64_t>;

template <class T>
T wrapping_negate(T x) {
  return static_cast<T>(WrapType<T>(0) - static_cast<WrapType<T>>(x));
}

enum class BinaryOp : int {
  add,
  sub,
  mul,
  div,
  minimum,
  maximum,
  pow,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  logical_and,
  logical_or
};
enum class UnaryOp : int {
  neg,
  abs,
  sign,
  sqrt,
  rsqrt,
  exp,
  expm1,
  log,
  log1p,
  sin,
  cos,
  tanh,
  sigmoid,
  relu,
  floor,
  ceil,
  round,
  logical_not,
  clamp
};

/// True for the comparisons, whose result is bool.
constexpr bool is_comparison(BinaryOp op) {
  return op == BinaryOp::eq || op == BinaryOp::ne || op == BinaryOp::lt || op == BinaryOp::le ||
         op == BinaryOp::gt || op == BinaryOp::ge;
}

/// True when binary operation Op is defined on T: arithmetic on the arithmetic types,
/// comparisons on all twelve, the logical operations on bool.
template <BinaryOp Op, class T>
constexpr bool binary_accepts() {
  if constexpr (is_comparison(Op))
    return Element<T>;
  else if constexpr (Op == BinaryOp::logical_and || Op == BinaryOp::logical_or)
    return std::is_same_v<T, bool>;
  else
    return ArithmeticElement<T>;
}

/// True for the transcendental functions, defined on the floating types only.
constexpr bool is_transcendental(UnaryOp op) {
  switch (op) {
    case UnaryOp::sqrt:
    case UnaryOp::rsqrt:
    case UnaryOp::exp:
    case UnaryOp::expm1:
    case UnaryOp::log:
    case UnaryOp::log1p:
    case UnaryOp::sin:
    case UnaryOp::cos:
    case UnaryOp::tanh:
    case UnaryOp::sigmoid:
      return true;
    default:
      return false;
  }
}

/// True when unary operation Op is defined on T: the transcendental functions on the floating
/// types, the logical not on bool, the others on the arithmetic types.
template <UnaryOp Op, class T>
constexpr bool unary_accepts() {
  if constexpr (is_transcendental(Op))
    return FloatingElement<T>;
  else if constexpr (Op == UnaryOp::logical_not)
    return std::is_same_v<T, bool>;
  else
    return ArithmeticElement<T>;
}

/// The result type of binary operation Op on T.
template <BinaryOp Op, class T>
using BinaryResult = std::conditional_t<is_comparison(Op), bool, T>;

/// NaN test, false for every non-floating type.
template <class T>
bool is_nan(const T& value) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(value);
  else if constexpr (std::is_same_v<T, Eigen::half>)  // exponent all ones, mantissa not zero
    return (std::bit_cast<std::uint16_t>(value.x) & 0x7fff) > 0x7c00;  // x: __fp16 on some ARM
  else if constexpr (FloatingElement<T>)                               // bfloat16
    return std::isnan(static_cast<float>(value));
  else
    return false;
}

/// c ? x : y without a branch: the bits of x or y chosen by a mask, which vectorises (a branch
/// on random conditions mispredicts every other element).
template <class T>
T select(bool c, T x, T y) {
  using Bits = std::conditional_t<
      sizeof(T) == 1, std::uint8_t,
      std::conditional_t<sizeof(T) == 2, std::uint16_t,
                         std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
  static_assert(sizeof(Bits) == sizeof(T));
  const auto xb = std::bit_cast<Bits>(x), yb = std::bit_cast<Bits>(y);
  const auto mask = static_cast<Bits>(Bits(0) - static_cast<Bits>(c));
  return std::bit_cast<T>(static_cast<Bits>((xb & mask) | (yb & static_cast<Bits>(~mask))));
}

/// Integer power by squaring, wrapping; `e` >= 0 (the caller rejects negative exponents).
template <class T>
T integer_pow(T base, T e) {
  WrapType<T> result = 1, b = static_cast<WrapType<T>>(base);
  auto n = static_cast<std::make_unsigned_t<T>>(e);
  while (n != 0) {
    if (n & 1u) result *= b;
    b *= b;
    n >>= 1;
  }
  return static_cast<T>(result);
}

/// One element of binary operation Op on a and b.
template <BinaryOp Op, class T>
BinaryResult<Op, T> apply_binary(T a, T b) {
  using C = ComputeType<T>;
  if constexpr (Op == BinaryOp::logical_and) {
    return a && b;
  } else if constexpr (Op == BinaryOp::logical_or) {
    return a || b;
  } else if constexpr (is_comparison(Op)) {
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    if constexpr (Op == BinaryOp::eq) return x == y;
    if constexpr (Op == BinaryOp::ne) return x != y;
    if constexpr (Op == BinaryOp::lt) return x < y;
    if constexpr (Op == BinaryOp::le) return x <= y;
    if constexpr (Op == BinaryOp::gt) return x > y;
    if constexpr (Op == BinaryOp::ge) return x >= y;
  } else if constexpr (std::is_integral_v<T>) {
    using W = WrapType<T>;
    if constexpr (Op == BinaryOp::add) return static_cast<T>(W(a) + W(b));
    if constexpr (Op == BinaryOp::sub) return static_cast<T>(W(a) - W(b));
    if constexpr (Op == BinaryOp::mul) return static_cast<T>(W(a) * W(b));
    if constexpr (Op == BinaryOp::div) {
      // The caller rejects zero divisors; -1 is the one divisor whose quotient can overflow.
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrapping_negate(a);
      return b == T(0) ? T(0) : static_cast<T>(a / b);
    }
    if constexpr (Op == BinaryOp::minimum) return b < a ? b : a;
    if constexpr (Op == BinaryOp::maximum) return a < b ? b : a;
    if constexpr (Op == BinaryOp::pow) {
      if constexpr (std::is_signed_v<T>)
        if (b < T(0)) return T(0);  // rejected by the caller; never a negative shift count
      return integer_pow(a, b);
    }
  } else {
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    C r;
    if constexpr (Op == BinaryOp::add) r = x + y;
    if constexpr (Op == BinaryOp::sub) r = x - y;
    if constexpr (Op == BinaryOp::mul) r = x * y;
    if constexpr (Op == BinaryOp::div) r = x / y;
    if constexpr (Op == BinaryOp::minimum) r = is_nan(x) ? x : (y < x || is_nan(y) ? y : x);
    if constexpr (Op == BinaryOp::maximum) r = is_nan(x) ? x : (x < y || is_nan(y) ? y : x);
    if constexpr (Op == BinaryOp::pow) r = std::pow(x, y);
    return static_cast<T>(r);
  }
}

/// The parameters of the unary operations that take some (clamp's bounds), as T.
template <class T>
struct UnaryParams {
  T lo{}, hi{};
};

/// One element of unary operation Op on x.
template <UnaryOp Op, class T>
T apply_unary(T x, const UnaryParams<T>& params) {
  using C = ComputeType<T>;
  if constexpr (Op == UnaryOp::logical_not) {
    return !x;
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (Op == UnaryOp::neg) return wrapping_negate(x);
    if constexpr (Op == UnaryOp::abs) {
      if constexpr (std::is_signed_v<T>)
        return x < T(0) ? wrapping_negate(x) : x;
      else
        return x;
    }
    if constexpr (Op == UnaryOp::sign) {
      if constexpr (std::is_signed_v<T>)
        return static_cast<T>((T(0) < x) - (x < T(0)));
      else
        return static_cast<T>(T(0) < x);
    }
    if constexpr (Op == UnaryOp::relu) return x < T(0) ? T(0) : x;
    if constexpr (Op == UnaryOp::floor || Op == UnaryOp::ceil || Op == UnaryOp::round) return x;
    if constexpr (Op == UnaryOp::clamp) {
      const T low = x < params.lo ? params.lo : x;
      return params.hi < low ? params.hi : low;
    }
  } else {
    const C v = static_cast<C>(x);
    C r;
    if constexpr (Op == UnaryOp::neg) r = -v;
    if constexpr (Op == UnaryOp::abs) r = std::abs(v);
    if constexpr (Op == UnaryOp::sign)
      r = v > C(0) ? C(1) : (v < C(0) ? C(-1) : C(0));  // torch: NaN, -0 give 0
    if constexpr (Op == UnaryOp::sqrt) r = std::sqrt(v);
    if constexpr (Op == UnaryOp::rsqrt) r = C(1) / std::sqrt(v);
    if constexpr (Op == UnaryOp::exp) r = std::exp(v);
    if constexpr (Op == UnaryOp::expm1) r = std::expm1(v);
    if constexpr (Op == UnaryOp::log) r = std::log(v);
    if constexpr (Op == UnaryOp::log1p) r = std::log1p(v);
    if constexpr (Op == UnaryOp::sin) r = std::sin(v);
    if constexpr (Op == UnaryOp::cos) r = std::cos(v);
    if constexpr (Op == UnaryOp::tanh) r = std::tanh(v);
    if constexpr (Op == UnaryOp::sigmoid) r = C(1) / (C(1) + std::exp(-v));
    if constexpr (Op == UnaryOp::relu) r = v < C(0) ? C(0) : v;
    if constexpr (Op == UnaryOp::floor) r = std::floor(v);
    if constexpr (Op == UnaryOp::ceil) r = std::ceil(v);
    if constexpr (Op == UnaryOp::round) r = std::nearbyint(v);  // half to even, as torch
    if constexpr (Op == UnaryOp::clamp) {
      const C lo = static_cast<C>(params.lo), hi = static_cast<C>(params.hi);
      r = is_nan(v) ? v : (v < lo ? lo : v);
      r = is_nan(r) ? r : (hi < r ? hi : r);
    }
    return static_cast<T>(r);
  }
}

}  // namespace tbatch::detail
