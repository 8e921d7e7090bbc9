// Computing on ragged batches without padding them: point clouds of different sizes centred and
// their covariances computed with a jagged product, then attention pooling over sequences of
// different lengths (a query per head, scores with a jagged x dense product, the softmax along
// each sequence, the weighted sum with a jagged x jagged product). Every result is checked
// against a loop over each cloud or sequence on its own; the program exits non-zero on a
// mismatch.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "tbatch/tbatch.hpp"

using namespace tbatch;

namespace {

bool close(double got, double want) {
  return std::abs(got - want) <= 1e-4 * (1 + std::abs(want));
}

std::vector<Tensor<float>> random_rows(std::mt19937& rng, const std::vector<index_t>& lengths,
                                       index_t width) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<Tensor<float>> out;
  for (index_t length : lengths) {
    Tensor<float> t(Shape{length, width});
    for (index_t k = 0; k < t.numel(); ++k)
      t.data()[k] = normal(rng);
    out.push_back(t);
  }
  return out;
}

/// Per-cloud covariance: centre each cloud on its mean, sum the outer products of its points.
int clouds(std::mt19937& rng) {
  const std::vector<index_t> sizes = {5, 120, 2, 37, 64};
  const std::vector<Tensor<float>> list = random_rows(rng, sizes, 3);
  const PackedBatch<float> points = list_to_packed(list);

  const Tensor<float> centroids = mean(points, 0);                 // (B, 3)
  const PackedBatch<float> centred = points - centroids;           // row i pairs with cloud i
  const Tensor<float> scatter = bmm(transpose(centred), centred);  // (B, 3, 3)

  int bad = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Tensor<float>& cloud = list[i];
    const index_t n = cloud.size(0);
    double mu[3] = {0, 0, 0};
    for (index_t r = 0; r < n; ++r)
      for (index_t c = 0; c < 3; ++c)
        mu[c] += cloud(r, c);
    for (double& m : mu)
      m /= static_cast<double>(n);
    for (index_t a = 0; a < 3; ++a)
      for (index_t b = 0; b < 3; ++b) {
        double s = 0;
        for (index_t r = 0; r < n; ++r)
          s += (cloud(r, a) - mu[a]) * (cloud(r, b) - mu[b]);
        bad += !close(scatter(static_cast<index_t>(i), a, b), s);
      }
    const double variance_x = scatter(static_cast<index_t>(i), 0, 0) / static_cast<double>(n - 1);
    std::printf("cloud %zu: %3lld points, centroid (%+.3f, %+.3f, %+.3f), var x %.3f\n", i,
                static_cast<long long>(n), centroids(static_cast<index_t>(i), 0),
                centroids(static_cast<index_t>(i), 1), centroids(static_cast<index_t>(i), 2),
                variance_x);
  }
  return bad;
}

/// Attention pooling: for each sequence and head h, softmax over positions of key . query_h,
/// then the weighted sum of the values.
int attention(std::mt19937& rng) {
  const std::vector<index_t> lengths = {7, 1, 300, 0, 45};
  const index_t dim = 16, heads = 4, batch = static_cast<index_t>(lengths.size());
  const std::vector<Tensor<float>> key_list = random_rows(rng, lengths, dim);
  const std::vector<Tensor<float>> value_list = random_rows(rng, lengths, dim);
  const PackedBatch<float> keys = list_to_packed(key_list);
  const PackedBatch<float> values = list_to_packed(value_list);
  const std::vector<Tensor<float>> query_list = random_rows(rng, {batch * heads}, dim);
  const Tensor<float> queries = query_list[0].reshape({batch, heads, dim});

  const float scale = 1.f / std::sqrt(static_cast<float>(dim));
  // (L_i, dim) x (dim, heads) per sequence: the scores of each position for each head.
  const PackedBatch<float> scores = bmm(keys, queries.transpose(1, 2)) * scale;
  const PackedBatch<float> weights = softmax(scores, 0);         // along each sequence
  const Tensor<float> pooled = bmm(transpose(weights), values);  // (B, heads, dim)

  int bad = 0;
  for (index_t i = 0; i < batch; ++i) {
    const Tensor<float>& k = key_list[static_cast<std::size_t>(i)];
    const Tensor<float>& v = value_list[static_cast<std::size_t>(i)];
    const index_t n = k.size(0);
    for (index_t h = 0; h < heads; ++h) {
      std::vector<double> s(static_cast<std::size_t>(n));
      double top = -INFINITY, total = 0;
      for (index_t r = 0; r < n; ++r) {
        double dot = 0;
        for (index_t c = 0; c < dim; ++c)
          dot += k(r, c) * queries(i, h, c);
        s[static_cast<std::size_t>(r)] = dot * scale;
        top = std::max(top, s[static_cast<std::size_t>(r)]);
      }
      for (double& x : s)
        total += (x = std::exp(x - top));
      for (index_t c = 0; c < dim; ++c) {
        double want = 0;
        for (index_t r = 0; r < n; ++r)
          want += s[static_cast<std::size_t>(r)] / total * v(r, c);
        bad += !close(pooled(i, h, c), want);  // an empty sequence pools to 0
      }
    }
  }
  std::printf("attention pooling over %lld sequences of lengths", static_cast<long long>(batch));
  for (index_t length : lengths)
    std::printf(" %lld", static_cast<long long>(length));
  std::printf(": %lld heads, checked against a loop per sequence\n", static_cast<long long>(heads));
  return bad;
}

}  // namespace

int main() {
  std::mt19937 rng(2026);
  const int bad = clouds(rng) + attention(rng);
  if (bad != 0) {
    std::printf("%d values differ from the loop\n", bad);
    return 1;
  }
  std::printf("all results match the per-element loops\n");
  return 0;
}
