// Benchmarks of the kaolin conversions (batch/conversions.hpp) on 256 float point sets of
// U[1, 1024] rows x 64, and the per-call overhead on 8 tiny tensors. bytes/s counts bytes read
// + bytes written, as BM_memcpy_batch does for a memcpy of the packed size, so the figures
// compare directly (the issue asks for >= 60% of memcpy).

#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

constexpr index_t kElements = 256, kLastDim = 64, kMaxRows = 1024;

std::vector<Tensor<float>> point_sets() {
  std::mt19937 rng(42);
  std::uniform_int_distribution<index_t> rows(1, kMaxRows);
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < kElements; ++i)
    list.emplace_back(Shape{rows(rng), kLastDim}, 1.0f);
  return list;
}

index_t valid_bytes(const std::vector<Tensor<float>>& list) {
  index_t n = 0;
  for (const auto& t : list)
    n += t.numel();
  return n * index_t(sizeof(float));
}

void BM_memcpy_batch(benchmark::State& state) {
  const index_t bytes = valid_bytes(point_sets());
  Tensor<float> src(Shape{bytes / 4}), dst(Shape{bytes / 4});
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
}

void BM_list_to_padded(benchmark::State& state) {
  const auto list = point_sets();
  index_t padded_bytes = 0;
  for (auto _ : state) {
    auto batch = tbatch::list_to_padded(list, 0.0f);
    padded_bytes = batch.data().numel() * index_t(sizeof(float));
    benchmark::DoNotOptimize(batch.data().data());
  }
  state.SetBytesProcessed(state.iterations() * (valid_bytes(list) + padded_bytes));
}

// The same into a reused output buffer, as a training loop would call it: no page faults of a
// fresh 64 MiB allocation per call.
void BM_list_to_padded_into(benchmark::State& state) {
  const auto list = point_sets();
  Tensor<float> out(tbatch::list_to_padded(list, 0.0f).data().shape());
  for (auto _ : state) {
    auto batch = tbatch::list_to_padded_into(list, 0.0f, out);
    benchmark::DoNotOptimize(batch.data().data());
  }
  state.SetBytesProcessed(state.iterations() *
                          (valid_bytes(list) + out.numel() * index_t(sizeof(float))));
}

void BM_list_to_packed_into(benchmark::State& state) {
  const auto list = point_sets();
  Tensor<float> out(Shape{valid_bytes(list) / index_t(sizeof(float)) / kLastDim, kLastDim});
  for (auto _ : state) {
    auto batch = tbatch::list_to_packed_into(list, out);
    benchmark::DoNotOptimize(batch.data().data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * valid_bytes(list));
}

void BM_list_to_packed(benchmark::State& state) {
  const auto list = point_sets();
  for (auto _ : state) {
    auto batch = tbatch::list_to_packed(list);
    benchmark::DoNotOptimize(batch.data().data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * valid_bytes(list));
}

void BM_padded_to_packed(benchmark::State& state) {
  const auto list = point_sets();
  const auto padded = tbatch::list_to_padded(list, 0.0f);
  for (auto _ : state) {
    auto packed = tbatch::padded_to_packed(padded.data(), padded.shape_per_tensor());
    benchmark::DoNotOptimize(packed.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * valid_bytes(list));
}

void BM_packed_to_padded(benchmark::State& state) {
  const auto list = point_sets();
  const auto packed = tbatch::list_to_packed(list);
  index_t padded_bytes = 0;
  for (auto _ : state) {
    auto padded = tbatch::packed_to_padded(packed.data(), packed.shape_per_tensor(),
                                           packed.first_idx(), 0.0f);
    padded_bytes = padded.numel() * index_t(sizeof(float));
    benchmark::DoNotOptimize(padded.data());
  }
  state.SetBytesProcessed(state.iterations() * (valid_bytes(list) + padded_bytes));
}

// Per-call overhead: 8 tiny (U[1,4] x 3) point sets.
std::vector<Tensor<float>> tiny_point_sets() {
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < 8; ++i)
    list.emplace_back(Shape{1 + i % 4, 3}, 1.0f);
  return list;
}

void BM_list_to_padded_tiny(benchmark::State& state) {
  const auto list = tiny_point_sets();
  for (auto _ : state) {
    auto batch = tbatch::list_to_padded(list, 0.0f);
    benchmark::DoNotOptimize(batch.data().data());
  }
}

void BM_list_to_packed_tiny(benchmark::State& state) {
  const auto list = tiny_point_sets();
  for (auto _ : state) {
    auto batch = tbatch::list_to_packed(list);
    benchmark::DoNotOptimize(batch.data().data());
  }
}

void BM_padded_to_packed_tiny(benchmark::State& state) {
  const auto padded = tbatch::list_to_padded(tiny_point_sets(), 0.0f);
  for (auto _ : state) {
    auto packed = tbatch::padded_to_packed(padded.data(), padded.shape_per_tensor());
    benchmark::DoNotOptimize(packed.data());
  }
}

void BM_packed_to_padded_tiny(benchmark::State& state) {
  const auto packed = tbatch::list_to_packed(tiny_point_sets());
  for (auto _ : state) {
    auto padded = tbatch::packed_to_padded(packed.data(), packed.shape_per_tensor(),
                                           packed.first_idx(), 0.0f);
    benchmark::DoNotOptimize(padded.data());
  }
}

}  // namespace

BENCHMARK(BM_memcpy_batch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_to_padded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_to_padded_into)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_to_packed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_to_packed_into)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_padded_to_packed)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_packed_to_padded)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_list_to_padded_tiny)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_list_to_packed_tiny)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_padded_to_packed_tiny)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_packed_to_padded_tiny)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
