// Benchmarks of pad (ops/pad.hpp) on the case: a (32, 64, 56, 56) float tensor padded by
// 1 on H and W, in every mode. Every case reports bytes/s as bytes read (the input) + bytes
// written (the output) per iteration, so each figure compares directly with the memcpy of the
// output's size (BM_memcpy_output_size, which reads and writes that size). Eigen Tensor's pad
// (constant) and, when libtorch was found at configure time, torch::nn::functional::pad run the
// same work side by side, both single-threaded like tbatch.

#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen_tensor.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

#ifdef TBATCH_BENCH_WITH_TORCH
#include <torch/torch.h>
#endif

namespace {

using tbatch::index_t;
using tbatch::PadMode;
using tbatch::Shape;
using tbatch::Tensor;

const Shape kInput{32, 64, 56, 56};
const Shape kOutput{32, 64, 58, 58};
const std::vector<index_t> kPad{1, 1, 1, 1};  // (left, right, top, bottom)

index_t bytes_of(const Shape& shape) {
  return shape.numel() * index_t(sizeof(float));
}

/// The input holding 0, 1, 2, ... (pages mapped before timing starts).
Tensor<float> make_input() {
  return Tensor<float>::arange(kInput.numel()).reshape(kInput.to_vector());
}

void report(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * (bytes_of(kInput) + bytes_of(kOutput)));
}

void BM_memcpy_output_size(benchmark::State& state) {
  const Tensor<float> src(kOutput);
  Tensor<float> dst(kOutput);
  const std::size_t bytes = static_cast<std::size_t>(bytes_of(kOutput));
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * bytes_of(kOutput));
}

/// pad as users call it: a new output per call.
void BM_pad(benchmark::State& state, PadMode mode) {
  const Tensor<float> x = make_input();
  for (auto _ : state) {
    Tensor<float> out = tbatch::pad(x, kPad, mode);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

/// pad_into a reused output: the kernel alone, as memcpy above.
void BM_pad_into(benchmark::State& state, PadMode mode) {
  const Tensor<float> x = make_input();
  Tensor<float> out(kOutput);
  for (auto _ : state) {
    tbatch::pad_into(x.view(), kPad, out.view(), mode);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

/// pad_into constant with streaming stores off: the row-by-row kernel through the cache, which
/// large constant pads used before stream_constant_rows (detail/constant_rows.hpp).
void BM_pad_into_constant_row_kernel(benchmark::State& state) {
  const Tensor<float> x = make_input();
  Tensor<float> out(kOutput);
  const index_t threshold = tbatch::streaming_stores_min_bytes();
  tbatch::set_streaming_stores_min_bytes(std::numeric_limits<index_t>::max());
  for (auto _ : state) {
    tbatch::pad_into(x.view(), kPad, out.view(), PadMode::constant);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  tbatch::set_streaming_stores_min_bytes(threshold);
  report(state);
}

/// Eigen Tensor's pad (constant zeros) into a reused row-major output.
void BM_eigen_tensor_pad_constant(benchmark::State& state) {
  Tensor<float> x = make_input();
  Tensor<float> out(kOutput);
  auto in_map = tbatch::as_eigen_tensor<4>(x);
  auto out_map = tbatch::as_eigen_tensor<4>(out);
  const std::array<std::pair<Eigen::Index, Eigen::Index>, 4> paddings{
      {{0, 0}, {0, 0}, {1, 1}, {1, 1}}};
  for (auto _ : state) {
    out_map = in_map.pad(paddings);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

BENCHMARK(BM_memcpy_output_size)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad_into, constant, PadMode::constant)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pad_into_constant_row_kernel)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad_into, reflect, PadMode::reflect)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad_into, replicate, PadMode::replicate)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad_into, circular, PadMode::circular)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad_into, symmetric, PadMode::symmetric)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad, constant, PadMode::constant)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad, reflect, PadMode::reflect)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad, replicate, PadMode::replicate)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad, circular, PadMode::circular)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_pad, symmetric, PadMode::symmetric)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_eigen_tensor_pad_constant)->Unit(benchmark::kMillisecond);

#ifdef TBATCH_BENCH_WITH_TORCH
/// torch::nn::functional::pad on one thread (torch has no symmetric mode).
void BM_torch_pad(benchmark::State& state, torch::nn::functional::PadFuncOptions::mode_t mode) {
  torch::set_num_threads(1);
  const torch::Tensor x = torch::arange(kInput.numel(), torch::kFloat32).reshape({32, 64, 56, 56});
  const auto options = torch::nn::functional::PadFuncOptions({1, 1, 1, 1}).mode(mode);
  for (auto _ : state) {
    torch::Tensor out = torch::nn::functional::pad(x, options);
    benchmark::DoNotOptimize(out.data_ptr());
    benchmark::ClobberMemory();
  }
  report(state);
}
BENCHMARK_CAPTURE(BM_torch_pad, constant, torch::kConstant)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_torch_pad, reflect, torch::kReflect)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_torch_pad, replicate, torch::kReplicate)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_torch_pad, circular, torch::kCircular)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
