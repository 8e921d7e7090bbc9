// Benchmarks of space_to_batch_nd / batch_to_space_nd (ops/space_to_batch.hpp) on the issue's
// case: a (8, 224, 224, 64) float tensor with block (2, 2). Every case reports bytes/s as bytes
// read + bytes written per iteration, so each figure compares directly with the memcpy of the
// same bytes (BM_memcpy_same_bytes); Eigen's Tensor reshape().shuffle() runs the same
// rearrangement side by side.

#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen_tensor.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

const Shape kInput{8, 224, 224, 64};
const std::vector<index_t> kBlock{2, 2};
const std::vector<std::array<index_t, 2>> kNoPadding{{0, 0}, {0, 0}};
const std::vector<std::array<index_t, 2>> kPadding{{2, 2}, {2, 2}};  // to (8, 228, 228, 64)

index_t bytes_of(const Shape& shape) {
  return shape.numel() * index_t(sizeof(float));
}

/// A (8, 224, 224, 64) input holding 0, 1, 2, ... (pages mapped before timing starts).
Tensor<float> make_input() {
  return Tensor<float>::arange(kInput.numel()).reshape(kInput.to_vector());
}

void report(benchmark::State& state, index_t bytes_read, index_t bytes_written) {
  state.SetBytesProcessed(state.iterations() * (bytes_read + bytes_written));
}

void BM_memcpy_same_bytes(benchmark::State& state) {
  const Tensor<float> src = make_input();
  Tensor<float> dst(kInput);
  const std::size_t bytes = static_cast<std::size_t>(bytes_of(kInput));
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(kInput), bytes_of(kInput));
}

/// space_to_batch_nd_into a reused output: the kernel alone, as memcpy above.
void BM_space_to_batch_into(benchmark::State& state) {
  const Tensor<float> x = make_input();
  Tensor<float> out(tbatch::space_to_batch_nd_shape(kInput, kBlock, kNoPadding));
  for (auto _ : state) {
    tbatch::space_to_batch_nd_into(x.view(), kBlock, kNoPadding, out.view());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(kInput), bytes_of(out.shape()));
}

void BM_batch_to_space_into(benchmark::State& state) {
  const Tensor<float> y = tbatch::space_to_batch_nd(make_input(), kBlock, kNoPadding);
  Tensor<float> out(kInput);
  for (auto _ : state) {
    tbatch::batch_to_space_nd_into(y.view(), kBlock, kNoPadding, out.view());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(y.shape()), bytes_of(kInput));
}

/// The allocating form: each iteration also maps a fresh 98 MiB output.
void BM_space_to_batch_allocating(benchmark::State& state) {
  const Tensor<float> x = make_input();
  for (auto _ : state) {
    Tensor<float> out = tbatch::space_to_batch_nd(x, kBlock, kNoPadding);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(kInput), bytes_of(kInput));
}

void BM_batch_to_space_allocating(benchmark::State& state) {
  const Tensor<float> y = tbatch::space_to_batch_nd(make_input(), kBlock, kNoPadding);
  for (auto _ : state) {
    Tensor<float> out = tbatch::batch_to_space_nd(y, kBlock, kNoPadding);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(y.shape()), bytes_of(kInput));
}

/// With paddings (2, 2) on both spatial dims: box copies plus fills of the padded slabs only.
/// Bytes: the input read plus the (larger) output written.
void BM_space_to_batch_padded_into(benchmark::State& state) {
  const Tensor<float> x = make_input();
  Tensor<float> out(tbatch::space_to_batch_nd_shape(kInput, kBlock, kPadding));
  for (auto _ : state) {
    tbatch::space_to_batch_nd_into(x.view(), kBlock, kPadding, out.view());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(kInput), bytes_of(out.shape()));
}

/// In cache, the small case and one whose (batch, o_1) slabs are min_slab_elements
/// long: a (1, 32, 32, channels) float input with block (2, 2), no paddings. Arg: channels.
/// The target is at most 2x the memcpy of the same bytes plus 1 us.
enum class InCache { memcpy, allocating, into };

void BM_in_cache(benchmark::State& state, InCache form) {
  const Shape shape{1, 32, 32, state.range(0)};
  const Tensor<float> x = Tensor<float>::arange(shape.numel()).reshape(shape.to_vector());
  Tensor<float> out(tbatch::space_to_batch_nd_shape(shape, kBlock, kNoPadding));
  for (auto _ : state) {
    if (form == InCache::memcpy) {
      std::memcpy(out.data(), x.data(), static_cast<std::size_t>(bytes_of(shape)));
    } else if (form == InCache::allocating) {
      Tensor<float> fresh = tbatch::space_to_batch_nd(x, kBlock, kNoPadding);
      benchmark::DoNotOptimize(fresh.data());
    } else {
      tbatch::space_to_batch_nd_into(x.view(), kBlock, kNoPadding, out.view());
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state, bytes_of(shape), bytes_of(shape));
}

using RowMajor6 = Eigen::Tensor<float, 6, Eigen::RowMajor>;
using Map4 = Eigen::TensorMap<Eigen::Tensor<float, 4, Eigen::RowMajor>>;
using Map6 = Eigen::TensorMap<RowMajor6>;

/// Eigen Tensor: input.reshape(8, 112, 2, 112, 2, 64).shuffle(2, 4, 0, 1, 3, 5) into the output
/// seen as (2, 2, 8, 112, 112, 64): TF's definition, evaluated by Eigen on one thread.
void BM_eigen_space_to_batch(benchmark::State& state) {
  Tensor<float> x = make_input();
  Tensor<float> out(Shape{32, 112, 112, 64});
  const Map4 in(x.data(), 8, 224, 224, 64);
  Map6 result(out.data(), 2, 2, 8, 112, 112, 64);
  const std::array<Eigen::Index, 6> split{8, 112, 2, 112, 2, 64};
  const std::array<int, 6> order{2, 4, 0, 1, 3, 5};
  for (auto _ : state) {
    result = in.reshape(split).shuffle(order);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  if (!tbatch::equal(out, tbatch::space_to_batch_nd(x, kBlock, kNoPadding)))
    state.SkipWithError("Eigen's result differs from space_to_batch_nd");
  report(state, bytes_of(kInput), bytes_of(kInput));
}

/// Eigen Tensor: the inverse, input.reshape(2, 2, 8, 112, 112, 64).shuffle(2, 3, 0, 4, 1, 5)
/// into the output seen as (8, 112, 2, 112, 2, 64).
void BM_eigen_batch_to_space(benchmark::State& state) {
  Tensor<float> y = tbatch::space_to_batch_nd(make_input(), kBlock, kNoPadding);
  Tensor<float> out(kInput);
  const Map6 in(y.data(), 2, 2, 8, 112, 112, 64);
  Map6 result(out.data(), 8, 112, 2, 112, 2, 64);
  const std::array<int, 6> order{2, 3, 0, 4, 1, 5};
  for (auto _ : state) {
    result = in.shuffle(order);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  if (!tbatch::equal(out, make_input()))
    state.SkipWithError("Eigen's result differs from the input");
  report(state, bytes_of(kInput), bytes_of(kInput));
}

BENCHMARK(BM_memcpy_same_bytes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_space_to_batch_into)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_batch_to_space_into)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_space_to_batch_allocating)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_batch_to_space_allocating)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_space_to_batch_padded_into)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eigen_space_to_batch)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eigen_batch_to_space)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_in_cache, memcpy, InCache::memcpy)->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_in_cache, space_to_batch, InCache::allocating)->Arg(8)->Arg(64);
BENCHMARK_CAPTURE(BM_in_cache, space_to_batch_into, InCache::into)->Arg(8)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
