// Tests of tbatch/mpi/balance.hpp, the integer arithmetic of the MPI collectives: it includes
// no <mpi.h>, so these run without MPI or mpiexec. Each function is checked against a plain
// loop on random inputs, on the edge cases (no elements, more ranks than elements, zero-row
// elements, uneven sizes) and on its errors.

#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tbatch/mpi/balance.hpp"

using namespace tbatch;
using namespace tbatch::mpi::detail;
using Catch::Matchers::Contains;

constexpr index_t index_max = std::numeric_limits<index_t>::max();

namespace {

/// B + 1 row offsets of elements with `rows` rows each.
std::vector<index_t> offsets_of(const std::vector<index_t>& rows) {
  std::vector<index_t> first{0};
  for (const index_t n : rows)
    first.push_back(first.back() + n);
  return first;
}

/// Random row counts: `batch` elements of 0 to `most` rows.
std::vector<index_t> random_rows(std::mt19937& rng, index_t batch, index_t most) {
  std::uniform_int_distribution<index_t> rows(0, most);
  std::vector<index_t> out(static_cast<std::size_t>(batch));
  for (index_t& n : out)
    n = rows(rng);
  return out;
}

/// balanced_boundaries by its definition, one plateau (the starts sharing one row offset) at a
/// time: the plateau nearest k * total / parts by rows, then by elements to k * B / parts (the
/// lower plateau on a tie); in it the start nearest k * B / parts (halves up); never below the
/// previous boundary.
std::vector<index_t> plain_boundaries(const std::vector<index_t>& first, int parts) {
  const auto batch = static_cast<index_t>(first.size()) - 1;
  std::vector<index_t> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds.back() = batch;
  for (int k = 1; k < parts; ++k) {
    const index_t target = first.back() * k, element_target = batch * k;
    index_t best_lo = -1, best_hi = -1, best_rows = 0, best_elements = 0;
    for (index_t lo = 0; lo <= batch;) {
      index_t hi = lo;
      while (hi < batch && first[std::size_t(hi + 1)] == first[std::size_t(lo)])
        ++hi;
      const index_t rows = std::abs(first[std::size_t(lo)] * parts - target);
      const index_t elements =
          std::max({index_t(0), lo * parts - element_target, element_target - hi * parts});
      if (best_lo < 0 || rows < best_rows || (rows == best_rows && elements < best_elements)) {
        best_lo = lo, best_hi = hi, best_rows = rows, best_elements = elements;
      }
      lo = hi + 1;
    }
    const index_t nearest = (2 * element_target + parts) / (2 * parts);
    const auto at = static_cast<std::size_t>(k);
    bounds[at] = std::max(bounds[at - 1], std::clamp(nearest, best_lo, best_hi));
  }
  return bounds;
}

/// Checks the documented guarantees of `bounds` for a batch of offsets `first` in `parts`.
void check_balanced(const std::vector<index_t>& first, int parts,
                    const std::vector<index_t>& bounds) {
  const auto batch = static_cast<index_t>(first.size()) - 1;
  REQUIRE(bounds.size() == std::size_t(parts) + 1);
  CHECK(bounds.front() == 0);
  CHECK(bounds.back() == batch);
  CHECK(std::is_sorted(bounds.begin(), bounds.end()));
  index_t largest = 0;
  for (index_t i = 0; i < batch; ++i)
    largest = std::max(largest, first[std::size_t(i + 1)] - first[std::size_t(i)]);
  for (std::size_t k = 0; k < std::size_t(parts); ++k) {
    const index_t rows = first[std::size_t(bounds[k + 1])] - first[std::size_t(bounds[k])];
    CHECK(std::abs(rows * parts - first.back()) <= largest * parts);
  }
}

}  // namespace

TEST_CASE("int_count passes ints and rejects larger counts", "[mpi_balance]") {
  CHECK(int_count(0, "f", "count") == 0);
  CHECK(int_count(INT_MAX, "f", "count") == INT_MAX);
  CHECK_THROWS_AS(int_count(index_t(INT_MAX) + 1, "f", "count"), ShapeError);
  CHECK_THROWS_WITH(int_count(index_t(INT_MAX) + 1, "f", "the last dim"),
                    Contains("f: the last dim 2147483648 exceeds MPI's int count limit"));
}

TEST_CASE("displacements place each rank's items after the previous rank's", "[mpi_balance]") {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<index_t> items =
        random_rows(rng, std::uniform_int_distribution<index_t>(0, 9)(rng), 5);
    for (const bool limited : {true, false}) {
      const Displacements d = displacements(items, limited, "f", "rows");
      REQUIRE(d.counts.size() == items.size());
      REQUIRE(d.displs.size() == items.size());
      index_t total = 0;
      for (std::size_t r = 0; r < items.size(); ++r) {
        // A rank with nothing to send (or nothing sent at all) gets count and displacement 0.
        const bool sent = limited && items[r] > 0;
        CHECK(d.counts[r] == (sent ? items[r] : 0));
        CHECK(d.displs[r] == (sent ? total : 0));
        total += items[r];
      }
      CHECK(d.total == total);
    }
  }
  CHECK(displacements({}, true, "f", "rows").total == 0);
}

TEST_CASE("displacements reject counts and offsets beyond MPI's int", "[mpi_balance]") {
  const index_t big = index_t(INT_MAX) + 1;
  CHECK_THROWS_WITH(displacements({1, big}, true, "mpi::gather", "rows"),
                    Contains("mpi::gather: rank 1 has 2147483648 rows to exchange but MPI counts "
                             "are int"));
  CHECK_THROWS_WITH(displacements({INT_MAX, 1, 1}, true, "mpi::gather", "elements"),
                    Contains("mpi::gather: rank 2's elements would start at offset 2147483648"));
  CHECK_THROWS_AS(displacements({INT_MAX, 1, 1}, true, "f", "rows"), ShapeError);
  // Not sent (an empty row width): only the total is kept, which may exceed int.
  CHECK(displacements({big, big}, false, "f", "rows").total == 2 * big);
  CHECK_THROWS_AS(displacements({index_max, 1}, false, "f", "rows"), ShapeError);
}

TEST_CASE("balanced_boundaries matches its definition on random batches", "[mpi_balance]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    const index_t batch = std::uniform_int_distribution<index_t>(0, 24)(rng);
    const index_t most = std::uniform_int_distribution<index_t>(0, trial % 3 == 0 ? 1 : 9)(rng);
    const int parts = std::uniform_int_distribution<int>(1, 9)(rng);
    const std::vector<index_t> first = offsets_of(random_rows(rng, batch, most));
    const std::vector<index_t> bounds = balanced_boundaries(first.data(), batch, parts);
    INFO("trial " << trial << ", batch " << batch << ", parts " << parts);
    CHECK(bounds == plain_boundaries(first, parts));
    check_balanced(first, parts, bounds);
  }
}

TEST_CASE("balanced_boundaries on the edge cases", "[mpi_balance]") {
  SECTION("no elements: every share is empty") {
    const std::vector<index_t> first{0};
    CHECK(balanced_boundaries(first.data(), 0, 3) == std::vector<index_t>{0, 0, 0, 0});
  }
  SECTION("one part takes everything") {
    const std::vector<index_t> first = offsets_of({3, 1, 4});
    CHECK(balanced_boundaries(first.data(), 3, 1) == std::vector<index_t>{0, 3});
  }
  SECTION("more parts than elements: some shares are empty, none is split") {
    const std::vector<index_t> first = offsets_of({2, 2});
    const std::vector<index_t> bounds = balanced_boundaries(first.data(), 2, 5);
    CHECK(bounds == plain_boundaries(first, 5));
    check_balanced(first, 5, bounds);
    CHECK(bounds == std::vector<index_t>{0, 0, 1, 1, 2, 2});
  }
  SECTION("zero-row elements are split by element count") {
    const std::vector<index_t> first(7, 0);  // six elements of no rows
    CHECK(balanced_boundaries(first.data(), 6, 3) == std::vector<index_t>{0, 2, 4, 6});
  }
  SECTION("uneven sizes: one large element is a share of its own") {
    const std::vector<index_t> first = offsets_of({10, 1, 1, 1, 1, 1, 1});
    CHECK(balanced_boundaries(first.data(), 7, 2) == std::vector<index_t>{0, 1, 7});
  }
  SECTION("zero-row elements between rows go by element count too") {
    const std::vector<index_t> first = offsets_of({4, 0, 0, 0, 0, 4});
    const std::vector<index_t> bounds = balanced_boundaries(first.data(), 6, 2);
    CHECK(bounds == plain_boundaries(first, 2));
    CHECK(bounds == std::vector<index_t>{0, 3, 6});
  }
  SECTION("row totals whose product with the parts exceeds 64 bits") {
    const index_t half = index_max / 2;
    const std::vector<index_t> first{0, half, 2 * half};
    CHECK(balanced_boundaries(first.data(), 2, 4) == std::vector<index_t>{0, 0, 1, 1, 2});
  }
}

TEST_CASE("balanced_boundaries rejects no parts and negative batches", "[mpi_balance]") {
  const std::vector<index_t> first{0, 1};
  CHECK_THROWS_AS(balanced_boundaries(first.data(), 1, 0), ValueError);
  CHECK_THROWS_WITH(balanced_boundaries(first.data(), 1, -2),
                    Contains("mpi::balanced_boundaries: cannot split a batch of 1 elements "
                             "into -2 parts"));
  CHECK_THROWS_AS(balanced_boundaries(first.data(), -1, 2), ValueError);
}

TEST_CASE("balanced_shares names the share of each position", "[mpi_balance]") {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<index_t> rows =
        random_rows(rng, std::uniform_int_distribution<index_t>(0, 15)(rng), 6);
    const int ranks = std::uniform_int_distribution<int>(1, 6)(rng);
    const std::vector<index_t> first = offsets_of(rows);
    const std::vector<index_t> bounds =
        balanced_boundaries(first.data(), index_t(rows.size()), ranks);
    const std::vector<int> share = balanced_shares(rows, ranks, "test");
    REQUIRE(share.size() == rows.size());
    for (std::size_t p = 0; p < rows.size(); ++p) {
      const auto k = std::size_t(share[p]);
      CHECK(bounds[k] <= index_t(p));
      CHECK(index_t(p) < bounds[k + 1]);
    }
  }
  CHECK(balanced_shares({}, 3, "test").empty());
  // A total past int64 is an error naming the caller, not a wrapped sum.
  const index_t huge = std::numeric_limits<index_t>::max();
  try {
    (void)balanced_shares({huge, 1}, 2, "mpi::rebalance");
    FAIL("no error for rows summing past int64");
  } catch (const ShapeError& e) {
    CHECK(std::string(e.what()).rfind("mpi::rebalance:", 0) == 0);
  }
}

TEST_CASE("local_part is the rank's slice of the global order", "[mpi_balance]") {
  const std::vector<index_t> batches{2, 0, 3};
  const std::vector<int> global{7, 8, 9, 10, 11};
  CHECK(local_part(batches, 0, global) == std::vector<int>{7, 8});
  CHECK(local_part(batches, 1, global).empty());
  CHECK(local_part(batches, 2, global) == std::vector<int>{9, 10, 11});
}

TEST_CASE("buckets_by_size splits the size order into balanced shares", "[mpi_balance]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<index_t> rows =
        random_rows(rng, std::uniform_int_distribution<index_t>(0, 15)(rng), 6);
    const int ranks = std::uniform_int_distribution<int>(1, 5)(rng);
    // The plain way: sort by (rows, index), split, and list each rank's elements.
    std::vector<index_t> sorted(rows.size());
    for (std::size_t g = 0; g < rows.size(); ++g)
      sorted[g] = index_t(g);
    std::sort(sorted.begin(), sorted.end(), [&](index_t x, index_t y) {
      return rows[std::size_t(x)] != rows[std::size_t(y)]
                 ? rows[std::size_t(x)] < rows[std::size_t(y)]
                 : x < y;
    });
    CHECK(size_order(rows) == sorted);
    std::vector<index_t> sorted_rows;
    for (const index_t g : sorted)
      sorted_rows.push_back(rows[std::size_t(g)]);
    const std::vector<int> share_at = balanced_shares(sorted_rows, ranks, "test");
    for (int me = 0; me < ranks; ++me) {
      const Buckets b = buckets_by_size(rows, ranks, me, "test");
      REQUIRE(b.share.size() == rows.size());
      std::vector<index_t> received;  // global indices `me` receives, in global order
      for (std::size_t g = 0; g < rows.size(); ++g)
        if (b.share[g] == me) received.push_back(index_t(g));
      std::vector<index_t> wanted, got;  // in sorted order
      for (std::size_t p = 0; p < sorted.size(); ++p)
        if (share_at[p] == me) wanted.push_back(sorted[p]);
      for (const index_t position : b.order)
        got.push_back(received[std::size_t(position)]);
      CHECK(got == wanted);
    }
  }
}

TEST_CASE("plan_sends is a stable counting sort by destination", "[mpi_balance]") {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = std::uniform_int_distribution<int>(1, 5)(rng);
    const std::vector<index_t> rows =
        random_rows(rng, std::uniform_int_distribution<index_t>(0, 12)(rng), 4);
    std::uniform_int_distribution<int> to(0, ranks - 1);
    std::vector<int> destination(rows.size());
    for (int& d : destination)
      d = to(rng);
    if (trial % 4 == 0) std::sort(destination.begin(), destination.end());
    const SendPlan plan = plan_sends(rows, destination, ranks);
    // The plain way: append each destination's elements in order.
    std::vector<index_t> element_at(rows.size()), row_at(rows.size());
    index_t element = 0, row = 0;
    for (int r = 0; r < ranks; ++r) {
      index_t elements = 0, sent_rows = 0;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (destination[i] != r) continue;
        element_at[i] = element++;
        row_at[i] = row;
        row += rows[i];
        ++elements;
        sent_rows += rows[i];
      }
      CHECK(plan.elements[std::size_t(r)] == elements);
      CHECK(plan.rows[std::size_t(r)] == sent_rows);
    }
    CHECK(plan.element_at == element_at);
    CHECK(plan.row_at == row_at);
    CHECK(plan.in_order == std::is_sorted(destination.begin(), destination.end()));
  }
  const SendPlan none = plan_sends({}, {}, 3);
  CHECK(none.elements == std::vector<index_t>{0, 0, 0});
  CHECK(none.in_order);
}

TEST_CASE("destination_runs merge consecutive elements bound for one rank", "[mpi_balance]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int ranks = std::uniform_int_distribution<int>(1, 4)(rng);
    const std::vector<index_t> rows =
        random_rows(rng, std::uniform_int_distribution<index_t>(0, 12)(rng), 3);
    const std::vector<index_t> first = offsets_of(rows);
    std::uniform_int_distribution<int> to(0, ranks - 1);
    std::vector<int> destination(rows.size());
    for (int& d : destination)
      d = to(rng);
    const RowRuns runs = destination_runs(first.data(), destination, ranks);
    REQUIRE(runs.starts.size() == std::size_t(ranks));
    for (int r = 0; r < ranks; ++r) {
      const auto k = std::size_t(r);
      std::vector<index_t> expanded, plain;  // the row indices sent to r
      for (std::size_t j = 0; j < runs.starts[k].size(); ++j) {
        CHECK(runs.lengths[k][j] > 0);
        if (j > 0) CHECK(runs.starts[k][j] > runs.starts[k][j - 1] + runs.lengths[k][j - 1]);
        for (int n = 0; n < runs.lengths[k][j]; ++n)
          expanded.push_back(runs.starts[k][j] + n);
      }
      for (std::size_t i = 0; i < rows.size(); ++i)
        if (destination[i] == r)
          for (index_t n = first[i]; n < first[i + 1]; ++n)
            plain.push_back(n);
      CHECK(expanded == plain);
    }
  }
}
