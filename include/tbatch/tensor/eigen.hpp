#pragma once
// Eigen interop for Tensor<T>: the maps behind Tensor::flat, matrix and from_eigen, and
// borrow_eigen / eigen_view over an Eigen object's memory. tbatch.hpp includes this header in
// header-only mode; a compiled-mode file includes it where it uses these (compiled mode keeps
// Eigen out of tbatch.hpp).

#include <Eigen/Core>
#include <type_traits>

#include "tbatch/base/shape.hpp"
#include "tbatch/tensor/tensor_class.hpp"
#include "tbatch/view/strided_view.hpp"

namespace tbatch {

namespace detail {
template <class T>
struct EigenMaps {
  using Flat = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  using ConstFlat = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  using Matrix = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                            Eigen::OuterStride<>>;
  using ConstMatrix =
      Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                 Eigen::OuterStride<>>;

  /// Tensor<T>::from_eigen.
  template <class Derived>
  static Tensor<T> copy_of(const Eigen::DenseBase<Derived>& m) {
    Tensor<T> out = Tensor<T>::empty(Shape{m.rows(), m.cols()});
    using S = typename Derived::Scalar;
    out.matrix() = m.derived().unaryExpr([](const S& v) { return cast_element<T>(v); });
    return out;
  }
  static Matrix matrix(T* data, index_t rows, index_t cols, index_t row_stride) {
    return {data, rows, cols, Eigen::OuterStride<>(row_stride)};
  }
  static ConstMatrix matrix(const T* data, index_t rows, index_t cols, index_t row_stride) {
    return {data, rows, cols, Eigen::OuterStride<>(row_stride)};
  }
};
}  // namespace detail

/// A writable tensor (rows, cols) over the coefficients of an Eigen Matrix, Array, Map, Ref or
/// block with direct access, sharing its memory; the strides follow its storage order, so a
/// column-major matrix is borrowed as it is. Tensor::borrow's lifetime rule applies: the
/// memory must outlive every tensor, view or batch made from the result. For const data use
/// eigen_view; to copy any expression, Tensor<T>::from_eigen.
template <class E>
auto borrow_eigen(E&& m) {
  using Derived = std::remove_cvref_t<E>;
  static_assert(std::is_base_of_v<Eigen::DenseBase<Derived>, Derived>,
                "borrow_eigen: expects an Eigen Matrix, Array, Map, Ref or block");
  static_assert(bool(Derived::Flags & Eigen::DirectAccessBit),
                "borrow_eigen: the expression has no memory of its own to borrow; copy it with "
                "Tensor<T>::from_eigen");
  static_assert(
      !std::is_const_v<std::remove_reference_t<E>> && bool(Derived::Flags & Eigen::LvalueBit),
      "borrow_eigen: the data is const; use eigen_view for a read-only view");
  static_assert(
      std::is_lvalue_reference_v<E> || !std::is_base_of_v<Eigen::PlainObjectBase<Derived>, Derived>,
      "borrow_eigen: a temporary Matrix or Array is freed at the end of the statement; "
      "name it first");
  using T = typename Derived::Scalar;
  return Tensor<T>::borrow(m.data(), Shape{m.rows(), m.cols()},
                           Strides{m.rowStride(), m.colStride()});
}

/// A read-only view (rows, cols) of an Eigen Matrix, Array, Map, Ref or block with direct
/// access, for list_to_padded / list_to_packed and the view functions; no copy. Valid while
/// the Eigen object's memory is.
template <class Derived>
StridedView<const typename Derived::Scalar> eigen_view(const Eigen::DenseBase<Derived>& m) {
  static_assert(bool(Derived::Flags & Eigen::DirectAccessBit),
                "eigen_view: the expression has no memory of its own to view; copy it with "
                "Tensor<T>::from_eigen");
  const Derived& d = m.derived();
  return StridedView<const typename Derived::Scalar>(d.data(), Shape{d.rows(), d.cols()},
                                                     Strides{d.rowStride(), d.colStride()});
}

}  // namespace tbatch
