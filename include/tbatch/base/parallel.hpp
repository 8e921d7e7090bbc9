#pragma once
// How many threads tbatch's large kernels use, and the loop that spreads them: the public
// thread-count setting behind detail::parallel_for.

#include <atomic>
#include <exception>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/tuning.hpp"

#if defined(TBATCH_OPENMP) && defined(_OPENMP)
#include <omp.h>
#endif

namespace tbatch {
namespace detail {

TBATCH_INLINE std::atomic<int>& max_threads_setting();

}  // namespace detail

/// The number of threads a kernel whose work exceeds 1 MiB runs on: 1 unless tbatch is compiled
/// with TBATCH_OPENMP and OpenMP; then the count set_max_threads gave, or by default OpenMP's
/// omp_get_max_threads() (OMP_NUM_THREADS, else the number of cores).
TBATCH_INLINE int max_threads();

/// Caps the threads tbatch's kernels use at `threads` (1: every call runs in the calling
/// thread); 0 restores the default, OpenMP's own count. Process-wide and thread-safe; calls
/// already running keep their count. Without OpenMP it is recorded but every call stays in the
/// calling thread. ValueError for a negative `threads`.
TBATCH_INLINE void set_max_threads(int threads);

#if TBATCH_DEFINITIONS

TBATCH_INLINE std::atomic<int>& detail::max_threads_setting() {
  static std::atomic<int> threads{0};  // 0: OpenMP's own count
  return threads;
}

TBATCH_INLINE int max_threads() {
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
  const int set = detail::max_threads_setting().load(std::memory_order_relaxed);
  return set > 0 ? set : omp_get_max_threads();
#else
  return 1;
#endif
}

TBATCH_INLINE void set_max_threads(int threads) {
  if (threads < 0)
    detail::fail<ValueError>("set_max_threads",
                             {"threads is ", threads, ", expected >= 0 (0: OpenMP's default)"});
  detail::max_threads_setting().store(threads, std::memory_order_relaxed);
}

#endif  // TBATCH_DEFINITIONS

namespace detail {

/// Calls body(i) for i = first, first + step, ... below last: on max_threads() threads when
/// tbatch is built with TBATCH_OPENMP (and OpenMP is on) and `parallel` holds, else in order.
/// Bodies must write disjoint memory. An exception never leaves the parallel region (that
/// would end the program): bodies not yet started are skipped and the first exception is
/// rethrown after it.
template <class Body>
void parallel_for(index_t first, index_t last, index_t step, bool parallel, Body&& body) {
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
  const int threads = parallel ? max_threads() : 1;
  if (threads > 1 && first < last) {
    const index_t count = (last - first + step - 1) / step;
    std::exception_ptr error;
    std::atomic<bool> failed{false};
#pragma omp parallel for schedule(dynamic) num_threads(threads)
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

}  // namespace detail
}  // namespace tbatch
