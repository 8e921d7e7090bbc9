#pragma once
// Overflow-checked size arithmetic: every size computed from user input goes through here.

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"

namespace tbatch::detail {

/// Sets `product` to a * b; true when that overflows (product then holds the wrapped value),
/// for callers that report the overflow in their own words or saturate.
inline bool multiply_overflows(index_t a, index_t b, index_t& product) {
  return __builtin_mul_overflow(a, b, &product);
}

/// Sets `sum` to a + b; true when that overflows (as multiply_overflows).
inline bool add_overflows(index_t a, index_t b, index_t& sum) {
  return __builtin_add_overflow(a, b, &sum);
}

/// Sets `difference` to a - b; true when that overflows (as multiply_overflows).
inline bool subtract_overflows(index_t a, index_t b, index_t& difference) {
  return __builtin_sub_overflow(a, b, &difference);
}

/// a * b for non-negative sizes; ShapeError naming `function` when the product overflows.
inline index_t checked_mul(index_t a, index_t b, const char* function) {
  index_t product = 0;
  if (multiply_overflows(a, b, product))
    fail<ShapeError>(function, {"size ", a, " * ", b, " overflows a 64-bit index"});
  return product;
}

/// a + b; ShapeError naming `function` when the sum overflows.
inline index_t checked_add(index_t a, index_t b, const char* function) {
  index_t sum = 0;
  if (add_overflows(a, b, sum))
    fail<ShapeError>(function, {"size ", a, " + ", b, " overflows a 64-bit index"});
  return sum;
}

}  // namespace tbatch::detail
