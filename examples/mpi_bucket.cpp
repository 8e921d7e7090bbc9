// mpi_bucket: length-bucketed batching of sequences across MPI ranks (needs tbatch::tbatch_mpi).
//
// Every rank reads sequences of random lengths (token embeddings, 8 features each). Padding a
// batch to its longest sequence wastes work when lengths vary, so the ranks first move their
// sequences with bucket_by_size: every rank ends with a contiguous range of lengths, sorted,
// and cuts its batches from it. The program counts the padding of those batches against
// batches cut from each rank's own unsorted sequences, and checks that no sequence was lost
// or changed (the sum of every value, across ranks, is the same before and after).
//
//   mpiexec -n 2 ./mpi_bucket

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tbatch/mpi.hpp>

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

constexpr index_t features = 8, batch_size = 16;

// This rank's sequences: 200 of 1 to 300 tokens, values drawn from the rank's seed.
std::vector<Tensor<float>> read_sequences(int rank) {
  std::mt19937 rng(99u + static_cast<unsigned>(rank));
  std::uniform_int_distribution<index_t> length(1, 300);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<Tensor<float>> sequences;
  for (int s = 0; s < 200; ++s) {
    Tensor<float> sequence(Shape{length(rng), features});
    for (index_t i = 0; i < sequence.numel(); ++i)
      sequence.data()[i] = value(rng);
    sequences.push_back(sequence);
  }
  return sequences;
}

// Padded tokens of cutting `sequences` in order into batches of batch_size, each padded to its
// longest sequence.
index_t padding_of(const PackedBatch<float>& sequences) {
  index_t padding = 0;
  for (index_t start = 0; start < sequences.batch_size(); start += batch_size) {
    const index_t end = std::min(start + batch_size, sequences.batch_size());
    index_t longest = 0, tokens = 0;
    for (index_t i = start; i < end; ++i) {
      longest = std::max(longest, sequences.shape_of(i)[0]);
      tokens += sequences.shape_of(i)[0];
    }
    padding += longest * (end - start) - tokens;
  }
  return padding;
}

double sum_of(const PackedBatch<float>& sequences) {
  double sum = 0;
  const Tensor<float> data = sequences.data().contiguous();
  for (index_t i = 0; i < data.numel(); ++i)
    sum += data.data()[i];
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int status = 0;
  try {
    const PackedBatch<float> mine = tbatch::list_to_packed(read_sequences(rank));
    const PackedBatch<float> bucketed = tbatch::mpi::bucket_by_size(MPI_COMM_WORLD, mine);

    // Rank 0 gets the shortest sequences, and every rank's are sorted.
    bool sorted = true;
    for (index_t i = 1; i < bucketed.batch_size(); ++i)
      sorted = sorted && bucketed.shape_of(i - 1)[0] <= bucketed.shape_of(i)[0];
    const index_t shortest = bucketed.batch_size() > 0 ? bucketed.shape_of(0)[0] : 0;
    const index_t longest =
        bucketed.batch_size() > 0 ? bucketed.shape_of(bucketed.batch_size() - 1)[0] : 0;

    double totals[4] = {double(padding_of(mine)), double(padding_of(bucketed)), sum_of(mine),
                        sum_of(bucketed)};
    MPI_Allreduce(MPI_IN_PLACE, totals, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    std::printf("rank %d: %lld sequences of %lld to %lld tokens, %s, %lld tokens\n", rank,
                static_cast<long long>(bucketed.batch_size()), static_cast<long long>(shortest),
                static_cast<long long>(longest), sorted ? "sorted" : "NOT SORTED",
                static_cast<long long>(bucketed.data().size(0)));
    const bool same_values = std::abs(totals[2] - totals[3]) <= 1e-6 * std::abs(totals[2]) + 1e-3;
    if (rank == 0)
      std::printf(
          "padding in batches of %lld: %.0f tokens unsorted, %.0f after bucketing; "
          "values %s\n",
          static_cast<long long>(batch_size), totals[0], totals[1],
          same_values ? "unchanged" : "CHANGED");
    if (!sorted || !same_values || totals[1] > totals[0]) status = 1;
  } catch (const tbatch::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
