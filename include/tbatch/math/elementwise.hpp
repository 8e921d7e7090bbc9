#pragma once
// Elementwise maths on Tensor<T>: the arithmetic operators with torch's broadcasting and
// scalars on either side, the in-place operators, the comparisons (Tensor<bool>), the logical
// operations, the unary functions, minimum / maximum / pow / clamp, where and masked_fill.
// docs/math.md is the guide: broadcasting, result types, the differences from torch.

#include <type_traits>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/math/elementwise_kernel.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/math/map_views.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

/// The type of a scalar operand of a Tensor<T>: T, or float for float16 / bfloat16 (which
/// convert to float implicitly but not back). It is converted to T before the operation.
template <class T>
using ScalarOf = std::type_identity_t<detail::ComputeType<T>>;

namespace detail {

/// `t`'s elements broadcast to `shape`: ShapeError naming `function` and `name` otherwise.
template <class T>
StridedView<const T> broadcast_view(const Tensor<T>& t, const Shape& shape, const char* function,
                                    const char* name) {
  return StridedView<const T>(t.element_pointer(),
                              layout::broadcast(t.layout(), shape, function, name));
}

/// Integer division by zero and integer powers with a negative exponent have no integer result:
/// ValueError naming the first such element of `b` (row-major) before anything is written.
template <BinaryOp Op, class T>
void check_operand(const char* function, const StridedView<const T>& b, const char* name) {
  if constexpr (std::is_integral_v<T> && (Op == BinaryOp::div || Op == BinaryOp::pow)) {
    auto bad = [](T v) {
      if constexpr (Op == BinaryOp::div)
        return v == T(0);
      else if constexpr (std::is_signed_v<T>)
        return v < T(0);
      else
        return false;
    };
    bool found = false;
    for_each([&](const T& v) { found = found || bad(v); }, b);
    if (!found) return;
    const Layout& l = b.layout();
    for (index_t flat = 0; flat < l.shape.numel(); ++flat) {
      index_t offset = l.offset;
      std::vector<index_t> position(l.shape.size());
      unravel_index(l.shape, flat, [&](std::size_t d, index_t i) {
        position[d] = i;
        offset += i * l.strides[d];
      });
      const T v = b.element_pointer()[offset];
      if (!bad(v)) continue;
      if constexpr (Op == BinaryOp::div)
        fail<ValueError>(function,
                         {"integer division by zero: the divisor ", name, " is 0 at position ",
                          listed(position), " (", dtype_name_of<T>, ")"});
      else
        fail<ValueError>(function, {"integer power with a negative exponent: ", name, " is ",
                                    widen(v), " at position ", listed(position), " (",
                                    dtype_name_of<T>, "; cast to a floating type first)"});
    }
  }
}

/// Operation Op on a and b broadcast together, into a new contiguous tensor.
template <BinaryOp Op, class T>
Tensor<BinaryResult<Op, T>> binary(const char* function, const StridedView<const T>& a,
                                   const StridedView<const T>& b) {
  const Shape shape = layout::broadcast_shapes(a.shape(), b.shape(), function);
  check_operand<Op>(function, b, "b");
  Tensor<BinaryResult<Op, T>> out = Tensor<BinaryResult<Op, T>>::empty(shape);
  run_binary<Op, T>(StridedView<const T>(a.element_pointer(),
                                         layout::broadcast(a.layout(), shape, function, "a")),
                    StridedView<const T>(b.element_pointer(),
                                         layout::broadcast(b.layout(), shape, function, "b")),
                    out.view());
  return out;
}

/// `input` viewed at `shape` for a kernel writing `out` in place: itself when it holds the
/// output's elements position for position or none of them, a broadcast copy otherwise (rule 2
/// of view/aliasing.hpp); `staging` keeps the copy alive.
template <class S, class D>
StridedView<const S> in_place_input(const StridedView<const S>& input, const StridedView<D>& out,
                                    const char* function, const char* name, Tensor<S>& staging) {
  StridedView<const S> view(input.element_pointer(),
                            layout::broadcast(input.layout(), out.shape(), function, name));
  if (std::is_same_v<S, D> && same_elements(view.element_pointer(), view.layout(),
                                            out.element_pointer(), out.layout(), sizeof(S)))
    return view;
  if (!may_share_elements(view, out)) return view;
  staging = Tensor<S>::from_view(input);
  return StridedView<const S>(staging.element_pointer(),
                              layout::broadcast(staging.layout(), out.shape(), function, name));
}

/// a = a Op b, b broadcast to a's shape; a must not hold an element twice (rule 1).
template <BinaryOp Op, class T>
void binary_in_place(const char* function, Tensor<T>& a, const StridedView<const T>& b) {
  const StridedView<T> out = a.view();
  check_distinct_elements(out, function, "the tensor written in place");
  check_operand<Op>(function, b, "b");
  Tensor<T> staging;
  run_binary<Op, T>(StridedView<const T>(out), in_place_input(b, out, function, "b", staging), out);
}

template <UnaryOp Op, class T>
Tensor<T> unary(const Tensor<T>& x, const UnaryParams<T>& params = {}) {
  Tensor<T> out = Tensor<T>::empty(x.shape());
  run_unary<Op, T>(x.view(), out.view(), params);
  return out;
}

}  // namespace detail

// The binary operators, with a tensor or a scalar on either side: the arithmetic ones for the
// arithmetic element types (not bool; integer division truncates toward zero and a zero
// divisor is a ValueError naming its position), the comparisons for all twelve, giving
// Tensor<bool> (NaN compares unequal to everything; equal(a, b) compares whole tensors).
#define TBATCH_DETAIL_BINARY_OPERATOR(symbol, op, Concept)                                    \
  template <Concept T>                                                                        \
  Tensor<detail::BinaryResult<detail::BinaryOp::op, T>> operator symbol(const Tensor<T>& a,   \
                                                                        const Tensor<T>& b) { \
    return detail::binary<detail::BinaryOp::op, T>("operator" #symbol, a.view(), b.view());   \
  }                                                                                           \
  template <Concept T>                                                                        \
  Tensor<detail::BinaryResult<detail::BinaryOp::op, T>> operator symbol(const Tensor<T>& a,   \
                                                                        ScalarOf<T> b) {      \
    const T value = detail::cast_element<T>(b);                                               \
    return detail::binary<detail::BinaryOp::op, T>("operator" #symbol, a.view(),              \
                                                   detail::broadcast_value(value, Shape{}));  \
  }                                                                                           \
  template <Concept T>                                                                        \
  Tensor<detail::BinaryResult<detail::BinaryOp::op, T>> operator symbol(ScalarOf<T> a,        \
                                                                        const Tensor<T>& b) { \
    const T value = detail::cast_element<T>(a);                                               \
    return detail::binary<detail::BinaryOp::op, T>(                                           \
        "operator" #symbol, detail::broadcast_value(value, Shape{}), b.view());               \
  }                                                                                           \
  template <class T, class U>                                                                 \
  requires(!std::is_same_v<T, U>) void operator symbol(const Tensor<T>&, const Tensor<U>&) {  \
    static_assert(detail::dependent_false<U>,                                                 \
                  "tbatch: the operands have different element types; convert one with "      \
                  "cast<U>() first");                                                         \
  }

// a op= b: b (a tensor or a scalar) broadcasts to a's shape; a must not hold an element twice.
#define TBATCH_DETAIL_IN_PLACE_OPERATOR(symbol, op)                                            \
  template <ArithmeticElement T>                                                               \
  Tensor<T>& operator symbol##=(Tensor<T>& a, const Tensor<T>& b) {                            \
    detail::binary_in_place<detail::BinaryOp::op, T>("operator" #symbol "=", a, b.view());     \
    return a;                                                                                  \
  }                                                                                            \
  template <ArithmeticElement T>                                                               \
  Tensor<T>& operator symbol##=(Tensor<T>& a, ScalarOf<T> b) {                                 \
    const T value = detail::cast_element<T>(b);                                                \
    detail::binary_in_place<detail::BinaryOp::op, T>("operator" #symbol "=", a,                \
                                                     detail::broadcast_value(value, Shape{})); \
    return a;                                                                                  \
  }

TBATCH_DETAIL_BINARY_OPERATOR(+, add, ArithmeticElement)
TBATCH_DETAIL_BINARY_OPERATOR(-, sub, ArithmeticElement)
TBATCH_DETAIL_BINARY_OPERATOR(*, mul, ArithmeticElement)
TBATCH_DETAIL_BINARY_OPERATOR(/, div, ArithmeticElement)
TBATCH_DETAIL_BINARY_OPERATOR(==, eq, Element)
TBATCH_DETAIL_BINARY_OPERATOR(!=, ne, Element)
TBATCH_DETAIL_BINARY_OPERATOR(<, lt, Element)
TBATCH_DETAIL_BINARY_OPERATOR(<=, le, Element)
TBATCH_DETAIL_BINARY_OPERATOR(>, gt, Element)
TBATCH_DETAIL_BINARY_OPERATOR(>=, ge, Element)
TBATCH_DETAIL_IN_PLACE_OPERATOR(+, add)
TBATCH_DETAIL_IN_PLACE_OPERATOR(-, sub)
TBATCH_DETAIL_IN_PLACE_OPERATOR(*, mul)
TBATCH_DETAIL_IN_PLACE_OPERATOR(/, div)
#undef TBATCH_DETAIL_BINARY_OPERATOR
#undef TBATCH_DETAIL_IN_PLACE_OPERATOR

/// -x: wraps for integers (the negation of INT_MIN is INT_MIN, as torch).
template <ArithmeticElement T>
Tensor<T> operator-(const Tensor<T>& x) {
  return detail::unary<detail::UnaryOp::neg>(x);
}

// The unary functions. Those of the floating types only do not compile for others, with a
// message saying so: cast<float>() first (torch would promote).
#define TBATCH_DETAIL_UNARY_FUNCTION(name, message)                                       \
  template <Element T>                                                                    \
  Tensor<T> name(const Tensor<T>& x) {                                                    \
    static_assert(detail::unary_accepts<detail::UnaryOp::name, T>(), "tbatch: " message); \
    return detail::unary<detail::UnaryOp::name>(x);                                       \
  }
#define TBATCH_DETAIL_FLOATING_FUNCTION(name) \
  TBATCH_DETAIL_UNARY_FUNCTION(               \
      name, #name                             \
      " needs a floating element type (float, double, float16, bfloat16): cast<float>() first")
#define TBATCH_DETAIL_ARITHMETIC_FUNCTION(name) \
  TBATCH_DETAIL_UNARY_FUNCTION(name, #name " needs an arithmetic element type (not bool)")

TBATCH_DETAIL_ARITHMETIC_FUNCTION(neg)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(abs)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(sign)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(relu)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(floor)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(ceil)
TBATCH_DETAIL_ARITHMETIC_FUNCTION(round)
TBATCH_DETAIL_FLOATING_FUNCTION(sqrt)
TBATCH_DETAIL_FLOATING_FUNCTION(rsqrt)
TBATCH_DETAIL_FLOATING_FUNCTION(exp)
TBATCH_DETAIL_FLOATING_FUNCTION(expm1)
TBATCH_DETAIL_FLOATING_FUNCTION(log)
TBATCH_DETAIL_FLOATING_FUNCTION(log1p)
TBATCH_DETAIL_FLOATING_FUNCTION(sin)
TBATCH_DETAIL_FLOATING_FUNCTION(cos)
TBATCH_DETAIL_FLOATING_FUNCTION(tanh)
TBATCH_DETAIL_FLOATING_FUNCTION(sigmoid)
TBATCH_DETAIL_UNARY_FUNCTION(logical_not,
                             "logical_not needs a Tensor<bool> (compare first: x != 0)")
#undef TBATCH_DETAIL_ARITHMETIC_FUNCTION
#undef TBATCH_DETAIL_FLOATING_FUNCTION
#undef TBATCH_DETAIL_UNARY_FUNCTION

/// min(max(x, lo), hi) elementwise (hi wins when lo > hi, as torch); NaN stays NaN.
template <ArithmeticElement T>
Tensor<T> clamp(const Tensor<T>& x, ScalarOf<T> lo, ScalarOf<T> hi) {
  return detail::unary<detail::UnaryOp::clamp>(
      x, detail::UnaryParams<T>{detail::cast_element<T>(lo), detail::cast_element<T>(hi)});
}

// The binary functions, with broadcasting; NaN propagates through minimum and maximum.
#define TBATCH_DETAIL_BINARY_FUNCTION(name, message)                                        \
  template <Element T>                                                                      \
  Tensor<detail::BinaryResult<detail::BinaryOp::name, T>> name(const Tensor<T>& a,          \
                                                               const Tensor<T>& b) {        \
    static_assert(detail::binary_accepts<detail::BinaryOp::name, T>(), "tbatch: " message); \
    return detail::binary<detail::BinaryOp::name, T>(#name, a.view(), b.view());            \
  }
TBATCH_DETAIL_BINARY_FUNCTION(minimum, "minimum needs an arithmetic element type")
TBATCH_DETAIL_BINARY_FUNCTION(maximum, "maximum needs an arithmetic element type")
TBATCH_DETAIL_BINARY_FUNCTION(logical_and, "logical_and needs Tensor<bool> operands")
TBATCH_DETAIL_BINARY_FUNCTION(logical_or, "logical_or needs Tensor<bool> operands")
#undef TBATCH_DETAIL_BINARY_FUNCTION

/// a to the power b elementwise, broadcasting. Integers: exact, wrapping; a negative exponent
/// is a ValueError naming its position (cast to a floating type first).
template <ArithmeticElement T>
Tensor<T> pow(const Tensor<T>& a, const Tensor<T>& b) {
  return detail::binary<detail::BinaryOp::pow, T>("pow", a.view(), b.view());
}
template <ArithmeticElement T>
Tensor<T> pow(const Tensor<T>& a, ScalarOf<T> exponent) {
  const T value = detail::cast_element<T>(exponent);
  return detail::binary<detail::BinaryOp::pow, T>("pow", a.view(),
                                                  detail::broadcast_value(value, Shape{}));
}
template <ArithmeticElement T>
Tensor<T> pow(ScalarOf<T> base, const Tensor<T>& b) {
  const T value = detail::cast_element<T>(base);
  return detail::binary<detail::BinaryOp::pow, T>("pow", detail::broadcast_value(value, Shape{}),
                                                  b.view());
}

namespace detail {
template <class M>
void require_bool_mask() {
  static_assert(std::is_same_v<M, bool>,
                "tbatch: a mask or condition must be a Tensor<bool>: compare first (x != 0)");
}

template <class T>
Tensor<T> where_broadcast(const char* function, const Tensor<bool>& condition,
                          const StridedView<const T>& a, const StridedView<const T>& b) {
  const Shape shape = layout::broadcast_shapes(
      layout::broadcast_shapes(condition.shape(), a.shape(), function), b.shape(), function);
  Tensor<T> out = Tensor<T>::empty(shape);
  run_where<T>(broadcast_view(condition, shape, function, "condition"),
               StridedView<const T>(a.element_pointer(),
                                    layout::broadcast(a.layout(), shape, function, "a")),
               StridedView<const T>(b.element_pointer(),
                                    layout::broadcast(b.layout(), shape, function, "b")),
               out.view());
  return out;
}
}  // namespace detail

/// a where `condition` holds, b elsewhere; the three broadcast together (torch.where).
template <Element T, class M>
Tensor<T> where(const Tensor<M>& condition, const Tensor<T>& a, const Tensor<T>& b) {
  detail::require_bool_mask<M>();
  return detail::where_broadcast<T>("where", condition, a.view(), b.view());
}
template <Element T, class M>
Tensor<T> where(const Tensor<M>& condition, const Tensor<T>& a, ScalarOf<T> b) {
  detail::require_bool_mask<M>();
  const T value = detail::cast_element<T>(b);
  return detail::where_broadcast<T>("where", condition, a.view(),
                                    detail::broadcast_value(value, Shape{}));
}
template <Element T, class M>
Tensor<T> where(const Tensor<M>& condition, ScalarOf<T> a, const Tensor<T>& b) {
  detail::require_bool_mask<M>();
  const T value = detail::cast_element<T>(a);
  return detail::where_broadcast<T>("where", condition, detail::broadcast_value(value, Shape{}),
                                    b.view());
}

/// x with `value` where `mask` holds; mask broadcasts to x's shape (ShapeError otherwise).
template <Element T, class M>
Tensor<T> masked_fill(const Tensor<T>& x, const Tensor<M>& mask, ScalarOf<T> value) {
  detail::require_bool_mask<M>();
  const T v = detail::cast_element<T>(value);
  Tensor<T> out = Tensor<T>::empty(x.shape());
  detail::run_where<T>(detail::broadcast_view(mask, x.shape(), "masked_fill", "mask"),
                       detail::broadcast_value(v, x.shape()), x.view(), out.view());
  return out;
}

/// masked_fill in place: writes `value` into x where `mask` holds and returns x. x must not
/// hold an element twice (ValueError); a mask sharing elements with x is read as it was.
template <Element T, class M>
Tensor<T>& masked_fill_(Tensor<T>& x, const Tensor<M>& mask, ScalarOf<T> value) {
  detail::require_bool_mask<M>();
  const T v = detail::cast_element<T>(value);
  const StridedView<T> out = x.view();
  detail::check_distinct_elements(out, "masked_fill_", "x");
  Tensor<bool> staging;
  detail::run_where<T>(detail::in_place_input(mask.view(), out, "masked_fill_", "mask", staging),
                       detail::broadcast_value(v, x.shape()), StridedView<const T>(out), out);
  return x;
}

/// fn(elements...) for the operands broadcast together, computed in one pass into a new
/// contiguous tensor of fn's result type: a fused expression reads each input once and writes
/// once, where `a * b + c` makes two passes and a temporary.
///   Tensor<float> y = elementwise([](float a, float b, float c) { return a * b + c; }, a, b, c);
/// fn is called once per element (the order is unspecified) and must return one of the twelve
/// element types. ShapeError when the shapes do not broadcast.
template <class Fn, class... Ts>
requires(sizeof...(Ts) > 0 && Element<std::invoke_result_t<const Fn&, Ts...>>)
    Tensor<std::invoke_result_t<const Fn&, Ts...>> elementwise(const Fn& fn,
                                                               const Tensor<Ts>&... operands) {
  using R = std::invoke_result_t<const Fn&, Ts...>;
  Shape shape;
  ((shape = layout::broadcast_shapes(shape, operands.shape(), "elementwise")), ...);
  Tensor<R> out = Tensor<R>::empty(shape);
  detail::map_views("elementwise", fn, out.view(),
                    detail::broadcast_view(operands, shape, "elementwise", "an operand")...);
  return out;
}

/// c + value * a * b in one pass (torch.addcmul), broadcasting.
template <FloatingElement T>
Tensor<T> addcmul(const Tensor<T>& c, const Tensor<T>& a, const Tensor<T>& b,
                  ScalarOf<T> value = ScalarOf<T>(1)) {
  using C = detail::ComputeType<T>;
  const C scale = static_cast<C>(value);
  return elementwise(
      [scale](T z, T x, T y) {
        return static_cast<T>(static_cast<C>(z) + scale * static_cast<C>(x) * static_cast<C>(y));
      },
      c, a, b);
}

}  // namespace tbatch
