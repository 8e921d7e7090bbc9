// The thread-count setting: its default, its range check, and that a count of 1 keeps every
// body of a large loop in the calling thread.
#include <catch2/catch.hpp>
#include <mutex>
#include <set>
#include <thread>

#include "tbatch/base/parallel.hpp"

using namespace tbatch;

namespace {
/// Restores the default thread count when a test ends, however it ends.
struct DefaultThreadsAfter {
  ~DefaultThreadsAfter() { set_max_threads(0); }
};
}  // namespace

TEST_CASE("max_threads defaults to OpenMP's count and set_max_threads caps it", "[parallel]") {
  DefaultThreadsAfter restore;
  const int default_threads = max_threads();
  CHECK(default_threads >= 1);
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
  CHECK(default_threads == omp_get_max_threads());
  set_max_threads(3);
  CHECK(max_threads() == 3);
#else
  set_max_threads(3);
  CHECK(max_threads() == 1);  // recorded, but without OpenMP every call is serial
#endif
  set_max_threads(0);
  CHECK(max_threads() == default_threads);
}

TEST_CASE("set_max_threads(1) runs a parallel loop in the calling thread", "[parallel]") {
  DefaultThreadsAfter restore;
  set_max_threads(1);
  std::set<std::thread::id> seen;
  std::mutex guard;
  index_t sum = 0;
  detail::parallel_for(0, 1000, 1, true, [&](index_t i) {
    std::lock_guard lock(guard);
    seen.insert(std::this_thread::get_id());
    sum += i;
  });
  CHECK(sum == 999 * 1000 / 2);
  REQUIRE(seen.size() == 1);
  CHECK(*seen.begin() == std::this_thread::get_id());
}

TEST_CASE("set_max_threads rejects a negative count", "[parallel]") {
  DefaultThreadsAfter restore;
  set_max_threads(2);
  CHECK_THROWS_AS(set_max_threads(-1), ValueError);
  CHECK_THROWS_WITH(set_max_threads(-1), Catch::Contains("set_max_threads") &&
                                             Catch::Contains("threads is -1") &&
                                             Catch::Contains(">= 0"));
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
  CHECK(max_threads() == 2);  // a rejected call changes nothing
#endif
}
