#pragma once
// Segment reductions over packed rows (torch_scatter's segment_csr): first_idx holds CSR offsets,
// segment e is rows [first_idx[e], first_idx[e + 1]) of the values. segment_reduce combines each
// segment's rows with the Reduce combiners of reduce.hpp; segment_argmax / segment_argmin find
// the row of each segment's extreme.
//
// The kernels are in segment_kernel.hpp, the checks and the kernels' type-erased entry points in
// segment_checks.hpp; this header holds the public functions.

#include "tbatch/base/config.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/segment_checks.hpp"
#include "tbatch/tensor/tensor.hpp"

#if !TBATCH_DEFINITIONS
#include "tbatch/tensor/any_tensor.hpp"
#else
#include "tbatch/ops/segment_kernel.hpp"
#endif

namespace tbatch {
namespace detail {

/// The kernels for T: in compiled mode the library's, through the erased entry points;
/// otherwise instantiated here for T.
template <class T>
Tensor<T> segment_reduce_of(const char* function, const Tensor<T>& values,
                            const Tensor<index_t>& first_idx, Reduce reduce) {
#if !TBATCH_DEFINITIONS
  return segment_reduce_kernel(function, AnyTensor(values), first_idx, reduce)
      .template get<T>(function);
#else
  return segment_reduce_impl(function, values, first_idx, reduce);
#endif
}
template <bool Max, class T>
Tensor<index_t> segment_arg_of(const char* function, const Tensor<T>& values,
                               const Tensor<index_t>& first_idx) {
#if !TBATCH_DEFINITIONS
  return segment_arg_kernel(function, AnyTensor(values), first_idx, Max);
#else
  return segment_arg_impl<T, Max>(function, values, first_idx);
#endif
}

}  // namespace detail

/// Reduces each segment of rows of `values` (shape (rows, ...)): segment e is rows
/// [first_idx[e], first_idx[e + 1]). Returns (B, values.shape[1:]...). Rows are combined in
/// order with the scatter_reduce combiners (NaN propagates through amax / amin; integer sums and
/// products wrap; integer means floor). An empty segment gives 0 for every reduction.
/// `first_idx` has B + 1 entries: 0, non-decreasing, ending at values.size(0) (ValueError
/// otherwise; ShapeError unless it is 1-d and values has rank >= 1). TypeError for bool values;
/// ValueError for a `reduce` that is not a Reduce.
template <class T>
Tensor<T> segment_reduce(const Tensor<T>& values, const Tensor<index_t>& first_idx, Reduce reduce) {
  return detail::segment_reduce_of("segment_reduce", values, first_idx, reduce);
}

/// Reduces each element of a packed batch over its rows: (B, last_dim), row i the reduction of
/// element i's rows (0 for an element without rows). Errors as the dense form.
template <class T>
Tensor<T> segment_reduce(const PackedBatch<T>& batch, Reduce reduce) {
  return detail::segment_reduce_of("segment_reduce", batch.data(), batch.first_idx(), reduce);
}

/// For each segment and position, the row of `values` (a global row number) holding the segment's
/// maximum; the first such row wins, a NaN counts as the maximum (as torch.argmax), and an empty
/// segment gives -1. Shape (B, values.shape[1:]...). first_idx is checked as for
/// segment_reduce (ValueError / ShapeError); TypeError for bool values.
template <class T>
Tensor<index_t> segment_argmax(const Tensor<T>& values, const Tensor<index_t>& first_idx) {
  return detail::segment_arg_of<true>("segment_argmax", values, first_idx);
}

/// segment_argmax of a packed batch: (B, last_dim) rows of batch.data().
template <class T>
Tensor<index_t> segment_argmax(const PackedBatch<T>& batch) {
  return segment_argmax(batch.data(), batch.first_idx());
}

/// As segment_argmax, for the minimum (a NaN counts as the minimum, as torch.argmin).
template <class T>
Tensor<index_t> segment_argmin(const Tensor<T>& values, const Tensor<index_t>& first_idx) {
  return detail::segment_arg_of<false>("segment_argmin", values, first_idx);
}

/// segment_argmin of a packed batch: (B, last_dim) rows of batch.data().
template <class T>
Tensor<index_t> segment_argmin(const PackedBatch<T>& batch) {
  return segment_argmin(batch.data(), batch.first_idx());
}

}  // namespace tbatch
