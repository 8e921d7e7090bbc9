#pragma once
// Word<N>: N bytes moved as one unit. Kernels that only move elements (copy, fill, gather,
// scatter by assignment, stack, cat) run on Word<sizeof(T)> instead of T, so they are compiled
// once per element width (1, 2, 4, 8 bytes) rather than once per element type.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"

namespace tbatch::detail {

/// The unsigned integer of N bytes (N is 1, 2, 4 or 8).
template <std::size_t N>
using UnsignedOfSize = std::conditional_t<
    N == 1, std::uint8_t,
    std::conditional_t<N == 2, std::uint16_t,
                       std::conditional_t<N == 4, std::uint32_t, std::uint64_t>>>;

// may_alias: a Word reads and writes memory that holds floats, halves or integers, which the
// aliasing rules otherwise forbid. Compilers without the attribute do not use type-based alias
// analysis.
#if defined(__GNUC__) || defined(__clang__)
#define TBATCH_MAY_ALIAS __attribute__((__may_alias__))
#else
#define TBATCH_MAY_ALIAS
#endif

/// The bits of one element of N bytes, copied as an unsigned integer (so copy loops vectorise).
template <std::size_t N>
struct TBATCH_MAY_ALIAS Word {
  static_assert(N == 1 || N == 2 || N == 4 || N == 8, "Word<N>: N is 1, 2, 4 or 8 bytes");
  UnsignedOfSize<N> bits;
};

template <class T>
using WordOf = Word<sizeof(T)>;

template <class T>
inline constexpr bool is_word_v = false;
template <std::size_t N>
inline constexpr bool is_word_v<Word<N>> = true;
template <std::size_t N>
inline constexpr bool is_word_v<const Word<N>> = true;

/// The bits of `value` as a word of its size.
template <class T>
WordOf<T> to_word(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  WordOf<T> word;
  std::memcpy(&word, &value, sizeof(T));
  return word;
}

/// Calls fn(std::type_identity<Word<N>>{}) for an element size N of 1, 2, 4 or 8 bytes.
template <class Fn>
decltype(auto) dispatch_width(index_t element_size, Fn&& fn) {
  switch (element_size) {
    case 1:
      return fn(std::type_identity<Word<1>>{});
    case 2:
      return fn(std::type_identity<Word<2>>{});
    case 4:
      return fn(std::type_identity<Word<4>>{});
    case 8:
      return fn(std::type_identity<Word<8>>{});
  }
  fail<ValueError>("dispatch_width",
                   {"element size ", element_size,
                    " is not one of the element widths (expected 1, 2, 4 or 8 bytes)"});
}

}  // namespace tbatch::detail
