// Benchmarks of ops/scatter.hpp and ops/segment.hpp on the sizes of issue 5: 1e6 updates of 16
// floats into 1e5 rows, with random and with sorted indices, and segment_reduce over 1e5 segments
// of 1e6 rows of 16 floats. Baselines of the same bytes: memcpy and a read-only Eigen sum. When
// libtorch was found at configure time, torch's index_copy_ / index_add_ / segment_reduce run the
// same work on one thread, side by side.
//
// bytes/s counts the bytes every case must read: the updates (64 MB) and the index (8 MB) for the
// scatters, the values (64 MB) for the segment reductions, the source (64 MB) for the baselines.
// The scatters run in place (scatter_, index_add_), so no output allocation is timed.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>

#include "workloads.hpp"

#ifdef TBATCH_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

using tbatch::index_t;
using tbatch::Reduce;
using tbatch::Shape;
using tbatch::Tensor;

constexpr index_t kUpdates = 1'000'000;
constexpr index_t kRows = 100'000;
constexpr index_t kCols = 16;
constexpr index_t kSegments = 100'000;

/// The shared inputs, made once: updates / values (kUpdates x kCols), random and sorted row
/// indices into kRows, and CSR offsets of kSegments random-length segments over kUpdates rows.
struct Inputs {
  Tensor<float> updates{Shape{kUpdates, kCols}};
  Tensor<index_t> random_index{Shape{kUpdates}};
  Tensor<index_t> sorted_index{Shape{kUpdates}};
  // CSR offsets: kSegments - 1 random cut points, so lengths vary (some are empty).
  Tensor<index_t> first_idx = tbatch_bench::random_first_idx(kUpdates, kSegments, 7);

  Inputs() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> value(-1.f, 1.f);
    for (index_t i = 0; i < updates.numel(); ++i)
      updates.data()[i] = value(rng);
    std::uniform_int_distribution<index_t> row(0, kRows - 1);
    for (index_t i = 0; i < kUpdates; ++i)
      random_index.data()[i] = row(rng);
    std::copy_n(random_index.data(), kUpdates, sorted_index.data());
    std::sort(sorted_index.data(), sorted_index.data() + kUpdates);
  }
  const Tensor<index_t>& index(bool sorted) const { return sorted ? sorted_index : random_index; }
};

const Inputs& inputs() {
  static const Inputs data;
  return data;
}

constexpr index_t kUpdateBytes = kUpdates * kCols * index_t(sizeof(float));
constexpr index_t kIndexBytes = kUpdates * index_t(sizeof(index_t));

void BM_memcpy(benchmark::State& state) {
  const Tensor<float>& src = inputs().updates;
  Tensor<float> dst(src.shape());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), static_cast<std::size_t>(kUpdateBytes));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kUpdateBytes);
}

/// Read bandwidth: the sum of every value (Eigen, vectorised).
void BM_read_sum(benchmark::State& state) {
  const Tensor<float>& src = inputs().updates;
  for (auto _ : state) {
    float sum = src.flat().sum();
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * kUpdateBytes);
}

/// Paddle scatter, overwrite=true (rows copied in order, last write wins).
void BM_scatter_overwrite(benchmark::State& state) {
  const bool sorted = state.range(0) != 0;
  Tensor<float> x(Shape{kRows, kCols});
  for (auto _ : state) {
    tbatch::scatter_(x, inputs().index(sorted), inputs().updates, true);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kUpdateBytes + kIndexBytes));
}

/// Paddle scatter, overwrite=false (referenced rows zeroed once, then every update added).
void BM_scatter_add(benchmark::State& state) {
  const bool sorted = state.range(0) != 0;
  Tensor<float> x(Shape{kRows, kCols});
  for (auto _ : state) {
    tbatch::scatter_(x, inputs().index(sorted), inputs().updates, false);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kUpdateBytes + kIndexBytes));
}

/// torch-style index_add along dim 0.
void BM_index_add(benchmark::State& state) {
  const bool sorted = state.range(0) != 0;
  Tensor<float> x(Shape{kRows, kCols});
  for (auto _ : state) {
    tbatch::index_add_(x, 0, inputs().index(sorted), inputs().updates);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kUpdateBytes + kIndexBytes));
}

/// segment_reduce over kSegments segments of the kUpdates x kCols values.
void BM_segment_reduce(benchmark::State& state, Reduce reduce) {
  for (auto _ : state) {
    Tensor<float> out = tbatch::segment_reduce(inputs().updates, inputs().first_idx, reduce);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * kUpdateBytes);
}

void BM_segment_argmax(benchmark::State& state) {
  for (auto _ : state) {
    Tensor<index_t> out = tbatch::segment_argmax(inputs().updates, inputs().first_idx);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * kUpdateBytes);
}

BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_read_sum)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_scatter_overwrite)->ArgName("sorted")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_scatter_add)->ArgName("sorted")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_index_add)->ArgName("sorted")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_segment_reduce, sum, Reduce::sum)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_segment_reduce, mean, Reduce::mean)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_segment_reduce, amax, Reduce::amax)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_segment_argmax)->Unit(benchmark::kMillisecond);

#ifdef TBATCH_BENCH_WITH_TORCH
/// The shared inputs as torch tensors viewing the same memory (no copies).
struct TorchInputs {
  torch::Tensor updates, random_index, sorted_index, lengths;
  TorchInputs() {
    const Inputs& in = inputs();
    updates =
        torch::from_blob(const_cast<float*>(in.updates.data()), {kUpdates, kCols}, torch::kFloat32);
    random_index =
        torch::from_blob(const_cast<index_t*>(in.random_index.data()), {kUpdates}, torch::kInt64);
    sorted_index =
        torch::from_blob(const_cast<index_t*>(in.sorted_index.data()), {kUpdates}, torch::kInt64);
    const torch::Tensor first =
        torch::from_blob(const_cast<index_t*>(in.first_idx.data()), {kSegments + 1}, torch::kInt64);
    lengths = first.slice(0, 1) - first.slice(0, 0, kSegments);
  }
  const torch::Tensor& index(bool sorted) const { return sorted ? sorted_index : random_index; }
};

const TorchInputs& torch_inputs() {
  static const TorchInputs data;
  return data;
}

/// torch's index_copy_ (overwrite along dim 0) on one thread.
void BM_torch_index_copy(benchmark::State& state) {
  torch::set_num_threads(1);
  const bool sorted = state.range(0) != 0;
  torch::Tensor x = torch::zeros({kRows, kCols});
  for (auto _ : state) {
    x.index_copy_(0, torch_inputs().index(sorted), torch_inputs().updates);
    benchmark::DoNotOptimize(x.data_ptr());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kUpdateBytes + kIndexBytes));
}

/// torch's index_add_ along dim 0 on one thread.
void BM_torch_index_add(benchmark::State& state) {
  torch::set_num_threads(1);
  const bool sorted = state.range(0) != 0;
  torch::Tensor x = torch::zeros({kRows, kCols});
  for (auto _ : state) {
    x.index_add_(0, torch_inputs().index(sorted), torch_inputs().updates);
    benchmark::DoNotOptimize(x.data_ptr());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (kUpdateBytes + kIndexBytes));
}

/// torch's segment_reduce (sum) over the same segments on one thread.
void BM_torch_segment_reduce_sum(benchmark::State& state) {
  torch::set_num_threads(1);
  for (auto _ : state) {
    torch::Tensor out =
        torch::segment_reduce(torch_inputs().updates, "sum", torch_inputs().lengths);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * kUpdateBytes);
}

BENCHMARK(BM_torch_index_copy)->ArgName("sorted")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_torch_index_add)->ArgName("sorted")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_torch_segment_reduce_sum)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
