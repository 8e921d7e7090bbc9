// bench_mpi: time to all-gather a ragged float batch with tbatch::mpi::allgather, next to
// MPI_Allgatherv of the same raw bytes.
//
// Every rank packs total / ranks bytes of rows of 16 floats (64 bytes) into elements of 1 to
// 2048 rows; the gathered batch is `total` bytes (64 MiB by default) on every rank. Timed per
// repetition, each the slowest rank's time between barriers, interleaved:
//   raw        MPI_Allgatherv of the bytes into a preallocated buffer, counts known in advance
//   raw+       the same plus what a caller of raw MPI has to do for a ragged batch: all-gather the
//              byte counts first and allocate the receive buffer each time
//   tbatch     tbatch::mpi::allgather: descriptors, shape_per_tensor, rows, result allocated,
//              first_idx rebuilt and validated
//   fresh      no MPI: allocating and first touching (memset) a fresh buffer of `total` bytes,
//              the page-fault cost raw+ pays on every call, tbatch on its first (on every
//              call with --no-cache) and raw never
// Prints each variant's first call in the process and its steady state: the median (and minimum)
// over the repetitions after two warm-up calls. The first calls run before anything else, raw
// first, so raw's includes MPI's own set-up and the others' do not. tbatch's first call pays the
// page faults of its new result; later ones get that block back from tbatch's buffer cache
// (core/block_cache.hpp), while raw+ and fresh get fresh pages from malloc every time.
// --no-cache turns the buffer cache off (tbatch::set_buffer_cache_limit(0)).
// Plain std::chrono, no benchmark library.
//
//   mpiexec -n 2 ./bench_mpi [total MiB = 64] [repetitions = 21] [--no-cache]

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <tbatch/mpi.hpp>

#include "mpi_timing.hpp"

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

using tbatch_bench::median;
using tbatch_bench::time_once;

constexpr index_t kLastDim = 16;  // floats per row: 64 bytes
constexpr index_t kMaxRows = 2048;

// This rank's batch: `rows` rows in elements of 1 to kMaxRows rows.
PackedBatch<float> make_batch(index_t rows, int rank) {
  std::mt19937 rng(7u + static_cast<unsigned>(rank));
  std::uniform_int_distribution<index_t> length(1, kMaxRows);
  std::vector<Tensor<float>> list;
  for (index_t done = 0; done < rows;) {
    const index_t n = std::min(length(rng), rows - done);
    list.emplace_back(Shape{n, kLastDim}, static_cast<float>(rank + 1));
    done += n;
  }
  return tbatch::list_to_packed(list);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const bool buffer_cache = !(argc > 1 && std::string(argv[argc - 1]) == "--no-cache");
  const int positional = buffer_cache ? argc : argc - 1;
  const index_t total_mib = positional > 1 ? std::atoll(argv[1]) : 64;
  const int repetitions = positional > 2 ? std::atoi(argv[2]) : 21;
  if (!buffer_cache) tbatch::set_buffer_cache_limit(0);
  const index_t row_bytes = kLastDim * static_cast<index_t>(sizeof(float));
  const index_t rows_per_rank = total_mib * (index_t(1) << 20) / row_bytes / size;

  const PackedBatch<float> batch = make_batch(rows_per_rank, rank);
  const int my_bytes = static_cast<int>(rows_per_rank * row_bytes);
  std::vector<int> counts(size), displs(size);
  MPI_Allgather(&my_bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (int r = 1; r < size; ++r)
    displs[r] = displs[r - 1] + counts[r - 1];
  const std::size_t total_bytes = static_cast<std::size_t>(displs[size - 1]) + counts[size - 1];
  std::unique_ptr<char[]> raw(new char[total_bytes]);
  std::memset(raw.get(), 0, total_bytes);  // preallocated and touched, as a reused buffer is

  auto run_raw = [&] {
    MPI_Allgatherv(batch.data().data(), my_bytes, MPI_BYTE, raw.get(), counts.data(), displs.data(),
                   MPI_BYTE, comm);
  };
  auto run_raw_plus = [&] {
    std::vector<int> c(size), d(size);
    MPI_Allgather(&my_bytes, 1, MPI_INT, c.data(), 1, MPI_INT, comm);
    for (int r = 1; r < size; ++r)
      d[r] = d[r - 1] + c[r - 1];
    std::unique_ptr<char[]> fresh(new char[static_cast<std::size_t>(d[size - 1]) + c[size - 1]]);
    MPI_Allgatherv(batch.data().data(), my_bytes, MPI_BYTE, fresh.get(), c.data(), d.data(),
                   MPI_BYTE, comm);
  };
  auto run_fresh = [&] {
    std::unique_ptr<char[]> fresh(new char[total_bytes]);
    std::memset(fresh.get(), rank, total_bytes);
    volatile char sink = fresh[total_bytes / 2];
    (void)sink;
  };
  index_t gathered_elements = 0;
  auto run_tbatch = [&] {
    const PackedBatch<float> all = tbatch::mpi::allgather(comm, batch);
    gathered_elements = all.batch_size();
  };

  const double raw_first = time_once(comm, run_raw);
  const double raw_plus_first = time_once(comm, run_raw_plus);
  const double tbatch_first = time_once(comm, run_tbatch);
  const double fresh_first = time_once(comm, run_fresh);

  // Same bytes both ways.
  run_raw();
  const PackedBatch<float> check = tbatch::mpi::allgather(comm, batch);
  int same = check.data().numel() * static_cast<index_t>(sizeof(float)) ==
                 static_cast<index_t>(total_bytes) &&
             std::memcmp(check.data().data(), raw.get(), total_bytes) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm);

  std::vector<double> raw_times, raw_plus_times, tbatch_times, fresh_times;
  for (int warmup = 0; warmup < 2; ++warmup) {
    time_once(comm, run_raw);
    time_once(comm, run_raw_plus);
    time_once(comm, run_tbatch);
  }
  for (int i = 0; i < repetitions; ++i) {
    raw_times.push_back(time_once(comm, run_raw));
    raw_plus_times.push_back(time_once(comm, run_raw_plus));
    tbatch_times.push_back(time_once(comm, run_tbatch));
    fresh_times.push_back(time_once(comm, run_fresh));
  }

  if (rank == 0) {
    const double mib = static_cast<double>(total_bytes) / (1 << 20);
    std::printf(
        "all-gather of %.1f MiB on %d ranks (%lld elements, %lld rows of %lld floats), buffer "
        "cache %s; first call, then the median (min) of %d runs\n",
        mib, size, static_cast<long long>(gathered_elements),
        static_cast<long long>(rows_per_rank * size), static_cast<long long>(kLastDim),
        buffer_cache ? "on" : "off", repetitions);
    std::printf("  %-8s %10s %9s %20s %9s %12s\n", "", "first", "vs raw", "steady (min)", "vs raw",
                "steady GiB/s");
    auto report = [&](const char* name, double first, const std::vector<double>& t) {
      const double m = median(t);
      std::printf("  %-8s %7.2f ms %8.2fx %8.2f ms (%6.2f) %8.2fx %12.2f\n", name, 1e3 * first,
                  first / raw_first, 1e3 * m, 1e3 * *std::min_element(t.begin(), t.end()),
                  m / median(raw_times), mib / 1024 / m);
    };
    report("raw", raw_first, raw_times);
    report("raw+", raw_plus_first, raw_plus_times);
    report("tbatch", tbatch_first, tbatch_times);
    report("fresh", fresh_first, fresh_times);
    std::printf("  same bytes: %s\n", same ? "yes" : "NO");
  }
  MPI_Finalize();
  return same ? 0 : 1;
}
