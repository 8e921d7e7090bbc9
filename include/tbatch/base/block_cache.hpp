#pragma once
// The cache of large freed buffers. Freeing a large buffer returns its pages to the system and
// the next batch of the same size pays a page fault per 4 KiB again (on this class of machine,
// first-touching 64 MiB costs 4x rewriting it). Large buffers are kept here instead, bounded,
// and handed back to the next allocation that fits, as allocators with retention do.

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/tuning.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>
#endif

namespace tbatch {

namespace detail {

class BlockCache {
 public:
  // From 64 KiB: a batch's metadata (8 bytes per element) reaches it at B = 8192, and below
  // glibc's mmap threshold such buffers come from the heap, whose top is returned to the system
  // (and faulted back in) whenever a freed result leaves more than 128 KiB free there.
  static constexpr std::size_t min_block_bytes = std::size_t(1) << 16;
  // The blocks held at once, so finding one stays a short scan.
  static constexpr std::size_t max_blocks = 256;

  /// The process's cache. Never destroyed, so a storage freed at any point of static destruction
  /// (a tensor held by another static object, say) still finds it; the blocks it holds at exit
  /// go back to the system with the process.
  static TBATCH_INLINE BlockCache& instance();

  /// A buffer and its size in bytes.
  struct Block {
    void* data;
    std::size_t bytes;
  };

  /// A block of at least `bytes` (on a cache line from 4 KiB). A cached block may be up
  /// to twice that: its owner hands the block's own size back to release(), so a block keeps its
  /// size however often it is reused for smaller requests.
  TBATCH_INLINE Block allocate(std::size_t bytes);
  /// Returns a block from allocate(); large ones are kept while the cache has room.
  TBATCH_INLINE void release(void* data, std::size_t bytes);
  TBATCH_INLINE void set_limit(std::size_t bytes);
  TBATCH_INLINE std::size_t limit() const;
  TBATCH_INLINE std::size_t cached() const;

  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

 private:
  BlockCache() = default;
  TBATCH_INLINE void trim_locked();
  // Blocks of a page or more start on a cache line: streaming stores write whole lines only, so
  // an output starting mid-line puts every line-multiple slot across lines, half of them written
  // with normal stores (2.6x slower at B = 1e5 where malloc gives 16 or 32 bytes). Smaller ones
  // take Eigen's alignment: an aligned malloc costs them 3x a plain one.
  static constexpr std::size_t line_aligned_min_bytes = 4096;
  TBATCH_INLINE static void* new_block(std::size_t bytes);
  TBATCH_INLINE static void free_block(void* data, std::size_t bytes);

  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::size_t cached_bytes_ = 0;
  std::size_t limit_bytes_ = std::size_t(512) << 20;
};

}  // namespace detail

/// Caps the memory tbatch keeps from freed buffers of 64 KiB or more for reuse; 0 disables the
/// cache and frees what it holds. The default is 512 MiB.
TBATCH_INLINE void set_buffer_cache_limit(std::size_t bytes);
/// Bytes currently held by the buffer cache.
TBATCH_INLINE std::size_t buffer_cache_bytes();

#if TBATCH_DEFINITIONS

// The process's cache. Never destroyed, so a storage freed at any point of static destruction
// (a tensor held by another static object, say) still finds it; the blocks it holds at exit go
// back to the system with the process.
TBATCH_INLINE detail::BlockCache& detail::BlockCache::instance() {
  static BlockCache* const cache = new BlockCache;
  return *cache;
}

TBATCH_INLINE void* detail::BlockCache::new_block(std::size_t bytes) {
  if (bytes >= line_aligned_min_bytes) return ::operator new(bytes, std::align_val_t(line_bytes));
  return Eigen::internal::aligned_malloc(bytes > 0 ? bytes : 1);
}

TBATCH_INLINE void detail::BlockCache::free_block(void* data, std::size_t bytes) {
  if (bytes >= line_aligned_min_bytes)
    ::operator delete(data, std::align_val_t(line_bytes));
  else
    Eigen::internal::aligned_free(data);
}

TBATCH_INLINE detail::BlockCache::Block detail::BlockCache::allocate(std::size_t bytes) {
  if (bytes >= min_block_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit among blocks no more than twice the request, so a small request does not pin a
    // huge block.
    std::size_t best = blocks_.size();
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].bytes >= bytes && blocks_[i].bytes <= 2 * bytes &&
          (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes))
        best = i;
    if (best != blocks_.size()) {
      Block block = blocks_[best];
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
      cached_bytes_ -= block.bytes;
      return block;
    }
  }
  return {new_block(bytes), bytes};
}

TBATCH_INLINE void detail::BlockCache::release(void* data, std::size_t bytes) {
  if (bytes >= min_block_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_bytes_ + bytes <= limit_bytes_) {
      if (blocks_.size() == max_blocks) {  // the oldest block goes
        cached_bytes_ -= blocks_.front().bytes;
        free_block(blocks_.front().data, blocks_.front().bytes);
        blocks_.erase(blocks_.begin());
      }
      blocks_.push_back({data, bytes});
      cached_bytes_ += bytes;
      return;
    }
  }
  free_block(data, bytes);
}

TBATCH_INLINE void detail::BlockCache::set_limit(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_bytes_ = bytes;
  trim_locked();
}

TBATCH_INLINE std::size_t detail::BlockCache::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_bytes_;
}

TBATCH_INLINE std::size_t detail::BlockCache::cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

TBATCH_INLINE void detail::BlockCache::trim_locked() {
  while (cached_bytes_ > limit_bytes_ && !blocks_.empty()) {
    cached_bytes_ -= blocks_.front().bytes;
    free_block(blocks_.front().data, blocks_.front().bytes);
    blocks_.erase(blocks_.begin());
  }
}

TBATCH_INLINE void set_buffer_cache_limit(std::size_t bytes) {
  detail::BlockCache::instance().set_limit(bytes);
}

TBATCH_INLINE std::size_t buffer_cache_bytes() {
  return detail::BlockCache::instance().cached();
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
