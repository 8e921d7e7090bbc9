// bench_mpi_all_to_all: time to move a ragged float batch between ranks by random destinations
// with tbatch::mpi::all_to_all, next to MPI_Alltoallv of the same rows.
//
// Every rank holds total / ranks bytes of rows of 16 floats (64 bytes) in elements of 1 to 2048
// rows, each sent to a random rank. Timed per repetition, each the slowest rank's time between
// barriers, interleaved:
//   raw      MPI_Alltoallv of the rows (a 64-byte row type) from send buffers already packed by
//            destination into a preallocated receive buffer, counts and displacements known in
//            advance
//   tbatch   tbatch::mpi::all_to_all: descriptors and destinations checked, counts exchanged,
//            elements packed by destination, shapes and rows exchanged, result allocated and
//            first_idx rebuilt
// Prints medians (and minima) over the repetitions. Plain std::chrono, no benchmark library.
//
//   mpiexec -n 2 ./bench_mpi_all_to_all [total MiB = 64] [repetitions = 15]

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
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

constexpr index_t last_dim = 16;  // floats per row: 64 bytes
constexpr index_t max_rows = 2048;

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const index_t total_mib = argc > 1 ? std::atoll(argv[1]) : 64;
  const int repetitions = argc > 2 ? std::atoi(argv[2]) : 15;
  const index_t row_bytes = last_dim * index_t(sizeof(float));
  const index_t rows_per_rank = total_mib * (index_t(1) << 20) / row_bytes / size;

  std::mt19937 rng(11u + unsigned(rank));
  std::vector<Tensor<float>> list;
  for (index_t done = 0; done < rows_per_rank;) {
    const index_t n =
        std::min(std::uniform_int_distribution<index_t>(1, max_rows)(rng), rows_per_rank - done);
    list.emplace_back(Shape{n, last_dim}, float(rank + 1));
    done += n;
  }
  const PackedBatch<float> batch = tbatch::list_to_packed(list);
  Tensor<index_t> destination(Shape{batch.batch_size()});
  for (index_t i = 0; i < batch.batch_size(); ++i)
    destination(i) = std::uniform_int_distribution<index_t>(0, size - 1)(rng);

  // The raw side's inputs, prepared once: rows packed by destination, byte counts exchanged.
  std::vector<int> send_counts(size, 0), send_displs(size, 0), receive_counts(size),
      receive_displs(size, 0);
  for (index_t i = 0; i < batch.batch_size(); ++i)
    send_counts[destination(i)] += int(batch.shape_of(i)[0] * row_bytes);
  for (int r = 1; r < size; ++r)
    send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
  std::vector<char> send(std::size_t(rows_per_rank * row_bytes));
  std::vector<int> at = send_displs;
  for (index_t i = 0; i < batch.batch_size(); ++i) {
    const index_t bytes = batch.shape_of(i)[0] * row_bytes;
    std::memcpy(send.data() + at[destination(i)], batch.element(i).data(), std::size_t(bytes));
    at[destination(i)] += int(bytes);
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, comm);
  for (int r = 1; r < size; ++r)
    receive_displs[r] = receive_displs[r - 1] + receive_counts[r - 1];
  std::vector<char> receive(std::size_t(receive_displs[size - 1] + receive_counts[size - 1]));

  // In rows of 64 bytes, as tbatch describes them (byte counts measured slower here).
  MPI_Datatype row = MPI_DATATYPE_NULL;
  MPI_Type_contiguous(int(row_bytes), MPI_BYTE, &row);
  MPI_Type_commit(&row);
  std::vector<int> send_rows(size), send_row_at(size), receive_rows(size), receive_row_at(size);
  for (int r = 0; r < size; ++r) {
    send_rows[r] = int(send_counts[r] / row_bytes);
    send_row_at[r] = int(send_displs[r] / row_bytes);
    receive_rows[r] = int(receive_counts[r] / row_bytes);
    receive_row_at[r] = int(receive_displs[r] / row_bytes);
  }
  auto run_raw = [&] {
    MPI_Alltoallv(send.data(), send_rows.data(), send_row_at.data(), row, receive.data(),
                  receive_rows.data(), receive_row_at.data(), row, comm);
  };
  auto run_tbatch = [&] {
    const PackedBatch<float> moved = tbatch::mpi::all_to_all(comm, batch, destination);
    if (moved.data().numel() * index_t(sizeof(float)) != index_t(receive.size()))
      MPI_Abort(comm, 2);
  };
  // Same bytes both ways.
  run_raw();
  const PackedBatch<float> check = tbatch::mpi::all_to_all(comm, batch, destination);
  int same = std::memcmp(check.data().data(), receive.data(), receive.size()) == 0;
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_LAND, comm);

  std::vector<double> raw_times, tbatch_times;
  for (int warmup = 0; warmup < 2; ++warmup) {
    time_once(comm, run_raw);
    time_once(comm, run_tbatch);
  }
  for (int i = 0; i < repetitions; ++i) {
    raw_times.push_back(time_once(comm, run_raw));
    tbatch_times.push_back(time_once(comm, run_tbatch));
  }
  if (rank == 0) {
    const double raw = median(raw_times), tb = median(tbatch_times);
    std::printf(
        "all_to_all of %lld MiB over %d ranks (%lld elements on rank 0), %d repetitions, "
        "results %s\n",
        static_cast<long long>(total_mib), size, static_cast<long long>(batch.batch_size()),
        repetitions, same ? "identical" : "DIFFERENT");
    std::printf("  raw MPI_Alltoallv   median %8.2f ms  min %8.2f ms\n", raw * 1e3,
                *std::min_element(raw_times.begin(), raw_times.end()) * 1e3);
    std::printf("  tbatch all_to_all   median %8.2f ms  min %8.2f ms  (%.2fx raw)\n", tb * 1e3,
                *std::min_element(tbatch_times.begin(), tbatch_times.end()) * 1e3, tb / raw);
  }
  MPI_Type_free(&row);
  MPI_Finalize();
  return same ? 0 : 1;
}
