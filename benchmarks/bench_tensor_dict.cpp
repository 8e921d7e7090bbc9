// Per-call overhead of TensorDict (issue 7): td.index({i}) on a TensorDict of 10 keys (target
// under 2 us) and TensorDict::stack of 8 TensorDicts of 20 entries (target under 20 us; the
// reference's own fast path takes 32 us). The entries are small, so the figures measure the
// bookkeeping per entry, not the bytes copied.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include <tbatch/tbatch.hpp>

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;
using tbatch::TensorDict;

/// `keys` entries over `batch`, cycling through feature shapes and dtypes a training sample
/// typically holds (float features, integer labels, boolean masks).
TensorDict sample_dict(const Shape& batch, index_t keys) {
  TensorDict td(batch);
  for (index_t k = 0; k < keys; ++k) {
    Shape shape = batch;
    const std::string key = "entry" + std::to_string(k);
    switch (k % 4) {
      case 0:
        shape.push_back(3);
        td.set(key, Tensor<float>(shape, 1.0f));
        break;
      case 1:
        td.set(key, Tensor<std::int64_t>(shape, 7));
        break;
      case 2:
        shape.push_back(4);
        shape.push_back(4);
        td.set(key, Tensor<float>(shape, 2.0f));
        break;
      default:
        shape.push_back(2);
        td.set(key, Tensor<bool>(shape, true));
        break;
    }
  }
  return td;
}

// td.index({i}) on 10 keys of batch size [32]: one view per entry.
void BM_tensor_dict_index(benchmark::State& state) {
  const TensorDict td = sample_dict(Shape{32}, 10);
  index_t i = 0;
  for (auto _ : state) {
    TensorDict row = td.index({i});
    benchmark::DoNotOptimize(&row);
    i = (i + 1) % 32;
  }
}

// TensorDict::stack of 8 TensorDicts of 20 entries of batch size [4] along a new dim 0.
void BM_tensor_dict_stack(benchmark::State& state) {
  std::vector<TensorDict> tds;
  for (int i = 0; i < 8; ++i)
    tds.push_back(sample_dict(Shape{4}, 20));
  for (auto _ : state) {
    TensorDict stacked = TensorDict::stack(tds, 0);
    benchmark::DoNotOptimize(&stacked);
  }
}

}  // namespace

BENCHMARK(BM_tensor_dict_index)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_tensor_dict_stack)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
