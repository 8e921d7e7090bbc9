// tour: the ten-line tour of docs/index.md and README.md, line for line, with every comment of
// the tour checked. Returns 1 if any claim of the tour is false.

#include <cstdio>
#include <vector>

#include <tbatch/tbatch.hpp>

int main() {
  using namespace tbatch;
  bool ok = true;
  // ---- the tour (keep in sync with docs/index.md and README.md) -------------------------------
  // clang-format off
  std::vector<Tensor<float>> clouds{Tensor<float>(Shape{3, 3}, 1.f), Tensor<float>(Shape{5, 3}, 2.f),
                                    Tensor<float>(Shape{2, 3}, 3.f)};  // 3, 5 and 2 xyz points
  PaddedBatch<float> padded = list_to_padded(clouds, 0.f);           // data (3, 5, 3), mask (3, 5)
  PackedBatch<float> packed = list_to_packed(clouds);                // data (10, 3), first_idx [0, 3, 8, 10]
  Tensor<float> centroids = segment_reduce(packed, Reduce::mean);    // (3, 3): one row per cloud
  PaddedBatch<float> longer = pad(padded, {0, 0, 1, 1}, PadMode::replicate);  // each cloud + 2 points
  Tensor<float> x = scatter(Tensor<float>({3, 2}, {1, 1, 2, 2, 3, 3}), Tensor<index_t>({4}, {2, 1, 0, 1}),
                            Tensor<float>({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4}), false);  // [[3, 3], [6, 6], [1, 1]]
  Tensor<float> phases = space_to_batch_nd(Tensor<float>(Shape{1, 4, 4, 1}), {2, 2}, {{0, 0}, {0, 0}});  // (4, 2, 2, 1)
  TensorDict td({{"joints", Tensor<float>(Shape{2, 3, 4})}, {"battery", Tensor<float>(Shape{2, 3})}}, {2, 3});
  TensorDict robot0 = td.index({0});                                   // batch_size [3], views
  // clang-format on
  // ---- the checks ------------------------------------------------------------------------------
  ok = ok && padded.data().shape() == Shape{3, 5, 3} && padded.mask().shape() == Shape{3, 5};
  ok = ok && packed.data().shape() == Shape{10, 3} &&
       packed.first_idx().to_vector() == std::vector<index_t>{0, 3, 8, 10};
  ok = ok && equal(centroids, Tensor<float>({3, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3}));
  ok = ok && longer.shape_per_tensor().to_vector() == std::vector<index_t>{5, 7, 4} &&
       equal(longer.element(2), Tensor<float>(Shape{4, 3}, 3.f));
  ok = ok && equal(x, Tensor<float>({3, 2}, {3, 3, 6, 6, 1, 1}));
  ok = ok && phases.shape() == Shape{4, 2, 2, 1};
  ok = ok && robot0.batch_size() == Shape{3} &&
       robot0.get<float>("joints").shares_storage_with(td.get<float>("joints"));
  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
