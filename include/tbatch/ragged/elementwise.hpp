#pragma once
// Elementwise maths on batches: the unary functions, the operators and comparisons of a batch
// with a batch of the same element shapes, a scalar, or a dense tensor that pairs with each
// element (its leading dim B), in place too, and masked_fill. Results keep the batch's layout
// and metadata; a padded result's padding is 0 and the op never reads padding. docs/ragged.md
// is the guide.

#include <optional>
#include <string>
#include <type_traits>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/ragged/batch_map.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/aliasing.hpp"

namespace tbatch {
namespace detail {

/// True for the ops whose right operand is checked value by value (integer division by zero,
/// integer pow with a negative exponent).
template <BinaryOp Op, class T>
inline constexpr bool checks_operand = std::is_integral_v<T> &&
                                       (Op == BinaryOp::div || Op == BinaryOp::pow);

/// check_operand on element i of a padded batch's operand, named after the element.
template <BinaryOp Op, class T>
void check_element_operand(const char* function, const StridedView<const T>& b, index_t i) {
  if constexpr (checks_operand<Op, T>)
    check_operand<Op>(function, b, ("element " + std::to_string(i) + " of b").c_str());
}

/// check_element_operand over every element of `x` (geometry g): a view per element, so only
/// for the ops that check (integer division and pow).
template <BinaryOp Op, class T>
void check_element_operands(const char* function, const Tensor<T>& x, const BatchGeometry& g,
                            index_t batch) {
  if constexpr (checks_operand<Op, T>)
    for (index_t i = 0; i < batch; ++i)
      check_element_operand<Op>(function, element_view(x, g, i), i);
}

/// A padded result of a's metadata and its data, padding included, to be written by the blocks
/// kernel (padded_rows' pad_to).
template <class R, class T>
std::pair<PaddedBatch<R>, Tensor<R>> padded_result(const PaddedBatch<T>& a) {
  PaddedBatch<R> out = with_metadata<R>(a, Tensor<R>::empty(a.data().shape()));
  Tensor<R> data = out.data();
  return {std::move(out), std::move(data)};
}

template <UnaryOp Op, LayoutBatch B>
B batch_unary(const B& x, const UnaryParams<ValueOf<B>>& params = {}) {
  using T = ValueOf<B>;
  if constexpr (kind_of<B> == BatchKind::padded) {
    auto [out, data] = padded_result<T>(x);
    if (const auto rows = padded_rows(out, x)) {
      run_unary_blocks<Op, T>(*rows, data.data(), x.data().data(), params);
      return out;
    }
  }
  auto run = [&](const StridedView<const T>& in, const StridedView<T>& out) {
    run_unary<Op, T>(in, out, params);
  };
  return map_batch<T>(
      x, run,
      [&](index_t, const StridedView<const T>& in, const StridedView<T>& out) { run(in, out); });
}

/// a Op b for batches of the same element shapes and layout.
template <BinaryOp Op, LayoutBatch B>
BatchOf<B, BinaryResult<Op, ValueOf<B>>> batch_binary(const char* function, const B& a,
                                                      const B& b) {
  using T = ValueOf<B>;
  using R = BinaryResult<Op, T>;
  check_same_elements(a, b, function);
  const BatchGeometry gb = geometry_of(b);
  if constexpr (kind_of<B> == BatchKind::padded) {
    auto [out, data] = padded_result<R>(a);
    if (const auto rows = padded_rows(out, a, b)) {
      check_element_operands<Op>(function, b.data(), gb, b.batch_size());
      run_binary_blocks<Op, T>(*rows, data.data(), a.data().data(), b.data().data());
      return out;
    }
  }
  return map_batch<BinaryResult<Op, T>>(
      a,
      [&](const StridedView<const T>& in, const StridedView<BinaryResult<Op, T>>& out) {
        check_operand<Op>(function, b.data().view(), "b");
        run_binary<Op, T>(in, b.data().view(), out);
      },
      [&](index_t i, const StridedView<const T>& in, const StridedView<BinaryResult<Op, T>>& out) {
        const StridedView<const T> bi = element_view(b.data(), gb, i);
        check_element_operand<Op>(function, bi, i);
        run_binary<Op, T>(in, bi, out);
      });
}

/// a Op value, or value Op a when `scalar_first`.
template <BinaryOp Op, LayoutBatch B>
BatchOf<B, BinaryResult<Op, ValueOf<B>>> batch_scalar(const char* function, const B& a,
                                                      ValueOf<B> value, bool scalar_first) {
  using T = ValueOf<B>;
  using R = BinaryResult<Op, T>;
  if constexpr (kind_of<B> == BatchKind::padded) {
    auto [out, data] = padded_result<R>(a);
    if (auto rows = padded_rows<1>(out, a)) {
      const StridedView<const T> v = broadcast_value(value, Shape{});
      if (scalar_first) {
        check_element_operands<Op>(function, a.data(), geometry_of(a), a.batch_size());
        std::swap(rows->start[1], rows->start[2]);
        std::swap(rows->row[1], rows->row[2]);
        std::swap(rows->col[1], rows->col[2]);
        run_binary_blocks<Op, T>(*rows, data.data(), &value, a.data().data());
      } else {
        check_operand<Op>(function, v, "b");
        run_binary_blocks<Op, T>(*rows, data.data(), a.data().data(), &value);
      }
      return out;
    }
  }
  auto run = [&](const StridedView<const T>& in, const StridedView<R>& out) {
    const StridedView<const T> v = broadcast_value(value, in.shape());
    if (scalar_first) {
      check_operand<Op>(function, in, "b");
      run_binary<Op, T>(v, in, out);
    } else {
      check_operand<Op>(function, v, "b");
      run_binary<Op, T>(in, v, out);
    }
  };
  return map_batch<R>(
      a, run,
      [&](index_t, const StridedView<const T>& in, const StridedView<R>& out) { run(in, out); });
}

/// batch_dense on (L_i, D) elements with D at stride 1, as blocks of rows (one kernel call for
/// all elements): slot i of dense (B, [rows,] [D or 1]) gives row i's values, broadcast or
/// paired row for row. nullopt when the layouts need the per-element pass.
template <BinaryOp Op, LayoutBatch B>
std::optional<BatchOf<B, BinaryResult<Op, ValueOf<B>>>> dense_blocks(
    const char* function, const B& a, const Tensor<ValueOf<B>>& dense, bool dense_first) {
  using T = ValueOf<B>;
  using R = BinaryResult<Op, T>;
  const index_t batch = a.batch_size(), width = a.last_dim(), rank = dense.dim();
  if (a.element_rank() != 2 || rank > 3 || batch == 0 || a.data().stride(-1) != 1) return {};
  const bool spread = rank == 1 || (dense.size(-1) == 1 && width != 1);
  if (rank > 1 && !spread && dense.size(-1) < width) return {};  // the per-element pass raises
  const index_t col = spread ? 0 : dense.stride(-1);
  if (col > 1 || col < 0) return {};
  const index_t slot_rows = rank == 3 ? dense.size(1) : 1;
  const index_t row = rank == 3 && slot_rows != 1 ? dense.stride(1) : 0;
  const BatchGeometry in = geometry_of(a);
  if (slot_rows != 1)
    for (index_t i = 0; i < batch; ++i)
      if (slot_rows < in.rows(i))
        fail<ShapeError>(function,
                         {"the dense operand's dim 1 has size ", slot_rows, " but element ", i,
                          " has shape ", a.shape_of(i), "; expected 1 (broadcast), ", in.rows(i),
                          " or more (a padded operand)"});
  // Every row of packed data is an element's; a padded result's slots are contiguous, and the
  // kernel writes each slot's padding (0) after its rows (pad_to), so nothing is written twice.
  BatchOf<B, R> out = with_metadata<R>(a, Tensor<R>::empty(a.data().shape()));
  const BatchGeometry result = geometry_of(out);
  const BlockStarts out_start = result.block_starts(), a_start = in.block_starts(),
                    d_start = BlockStarts::every(dense.stride(0));
  const index_t a_row = in.stride(0, 0), out_row = result.stride(0, 0);
  Tensor<R> data = out.data();
  const index_t pad_to = kind_of<B> == BatchKind::padded ? data.stride(0) : 0;
  if (dense_first)
    run_binary_blocks<Op, T>(RowBlocks<3>{{out_start, d_start, a_start},
                                          in.block_rows(),
                                          batch,
                                          width,
                                          {out_row, row, a_row},
                                          {1, col, 1},
                                          pad_to},
                             data.data(), dense.data(), a.data().data());
  else
    run_binary_blocks<Op, T>(RowBlocks<3>{{out_start, a_start, d_start},
                                          in.block_rows(),
                                          batch,
                                          width,
                                          {out_row, a_row, row},
                                          {1, 1, col},
                                          pad_to},
                             data.data(), a.data().data(), dense.data());
  return out;
}

/// a Op dense, or dense Op a when `dense_first`: slot i of dense (B, ...) pairs with element i
/// (paired_slot).
template <BinaryOp Op, LayoutBatch B>
BatchOf<B, BinaryResult<Op, ValueOf<B>>> batch_dense(const char* function, const B& a,
                                                     const Tensor<ValueOf<B>>& dense,
                                                     bool dense_first) {
  using T = ValueOf<B>;
  using R = BinaryResult<Op, T>;
  check_dense_operand(dense, a.batch_size(), function);
  auto run = [&](const StridedView<const T>& in, const StridedView<const T>& d,
                 const StridedView<R>& out) {
    if (dense_first) {
      check_operand<Op>(function, in, "b");
      run_binary<Op, T>(d, in, out);
    } else {
      check_operand<Op>(function, d, "b");
      run_binary<Op, T>(in, d, out);
    }
  };
  if constexpr (kind_of<B> == BatchKind::exact) {
    Tensor<R> out = Tensor<R>::empty(a.data().shape());
    run(a.data().view(),
        StridedView<const T>(dense.element_pointer(),
                             paired_exact(dense, a.data().shape(), function)),
        out.view());
    return with_metadata<R>(a, std::move(out));
  } else {
    constexpr bool checked = std::is_integral_v<T> && (Op == BinaryOp::div || Op == BinaryOp::pow);
    if constexpr (!checked) {
      std::optional<BatchOf<B, R>> out = dense_blocks<Op>(function, a, dense, dense_first);
      if (out) return *std::move(out);
    }
    return per_element<R>(
        a, [&](index_t i, const StridedView<const T>& in, const StridedView<R>& out) {
          run(in, paired_view(dense, i, in.shape(), function), out);
        });
  }
}

/// a = a Op b on a's elements: view_of(i, target) gives b's view for element i of a (`target`
/// its view), or for a's whole data with i = -1 when `whole` (exact and packed batches only).
/// Padding is left as it was.
template <BinaryOp Op, LayoutBatch B, class OperandOf>
void batch_in_place(const char* function, const B& a, bool whole, const OperandOf& view_of) {
  using T = ValueOf<B>;
  auto update = [&](Tensor<T> target, index_t i) {
    binary_in_place<Op, T>(function, target, view_of(i, target.view()));
  };
  if (whole && kind_of<B> != BatchKind::padded) {
    update(a.data(), -1);
    return;
  }
  const BatchGeometry g = geometry_of(a);
  for (index_t i = 0; i < a.batch_size(); ++i)
    update(a.data().with_layout(g.element(i)), i);
}

template <class M>
void require_bool_batch() {
  static_assert(std::is_same_v<M, bool>,
                "tbatch: a mask must be a batch of bool: compare first (batch > 0.f)");
}

}  // namespace detail

// The operators on batches, for each layout: batch Op batch (the same element shapes: ShapeError
// naming the first element that differs), batch Op scalar, scalar Op batch, and batch Op dense /
// dense Op batch with a dense (B, ...) tensor whose slot i pairs with element i (its dims
// broadcast against the element's, or are at least the element's sizes: a padded array).
#define TBATCH_DETAIL_BATCH_OPERATOR(symbol, op, Concept)                                    \
  template <LayoutBatch B>                                                                   \
  requires Concept<typename B::value_type>                                                   \
      BatchOf<B, detail::BinaryResult<detail::BinaryOp::op, typename B::value_type>>         \
  operator symbol(const B& a, const B& b) {                                                  \
    return detail::batch_binary<detail::BinaryOp::op>("operator" #symbol, a, b);             \
  }                                                                                          \
  template <LayoutBatch B>                                                                   \
  requires Concept<typename B::value_type>                                                   \
      BatchOf<B, detail::BinaryResult<detail::BinaryOp::op, typename B::value_type>>         \
  operator symbol(const B& a, ScalarOf<typename B::value_type> b) {                          \
    return detail::batch_scalar<detail::BinaryOp::op>(                                       \
        "operator" #symbol, a, detail::cast_element<typename B::value_type>(b), false);      \
  }                                                                                          \
  template <LayoutBatch B>                                                                   \
  requires Concept<typename B::value_type>                                                   \
      BatchOf<B, detail::BinaryResult<detail::BinaryOp::op, typename B::value_type>>         \
  operator symbol(ScalarOf<typename B::value_type> a, const B& b) {                          \
    return detail::batch_scalar<detail::BinaryOp::op>(                                       \
        "operator" #symbol, b, detail::cast_element<typename B::value_type>(a), true);       \
  }                                                                                          \
  template <LayoutBatch B>                                                                   \
  requires Concept<typename B::value_type>                                                   \
      BatchOf<B, detail::BinaryResult<detail::BinaryOp::op, typename B::value_type>>         \
  operator symbol(const B& a, const Tensor<typename B::value_type>& b) {                     \
    return detail::batch_dense<detail::BinaryOp::op>("operator" #symbol, a, b, false);       \
  }                                                                                          \
  template <LayoutBatch B>                                                                   \
  requires Concept<typename B::value_type>                                                   \
      BatchOf<B, detail::BinaryResult<detail::BinaryOp::op, typename B::value_type>>         \
  operator symbol(const Tensor<typename B::value_type>& a, const B& b) {                     \
    return detail::batch_dense<detail::BinaryOp::op>("operator" #symbol, b, a, true);        \
  }                                                                                          \
  template <LayoutBatch A, LayoutBatch B>                                                    \
  requires(!std::is_same_v<A, B>) void operator symbol(const A&, const B&) {                 \
    static_assert(detail::dependent_false<B>,                                                \
                  "tbatch: the batches differ in layout or element type; convert one first " \
                  "(to_packed, to_padded, to_exact, cast<U>())");                            \
  }

// a Op= b on a's elements (padding untouched): b a batch of the same element shapes, a scalar,
// or a dense (B, ...) operand paired with each element. a must not hold an element twice.
#define TBATCH_DETAIL_BATCH_IN_PLACE(symbol, op)                                                  \
  template <LayoutBatch B>                                                                        \
  requires ArithmeticElement<typename B::value_type> B& operator symbol##=(B& a, const B& b) {    \
    constexpr const char* function = "operator" #symbol "=";                                      \
    detail::check_same_elements(a, b, function);                                                  \
    const detail::BatchGeometry gb = detail::geometry_of(b);                                      \
    detail::batch_in_place<detail::BinaryOp::op>(function, a, true, [&](index_t i, const auto&) { \
      return i < 0 ? b.data().view() : detail::element_view(b.data(), gb, i);                     \
    });                                                                                           \
    return a;                                                                                     \
  }                                                                                               \
  template <LayoutBatch B>                                                                        \
  requires ArithmeticElement<typename B::value_type> B& operator symbol##=(                       \
      B& a, ScalarOf<typename B::value_type> b) {                                                 \
    const auto value = detail::cast_element<typename B::value_type>(b);                           \
    detail::batch_in_place<detail::BinaryOp::op>(                                                 \
        "operator" #symbol "=", a, true, [&](index_t, const auto& target) {                       \
          return detail::broadcast_value(value, target.shape());                                  \
        });                                                                                       \
    return a;                                                                                     \
  }                                                                                               \
  template <LayoutBatch B>                                                                        \
  requires ArithmeticElement<typename B::value_type> B& operator symbol##=(                       \
      B& a, const Tensor<typename B::value_type>& b) {                                            \
    using T = typename B::value_type;                                                             \
    constexpr const char* function = "operator" #symbol "=";                                      \
    detail::check_dense_operand(b, a.batch_size(), function);                                     \
    constexpr bool exact = detail::kind_of<B> == detail::BatchKind::exact;                        \
    detail::batch_in_place<detail::BinaryOp::op>(                                                 \
        function, a, exact, [&](index_t i, const auto& target) {                                  \
          if (i < 0)                                                                              \
            return StridedView<const T>(b.element_pointer(),                                      \
                                        detail::paired_exact(b, target.shape(), function));       \
          return detail::paired_view(b, i, target.shape(), function);                             \
        });                                                                                       \
    return a;                                                                                     \
  }

TBATCH_DETAIL_BATCH_OPERATOR(+, add, ArithmeticElement)
TBATCH_DETAIL_BATCH_OPERATOR(-, sub, ArithmeticElement)
TBATCH_DETAIL_BATCH_OPERATOR(*, mul, ArithmeticElement)
TBATCH_DETAIL_BATCH_OPERATOR(/, div, ArithmeticElement)
TBATCH_DETAIL_BATCH_OPERATOR(==, eq, Element)
TBATCH_DETAIL_BATCH_OPERATOR(!=, ne, Element)
TBATCH_DETAIL_BATCH_OPERATOR(<, lt, Element)
TBATCH_DETAIL_BATCH_OPERATOR(<=, le, Element)
TBATCH_DETAIL_BATCH_OPERATOR(>, gt, Element)
TBATCH_DETAIL_BATCH_OPERATOR(>=, ge, Element)
TBATCH_DETAIL_BATCH_IN_PLACE(+, add)
TBATCH_DETAIL_BATCH_IN_PLACE(-, sub)
TBATCH_DETAIL_BATCH_IN_PLACE(*, mul)
TBATCH_DETAIL_BATCH_IN_PLACE(/, div)
#undef TBATCH_DETAIL_BATCH_OPERATOR
#undef TBATCH_DETAIL_BATCH_IN_PLACE

/// -x on every element.
template <LayoutBatch B>
requires ArithmeticElement<typename B::value_type> B operator-(const B& x) {
  return detail::batch_unary<detail::UnaryOp::neg>(x);
}

// The unary functions of the maths on every element, with the same element types.
#define TBATCH_DETAIL_BATCH_UNARY(name)                                                   \
  template <LayoutBatch B>                                                                \
  B name(const B& x) {                                                                    \
    static_assert(detail::unary_accepts<detail::UnaryOp::name, typename B::value_type>(), \
                  "tbatch: " #name                                                        \
                  " does not accept this element type (see the same "                     \
                  "function on Tensor)");                                                 \
    return detail::batch_unary<detail::UnaryOp::name>(x);                                 \
  }
TBATCH_DETAIL_BATCH_UNARY(neg)
TBATCH_DETAIL_BATCH_UNARY(abs)
TBATCH_DETAIL_BATCH_UNARY(sign)
TBATCH_DETAIL_BATCH_UNARY(relu)
TBATCH_DETAIL_BATCH_UNARY(floor)
TBATCH_DETAIL_BATCH_UNARY(ceil)
TBATCH_DETAIL_BATCH_UNARY(round)
TBATCH_DETAIL_BATCH_UNARY(sqrt)
TBATCH_DETAIL_BATCH_UNARY(rsqrt)
TBATCH_DETAIL_BATCH_UNARY(exp)
TBATCH_DETAIL_BATCH_UNARY(expm1)
TBATCH_DETAIL_BATCH_UNARY(log)
TBATCH_DETAIL_BATCH_UNARY(log1p)
TBATCH_DETAIL_BATCH_UNARY(sin)
TBATCH_DETAIL_BATCH_UNARY(cos)
TBATCH_DETAIL_BATCH_UNARY(tanh)
TBATCH_DETAIL_BATCH_UNARY(sigmoid)
TBATCH_DETAIL_BATCH_UNARY(logical_not)
#undef TBATCH_DETAIL_BATCH_UNARY

/// clamp on every element.
template <LayoutBatch B>
requires ArithmeticElement<typename B::value_type> B clamp(const B& x,
                                                           ScalarOf<typename B::value_type> lo,
                                                           ScalarOf<typename B::value_type> hi) {
  using T = typename B::value_type;
  return detail::batch_unary<detail::UnaryOp::clamp>(
      x, detail::UnaryParams<T>{detail::cast_element<T>(lo), detail::cast_element<T>(hi)});
}

/// minimum, maximum, logical_and, logical_or and pow of two batches of the same element shapes;
/// pow of a batch and a scalar exponent.
#define TBATCH_DETAIL_BATCH_BINARY(name)                                                    \
  template <LayoutBatch B>                                                                  \
  BatchOf<B, detail::BinaryResult<detail::BinaryOp::name, typename B::value_type>> name(    \
      const B& a, const B& b) {                                                             \
    static_assert(detail::binary_accepts<detail::BinaryOp::name, typename B::value_type>(), \
                  "tbatch: " #name                                                          \
                  " does not accept this element type (see the same "                       \
                  "function on Tensor)");                                                   \
    return detail::batch_binary<detail::BinaryOp::name>(#name, a, b);                       \
  }
TBATCH_DETAIL_BATCH_BINARY(minimum)
TBATCH_DETAIL_BATCH_BINARY(maximum)
TBATCH_DETAIL_BATCH_BINARY(logical_and)
TBATCH_DETAIL_BATCH_BINARY(logical_or)
TBATCH_DETAIL_BATCH_BINARY(pow)
#undef TBATCH_DETAIL_BATCH_BINARY

template <LayoutBatch B>
requires ArithmeticElement<typename B::value_type> B
pow(const B& a, ScalarOf<typename B::value_type> exponent) {
  return detail::batch_scalar<detail::BinaryOp::pow>(
      "pow", a, detail::cast_element<typename B::value_type>(exponent), false);
}

/// x with `value` where `mask` (a batch of bool of the same layout and element shapes, e.g.
/// `x > 0.f`) holds; a padded result's padding is 0.
template <LayoutBatch B, LayoutBatch M>
B masked_fill(const B& x, const M& mask, ScalarOf<typename B::value_type> value) {
  using T = typename B::value_type;
  detail::require_bool_batch<typename M::value_type>();
  static_assert(std::is_same_v<M, BatchOf<B, bool>>,
                "tbatch: the mask must have the batch's layout: convert it first");
  detail::check_same_elements(x, mask, "masked_fill");
  const T v = detail::cast_element<T>(value);
  const detail::BatchGeometry gm = detail::geometry_of(mask);
  return detail::map_batch<T>(
      x,
      [&](const StridedView<const T>& in, const StridedView<T>& out) {
        detail::run_where<T>(mask.data().view(), detail::broadcast_value(v, in.shape()), in, out);
      },
      [&](index_t i, const StridedView<const T>& in, const StridedView<T>& out) {
        detail::run_where<T>(detail::element_view(mask.data(), gm, i),
                             detail::broadcast_value(v, in.shape()), in, out);
      });
}

}  // namespace tbatch
