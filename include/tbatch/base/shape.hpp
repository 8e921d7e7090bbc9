#pragma once
// Shape and Strides: the sizes of a tensor's dims and the strides of its layout, stored inline
// for rank <= 8.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/small_vector.hpp"

namespace tbatch {

/// Sizes of a tensor's dims. A small vector: no heap allocation up to rank 8.
/// Sizes are never negative (ShapeError); numel() is overflow-checked.
class Shape {
 public:
  static constexpr std::size_t inline_capacity = 8;

  Shape() = default;
  Shape(std::initializer_list<index_t> sizes) { assign(sizes.begin(), sizes.end()); }
  explicit Shape(const std::vector<index_t>& sizes) { assign(sizes.begin(), sizes.end()); }
  template <class It>
  Shape(It first, It last) {
    assign(first, last);
  }
  /// `rank` dims, each of size `size`.
  static Shape filled(std::size_t rank, index_t size) {
    Shape shape;
    for (std::size_t d = 0; d < rank; ++d)
      shape.push_back(size);
    return shape;
  }

  std::size_t size() const { return sizes_.size(); }
  bool empty() const { return sizes_.empty(); }
  const index_t* data() const { return sizes_.data(); }
  const index_t* begin() const { return sizes_.begin(); }
  const index_t* end() const { return sizes_.end(); }
  // Dims are indexed with any integer type, as in SmallVector.
  template <std::integral I>
  index_t operator[](I d) const {
    return sizes_[d];
  }
  index_t back() const {
    TBATCH_ASSERT(!sizes_.empty());
    return sizes_.back();
  }

  /// Sets dim `d` to `size` (>= 0).
  template <std::integral I>
  void set(I d, index_t size) {
    check_size(size);
    sizes_[d] = size;
  }
  void push_back(index_t size) {
    check_size(size);
    sizes_.push_back(size);
  }
  /// Inserts `size` before position `pos` (pos <= size()).
  template <std::integral I>
  void insert(I pos, index_t size) {
    TBATCH_ASSERT(std::in_range<std::size_t>(pos) &&
                  static_cast<std::size_t>(pos) <= sizes_.size());
    check_size(size);
    sizes_.insert(sizes_.begin() + pos, size);
  }
  /// Removes the dim at `pos`.
  template <std::integral I>
  void erase(I pos) {
    TBATCH_ASSERT(std::in_range<std::size_t>(pos) && static_cast<std::size_t>(pos) < sizes_.size());
    sizes_.erase(sizes_.begin() + pos);
  }

  /// Product of the sizes (1 for rank 0). ShapeError when the product of the nonzero sizes
  /// overflows, also for a shape with a size 0: its strides must still fit (as numpy's rule),
  /// and the verdict does not depend on where the 0 stands ({0, 2^62, 2^62} as {2^62, 2^62, 0}).
  index_t numel() const {
    index_t n = 1;
    bool empty = false;
    for (index_t s : *this) {
      if (s == 0)
        empty = true;
      else if (detail::multiply_overflows(n, s, n))
        detail::fail<ShapeError>("Shape::numel",
                                 {"shape ", *this,
                                  " is too large: the product of its nonzero sizes overflows a "
                                  "64-bit index"});
    }
    return empty ? 0 : n;
  }
  std::vector<index_t> to_vector() const { return std::vector<index_t>(begin(), end()); }
  operator std::vector<index_t>() const { return to_vector(); }

  // An explicit loop: std::equal becomes a memcmp call, costly next to comparing a few sizes.
  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size() != b.size()) return false;
    const index_t* x = a.data();
    const index_t* y = b.data();
    for (std::size_t d = 0; d < a.size(); ++d)
      if (x[d] != y[d]) return false;
    return true;
  }
  friend std::ostream& operator<<(std::ostream& out, const Shape& shape) {
    out << '[';
    for (std::size_t d = 0; d < shape.size(); ++d)
      out << (d ? ", " : "") << shape[d];
    return out << ']';
  }

 private:
  static void check_size(index_t size) {
    if (size < 0)
      detail::fail<ShapeError>("Shape", {"size ", size, " is negative; sizes must be >= 0"});
  }
  template <class It>
  void assign(It first, It last) {
    for (; first != last; ++first)
      push_back(static_cast<index_t>(*first));
  }

  // Copied and moved as a SmallVector: the inline array whole, the heap only past rank 8
  // (layouts are copied and moved many times per view).
  detail::SmallVector<index_t, inline_capacity> sizes_;
};

/// Strides of a layout, in elements: a small vector (no heap for rank <= 8) that converts to
/// and compares with std::vector<index_t>, so code written against vectors keeps working.
class Strides : public detail::SmallVector<index_t, 8> {
  using Base = detail::SmallVector<index_t, 8>;

 public:
  using Base::Base;
  Strides() = default;
  Strides(std::initializer_list<index_t> values) : Base(values) {}
  Strides(const std::vector<index_t>& values) : Base(values.begin(), values.end()) {}
  explicit Strides(std::size_t n, index_t value = 0) : Base(n, value) {}

  operator std::vector<index_t>() const { return std::vector<index_t>(begin(), end()); }
  std::vector<index_t> to_vector() const { return *this; }

  friend bool operator==(const Strides& a, const Strides& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const Strides& a, const std::vector<index_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend std::ostream& operator<<(std::ostream& out, const Strides& strides) {
    out << '[';
    for (std::size_t d = 0; d < strides.size(); ++d)
      out << (d ? ", " : "") << strides[d];
    return out << ']';
  }
};

namespace detail {

/// Calls coordinate(d, i_d) for every dim d of `shape`, the last first, with the coordinates
/// of row-major position `flat` (in [0, numel)).
template <class Coordinate>
void unravel_index(const Shape& shape, index_t flat, Coordinate&& coordinate) {
  for (std::size_t d = shape.size(); d-- > 0;) {
    coordinate(d, flat % shape[d]);
    flat /= shape[d];
  }
}

}  // namespace detail
}  // namespace tbatch
