#pragma once
// Basic types and the internal-invariant assert shared by every tbatch header.

// Every tbatch header reaches this one before any code of its own (ctest cxx20_guard checks it),
// so a pre-C++20 build stops here with the fix rather than with hundreds of errors about
// std::type_identity, concepts and spans.

#if __cplusplus < 202002L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 202002L)
#error \
    "tbatch needs C++20: compile with -std=c++20 (pkg-config --cflags tbatch and the CMake target tbatch::tbatch add it)"
#endif

#include <cassert>
#include <cstdint>

// Where the bodies of tbatch's non-template functions are compiled. Header-only mode (the
// default): in every file, as inline functions. Compiled mode (TBATCH_COMPILED, which linking
// tbatch::compiled defines): once, in the library, whose sources define TBATCH_BUILDING_LIBRARY;
// a user's file sees their declarations only.
#if !defined(TBATCH_COMPILED) || defined(TBATCH_BUILDING_LIBRARY)
#define TBATCH_DEFINITIONS 1
#else
#define TBATCH_DEFINITIONS 0
#endif
#ifdef TBATCH_COMPILED
#define TBATCH_INLINE
#else
#define TBATCH_INLINE inline
#endif
// Where the ops' kernels run: in compiled mode a user's file calls the library's kernels through
// non-template entry points on type-erased views (which only the library defines, dispatching on
// the element width or dtype); header-only mode and the library itself instantiate the typed
// kernel directly, so a file compiles only the kernels of the types it uses.
#if defined(TBATCH_COMPILED) && !defined(TBATCH_BUILDING_LIBRARY)
#define TBATCH_KERNELS_IN_LIBRARY 1
#else
#define TBATCH_KERNELS_IN_LIBRARY 0
#endif

namespace tbatch {

/// Signed index and size type used throughout tbatch (as torch's int64_t).
using index_t = std::int64_t;

namespace detail {
/// False, but only once T is known: for static_asserts in templates that must not be used.
template <class T>
inline constexpr bool dependent_false = false;
}  // namespace detail

}  // namespace tbatch

// Guards internal invariants only; argument checks at the public boundary always throw.
#ifdef NDEBUG
#define TBATCH_ASSERT(cond) ((void)0)
#else
#define TBATCH_ASSERT(cond) assert(cond)
#endif
