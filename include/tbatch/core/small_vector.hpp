#pragma once
// detail::SmallVector: a vector of trivially copyable values stored inline up to N elements,
// for the engine's per-call bookkeeping (dims, run sizes, strides, counters), so small copies
// and fills allocate nothing.

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>

#include "tbatch/core/config.hpp"

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
  SmallVector(const SmallVector& other) { append(other.begin(), other.end()); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      size_ = 0;
      append(other.begin(), other.end());
    }
    return *this;
  }
  ~SmallVector() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](std::size_t i) {
    TBATCH_ASSERT(i < size_);
    return data()[i];
  }
  const T& operator[](std::size_t i) const {
    TBATCH_ASSERT(i < size_);
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
  template <class It>
  void append(It first, It last) {
    for (; first != last; ++first)
      push_back(*first);
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    const std::size_t grown = std::max(n, 2 * capacity_);
    auto storage = std::make_unique<T[]>(grown);
    std::copy(begin(), end(), storage.get());
    heap_ = std::move(storage);
    capacity_ = grown;
  }

  T inline_[N] = {};
  std::unique_ptr<T[]> heap_;
  std::size_t size_ = 0;
  std::size_t capacity_ = N;
};

}  // namespace tbatch::detail
