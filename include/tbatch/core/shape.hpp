#pragma once
// Shape: the sizes of a tensor's dims, stored inline for rank <= 8.

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <vector>

#include "tbatch/core/checked_math.hpp"
#include "tbatch/core/config.hpp"
#include "tbatch/core/errors.hpp"

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

  // Copies and moves take the inline array whole (a few vector moves, whatever the rank) and
  // touch the heap only for rank > 8: layouts are copied and moved many times per view.
  Shape(const Shape& other) : inline_(other.inline_), size_(other.size_) {
    if (other.heap_) [[unlikely]]
      copy_heap_from(other);
  }
  Shape(Shape&& other) noexcept
      : inline_(other.inline_),
        heap_(std::move(other.heap_)),
        size_(other.size_),
        capacity_(other.capacity_) {
    other.size_ = 0;
    other.capacity_ = inline_capacity;
  }
  Shape& operator=(const Shape& other) {
    if (this == &other) return *this;
    if (!heap_ && !other.heap_) {
      inline_ = other.inline_;
      size_ = other.size_;
    } else {
      copy_heap_from(other);
    }
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this == &other) return *this;
    inline_ = other.inline_;
    heap_ = std::move(other.heap_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = inline_capacity;
    return *this;
  }
  ~Shape() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const index_t* data() const { return heap_ ? heap_.get() : inline_.data(); }
  const index_t* begin() const { return data(); }
  const index_t* end() const { return data() + size_; }
  index_t operator[](std::size_t d) const {
    TBATCH_ASSERT(d < size_);
    return data()[d];
  }
  index_t back() const {
    TBATCH_ASSERT(size_ > 0);
    return data()[size_ - 1];
  }

  /// Sets dim `d` to `size` (>= 0).
  void set(std::size_t d, index_t size) {
    TBATCH_ASSERT(d < size_);
    check_size(size);
    mutable_data()[d] = size;
  }
  void push_back(index_t size) {
    check_size(size);
    reserve(size_ + 1);
    mutable_data()[size_++] = size;
  }
  /// Inserts `size` before position `pos` (pos <= size()).
  void insert(std::size_t pos, index_t size) {
    TBATCH_ASSERT(pos <= size_);
    check_size(size);
    reserve(size_ + 1);
    index_t* p = mutable_data();
    std::copy_backward(p + pos, p + size_, p + size_ + 1);
    p[pos] = size;
    ++size_;
  }
  /// Removes the dim at `pos`.
  void erase(std::size_t pos) {
    TBATCH_ASSERT(pos < size_);
    index_t* p = mutable_data();
    std::copy(p + pos + 1, p + size_, p + pos);
    --size_;
  }

  /// Product of the sizes (1 for rank 0); ShapeError if it overflows.
  index_t numel() const {
    index_t n = 1;
    for (index_t s : *this)
      n = detail::checked_mul(n, s, "Shape::numel");
    return n;
  }
  std::vector<index_t> to_vector() const { return std::vector<index_t>(begin(), end()); }
  operator std::vector<index_t>() const { return to_vector(); }

  // An explicit loop: std::equal becomes a memcmp call, costly next to comparing a few sizes.
  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size_ != b.size_) return false;
    const index_t* x = a.data();
    const index_t* y = b.data();
    for (std::size_t d = 0; d < a.size_; ++d)
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
      detail::fail<ShapeError>("Shape", "size ", size, " is negative; sizes must be >= 0");
  }
  index_t* mutable_data() { return heap_ ? heap_.get() : inline_.data(); }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    std::size_t new_capacity = std::max(n, 2 * capacity_);
    auto grown = std::make_unique<index_t[]>(new_capacity);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = new_capacity;
  }
  template <class It>
  void assign(It first, It last) {
    for (; first != last; ++first)
      push_back(static_cast<index_t>(*first));
  }
  // Copies sizes already validated by `other` when either side is on the heap. Kept out of line
  // so the inline-only copy stays small enough to be inlined into every layout copy.
  [[gnu::noinline]] void copy_heap_from(const Shape& other) {
    size_ = 0;
    reserve(other.size_);
    std::copy(other.begin(), other.end(), mutable_data());
    size_ = other.size_;
  }

  std::array<index_t, inline_capacity> inline_{};
  std::unique_ptr<index_t[]> heap_;
  std::size_t size_ = 0;
  std::size_t capacity_ = inline_capacity;
};

}  // namespace tbatch
