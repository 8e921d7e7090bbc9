#pragma once
// Basic types and the internal-invariant assert shared by every tbatch header.

#include <cassert>
#include <cstdint>

namespace tbatch {

/// Signed index and size type used throughout tbatch (as torch's int64_t).
using index_t = std::int64_t;

namespace detail {
/// False, but only once T is known: for static_asserts in templates that must not be used.
template <class T>
inline constexpr bool dependent_false = false;

/// With TBATCH_OPENMP, loops whose work exceeds this many bytes run on omp_get_max_threads().
inline constexpr index_t parallel_min_bytes = index_t(1) << 20;
}  // namespace detail

}  // namespace tbatch

#if defined(TBATCH_OPENMP) && defined(_OPENMP)
#include <atomic>
#include <exception>
#endif

namespace tbatch::detail {

/// Calls body(i) for i = first, first + step, ... below last: on OpenMP threads when tbatch is
/// built with TBATCH_OPENMP (and OpenMP is on) and `parallel` holds, else in order. Bodies must
/// write disjoint memory. An exception never leaves the parallel region (that would end the
/// program): bodies not yet started are skipped and the first exception is rethrown after it.
template <class Body>
void parallel_for(index_t first, index_t last, index_t step, bool parallel, Body&& body) {
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
  if (parallel && first < last) {
    const index_t count = (last - first + step - 1) / step;
    std::exception_ptr error;
    std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic)
    for (index_t k = 0; k < count; ++k) {
      if (failed.load(std::memory_order_relaxed)) continue;
      try {
        body(first + k * step);
      } catch (...) {
#pragma omp critical(tbatch_parallel_for_error)
        {
          if (!error) error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
#else
  (void)parallel;
#endif
  for (index_t i = first; i < last; i += step)
    body(i);
}

}  // namespace tbatch::detail

// Guards internal invariants only; argument checks at the public boundary always throw.
#ifdef NDEBUG
#define TBATCH_ASSERT(cond) ((void)0)
#else
#define TBATCH_ASSERT(cond) assert(cond)
#endif
