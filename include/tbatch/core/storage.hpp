#pragma once
// Storage<T>: a shared, Eigen-allocated (aligned) buffer of elements.

#include <Eigen/Core>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "tbatch/core/block_cache.hpp"
#include "tbatch/core/checked_math.hpp"
#include "tbatch/core/config.hpp"

namespace tbatch {

/// An aligned buffer of `size()` elements, owned by whoever holds the shared_ptr to it.
/// Allocated with Eigen's aligned allocator so Eigen maps over it can use aligned loads; large
/// buffers are recycled through detail::BlockCache.
template <class T>
class Storage {
  static_assert(std::is_trivially_copyable_v<T>, "tbatch elements are trivially copyable");
  // Only allocate() can name it, so only allocate() can construct a Storage.
  struct Private {
    explicit Private() = default;
  };

 public:
  /// Uninitialised storage for `size` elements.
  static std::shared_ptr<Storage> allocate(index_t size) {
    const index_t bytes = detail::checked_mul(size, index_t(sizeof(T)), "Storage::allocate");
    // make_shared puts the Storage and its reference counts in one allocation.
    return std::make_shared<Storage>(Private{}, bytes, size);
  }
  /// Zero-initialised storage (all-bits-zero is 0 for every supported type).
  static std::shared_ptr<Storage> allocate_zeroed(index_t size) {
    auto storage = allocate(size);
    if (size > 0) std::memset(static_cast<void*>(storage->data_), 0, size * sizeof(T));
    return storage;
  }

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() { detail::BlockCache::instance().release(data_, bytes_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  index_t size() const { return size_; }

  /// For allocate() only (through make_shared, which needs a public constructor).
  Storage(Private, index_t bytes, index_t size)
      : data_(static_cast<T*>(detail::BlockCache::instance().allocate(std::size_t(bytes)))),
        size_(size),
        bytes_(std::size_t(bytes)) {}

 private:
  T* data_;
  index_t size_;
  std::size_t bytes_;
};

}  // namespace tbatch
