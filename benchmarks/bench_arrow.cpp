// Export and import of packed batches through the Arrow C Data Interface
// (interop/arrow.hpp): 1,024 elements of U[1, 512] rows of D floats, with D = 1 (about 1 MiB of
// values), 64 (64 MiB) and 1,024 (1 GiB), as large_list<fixed_size_list<float, D>> (D = 1:
// large_list<float>); and the same rows as (L_i, 8, 8) tensors through the
// variable_shape_tensor extension. Both directions share the values, so the time depends on
// the 1,024 elements and not on the values' size; the values_MiB counter says which size ran.

#include <benchmark/benchmark.h>

#include <map>
#include <random>
#include <vector>

#include <tbatch/interop/arrow.hpp>
#include <tbatch/tbatch.hpp>

namespace {

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;

constexpr index_t kElements = 1024, kMaxRows = 512;

/// The batch of elements (U[1, 512] rows, `dims`...), built once.
const PackedBatch<float>& batch_of(const std::vector<index_t>& dims) {
  static std::map<std::vector<index_t>, PackedBatch<float>> cache;
  if (auto found = cache.find(dims); found != cache.end()) return found->second;
  std::mt19937 rng(42);
  std::uniform_int_distribution<index_t> rows(1, kMaxRows);
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < kElements; ++i) {
    std::vector<index_t> shape{rows(rng)};
    shape.insert(shape.end(), dims.begin(), dims.end());
    list.emplace_back(Shape(shape), 1.0f);
  }
  return cache.emplace(dims, tbatch::list_to_packed(list)).first->second;
}

void run_round_trip(benchmark::State& state, const PackedBatch<float>& batch) {
  for (auto _ : state) {
    ArrowArray array;
    ArrowSchema schema;
    tbatch::arrow::export_batch(batch, &array, &schema);
    const PackedBatch<float> back = tbatch::arrow::import_batch<float>(&array, &schema);
    schema.release(&schema);
    benchmark::DoNotOptimize(back.data().data());
  }
  state.counters["values_MiB"] =
      double(batch.data().numel()) * sizeof(float) / double(index_t(1) << 20);
  state.counters["elements"] = double(batch.batch_size());
}

void BM_arrow_round_trip(benchmark::State& state) {
  run_round_trip(state, batch_of({state.range(0)}));
}
BENCHMARK(BM_arrow_round_trip)->Arg(1)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_arrow_round_trip_variable_shape(benchmark::State& state) {
  run_round_trip(state, batch_of({8, 8}));
}
BENCHMARK(BM_arrow_round_trip_variable_shape)->Unit(benchmark::kMicrosecond);

void BM_arrow_export(benchmark::State& state) {
  const PackedBatch<float>& batch = batch_of({state.range(0)});
  for (auto _ : state) {
    ArrowArray array;
    ArrowSchema schema;
    tbatch::arrow::export_batch(batch, &array, &schema);
    benchmark::DoNotOptimize(array.children);
    array.release(&array);
    schema.release(&schema);
  }
  state.counters["values_MiB"] =
      double(batch.data().numel()) * sizeof(float) / double(index_t(1) << 20);
}
BENCHMARK(BM_arrow_export)->Arg(1)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
