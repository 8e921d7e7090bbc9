#pragma once
// The integer arithmetic of the MPI collectives, apart from MPI so that it is tested without
// mpiexec (tests/test_mpi_balance.cpp): how the rows are divided between ranks, the counts and
// displacements of the v-collectives, and where each element goes in a send buffer grouped by
// destination rank.

#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/mpi/config.hpp"

#if TBATCH_MPI_DEFINITIONS
#include <algorithm>
#include <climits>
#include <cstddef>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/batch/metadata.hpp"
#endif

namespace tbatch::mpi::detail {

/// `value` as an MPI int count; ShapeError naming `what` when it does not fit.
TBATCH_INLINE int int_count(index_t value, const char* function, const char* what);

/// Counts and displacements of a v-collective that places each rank's items after the previous
/// rank's. When `limited` (the items are really sent), a count or displacement above INT_MAX is
/// a ShapeError naming the rank: MPI counts are int, and truncating them would corrupt data.
struct Displacements {
  std::vector<int> counts, displs;
  index_t total = 0;
};

TBATCH_INLINE Displacements displacements(const std::vector<index_t>& items, bool limited,
                                          const char* function, const char* unit);

/// Element boundaries splitting a packed batch (its first_idx, B + 1 row offsets) into `parts`
/// contiguous shares balanced by rows: share k is elements [bounds[k], bounds[k + 1]).
/// Boundary k is the element start whose row offset is nearest to k * total_rows / parts
/// (ties: the start nearer to k * B / parts); among starts with that same offset (zero-row
/// elements) the one nearest to k * B / parts. So each share's rows differ from
/// total_rows / parts by at most the largest element's row count, and batches of zero-row
/// elements are split by element count. ValueError for parts < 1 or batch < 0.
TBATCH_INLINE std::vector<index_t> balanced_boundaries(const index_t* first_idx, index_t batch,
                                                       int parts);

/// The share of `ranks` contiguous shares, balanced by rows (balanced_boundaries), that holds
/// position p of a sequence whose row counts are `rows` (in that order); errors name `function`.
TBATCH_INLINE std::vector<int> balanced_shares(const std::vector<index_t>& rows, int ranks,
                                               const char* function);

/// Rank `me`'s part of `global` (one entry per element of every rank, rank 0's first), where
/// rank r holds batches[r] elements.
TBATCH_INLINE std::vector<int> local_part(const std::vector<index_t>& batches, int me,
                                          const std::vector<int>& global);

/// Positions in order of size: the indices of `rows` sorted by (rows, index).
TBATCH_INLINE std::vector<index_t> size_order(const std::vector<index_t>& rows);

/// Length bucketing: share[g] is the rank that gets global element g when the elements, sorted
/// by (rows, global index), are split into `ranks` contiguous shares balanced by rows; `order`
/// lists, for rank `me`, the positions in what it receives (global order) of its elements in
/// sorted order.
struct Buckets {
  std::vector<int> share;
  std::vector<index_t> order;
};

TBATCH_INLINE Buckets buckets_by_size(const std::vector<index_t>& rows, int ranks, int me,
                                      const char* function);

/// Where each element goes when element i (of rows[i] rows) is sent to rank destination[i]
/// (each in [0, ranks)): a stable counting sort by destination into send buffers that hold each
/// destination's elements contiguously.
struct SendPlan {
  std::vector<index_t> elements, rows;      // per destination rank
  std::vector<index_t> element_at, row_at;  // per element: its shape row and first data row
  bool in_order = true;  // destinations ascending: the batch is its own send buffer
};

TBATCH_INLINE SendPlan plan_sends(const std::vector<index_t>& rows,
                                  const std::vector<int>& destination, int ranks);

/// Per destination rank, the runs of rows it gets from a packed batch (first_idx of B + 1
/// offsets, all at most INT_MAX), consecutive elements merged into one run: the blocks of an
/// indexed MPI type that sends them without a packing copy.
struct RowRuns {
  std::vector<std::vector<int>> starts, lengths;
};

TBATCH_INLINE RowRuns destination_runs(const index_t* first_idx,
                                       const std::vector<int>& destination, int ranks);

#if TBATCH_MPI_DEFINITIONS

using tbatch::detail::checked_add;
using tbatch::detail::fail;

TBATCH_INLINE int int_count(index_t value, const char* function, const char* what) {
  if (value > INT_MAX)
    fail<ShapeError>(function, {what, " ", value, " exceeds MPI's int count limit ", INT_MAX});
  return static_cast<int>(value);
}

TBATCH_INLINE Displacements displacements(const std::vector<index_t>& items, bool limited,
                                          const char* function, const char* unit) {
  Displacements d;
  d.counts.resize(items.size());
  d.displs.resize(items.size());
  for (std::size_t r = 0; r < items.size(); ++r) {
    if (limited && items[r] > 0) {  // a rank with nothing to send needs no displacement
      if (items[r] > INT_MAX)
        fail<ShapeError>(function, {"rank ", r, " has ", items[r], " ", unit,
                                    " to exchange but MPI counts are int (at most ", INT_MAX,
                                    "); split the batch into smaller ones"});
      if (d.total > INT_MAX)
        fail<ShapeError>(function, {"rank ", r, "'s ", unit, " would start at offset ", d.total,
                                    " but MPI displacements are int (at most ", INT_MAX,
                                    "); exchange fewer ", unit, " at once"});
      d.counts[r] = static_cast<int>(items[r]);
      d.displs[r] = static_cast<int>(d.total);
    }
    d.total = checked_add(d.total, items[r], function);
  }
  return d;
}

TBATCH_INLINE std::vector<index_t> balanced_boundaries(const index_t* first_idx, index_t batch,
                                                       int parts) {
  if (parts < 1 || batch < 0)
    fail<ValueError>("mpi::balanced_boundaries",
                     {"cannot split a batch of ", batch, " elements into ", parts,
                      " parts; expected at least 0 and 1"});
  __extension__ typedef __int128 wide;  // total_rows * parts may exceed 64 bits
  std::vector<index_t> bounds(static_cast<std::size_t>(parts) + 1, 0);
  bounds.back() = batch;
  const index_t* begin = first_idx;
  const index_t* end = first_idx + batch + 1;
  const wide total = first_idx[batch];
  for (int k = 1; k < parts; ++k) {
    const wide target = total * k;                // rows, in units of 1 / parts
    const wide element_target = wide(batch) * k;  // elements, in units of 1 / parts
    const index_t* above = std::lower_bound(
        begin, end, target, [parts](index_t offset, wide t) { return wide(offset) * parts < t; });
    index_t chosen = *above;  // above < end: first_idx[batch] * parts >= target
    if (above != begin) {
      const index_t at = above - begin;  // the plateau of *(above - 1) ends at at - 1
      const wide below_distance = target - wide(*(above - 1)) * parts;
      const wide above_distance = wide(*above) * parts - target;
      const wide below_elements = std::max<wide>(0, element_target - wide(at - 1) * parts);
      const wide above_elements = std::max<wide>(0, wide(at) * parts - element_target);
      if (below_distance < above_distance ||
          (below_distance == above_distance && below_elements <= above_elements))
        chosen = *(above - 1);
    }
    const index_t lo = std::lower_bound(begin, end, chosen) - begin;
    const index_t hi = (std::upper_bound(begin, end, chosen) - begin) - 1;
    const index_t nearest = static_cast<index_t>((element_target * 2 + parts) / (wide(2) * parts));
    const auto at = static_cast<std::size_t>(k);
    bounds[at] = std::max(bounds[at - 1], std::clamp(nearest, lo, hi));
  }
  return bounds;
}

TBATCH_INLINE std::vector<int> balanced_shares(const std::vector<index_t>& rows, int ranks,
                                               const char* function) {
  std::vector<index_t> first(rows.size() + 1, 0);
  std::copy(rows.begin(), rows.end(), first.begin() + 1);
  tbatch::detail::running_sum_in_place(first.data(), index_t(rows.size()), function);
  const std::vector<index_t> bounds =
      balanced_boundaries(first.data(), index_t(rows.size()), ranks);
  std::vector<int> share(rows.size());
  for (int k = 0; k < ranks; ++k)
    for (index_t p = bounds[std::size_t(k)]; p < bounds[std::size_t(k) + 1]; ++p)
      share[std::size_t(p)] = k;
  return share;
}

TBATCH_INLINE std::vector<int> local_part(const std::vector<index_t>& batches, int me,
                                          const std::vector<int>& global) {
  index_t offset = 0;
  for (int r = 0; r < me; ++r)
    offset += batches[std::size_t(r)];
  return std::vector<int>(global.begin() + offset,
                          global.begin() + offset + batches[std::size_t(me)]);
}

TBATCH_INLINE std::vector<index_t> size_order(const std::vector<index_t>& rows) {
  std::vector<index_t> sorted(rows.size());
  for (std::size_t g = 0; g < rows.size(); ++g)
    sorted[g] = index_t(g);
  std::stable_sort(sorted.begin(), sorted.end(), [&](index_t x, index_t y) {
    return rows[std::size_t(x)] < rows[std::size_t(y)];
  });
  return sorted;
}

TBATCH_INLINE Buckets buckets_by_size(const std::vector<index_t>& rows, int ranks, int me,
                                      const char* function) {
  const std::vector<index_t> sorted = size_order(rows);
  std::vector<index_t> sorted_rows(rows.size());
  for (std::size_t p = 0; p < rows.size(); ++p)
    sorted_rows[p] = rows[std::size_t(sorted[p])];
  const std::vector<int> share_at = balanced_shares(sorted_rows, ranks, function);
  Buckets b;
  b.share.resize(rows.size());  // by global index
  for (std::size_t p = 0; p < rows.size(); ++p)
    b.share[std::size_t(sorted[p])] = share_at[p];
  std::vector<index_t> mine;  // global indices `me` receives, ascending
  for (std::size_t g = 0; g < rows.size(); ++g)
    if (b.share[g] == me) mine.push_back(index_t(g));
  for (std::size_t p = 0; p < rows.size(); ++p)
    if (share_at[p] == me)
      b.order.push_back(
          index_t(std::lower_bound(mine.begin(), mine.end(), sorted[p]) - mine.begin()));
  return b;
}

TBATCH_INLINE SendPlan plan_sends(const std::vector<index_t>& rows,
                                  const std::vector<int>& destination, int ranks) {
  SendPlan plan;
  const std::size_t batch = rows.size();
  plan.elements.assign(std::size_t(ranks), 0);
  plan.rows.assign(std::size_t(ranks), 0);
  for (std::size_t i = 0; i < batch; ++i) {
    ++plan.elements[std::size_t(destination[i])];
    plan.rows[std::size_t(destination[i])] += rows[i];
  }
  plan.in_order = std::is_sorted(destination.begin(), destination.end());
  std::vector<index_t> next_element(std::size_t(ranks), 0), next_row(std::size_t(ranks), 0);
  for (std::size_t r = 1; r < std::size_t(ranks); ++r) {
    next_element[r] = next_element[r - 1] + plan.elements[r - 1];
    next_row[r] = next_row[r - 1] + plan.rows[r - 1];
  }
  plan.element_at.resize(batch);
  plan.row_at.resize(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    const auto to = std::size_t(destination[i]);
    plan.element_at[i] = next_element[to]++;
    plan.row_at[i] = next_row[to];
    next_row[to] += rows[i];
  }
  return plan;
}

TBATCH_INLINE RowRuns destination_runs(const index_t* first_idx,
                                       const std::vector<int>& destination, int ranks) {
  RowRuns runs;
  runs.starts.resize(std::size_t(ranks));
  runs.lengths.resize(std::size_t(ranks));
  for (std::size_t i = 0; i < destination.size(); ++i) {
    const index_t n = first_idx[i + 1] - first_idx[i];
    if (n == 0) continue;
    std::vector<int>& s = runs.starts[std::size_t(destination[i])];
    std::vector<int>& l = runs.lengths[std::size_t(destination[i])];
    if (!s.empty() && s.back() + l.back() == first_idx[i])
      l.back() += int(n);
    else
      s.push_back(int(first_idx[i])), l.push_back(int(n));
  }
  return runs;
}

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi::detail
