#pragma once
// Helpers shared by the fuzz targets: a reader that turns the fuzzer's bytes into sizes,
// indices and choices, and the rule every target enforces (bad input may only end in a
// tbatch::Error; a wrong result or any other exception is a finding).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <string_view>
#include <tbatch/tbatch.hpp>
#include <vector>

#include "../plain_loops.hpp"

namespace tbatch::fuzz {

/// Reads values from the fuzzer's bytes; past the end every read returns the smallest choice,
/// so every input is a complete, deterministic test case.
class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() { return position_ < size_ ? data_[position_++] : 0; }
  bool boolean() { return (byte() & 1) != 0; }

  /// A value in [lo, hi] (hi - lo < 2^16).
  index_t in_range(index_t lo, index_t hi) {
    const index_t span = hi - lo + 1;
    const index_t raw = (index_t(byte()) << 8) | byte();
    return lo + raw % span;
  }

  /// Mostly a value in [lo, hi]; sometimes one of the extremes that must be rejected cleanly
  /// (negative, huge, overflowing in products and sums).
  index_t size_or_extreme(index_t lo, index_t hi) {
    if (byte() < 232) return in_range(lo, hi);
    static constexpr index_t extremes[] = {-1,
                                           -2,
                                           -(index_t(1) << 40),
                                           index_t(1) << 31,
                                           index_t(1) << 32,
                                           index_t(1) << 62,
                                           std::numeric_limits<index_t>::max(),
                                           std::numeric_limits<index_t>::min()};
    return extremes[byte() % std::size(extremes)];
  }

  /// Any 64-bit value built from the bytes (for index tensors and offset tables).
  index_t raw_index(index_t typical_lo, index_t typical_hi) {
    return byte() < 224 ? in_range(typical_lo, typical_hi) : size_or_extreme(0, 0);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;
};

/// Outputs larger than this many elements are not materialised: the target checks only that
/// the shape functions accept them (a valid but huge request may legitimately run out of memory).
inline constexpr index_t max_fuzz_elements = index_t(1) << 16;

/// Product of sizes if every size is in [0, max_fuzz_elements] and so is the product.
inline std::optional<index_t> small_numel(const Shape& shape) {
  index_t n = 1;
  for (index_t s : shape) {
    if (s < 0 || s > max_fuzz_elements) return std::nullopt;
    n *= s;
    if (n > max_fuzz_elements) return std::nullopt;
  }
  return n;
}

/// A finding: print it and abort so the fuzzer records the input.
[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

/// Checks a differential result.
inline void expect(bool ok, const char* what) {
  if (!ok) finding(what);
}

/// Runs `body`: true when it returns. A tbatch::Error is an accepted rejection if its message
/// starts with the name of a tbatch function ("name: what was wrong"); anything else escapes
/// to the fuzzer as a crash.
template <class Body>
bool accepts(Body&& body) {
  try {
    body();
    return true;
  } catch (const Error& e) {
    const std::string_view message = e.what();
    // TBATCH_FUZZ_VERBOSE=1 prints each rejection, to read a finding's story.
    if (std::getenv("TBATCH_FUZZ_VERBOSE")) std::fprintf(stderr, "rejected: %s\n", e.what());
    const std::size_t colon = message.find(": ");
    if (colon == 0 || colon == std::string_view::npos || colon + 2 == message.size())
      finding("a tbatch::Error whose message does not start with \"function: \"");
    return false;
  }
}

using testing::element_at;
using testing::element_ref;
using testing::for_each_index;

/// Random values of T from the input (small integers, exact in every dtype).
template <class T>
Tensor<T> values_from(FuzzInput& in, const Shape& shape) {
  Tensor<T> out(shape);
  for (index_t i = 0; i < out.numel(); ++i)
    out.data()[i] = static_cast<T>(in.byte() % 16);
  return out;
}

}  // namespace tbatch::fuzz
