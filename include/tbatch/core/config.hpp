#pragma once
// Basic types and the internal-invariant assert shared by every tbatch header.

#include <cassert>
#include <cstdint>

namespace tbatch {

/// Signed index and size type used throughout tbatch (as torch's int64_t).
using index_t = std::int64_t;

namespace detail {
/// With TBATCH_OPENMP, loops whose work exceeds this many bytes run on omp_get_max_threads().
inline constexpr index_t parallel_min_bytes = index_t(1) << 20;
}  // namespace detail

}  // namespace tbatch

// TBATCH_PARALLEL_FOR(cond): an OpenMP parallel for over the next (canonical) loop when tbatch
// is built with TBATCH_OPENMP and OpenMP is enabled and `cond` holds; nothing otherwise. The
// loop bodies it is used on write disjoint memory and do not throw.
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
#define TBATCH_PRAGMA(x) _Pragma(#x)
#define TBATCH_PARALLEL_FOR(cond) TBATCH_PRAGMA(omp parallel for schedule(dynamic) if (cond))
#else
#define TBATCH_PARALLEL_FOR(cond)
#endif

// Guards internal invariants only; argument checks at the public boundary always throw.
#ifdef NDEBUG
#define TBATCH_ASSERT(cond) ((void)0)
#else
#define TBATCH_ASSERT(cond) assert(cond)
#endif
