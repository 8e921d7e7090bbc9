#pragma once
// Storage: a shared, aligned buffer of bytes.

#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "tbatch/base/block_cache.hpp"
#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"

namespace tbatch {

/// An aligned buffer of bytes, owned by whoever holds the shared_ptr to it. It has no element
/// type: Tensor<T> and AnyTensor (whose dtype is known only at run time) share the same kind of
/// buffer. Aligned at least as Eigen's allocator aligns (so Eigen maps over it can use aligned
/// loads), on a cache line from 4 KiB; large buffers are recycled through detail::BlockCache.
class Storage {
  // Only allocate() and borrow() can name it, so only they can construct a Storage.
  struct Private {
    explicit Private() = default;
  };

 public:
  /// Uninitialised storage for `count` elements of `element_size` bytes.
  static std::shared_ptr<Storage> allocate(index_t count, index_t element_size) {
    const index_t bytes = detail::checked_mul(count, element_size, "Storage::allocate");
    // make_shared puts the Storage and its reference counts in one allocation.
    return std::make_shared<Storage>(Private{}, bytes);
  }
  /// Zero-initialised storage (all-bits-zero is 0 for every supported type).
  static std::shared_ptr<Storage> allocate_zeroed(index_t count, index_t element_size) {
    auto storage = allocate(count, element_size);
    if (storage->bytes_ > 0) std::memset(storage->data_, 0, storage->bytes_);
    return storage;
  }

  /// `bytes` bytes at `data` that tbatch does not own (a file mapping, a caller's buffer): `owner`
  /// is kept alive until the last tensor viewing them is gone, and tbatch never frees `data`.
  static std::shared_ptr<Storage> borrow(void* data, index_t bytes,
                                         std::shared_ptr<const void> owner) {
    if (bytes < 0)
      detail::fail<ValueError>("Storage::borrow", {"bytes is ", bytes, "; expected >= 0"});
    if (data == nullptr && bytes > 0)
      detail::fail<ValueError>("Storage::borrow", {"data is null for ", bytes, " bytes"});
    auto storage = std::make_shared<Storage>(Private{}, data, bytes);
    storage->owner_ = std::move(owner);
    return storage;
  }

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (!borrowed_) detail::BlockCache::instance().release(data_, capacity_);
  }

  void* data() { return data_; }
  const void* data() const { return data_; }
  index_t bytes() const { return static_cast<index_t>(bytes_); }

  /// True when the bytes belong to someone else (see borrow()).
  bool borrowed() const { return borrowed_; }

  /// For allocate() and borrow() only (through make_shared, which needs public constructors).
  Storage(Private, index_t bytes)
      : Storage(detail::BlockCache::instance().allocate(std::size_t(bytes)), bytes) {}
  Storage(Private, void* data, index_t bytes)
      : data_(data), bytes_(std::size_t(bytes)), capacity_(bytes_), borrowed_(true) {}

 private:
  Storage(detail::BlockCache::Block block, index_t bytes)
      : data_(block.data), bytes_(std::size_t(bytes)), capacity_(block.bytes) {}

  void* data_;
  std::size_t bytes_;
  std::size_t capacity_;  // the block's size, which may exceed bytes_ (see BlockCache)
  bool borrowed_ = false;
  std::shared_ptr<const void> owner_;
};

}  // namespace tbatch
