#pragma once
// Timing helpers shared by the MPI benchmarks: a run's time is the slowest rank's, between
// barriers, and figures are medians over interleaved repetitions.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace tbatch_bench {

/// Seconds `run` takes on the slowest rank, starting together after a barrier.
template <class Run>
double time_once(MPI_Comm comm, Run&& run) {
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  run();
  const double mine =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  return slowest;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace tbatch_bench
