#pragma once
// The argument checks of the segment reductions, and their kernels' type-erased entry points.

#include "tbatch/base/config.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/tensor/tensor.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/metadata.hpp"
#endif

namespace tbatch {
class AnyTensor;
}  // namespace tbatch

namespace tbatch::detail {

/// Validates CSR offsets against `rows` rows: 1-d with B + 1 entries, starting at 0, never
/// decreasing, ending at `rows`. Returns them contiguous.
TBATCH_INLINE Tensor<index_t> checked_segment_offsets(const char* function,
                                                      const Tensor<index_t>& first_idx,
                                                      index_t rows);

/// ShapeError naming `function` unless values (of `shape`) has rank >= 1.
TBATCH_INLINE void check_segment_values(const char* function, const Shape& shape);

/// segment_reduce of `values` (any dtype): compiled once per dtype; in compiled mode, in the
/// library.
TBATCH_INLINE AnyTensor segment_reduce_kernel(const char* function, const AnyTensor& values,
                                              const Tensor<index_t>& first_idx, Reduce reduce);
/// segment_argmax (max) or segment_argmin of `values` (any dtype), as segment_reduce_kernel.
TBATCH_INLINE Tensor<index_t> segment_arg_kernel(const char* function, const AnyTensor& values,
                                                 const Tensor<index_t>& first_idx, bool max);

}  // namespace tbatch::detail

#if TBATCH_DEFINITIONS

namespace tbatch::detail {

TBATCH_INLINE Tensor<index_t> checked_segment_offsets(const char* function,
                                                      const Tensor<index_t>& first_idx,
                                                      index_t rows) {
  if (first_idx.dim() != 1 || first_idx.size(0) == 0)
    fail<ShapeError>(function,
                     {"first_idx must be 1-d with B + 1 entries (0, then each segment's end), got "
                      "shape ",
                      first_idx.shape()});
  Tensor<index_t> first = first_idx.contiguous();
  const index_t* p = first.data();
  const index_t segments = first.size(0) - 1;
  check_first_idx(function, p, segments, [](index_t) {});
  if (p[segments] != rows)
    fail<ValueError>(function, {"first_idx[", segments, "] = ", p[segments], " but values has ",
                                rows, " rows; the last offset must be the row count"});
  return first;
}

TBATCH_INLINE void check_segment_values(const char* function, const Shape& shape) {
  if (shape.size() < 1)
    fail<ShapeError>(function, {"values must have rank >= 1 (rows first), got shape ", shape});
}

}  // namespace tbatch::detail

#endif  // TBATCH_DEFINITIONS
