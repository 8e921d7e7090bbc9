#pragma once
// matmul with torch's rules (1-d, 2-d and batched operands with broadcast batch dims), each
// product one call of Eigen's GEMM on the operands' own memory where their strides allow an
// Eigen map (rows or columns dense), the batch dims walked by the engine.

#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/math/elementwise_ops.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>

#include "tbatch/view/for_each.hpp"
#endif

namespace tbatch {
namespace detail {

/// The element type a product of T is computed in: float for the 16-bit floats, int32 for the
/// integers of up to 16 bits; T otherwise. Integers are multiplied as their unsigned
/// counterparts (ProductScalar), whose arithmetic wraps where a signed overflow would be undefined.
template <class T>
using ProductType = std::conditional_t<FloatingElement<T>, ComputeType<T>,
                                       std::conditional_t<(sizeof(T) < 4), std::int32_t, T>>;
template <class C>
using ProductScalar = typename std::conditional_t<std::is_integral_v<C>, std::make_unsigned<C>,
                                                  std::type_identity<C>>::type;

/// The library's entry point (compiled mode): out = a @ b for operands of shape (batch..., n, k)
/// and (batch..., k, m), batch dims already broadcast (stride 0), of dtype float, double,
/// int32, uint32 or int64; `out` is contiguous.
TBATCH_INLINE void matmul_raw(const RawView& a, const RawView& b, const RawView& out);

#if TBATCH_DEFINITIONS

/// Calls fn with the rows x cols matrix at `data` as an Eigen map: row-major when its columns
/// are dense, column-major otherwise (product_operand leaves no other layout).
template <class T, class Fn>
void with_matrix_map(T* data, index_t rows, index_t cols, index_t row_stride, index_t col_stride,
                     Fn&& fn) {
  using Value = std::remove_const_t<T>;
  using RowMajor = Eigen::Matrix<Value, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMajor = Eigen::Matrix<Value, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  using Rows = std::conditional_t<std::is_const_v<T>, const RowMajor, RowMajor>;
  using Columns = std::conditional_t<std::is_const_v<T>, const ColMajor, ColMajor>;
  if (col_stride == 1 || cols <= 1)
    fn(Eigen::Map<Rows, 0, Eigen::OuterStride<>>(
        data, rows, cols, Eigen::OuterStride<>(rows <= 1 ? cols : row_stride)));
  else
    fn(Eigen::Map<Columns, 0, Eigen::OuterStride<>>(data, rows, cols,
                                                    Eigen::OuterStride<>(col_stride)));
}

template <class C>
void matmul_views(const StridedView<const C>& a, const StridedView<const C>& b,
                  const StridedView<C>& out) {
  using E = ProductScalar<C>;  // signed and unsigned integers may alias each other
  const std::size_t rank = out.shape().size();
  const index_t n = a.shape()[rank - 2], k = a.shape()[rank - 1], m = b.shape()[rank - 1];
  const index_t a_row = a.strides()[rank - 2], a_col = a.strides()[rank - 1];
  const index_t b_row = b.strides()[rank - 2], b_col = b.strides()[rank - 1];
  // The engine walks the batch dims; each element of a run is one product.
  auto batch = [rank](const auto& v) {
    const auto end = static_cast<std::ptrdiff_t>(rank - 2);
    Layout l{Shape(v.shape().begin(), v.shape().begin() + end),
             Strides(v.strides().begin(), v.strides().begin() + end), v.layout().offset};
    return std::remove_cvref_t<decltype(v)>(v.element_pointer(), std::move(l));
  };
  for_each_run(
      "matmul",
      [&](index_t count, const std::array<index_t, 3>& stride, C* o, const C* pa, const C* pb) {
        for (index_t r = 0; r < count; ++r)
          with_matrix_map(
              reinterpret_cast<const E*>(pa + r * stride[1]), n, k, a_row, a_col,
              [&](const auto& ma) {
                with_matrix_map(
                    reinterpret_cast<const E*>(pb + r * stride[2]), k, m, b_row, b_col,
                    [&](const auto& mb) {
                      Eigen::Map<Eigen::Matrix<E, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>
                          mo(reinterpret_cast<E*>(o + r * stride[0]), n, m);
                      mo.noalias() = ma * mb;
                    });
              });
      },
      batch(out), batch(a), batch(b));
}

#endif  // TBATCH_DEFINITIONS

/// `x` (at least 2-d) ready for the product kernel: in its product type, with the last two
/// dims' strides non-negative (a copy otherwise), its batch dims broadcast to `batch`.
template <class C, class T>
std::pair<Tensor<C>, Layout> product_operand(const Tensor<T>& x, const Shape& batch,
                                             const char* name) {
  Tensor<C> t;
  if constexpr (std::is_same_v<C, T>)
    t = x;
  else
    t = x.template cast<C>();
  // Eigen maps a matrix whose rows or columns are dense (unit stride) and do not overlap;
  // any other matrix (sliced columns, reversed or broadcast dims) is copied first.
  const index_t rows = t.size(-2), cols = t.size(-1);
  const index_t row_stride = t.stride(-2), col_stride = t.stride(-1);
  const bool by_rows = (col_stride == 1 || cols <= 1) && (rows <= 1 || row_stride >= cols);
  const bool by_columns = (row_stride == 1 || rows <= 1) && (cols <= 1 || col_stride >= rows);
  if (!by_rows && !by_columns) t = t.clone();
  Shape shape = batch;
  shape.push_back(t.size(-2));
  shape.push_back(t.size(-1));
  Layout l = layout::broadcast(t.layout(), shape, "matmul", name);
  return {std::move(t), std::move(l)};
}

}  // namespace detail

/// The matrix product with torch.matmul's rules: 1-d x 1-d is the dot product (0-d); a 1-d
/// left operand is a row (its dim removed from the result), a 1-d right operand a column; a
/// (..., n, k) x (..., k, m) product broadcasts the batch dims. Each product is Eigen's GEMM
/// (multi-threaded when Eigen is); the 16-bit floats are computed in float, integers wrap.
/// ShapeError for a 0-d operand, inner sizes that differ or batch dims that do not broadcast.
template <ArithmeticElement T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  using C = detail::ProductType<T>;
  if (a.dim() == 0 || b.dim() == 0)
    detail::fail<ShapeError>(
        "matmul", {"needs operands of at least 1 dim, got shapes ", a.shape(), " and ", b.shape()});
  const Tensor<T> a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  const Tensor<T> b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  if (a2.size(-1) != b2.size(-2))
    detail::fail<ShapeError>(
        "matmul", {"shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", a2.size(-1),
                   " vs ", b2.size(-2), ")"});
  const Shape batch =
      layout::broadcast_shapes(Shape(a2.shape().begin(), a2.shape().end() - 2),
                               Shape(b2.shape().begin(), b2.shape().end() - 2), "matmul");
  Shape out_shape = batch;
  out_shape.push_back(a2.size(-2));
  out_shape.push_back(b2.size(-1));
  Tensor<C> out = Tensor<C>::empty(out_shape);
  if (out.numel() > 0) {
    auto [ta, la] = detail::product_operand<C>(a2, batch, "a");
    auto [tb, lb] = detail::product_operand<C>(b2, batch, "b");
    const StridedView<const C> va(ta.element_pointer(), std::move(la));
    const StridedView<const C> vb(tb.element_pointer(), std::move(lb));
#if TBATCH_DEFINITIONS
    detail::matmul_views<C>(va, vb, out.view());
#else
    detail::matmul_raw(detail::raw_view(va), detail::raw_view(vb), detail::raw_view(out.view()));
#endif
  }
  // The dims of 1-d operands leave the result.
  Shape result = batch;
  if (a.dim() > 1) result.push_back(a2.size(-2));
  if (b.dim() > 1) result.push_back(b2.size(-1));
  out = out.with_layout(layout::contiguous(std::move(result)));
  if constexpr (std::is_same_v<C, T>)
    return out;
  else
    return out.template cast<T>();
}

}  // namespace tbatch

#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void matmul_raw(const RawView& a, const RawView& b, const RawView& out) {
  dispatch_dtype(out.dtype, [&]<class C>(std::type_identity<C>) {
    if constexpr (std::is_same_v<C, ProductType<C>>)
      matmul_views<C>(typed_view<const C>(a), typed_view<const C>(b), typed_view<C>(out));
    else
      fail<TypeError>(
          "matmul", {"computes in float, double, int32, uint32 or int64, got ", dtype_name_of<C>});
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
