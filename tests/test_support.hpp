#pragma once
// Shared helpers for the test suite: the dtype lists and small value generators.

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>
#include <tuple>
#include <type_traits>
#include <vector>

#include "plain_loops.hpp"

namespace tbatch::testing {

/// Test cases that could not run on this machine (catch_main.cpp exits with 77 when there were
/// some and nothing failed; tests/CMakeLists.txt gives such executables SKIP_RETURN_CODE 77).
extern int skipped_test_cases;

/// Ends the current test case as skipped, saying why.
#define TBATCH_SKIP(reason)                  \
  do {                                       \
    WARN("SKIP: " << reason);                \
    ++::tbatch::testing::skipped_test_cases; \
    return;                                  \
  } while (false)

/// Builds a T from a small integer (exact in every supported type, including half and bool).
template <class T>
T value_of(int v) {
  if constexpr (std::is_same_v<T, bool>)
    return v % 2 != 0;
  else
    return static_cast<T>(v);
}

/// A tensor of `shape` holding value_of<T>(0, 1, 2, ...) in row-major order (mod `wrap`).
template <class T>
Tensor<T> iota(Shape shape, int wrap = 100) {
  Tensor<T> out(shape);
  T* p = out.data();
  for (index_t i = 0; i < out.numel(); ++i)
    p[i] = value_of<T>(static_cast<int>(i % wrap));
  return out;
}

/// A tensor of `shape` with uniform random small integers as T.
template <class T>
Tensor<T> random_tensor(Shape shape, std::mt19937& rng, int max_value = 100) {
  std::uniform_int_distribution<int> dist(0, max_value);
  Tensor<T> out(shape);
  for (index_t i = 0; i < out.numel(); ++i)
    out.data()[i] = value_of<T>(dist(rng));
  return out;
}

/// Random shape of `rank` dims with sizes in [lo, hi].
inline Shape random_shape(std::mt19937& rng, index_t rank, index_t lo, index_t hi) {
  std::uniform_int_distribution<index_t> dist(lo, hi);
  Shape s;
  for (index_t d = 0; d < rank; ++d)
    s.push_back(dist(rng));
  return s;
}

/// Sets the streaming-stores threshold for a scope and restores it after.
class StreamingThreshold {
 public:
  explicit StreamingThreshold(index_t bytes) : saved_(streaming_stores_min_bytes()) {
    set_streaming_stores_min_bytes(bytes);
  }
  ~StreamingThreshold() { set_streaming_stores_min_bytes(saved_); }
  StreamingThreshold(const StreamingThreshold&) = delete;
  StreamingThreshold& operator=(const StreamingThreshold&) = delete;

 private:
  index_t saved_;
};

/// A streaming threshold no output reaches.
inline constexpr index_t never_stream = std::numeric_limits<index_t>::max();

/// fn() evaluated with every output streamed and with none; both results must be equal.
template <class Fn>
void check_streaming_matches_cached(Fn&& fn) {
  const auto cached = [&] {
    StreamingThreshold none(never_stream);
    return fn();
  }();
  const auto streamed = [&] {
    StreamingThreshold all(0);
    return fn();
  }();
  REQUIRE(streamed.shape() == cached.shape());
  for_each_index(cached.shape(), [&](const auto& idx) {
    REQUIRE(element_at(streamed, idx) == element_at(cached, idx));
  });
}

/// Matches a tbatch::Error whose message contains a fragment.
class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit MessageContains(std::string fragment) : fragment_(std::move(fragment)) {}
  bool match(const std::exception& e) const override {
    return std::string(e.what()).find(fragment_) != std::string::npos;
  }
  std::string describe() const override { return "message contains \"" + fragment_ + "\""; }

 private:
  std::string fragment_;
};

/// Checks that evaluating `expr` throws exception type E whose message contains `fragment`.
#define TBATCH_CHECK_THROWS_WITH(expr, E, fragment) \
  CHECK_THROWS_MATCHES(expr, E, ::tbatch::testing::MessageContains(fragment))

}  // namespace tbatch::testing

// Every element type tbatch supports, for TEMPLATE_TEST_CASE: made from the library's one list.
#define TBATCH_TEST_COMMA_TYPE(type, ...) , type
#define TBATCH_TEST_DROP_FIRST_(first, ...) __VA_ARGS__
#define TBATCH_TEST_DROP_FIRST(...) TBATCH_TEST_DROP_FIRST_(__VA_ARGS__)
#define TBATCH_ALL_DTYPES \
  TBATCH_TEST_DROP_FIRST(void TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_TEST_COMMA_TYPE))
// One element type of each width (1, 2, 4 and 8 bytes): copies and streamed stores move words of
// the element's width, so these instantiate every kernel that the twelve types would.
#define TBATCH_ONE_DTYPE_PER_WIDTH std::uint8_t, Eigen::half, float, double
// Element types with arithmetic: every one but bool (checked below against the list).
#define TBATCH_ARITHMETIC_DTYPES                                                        \
  float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t, \
      std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t
static_assert(
    std::is_same_v<std::tuple<TBATCH_ARITHMETIC_DTYPES, bool>, std::tuple<TBATCH_ALL_DTYPES>>,
    "TBATCH_ARITHMETIC_DTYPES must be the element types without bool, in list order");
