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
// a user's file sees their declarations only. The ops' kernels follow the same switch: where
// TBATCH_DEFINITIONS is 1 an op instantiates the kernel of its element type directly; where it
// is 0 it calls the library's non-template entry point (see docs/design.md, "The kernel
// boundary").
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
