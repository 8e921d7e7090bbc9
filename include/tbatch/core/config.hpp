#pragma once
// Basic types and the internal-invariant assert shared by every tbatch header.

#include <cassert>
#include <cstdint>

namespace tbatch {

/// Signed index and size type used throughout tbatch (as torch's int64_t).
using index_t = std::int64_t;

}  // namespace tbatch

// Guards internal invariants only; argument checks at the public boundary always throw.
#ifdef NDEBUG
#define TBATCH_ASSERT(cond) ((void)0)
#else
#define TBATCH_ASSERT(cond) assert(cond)
#endif
