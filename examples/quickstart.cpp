// quickstart: point clouds of different sizes, batched the three ways kaolin does it.
//
// Generates a scene's worth of point clouds (spheres, boxes and planes sampled with different
// point counts), batches them as padded and packed tensors, computes every cloud's centroid in
// one call (segment_reduce over the packed rows), checks it against each cloud's own rows and
// against the padded batch read through its mask, and prints what it did. Returns 1 if any
// check fails.

#include <cmath>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>  // Tensor::matrix() and flat(), Eigen maps

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

struct Cloud {
  std::string kind;
  Tensor<float> points;  // (n, 3)
};

// n points on a sphere of `radius` around `center`, on a box surface, or on a plane patch.
Cloud sample_cloud(std::mt19937& rng, int kind, index_t n, const float center[3]) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  Tensor<float> points(Shape{n, 3});
  auto m = points.matrix();
  for (index_t i = 0; i < n; ++i) {
    float p[3];
    if (kind == 0) {  // sphere
      for (float& v : p)
        v = normal(rng);
      const float r = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) + 1e-6f;
      for (float& v : p)
        v /= r;
    } else if (kind == 1) {  // box: one coordinate pinned to a face
      for (float& v : p)
        v = unit(rng);
      p[i % 3] = (i % 2 == 0) ? 1.0f : -1.0f;
    } else {  // plane
      p[0] = unit(rng), p[1] = unit(rng), p[2] = 0.0f;
    }
    for (int d = 0; d < 3; ++d)
      m(i, d) = center[d] + p[d];
  }
  static const char* names[] = {"sphere", "box", "plane"};
  return {names[kind], points};
}

}  // namespace

int main() {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<index_t> count(50, 5000);
  std::vector<Cloud> clouds;
  std::vector<Tensor<float>> points;
  for (int i = 0; i < 8; ++i) {
    const float center[3] = {float(i), float(-i) * 0.5f, 2.0f};
    clouds.push_back(sample_cloud(rng, i % 3, count(rng), center));
    points.push_back(clouds.back().points);
  }

  // Padded: (B, max_points, 3) plus shape_per_tensor, and a mask telling data from padding.
  auto [padded, shape_per_tensor] = tbatch::list_to_padded(points, 0.0f);
  const Tensor<bool> mask = tbatch::PaddedBatch<float>(padded, shape_per_tensor).mask();
  // Packed: (sum points, 3) plus first_idx, the offset of each cloud's first row.
  const tbatch::PackedBatch<float> packed_batch = tbatch::list_to_packed(points);
  const auto& [packed, packed_shapes, first_idx] = packed_batch;

  // Every cloud's centroid at once: the mean of each element's rows, shape (B, 3).
  const Tensor<float> centroids = tbatch::segment_reduce(packed_batch, tbatch::Reduce::mean);

  std::cout << "batched " << points.size() << " point clouds\n"
            << "  padded data " << padded.shape() << ", mask " << mask.shape() << "\n"
            << "  packed data " << packed.shape() << ", first_idx " << first_idx << "\n\n";

  // Check each centroid against the cloud itself, its packed rows and its masked padded slot.
  std::cout << std::fixed << std::setprecision(3);
  std::cout << "cloud  kind    points  centroid (segment_reduce)  padded rows used\n";
  bool consistent = true;
  for (index_t i = 0; i < static_cast<index_t>(clouds.size()); ++i) {
    const Eigen::RowVector3f centroid = centroids.matrix().row(i);
    // The cloud's own rows [first_idx[i], first_idx[i+1]) of the packed tensor, averaged by Eigen.
    const Tensor<float> rows = packed.narrow(0, first_idx(i), first_idx(i + 1) - first_idx(i));
    const Eigen::RowVector3f row_mean = rows.matrix().colwise().mean();
    const Eigen::RowVector3f own_mean = clouds[i].points.matrix().colwise().mean();
    // The same cloud through the padded batch: only the rows the mask marks as data.
    index_t used = 0;
    Eigen::RowVector3f padded_sum = Eigen::RowVector3f::Zero();
    for (index_t r = 0; r < padded.size(1); ++r) {
      if (!mask(i, r)) continue;
      ++used;
      for (int d = 0; d < 3; ++d)
        padded_sum(d) += padded(i, r, d);
    }
    const Eigen::RowVector3f padded_centroid = padded_sum / float(used);
    consistent = consistent && used == shape_per_tensor(i, 0) &&
                 (padded_centroid - centroid).norm() < 1e-3f &&
                 (row_mean - centroid).norm() < 1e-3f && (own_mean - centroid).norm() < 1e-3f;
    std::cout << "  " << i << "    " << std::left << std::setw(7) << clouds[i].kind << std::right
              << std::setw(6) << used << "  (" << std::setw(6) << centroid(0) << ", "
              << std::setw(6) << centroid(1) << ", " << std::setw(6) << centroid(2) << ")     "
              << used << " of " << padded.size(1) << "\n";
  }

  // Round trip: packed -> padded equals the padded batch built directly.
  const Tensor<float> repadded = tbatch::packed_to_padded(packed, packed_shapes, first_idx, 0.0f);
  consistent = consistent && tbatch::equal(repadded, padded);
  std::cout << "\npacked -> padded round trip "
            << (tbatch::equal(repadded, padded) ? "matches" : "DIFFERS") << "; padding is "
            << 100.0 * (1.0 - double(packed.numel()) / double(padded.numel()))
            << "% of the padded tensor\n";
  std::cout << (consistent ? "all checks passed\n" : "CHECK FAILED\n");
  return consistent ? 0 : 1;
}
