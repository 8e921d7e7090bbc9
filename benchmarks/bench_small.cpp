// Many small elements (issue 21): B elements of 1-8 rows x 16 floats, one call per conversion,
// single thread. Counters: ns_per_element (the call's time, result freed included, over B) and
// of_memcpy (one memcpy of the bytes the conversion writes, into a touched buffer, over the
// call's time: 1 = as fast as memcpy).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>

using namespace tbatch;

namespace {

constexpr index_t kLastDim = 16;

struct Workload {
  std::vector<Tensor<float>> list;
  PaddedBatch<float> padded;
  PackedBatch<float> packed;
  index_t valid_bytes = 0;
  index_t padded_bytes = 0;

  explicit Workload(index_t batch)
      : padded(Tensor<float>(Shape{0, 0, kLastDim}), Tensor<index_t>(Shape{0, 1})),
        packed(Tensor<float>(Shape{0, kLastDim}), Tensor<index_t>(Shape{0, 1}),
               Tensor<index_t>(Shape{1})) {
    std::mt19937 rng(21);
    std::uniform_int_distribution<index_t> rows(1, 8);
    list.reserve(std::size_t(batch));
    for (index_t i = 0; i < batch; ++i)
      list.push_back(Tensor<float>(Shape{rows(rng), kLastDim}, 1.f));
    padded = list_to_padded(list, 0.f);
    packed = list_to_packed(list);
    valid_bytes = packed.data().numel() * index_t(sizeof(float));
    padded_bytes = padded.data().numel() * index_t(sizeof(float));
  }
};

const Workload& workload(index_t batch) {
  // One workload per size, built once (the inputs are not what is measured).
  static std::vector<std::pair<index_t, std::unique_ptr<Workload>>> cache;
  for (const auto& [b, w] : cache)
    if (b == batch) return *w;
  cache.emplace_back(batch, std::make_unique<Workload>(batch));
  return *cache.back().second;
}

// Seconds one memcpy of `bytes` takes (best of a few), for the of_memcpy counter.
double memcpy_seconds(index_t bytes) {
  std::vector<char> src(static_cast<std::size_t>(bytes), 1);
  std::vector<char> dst(static_cast<std::size_t>(bytes));
  double best = 1e9;
  for (int rep = 0; rep < 20; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

template <class Fn>
void run(benchmark::State& state, index_t moved_bytes, Fn&& fn) {
  const index_t batch = state.range(0);
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(fn());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double per_call = seconds / double(state.iterations());
  state.counters["ns_per_element"] = per_call * 1e9 / double(batch);
  state.counters["of_memcpy"] = memcpy_seconds(moved_bytes) / per_call;
}

void BM_small_list_to_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run(state, w.padded_bytes, [&] { return list_to_padded(w.list, 0.f); });
}
void BM_small_list_to_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run(state, w.valid_bytes, [&] { return list_to_packed(w.list); });
}
void BM_small_padded_to_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run(state, w.valid_bytes, [&] { return to_packed(w.padded); });
}
void BM_small_packed_to_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run(state, w.padded_bytes, [&] { return to_padded(w.packed, 0.f); });
}

}  // namespace

BENCHMARK(BM_small_list_to_padded)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_list_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_padded_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_packed_to_padded)->RangeMultiplier(10)->Range(1000, 100000);

BENCHMARK_MAIN();
