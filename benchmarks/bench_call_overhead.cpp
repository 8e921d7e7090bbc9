// Per-call overhead of the maths on small tensors in cache: a + b, exp, sum over the last dim
// and softmax over the last dim on (1), (8, 8) and (64, 64) floats, tbatch and (when libtorch
// is found) libtorch on one thread, each call's result freed. The (1) rows are the overhead
// itself (a call that does one element of work); the (64, 64) rows add 4,096 elements of work,
// which the (8, 8) rows show growing.

#include <benchmark/benchmark.h>

#include <tbatch/tbatch.hpp>

#ifdef TBATCH_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;

Shape shape_of(index_t side) {
  return side == 1 ? Shape{1} : Shape{side, side};
}

Tensor<float> values(index_t side, float start) {
  Tensor<float> t(shape_of(side));
  for (index_t i = 0; i < t.numel(); ++i)
    t.data()[i] = start + 0.001f * float(i % 97);
  return t;
}

enum class Op { add, exp, sum, softmax };

void BM_tbatch(benchmark::State& state, Op op) {
  const index_t side = state.range(0);
  const Tensor<float> a = values(side, 0.5f), b = values(side, 0.25f);
  for (auto _ : state) {
    switch (op) {
      case Op::add:
        benchmark::DoNotOptimize((a + b).data());
        break;
      case Op::exp:
        benchmark::DoNotOptimize(tbatch::exp(a).data());
        break;
      case Op::sum:
        benchmark::DoNotOptimize(tbatch::sum(a, {-1}).data());
        break;
      case Op::softmax:
        benchmark::DoNotOptimize(tbatch::softmax(a, -1).data());
        break;
    }
    benchmark::ClobberMemory();
  }
}

#ifdef TBATCH_BENCH_WITH_TORCH
void BM_torch(benchmark::State& state, Op op) {
  torch::set_num_threads(1);
  const index_t side = state.range(0);
  const std::vector<int64_t> shape =
      side == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{side, side};
  const torch::Tensor a = torch::rand(shape) + 0.5, b = torch::rand(shape);
  for (auto _ : state) {
    switch (op) {
      case Op::add:
        benchmark::DoNotOptimize((a + b).data_ptr());
        break;
      case Op::exp:
        benchmark::DoNotOptimize(torch::exp(a).data_ptr());
        break;
      case Op::sum:
        benchmark::DoNotOptimize(a.sum(-1).data_ptr());
        break;
      case Op::softmax:
        benchmark::DoNotOptimize(torch::softmax(a, -1).data_ptr());
        break;
    }
    benchmark::ClobberMemory();
  }
}
#endif

#define TBATCH_OVERHEAD_ROWS(name)             \
  BENCHMARK_CAPTURE(BM_tbatch, name, Op::name) \
      ->Arg(1)                                 \
      ->Arg(8)                                 \
      ->Arg(64)                                \
      ->Unit(benchmark::kNanosecond);
TBATCH_OVERHEAD_ROWS(add)
TBATCH_OVERHEAD_ROWS(exp)
TBATCH_OVERHEAD_ROWS(sum)
TBATCH_OVERHEAD_ROWS(softmax)
#ifdef TBATCH_BENCH_WITH_TORCH
#define TBATCH_TORCH_ROWS(name)               \
  BENCHMARK_CAPTURE(BM_torch, name, Op::name) \
      ->Arg(1)                                \
      ->Arg(8)                                \
      ->Arg(64)                               \
      ->Unit(benchmark::kNanosecond);
TBATCH_TORCH_ROWS(add)
TBATCH_TORCH_ROWS(exp)
TBATCH_TORCH_ROWS(sum)
TBATCH_TORCH_ROWS(softmax)
#endif

}  // namespace

BENCHMARK_MAIN();
