// mpi_gather: ragged batches across MPI ranks (needs tbatch::tbatch_mpi).
//
// Every rank samples its own point clouds, each with a different number of points, and packs
// them. allgather gives every rank the global batch (clouds in rank order); gather collects it
// on rank 0 only; scatter_balanced hands the clouds back out so that every rank gets about the
// same number of points, whatever the number of clouds; allgather of padded batches re-pads to
// the largest cloud of any rank. Rank 0 checks the distributed centroids against its own.
//
//   mpiexec -n 2 ./mpi_gather

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tbatch/mpi.hpp>
#include <tbatch/tensor/eigen.hpp>  // Tensor::matrix(), an Eigen map

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

// This rank's clouds: 2 + rank clouds of 1 to 5000 points around a rank-specific center.
std::vector<Tensor<float>> sample_clouds(int rank) {
  std::mt19937 rng(1234u + static_cast<unsigned>(rank));
  std::uniform_int_distribution<index_t> points(1, 5000);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<Tensor<float>> clouds;
  for (int c = 0; c < 2 + rank; ++c) {
    Tensor<float> cloud(Shape{points(rng), 3});
    auto m = cloud.matrix();
    for (index_t i = 0; i < m.rows(); ++i)
      for (int d = 0; d < 3; ++d)
        m(i, d) = static_cast<float>(10 * rank + c) + noise(rng);
    clouds.push_back(cloud);
  }
  return clouds;
}

// Centroid of each cloud of a packed batch, as a packed batch of (3,) elements.
PackedBatch<float> centroids(const PackedBatch<float>& batch) {
  std::vector<Tensor<float>> out;
  for (index_t i = 0; i < batch.batch_size(); ++i) {
    const Tensor<float> cloud = batch.element(i);
    Tensor<float> c(Shape{1, 3});
    c.matrix() = cloud.matrix().colwise().mean();
    out.push_back(c.reshape({3}));
  }
  return tbatch::list_to_packed(out);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  try {
    const PackedBatch<float> mine = tbatch::list_to_packed(sample_clouds(rank));
    std::printf("rank %d: %lld clouds, %lld points\n", rank,
                static_cast<long long>(mine.batch_size()),
                static_cast<long long>(mine.data().size(0)));

    // Every rank gets every cloud; rank 0 alone gets them with gather.
    const PackedBatch<float> everyone = tbatch::mpi::allgather(MPI_COMM_WORLD, mine);
    const PackedBatch<float> on_root = tbatch::mpi::gather(MPI_COMM_WORLD, 0, mine);

    // Hand the clouds back out balanced by points, compute centroids where they landed, and
    // collect those on rank 0.
    const PackedBatch<float> share = tbatch::mpi::scatter_balanced(MPI_COMM_WORLD, 0, on_root);
    std::printf("rank %d: balanced share %lld clouds, %lld points\n", rank,
                static_cast<long long>(share.batch_size()),
                static_cast<long long>(share.data().size(0)));
    const PackedBatch<float> distributed = tbatch::mpi::gather(MPI_COMM_WORLD, 0, centroids(share));

    // Padded: every rank pads its own clouds; the result is padded to the largest of all.
    const tbatch::PaddedBatch<float> padded = tbatch::mpi::allgather(
        MPI_COMM_WORLD, tbatch::list_to_padded(sample_clouds(rank), 0.0f), 0.0f);

    if (rank == 0) {
      std::printf("all-gathered: %lld clouds, %lld points, padded to (%lld, %lld, %lld)\n",
                  static_cast<long long>(everyone.batch_size()),
                  static_cast<long long>(everyone.data().size(0)),
                  static_cast<long long>(padded.data().size(0)),
                  static_cast<long long>(padded.data().size(1)),
                  static_cast<long long>(padded.data().size(2)));
      const PackedBatch<float> local = centroids(everyone);
      const bool same = tbatch::equal(on_root.data(), everyone.data()) &&
                        tbatch::allclose(distributed.data(), local.data(), 1e-5, 1e-5);
      for (index_t i = 0; i < local.batch_size(); ++i)
        std::printf("  cloud %lld: %5lld points, centroid (%6.2f, %6.2f, %6.2f)\n",
                    static_cast<long long>(i), static_cast<long long>(everyone.rows_of(i)),
                    local.data()(i, 0), local.data()(i, 1), local.data()(i, 2));
      std::printf("gather == allgather and distributed centroids match: %s\n", same ? "yes" : "NO");
      status = same ? 0 : 1;
    }
  } catch (const tbatch::Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    status = 1;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
