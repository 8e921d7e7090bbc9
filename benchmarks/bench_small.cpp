// Many small elements: B elements of 1-8 rows x 16 floats, one call per conversion or batch
// kernel, single thread. Counters: ns_per_element (the call's time, result freed included, over
// B); for the conversions of_memcpy (one memcpy of the bytes the conversion writes, into a touched
// buffer, over the call's time: 1 = as fast as memcpy); for the batch kernels of_dense (the
// same kernel on one dense tensor, in output bytes per second, over the batch call's: 1 = as
// fast as the dense kernel on the same bytes). The *_vs_loop rows run a conversion and the hand
// loop over the same memory (one memcpy per element plus the padding fill, into a reused buffer)
// alternately: of_loop is the loop's time over the call's (1 = as fast as the hand loop).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <utility>
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
  index_t slot = 0;  // floats per element slot of the padded data

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
    slot = padded.data().numel() / batch;
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

// Seconds per call of `fn` over the benchmark's iterations, and the ns_per_element counter.
template <class Fn>
double timed(benchmark::State& state, Fn&& fn) {
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(fn());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double per_call = seconds / double(state.iterations());
  state.counters["ns_per_element"] = per_call * 1e9 / double(state.range(0));
  return per_call;
}

template <class Fn>
void run(benchmark::State& state, index_t moved_bytes, Fn&& fn) {
  const double per_call = timed(state, fn);
  state.counters["of_memcpy"] = memcpy_seconds(moved_bytes) / per_call;
}

// Runs `first` and `second` alternately, so both see the same load; returns the seconds each took
// over all iterations. The benchmark's own time is the first's.
template <class First, class Second>
std::pair<double, double> alternate(benchmark::State& state, First&& first, Second&& second) {
  double first_seconds = 0, second_seconds = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    first();
    auto end = std::chrono::steady_clock::now();
    first_seconds += std::chrono::duration<double>(end - start).count();
    state.PauseTiming();
    start = std::chrono::steady_clock::now();
    second();
    end = std::chrono::steady_clock::now();
    second_seconds += std::chrono::duration<double>(end - start).count();
    state.ResumeTiming();
  }
  return {first_seconds, second_seconds};
}

// A batch kernel against the dense kernel: `dense_call` returns a tensor; both are compared in
// output bytes per second.
template <class BatchCall, class DenseCall>
void run_against_dense(benchmark::State& state, BatchCall&& batch_call, DenseCall&& dense_call) {
  const index_t batch_bytes = index_t(sizeof(float)) * batch_call().data().numel();
  const index_t dense_bytes = index_t(sizeof(float)) * dense_call().numel();
  const auto [batch_seconds, dense_seconds] = alternate(
      state, [&] { benchmark::DoNotOptimize(batch_call()); },
      [&] { benchmark::DoNotOptimize(dense_call()); });
  const double iterations = double(state.iterations());
  state.counters["ns_per_element"] = batch_seconds / iterations * 1e9 / double(state.range(0));
  state.counters["of_dense"] =
      (double(batch_bytes) / batch_seconds) / (double(dense_bytes) / dense_seconds);
}

// The dense tensor a batch kernel is compared with: B elements of 5 rows (the mean of 1-8, rounded
// up) x 16 floats.
const Tensor<float>& dense_elements(index_t batch) {
  static std::vector<std::pair<index_t, Tensor<float>>> cache;
  for (const auto& [b, t] : cache)
    if (b == batch) return t;
  cache.emplace_back(batch, Tensor<float>(Shape{batch, 5, kLastDim}, 1.f));
  return cache.back().second;
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

// The same conversions as the plain loops a user would write by hand for this case (rank-2
// contiguous elements: one memcpy per element, one fill of its slot's rest), computing only the
// data (no metadata) into `at`: how far from memcpy the access pattern itself is, whatever library
// does it.
void loop_list_to_padded(const Workload& w, float* at) {
  for (const Tensor<float>& t : w.list) {
    std::memcpy(at, t.data(), std::size_t(t.numel()) * sizeof(float));
    std::fill(at + t.numel(), at + w.slot, 0.f);
    at += w.slot;
  }
}
void loop_list_to_packed(const Workload& w, float* at) {
  for (const Tensor<float>& t : w.list) {
    std::memcpy(at, t.data(), std::size_t(t.numel()) * sizeof(float));
    at += t.numel();
  }
}
void loop_padded_to_packed(const Workload& w, float* at) {
  const index_t* rows = w.padded.shape_per_tensor().data();
  const float* in = w.padded.data().data();
  for (index_t i = 0, batch = w.padded.batch_size(); i < batch; ++i, in += w.slot) {
    std::memcpy(at, in, std::size_t(rows[i] * kLastDim) * sizeof(float));
    at += rows[i] * kLastDim;
  }
}
void loop_packed_to_padded(const Workload& w, float* at) {
  const index_t* first = w.packed.first_idx().data();
  const float* in = w.packed.data().data();
  for (index_t i = 0, batch = w.packed.batch_size(); i < batch; ++i, at += w.slot) {
    const index_t n = (first[i + 1] - first[i]) * kLastDim;
    std::memcpy(at, in + first[i] * kLastDim, std::size_t(n) * sizeof(float));
    std::fill(at + n, at + w.slot, 0.f);
  }
}

// The hand loops into a Tensor as tbatch allocates it (one allocation per call, as the call has).
template <class Loop>
void run_loop(benchmark::State& state, index_t moved_bytes, const Shape& out_shape, Loop&& loop) {
  run(state, moved_bytes, [&] {
    Tensor<float> out = Tensor<float>::empty(out_shape);
    loop(out.data());
    return out;
  });
}

void BM_small_loop_list_to_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_loop(state, w.padded_bytes, w.padded.data().shape(),
           [&](float* out) { loop_list_to_padded(w, out); });
}
void BM_small_loop_list_to_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_loop(state, w.valid_bytes, w.packed.data().shape(),
           [&](float* out) { loop_list_to_packed(w, out); });
}
void BM_small_loop_padded_to_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_loop(state, w.valid_bytes, w.packed.data().shape(),
           [&](float* out) { loop_padded_to_packed(w, out); });
}
void BM_small_loop_packed_to_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_loop(state, w.padded_bytes, w.padded.data().shape(),
           [&](float* out) { loop_packed_to_padded(w, out); });
}

// The tbatch call against its hand loop into one reused (already touched) buffer of
// `out_floats`, the two alternating in one run so both see the same load and cache state.
// Counters: ns_per_element (the call), loop_ns_per_element, and of_loop (the loop's time over
// the call's: 1 = as fast as the hand loop, 0.5 = twice its time).
template <class Call, class Loop>
void run_against_loop(benchmark::State& state, index_t out_floats, Call&& call, Loop&& loop) {
  std::vector<float> out(static_cast<std::size_t>(out_floats), 1.f);
  const auto [call_seconds, loop_seconds] = alternate(
      state, [&] { benchmark::DoNotOptimize(call()); },
      [&] {
        loop(out.data());
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
      });
  const double per_element = 1e9 / double(state.iterations()) / double(state.range(0));
  state.counters["ns_per_element"] = call_seconds * per_element;
  state.counters["loop_ns_per_element"] = loop_seconds * per_element;
  state.counters["of_loop"] = loop_seconds / call_seconds;
}

void BM_small_list_to_padded_vs_loop(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_against_loop(
      state, w.padded.data().numel(), [&] { return list_to_padded(w.list, 0.f); },
      [&](float* out) { loop_list_to_padded(w, out); });
}
void BM_small_list_to_packed_vs_loop(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_against_loop(
      state, w.packed.data().numel(), [&] { return list_to_packed(w.list); },
      [&](float* out) { loop_list_to_packed(w, out); });
}
void BM_small_padded_to_packed_vs_loop(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_against_loop(
      state, w.packed.data().numel(), [&] { return to_packed(w.padded); },
      [&](float* out) { loop_padded_to_packed(w, out); });
}
void BM_small_packed_to_padded_vs_loop(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_against_loop(
      state, w.padded.data().numel(), [&] { return to_padded(w.packed, 0.f); },
      [&](float* out) { loop_packed_to_padded(w, out); });
}

// pad each element by one row before and after: {0, 0, 1, 1}.
const std::vector<index_t> kRowPads{0, 0, 1, 1};

void BM_small_pad_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  const Tensor<float>& dense = dense_elements(state.range(0));
  run_against_dense(
      state, [&] { return pad(w.packed, kRowPads); }, [&] { return pad(dense, kRowPads); });
}
void BM_small_pad_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  const Tensor<float>& dense = dense_elements(state.range(0));
  run_against_dense(
      state, [&] { return pad(w.padded, kRowPads); }, [&] { return pad(dense, kRowPads); });
}

// One update row per element, at a random row of it; the dense scatter updates the same rows of
// the packed data.
struct ScatterUpdates {
  Tensor<index_t> element_index, local_index, packed_row;
  Tensor<float> updates;
};
const ScatterUpdates& scatter_updates(index_t batch) {
  static std::vector<std::pair<index_t, std::unique_ptr<ScatterUpdates>>> cache;
  for (const auto& [b, u] : cache)
    if (b == batch) return *u;
  const Workload& w = workload(batch);
  auto u = std::make_unique<ScatterUpdates>(
      ScatterUpdates{Tensor<index_t>(Shape{batch}), Tensor<index_t>(Shape{batch}),
                     Tensor<index_t>(Shape{batch}), Tensor<float>(Shape{batch, kLastDim}, 2.f)});
  std::mt19937 rng(7);
  for (index_t k = 0; k < batch; ++k) {
    const index_t e = std::uniform_int_distribution<index_t>(0, batch - 1)(rng);
    const index_t rows = w.packed.rows_of(e);
    const index_t row = std::uniform_int_distribution<index_t>(0, rows - 1)(rng);
    u->element_index(k) = e;
    u->local_index(k) = row;
    u->packed_row(k) = w.packed.first_idx()(e) + row;
  }
  cache.emplace_back(batch, std::move(u));
  return *cache.back().second;
}

void BM_small_scatter_packed(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  const ScatterUpdates& u = scatter_updates(state.range(0));
  run_against_dense(
      state, [&] { return scatter(w.packed, u.element_index, u.local_index, u.updates); },
      [&] { return scatter(w.packed.data(), u.packed_row, u.updates); });
}
void BM_small_scatter_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  const ScatterUpdates& u = scatter_updates(state.range(0));
  run_against_dense(
      state, [&] { return scatter(w.padded, u.element_index, u.local_index, u.updates); },
      [&] { return scatter(w.packed.data(), u.packed_row, u.updates); });
}

// space_to_batch_nd with block 2 on the rows: the padded batch (8 rows padded) against the
// dense tensor of the same shape.
void BM_small_space_to_batch_padded(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  run_against_dense(
      state,
      [&] {
        return space_to_batch_nd(w.padded, {2}, {{0, 0}});
      },
      [&] {
        return space_to_batch_nd(w.padded.data(), {2}, {{0, 0}});
      });
}

}  // namespace

BENCHMARK(BM_small_list_to_padded)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_list_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_padded_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_packed_to_padded)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_loop_list_to_padded)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_loop_list_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_loop_padded_to_packed)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_loop_packed_to_padded)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_list_to_padded_vs_loop)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_list_to_packed_vs_loop)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_padded_to_packed_vs_loop)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_packed_to_padded_vs_loop)->RangeMultiplier(10)->Range(1000, 100000);
BENCHMARK(BM_small_pad_packed)->Arg(10000);
BENCHMARK(BM_small_pad_padded)->Arg(10000);
BENCHMARK(BM_small_scatter_packed)->Arg(10000);
BENCHMARK(BM_small_scatter_padded)->Arg(10000);
BENCHMARK(BM_small_space_to_batch_padded)->Arg(10000);

BENCHMARK_MAIN();
