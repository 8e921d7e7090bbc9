#pragma once
// The output size from which kernels write with streaming (non-temporal) stores: the public
// setting behind view/streaming.hpp's kernels, and the choice of stores for an output (here,
// without the intrinsics, so that a caller of the compiled kernels does not parse them).

#include <atomic>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/tuning.hpp"

#if defined(__SSE2__)
#define TBATCH_STREAMING_STORES 1
#else
#define TBATCH_STREAMING_STORES 0
#endif

namespace tbatch {
namespace detail {

TBATCH_INLINE std::atomic<index_t>& streaming_min_bytes_setting();

}  // namespace detail

/// Kernels whose output is at least this many bytes write it with streaming stores (on x86 with
/// SSE2; elsewhere always normal stores). The default is 16 MiB.
inline index_t streaming_stores_min_bytes() {
  return detail::streaming_min_bytes_setting().load(std::memory_order_relaxed);
}

/// Sets the output size from which kernels use streaming stores: 0 streams every output,
/// std::numeric_limits<index_t>::max() none. Lower it when outputs are written once and read
/// much later; raise it when the consumer reads each output right away. Throws ValueError for a
/// negative `bytes`.
TBATCH_INLINE void set_streaming_stores_min_bytes(index_t bytes);

namespace detail {

/// How a kernel writes its output: through the cache, or with streaming stores.
enum class Stores { cached, streaming };

/// The stores for an output of `bytes`.
inline Stores stores_for(index_t bytes) {
  return TBATCH_STREAMING_STORES && bytes >= streaming_stores_min_bytes() ? Stores::streaming
                                                                          : Stores::cached;
}

/// The stores for writing all of `out` (a Tensor or a StridedView).
template <class Out>
Stores stores_for_output(const Out& out) {
  return stores_for(out.numel() * index_t(sizeof(*out.data())));
}

}  // namespace detail

#if TBATCH_DEFINITIONS

TBATCH_INLINE std::atomic<index_t>& detail::streaming_min_bytes_setting() {
  static std::atomic<index_t> bytes{default_streaming_min_bytes};
  return bytes;
}

TBATCH_INLINE void set_streaming_stores_min_bytes(index_t bytes) {
  if (bytes < 0)
    detail::fail<ValueError>("set_streaming_stores_min_bytes",
                             {"bytes is ", bytes, ", expected >= 0"});
  detail::streaming_min_bytes_setting().store(bytes, std::memory_order_relaxed);
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
