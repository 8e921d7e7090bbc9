#pragma once
// Interop with Eigen's Tensor module (unsupported/Eigen/CXX11/Tensor) for a known rank.

#include <array>
#include <unsupported/Eigen/CXX11/Tensor>

#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

/// A non-owning view of an Eigen::TensorMap (either storage order).
template <class T, int Rank, int Options>
StridedView<T> view_of(const Eigen::TensorMap<Eigen::Tensor<T, Rank, Options>>& map) {
  Shape shape;
  for (int d = 0; d < Rank; ++d)
    shape.push_back(map.dimension(d));
  Strides strides(Rank);
  index_t stride = 1;
  const bool row_major = (Options & Eigen::RowMajor) != 0;
  for (int i = 0; i < Rank; ++i) {
    const int d = row_major ? Rank - 1 - i : i;
    strides[d] = stride;
    stride *= std::max<index_t>(map.dimension(d), 1);
  }
  return StridedView<T>(map.data(), std::move(shape), std::move(strides));
}

/// A non-owning view of an Eigen::Tensor's data.
template <class T, int Rank, int Options>
StridedView<T> view_of(Eigen::Tensor<T, Rank, Options>& tensor) {
  return view_of(
      Eigen::TensorMap<Eigen::Tensor<T, Rank, Options>>(tensor.data(), tensor.dimensions()));
}

/// A tbatch copy of an Eigen::Tensor (either storage order).
template <class T, int Rank, int Options>
Tensor<T> from_eigen_tensor(const Eigen::Tensor<T, Rank, Options>& tensor) {
  auto& mutable_tensor = const_cast<Eigen::Tensor<T, Rank, Options>&>(tensor);
  return Tensor<T>::from_view(view_of(mutable_tensor));
}

/// A contiguous tensor of rank `Rank` as a row-major Eigen::TensorMap sharing its buffer.
template <int Rank, class T>
Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor>> as_eigen_tensor(Tensor<T>& tensor) {
  if (tensor.dim() != Rank)
    detail::fail<ShapeError>("as_eigen_tensor", {"tensor of shape ", tensor.shape(), " has rank ",
                                                 tensor.dim(), ", expected ", Rank});
  if (!tensor.is_contiguous())
    detail::fail<ValueError>("as_eigen_tensor", {"needs a contiguous tensor; call contiguous()"});
  Eigen::DSizes<Eigen::Index, Rank> dims;
  for (std::size_t d = 0; d < dims.size(); ++d)
    dims[d] = tensor.size(static_cast<index_t>(d));
  return Eigen::TensorMap<Eigen::Tensor<T, Rank, Eigen::RowMajor>>(tensor.data(), dims);
}

}  // namespace tbatch
