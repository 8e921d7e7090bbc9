// safetensors save and load of a 256 MiB packed batch of float point clouds, in GB/s of file
// bytes, next to memcpy of the same bytes: save (write + fsync + rename), load into owned
// buffers, and a mapped load whose bytes are then read once (the cost a reader pays). The file
// lives in the system's temporary folder, so the figures include that file system's cache.

#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <tbatch/io/safetensors.hpp>
#include <tbatch/tbatch.hpp>

namespace {

using namespace tbatch;

constexpr index_t total_bytes = index_t(256) << 20;

/// Clouds of 1,000-100,000 xyz points until the batch holds 256 MiB.
const PackedBatch<float>& batch() {
  static const PackedBatch<float> packed = [] {
    std::mt19937 rng(3);
    std::vector<Tensor<float>> clouds;
    index_t bytes = 0;
    while (bytes < total_bytes) {
      const index_t rows = std::min(std::uniform_int_distribution<index_t>(1000, 100000)(rng),
                                    (total_bytes - bytes) / 12 + 1);
      clouds.push_back(Tensor<float>(Shape{rows, 3}, 1.f));
      bytes += rows * 12;
    }
    return list_to_packed(clouds);
  }();
  return packed;
}

std::filesystem::path file_path() {
  return std::filesystem::temp_directory_path() / "tbatch_bench_io.safetensors";
}

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * batch().data().numel() * index_t(sizeof(float)));
}

void BM_memcpy(benchmark::State& state) {
  const Tensor<float>& data = batch().data();
  std::vector<char> out(std::size_t(data.numel()) * sizeof(float));
  for (auto _ : state) {
    std::memcpy(out.data(), data.data(), out.size());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

void BM_save(benchmark::State& state) {
  io::TensorFile file;
  io::put(file, "clouds", batch());
  for (auto _ : state)
    io::save(file_path(), file);
  set_bytes(state);
}

void BM_load(benchmark::State& state) {
  io::TensorFile file;
  io::put(file, "clouds", batch());
  io::save(file_path(), file);
  for (auto _ : state) {
    const auto loaded = io::get<PackedBatch<float>>(io::load(file_path()), "clouds");
    benchmark::DoNotOptimize(loaded.data().data());
  }
  set_bytes(state);
}

void BM_load_mapped_and_read(benchmark::State& state) {
  io::TensorFile file;
  io::put(file, "clouds", batch());
  io::save(file_path(), file);
  for (auto _ : state) {
    const auto loaded = io::get<PackedBatch<float>>(io::load(file_path(), io::Mmap::yes), "clouds");
    const Tensor<float>& data = loaded.data();
    float sum = 0;
    for (index_t i = 0; i < data.numel(); i += 1024)  // one read per 4 KiB page
      sum += data.data()[i];
    benchmark::DoNotOptimize(sum);
  }
  set_bytes(state);
}

BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_save)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_load)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_load_mapped_and_read)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
