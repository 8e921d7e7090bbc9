#pragma once
// detail::SmallVector: a vector of trivially copyable values stored inline up to N elements,
// for the engine's per-call bookkeeping (dims, run sizes, strides, counters), so small copies
// and fills allocate nothing.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>
#include <utility>

#include "tbatch/base/config.hpp"

namespace tbatch::detail {

template <class T, std::size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVector() = default;
  SmallVector(std::size_t n, T value) { resize(n, value); }
  SmallVector(std::initializer_list<T> values) {
    for (const T& v : values)
      push_back(v);
  }
  template <class It>
  SmallVector(It first, It last) {
    append(first, last);
  }
  // Copies and moves take the inline array whole (a few vector moves for small N) and touch
  // the heap only past N elements.
  SmallVector(const SmallVector& other) : inline_(other.inline_), size_(other.size_) {
    if (other.heap_) [[unlikely]]
      copy_heap_from(other);
  }
  SmallVector(SmallVector&& other) noexcept
      : inline_(other.inline_),
        heap_(std::move(other.heap_)),
        size_(other.size_),
        capacity_(other.capacity_) {
    other.size_ = 0;
    other.capacity_ = N;
  }
  SmallVector& operator=(const SmallVector& other) {
    if (this == &other) return *this;
    if (!heap_ && !other.heap_) {
      inline_ = other.inline_;
      size_ = other.size_;
    } else {
      copy_heap_from(other);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this == &other) return *this;
    inline_ = other.inline_;
    heap_ = std::move(other.heap_);
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = N;
    return *this;
  }
  ~SmallVector() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_.get() : inline_.data(); }
  const T* data() const { return heap_ ? heap_.get() : inline_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  // Any integer index: dims are counted with the signed index_t and sizes with std::size_t,
  // and both index without a sign conversion.
  template <std::integral I>
  T& operator[](I i) {
    TBATCH_ASSERT(std::in_range<std::size_t>(i) && static_cast<std::size_t>(i) < size_);
    return data()[i];
  }
  template <std::integral I>
  const T& operator[](I i) const {
    TBATCH_ASSERT(std::in_range<std::size_t>(i) && static_cast<std::size_t>(i) < size_);
    return data()[i];
  }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(T value) {
    reserve(size_ + 1);
    data()[size_++] = value;
  }
  void resize(std::size_t n, T value = T()) {
    reserve(n);
    std::fill(data() + std::min(n, size_), data() + n, value);
    size_ = n;
  }
  /// Inserts `value` before `pos`; returns an iterator to it.
  T* insert(const T* pos, T value) {
    const std::size_t at = static_cast<std::size_t>(pos - begin());
    reserve(size_ + 1);
    std::copy_backward(begin() + at, end(), end() + 1);
    data()[at] = value;
    ++size_;
    return begin() + at;
  }
  /// Inserts [first, last) before `pos`.
  template <class It>
  T* insert(const T* pos, It first, It last) {
    std::size_t at = static_cast<std::size_t>(pos - begin());
    const std::size_t start = at;
    for (; first != last; ++first)
      insert(begin() + at++, *first);
    return begin() + start;
  }
  /// Removes the element at `pos`; returns an iterator to the next one.
  T* erase(const T* pos) {
    const std::size_t at = static_cast<std::size_t>(pos - begin());
    std::copy(begin() + at + 1, end(), begin() + at);
    --size_;
    return begin() + at;
  }
  void pop_back() {
    TBATCH_ASSERT(size_ > 0);
    --size_;
  }
  void clear() { size_ = 0; }
  template <class It>
  void append(It first, It last) {
    for (; first != last; ++first)
      push_back(*first);
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // Out of line so the inline-only copy stays small enough to be inlined into every layout
  // copy (Shape and Strides are SmallVectors).
  [[gnu::noinline]] void copy_heap_from(const SmallVector& other) {
    size_ = 0;
    reserve(other.size_);
    std::copy(other.begin(), other.end(), data());
    size_ = other.size_;
  }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    const std::size_t grown = std::max(n, 2 * capacity_);
    auto storage = std::make_unique<T[]>(grown);
    std::copy(begin(), end(), storage.get());
    heap_ = std::move(storage);
    capacity_ = grown;
  }

  std::array<T, N> inline_{};
  std::unique_ptr<T[]> heap_;
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace tbatch::detail
