// Benchmarks of the copy/fill/for-each engine (view/engine.hpp). Every case reports bytes/s as
// bytes read + bytes written per iteration, so the engine's copies compare directly with the
// memcpy baseline of the same size: a contiguous copy should be within 10% of memcpy.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include <tbatch/tbatch.hpp>

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

constexpr index_t kMiB = index_t(1) << 20;

/// Benchmark argument (a byte count) as a number of floats.
index_t floats_in(const benchmark::State& state) {
  return static_cast<index_t>(state.range(0)) / index_t(sizeof(float));
}

// Every buffer below is a zero-filled Tensor, so its pages are mapped before timing starts and
// memcpy and the engine work on identically allocated (Eigen-aligned) memory.

void BM_memcpy(benchmark::State& state) {
  const index_t n = floats_in(state);
  Tensor<float> src(Shape{n}), dst(Shape{n});
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), static_cast<std::size_t>(n) * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * index_t(sizeof(float)));
}

void BM_copy_contiguous(benchmark::State& state) {
  const index_t n = floats_in(state);
  const Tensor<float> src(Shape{n});
  Tensor<float> dst(Shape{n});
  for (auto _ : state) {
    tbatch::copy(src.view(), dst.view());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * index_t(sizeof(float)));
}

/// dst (contiguous, shape of the permuted view) = src.permute(dims), src contiguous.
void run_permuted_copy(benchmark::State& state, const Shape& shape,
                       const std::vector<index_t>& dims) {
  const Tensor<float> src = Tensor<float>::arange(shape.numel())
                                .reshape(std::vector<index_t>(shape.begin(), shape.end()));
  const auto permuted = src.view().permute(dims);
  Tensor<float> dst(permuted.shape());
  for (auto _ : state) {
    tbatch::copy(permuted, dst.view());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * src.numel() * index_t(sizeof(float)));
}

void BM_copy_transposed_2d(benchmark::State& state) {
  const index_t n = state.range(0);
  run_permuted_copy(state, Shape{n, n}, {1, 0});
}

void BM_copy_permuted_3d(benchmark::State& state) {
  run_permuted_copy(state, Shape{state.range(0), state.range(1), state.range(2)}, {2, 0, 1});
}

/// A (1, cols) row expanded to (rows, cols): each destination row is a copy of the row. Bytes
/// read count every element read through the broadcast view, as for a plain copy.
void BM_copy_broadcast_row(benchmark::State& state) {
  const index_t rows = state.range(0), cols = state.range(1);
  const Tensor<float> row = Tensor<float>::arange(cols).unsqueeze(0);
  const auto expanded = row.view().expand({rows, cols});
  Tensor<float> dst(Shape{rows, cols});
  for (auto _ : state) {
    tbatch::copy(expanded, dst.view());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * rows * cols * index_t(sizeof(float)));
}

/// int32 -> float: reads 4 bytes and writes 4 bytes per element.
void BM_copy_convert_int32_to_float(benchmark::State& state) {
  const index_t n = static_cast<index_t>(state.range(0)) / index_t(sizeof(std::int32_t));
  const Tensor<std::int32_t> src = Tensor<std::int32_t>::arange(n);
  Tensor<float> dst(Shape{n});
  for (auto _ : state) {
    tbatch::copy(src.view(), dst.view());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * index_t(sizeof(std::int32_t) + sizeof(float)));
}

/// Fill writes only.
void BM_fill_contiguous(benchmark::State& state) {
  const index_t n = floats_in(state);
  Tensor<float> dst(Shape{n});
  for (auto _ : state) {
    tbatch::fill(dst.view(), 1.5f);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * index_t(sizeof(float)));
}

/// Every other column of a (rows, 2 * cols) matrix: runs of stride 2. Counts the bytes of the
/// elements written (half the matrix).
void BM_fill_strided(benchmark::State& state) {
  const index_t rows = state.range(0), cols = state.range(1);
  Tensor<float> matrix(Shape{rows, 2 * cols});
  const auto every_other = matrix.view().slice(1, 0, std::nullopt, 2);
  for (auto _ : state) {
    tbatch::fill(every_other, 1.5f);
    benchmark::DoNotOptimize(matrix.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * cols * index_t(sizeof(float)));
}

/// out = a + b over three contiguous views: two reads and one write per element.
void BM_for_each_add(benchmark::State& state) {
  const index_t n = floats_in(state);
  const Tensor<float> a = Tensor<float>::arange(n), b(Shape{n}, 2.0f);
  Tensor<float> out(Shape{n});
  for (auto _ : state) {
    tbatch::for_each([](float& o, const float& x, const float& y) { o = x + y; }, out.view(),
                     a.view(), b.view());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * index_t(sizeof(float)));
}

/// out = a + b.t(): the same add with one operand read transposed.
void BM_for_each_add_transposed(benchmark::State& state) {
  const index_t n = state.range(0);
  const Tensor<float> a(Shape{n, n}, 1.0f), b = Tensor<float>::arange(n * n).reshape({n, n});
  Tensor<float> out(Shape{n, n});
  for (auto _ : state) {
    tbatch::for_each([](float& o, const float& x, const float& y) { o = x + y; }, out.view(),
                     a.view(), b.view().transpose(0, 1));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 3 * n * n * index_t(sizeof(float)));
}

BENCHMARK(BM_memcpy)->Arg(1 * kMiB)->Arg(16 * kMiB)->Arg(64 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_copy_contiguous)
    ->Arg(1 * kMiB)
    ->Arg(16 * kMiB)
    ->Arg(64 * kMiB)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_copy_transposed_2d)->Arg(4096)->Unit(benchmark::kMicrosecond);           // 64 MiB
BENCHMARK(BM_copy_permuted_3d)->Args({64, 256, 256})->Unit(benchmark::kMicrosecond);  // 16 MiB
BENCHMARK(BM_copy_broadcast_row)->Args({4096, 4096})->Unit(benchmark::kMicrosecond);  // 64 MiB
BENCHMARK(BM_copy_convert_int32_to_float)->Arg(16 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_fill_contiguous)->Arg(16 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_fill_strided)->Args({2048, 2048})->Unit(benchmark::kMicrosecond);  // 16 MiB written
BENCHMARK(BM_for_each_add)->Arg(16 * kMiB)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_for_each_add_transposed)->Arg(2048)->Unit(benchmark::kMicrosecond);  // 16 MiB each

}  // namespace

BENCHMARK_MAIN();
