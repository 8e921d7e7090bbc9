// What the layouts of a batch allow (issue 33): tbatch's sum along the ragged dim and its padded
// elementwise ops next to plain loops over the same buffers that do only what such an op must
// (read each slot's valid rows; write the padded result), packed `p - dense` next to a plain
// loop over the packed rows, and memcpy of the valid values. Workloads (tbatch_bench::point_sets,
// padded with 0): 1e5 elements of U[1, 8] x 16 floats, 1,024 of U[1, 512] x 64, for
// `p - dense` 2,000 point clouds of U[1, 2048] x 3 and, for the sum, 1e5 skewed elements of 16
// floats: one row each, but one in 20 of U[1, 64] rows (slots of 4 KiB).
//
// Every call starts from a cold cache: 256 MiB are written before each one, outside the timing.
// The inputs (29 to 134 MB) are about the size of a last-level cache, and back-to-back calls
// find part of them there: on a VM with a 32 MiB L3, back-to-back padded sums ran 25-35% faster
// than the same calls in the comparison's interleaved rounds.
//
// Before timing, each plain loop's result is compared with tbatch's; a mismatch fails the
// benchmark. bytes/s counts what the op reads and writes: a sum reads the valid values and the
// lengths and writes (B, D) floats; an elementwise op reads the valid values of each input and
// writes the whole padded result.

#include <benchmark/benchmark.h>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <tbatch/tbatch.hpp>

#include "workloads.hpp"

namespace {

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::PaddedBatch;
using tbatch::Tensor;

/// n elements of `width` floats: one row each, but every 20th of U[1, max_rows] rows.
std::vector<Tensor<float>> skewed_sets(index_t n, index_t max_rows, index_t width, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<index_t> rows(1, max_rows);
  std::vector<Tensor<float>> list;
  for (index_t i = 0; i < n; ++i)
    list.push_back(tbatch_bench::random_tensor(tbatch::Shape{i % 20 == 0 ? rows(rng) : 1, width},
                                               seed + unsigned(i)));
  return list;
}

/// The lists of the workloads: range(0) 1 for the small elements, 0 for the sequences, 2 for the
/// point clouds, 3 for the skewed elements.
std::vector<Tensor<float>> workload_list(int64_t which) {
  if (which == 1) return tbatch_bench::point_sets(100'000, 8, 16, 52);
  if (which == 2) return tbatch_bench::point_sets(2000, 2048, 3, 53);
  if (which == 3) return skewed_sets(100'000, 64, 16, 54);
  return tbatch_bench::point_sets(1024, 512, 64, 51);
}

struct Workload {
  PaddedBatch<float> p, q;  // q: the same lengths, other values
  PackedBatch<float> packed;
  Tensor<float> dense;  // (B, D): one row per element, as centroids
  std::vector<index_t> lengths;
  index_t batch = 0, slot_rows = 0, width = 0, valid_values = 0;

  explicit Workload(const std::vector<Tensor<float>>& list)
      : p(tbatch::list_to_padded(list, 0.0f)),
        q(p.with_data(p.data() * 0.5f)),
        packed(tbatch::list_to_packed(list)) {
    batch = p.data().size(0);
    slot_rows = p.data().size(1);
    width = p.data().size(2);
    dense = tbatch_bench::random_tensor(tbatch::Shape{batch, width}, 53);
    for (index_t i = 0; i < batch; ++i) {
      lengths.push_back(p.shape_per_tensor().data()[i]);
      valid_values += lengths.back() * width;
    }
  }
  index_t valid_bytes() const { return valid_values * index_t(sizeof(float)); }
  index_t padded_bytes() const { return p.data().numel() * index_t(sizeof(float)); }
};

/// range(0): 1 for the small elements, 0 for the sequences, 2 for the point clouds, 3 for the
/// skewed elements.
const Workload& workload(const benchmark::State& state) {
  static std::map<int64_t, std::unique_ptr<Workload>> made;
  auto& w = made[state.range(0)];
  if (!w) w = std::make_unique<Workload>(workload_list(state.range(0)));
  return *w;
}

/// Writes 256 MiB, so the next call finds none of its inputs in cache.
void evict_caches() {
  static std::vector<char> buffer(std::size_t(256) << 20);
  static char value = 0;
  std::memset(buffer.data(), ++value, buffer.size());
  benchmark::DoNotOptimize(buffer.data());
}

/// Times fn() from a cold cache each iteration, after one call that is not timed (its output's
/// first allocation faults pages in: 134 MB took 0.3 s).
template <class Fn>
void cold_loop(benchmark::State& state, Fn&& fn) {
  fn();
  for (auto _ : state) {
    state.PauseTiming();
    evict_caches();
    state.ResumeTiming();
    fn();
  }
}

bool close(const float* got, const float* want, index_t n) {
  for (index_t i = 0; i < n; ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5f * (1 + std::abs(want[i])))) return false;
  return true;
}

/// Each slot's valid rows summed into doubles, D a constant (the best case for the compiler);
/// with `ahead`, the valid rows of the slot `ahead` slots on are prefetched first.
template <index_t D>
void sum_slots(const Workload& w, float* out, index_t ahead) {
  const float* x = w.p.data().data();
  const index_t slot = w.slot_rows * D;
  for (index_t i = 0; i < w.batch; ++i) {
    if (ahead > 0 && i + ahead < w.batch) {
      const char* next = reinterpret_cast<const char*>(x + (i + ahead) * slot);
      for (index_t b = 0; b < w.lengths[std::size_t(i + ahead)] * D * 4; b += 64)
        __builtin_prefetch(next + b);
    }
    double total[D] = {};
    const float* rows = x + i * slot;
    for (index_t r = 0; r < w.lengths[std::size_t(i)]; ++r)
      for (index_t c = 0; c < D; ++c)
        total[c] += rows[r * D + c];
    for (index_t c = 0; c < D; ++c)
      out[i * D + c] = static_cast<float>(total[c]);
  }
}

void sum_slots_of(const Workload& w, float* out, index_t ahead) {
  if (w.width == 16)
    sum_slots<16>(w, out, ahead);
  else
    sum_slots<64>(w, out, ahead);
}

void BM_sum_tbatch(benchmark::State& state) {
  const Workload& w = workload(state);
  cold_loop(state, [&] { benchmark::DoNotOptimize(Tensor<float>(tbatch::sum(w.p, 0)).data()); });
  state.SetBytesProcessed(state.iterations() *
                          (w.valid_bytes() + w.batch * (8 + w.width * index_t(sizeof(float)))));
}

void sum_loop(benchmark::State& state, index_t ahead) {
  const Workload& w = workload(state);
  Tensor<float> out = Tensor<float>::zeros({w.batch, w.width});
  sum_slots_of(w, out.data(), ahead);
  const Tensor<float> want = tbatch::sum(w.p, 0);
  if (!close(out.data(), want.data(), want.numel()))
    state.SkipWithError("the plain loop's sums differ from tbatch's");
  cold_loop(state, [&] {
    sum_slots_of(w, out.data(), ahead);
    benchmark::DoNotOptimize(out.data());
  });
  state.SetBytesProcessed(state.iterations() *
                          (w.valid_bytes() + w.batch * (8 + w.width * index_t(sizeof(float)))));
}
void BM_sum_plain_loop(benchmark::State& state) {
  sum_loop(state, 0);
}
void BM_sum_plain_loop_prefetching(benchmark::State& state) {
  sum_loop(state, 16);
}

/// The padded result of an op on one input or two: bytes read and written.
index_t elementwise_bytes(const Workload& w, index_t inputs) {
  return inputs * w.valid_bytes() + w.padded_bytes();
}

void BM_exp_tbatch(benchmark::State& state) {
  const Workload& w = workload(state);
  cold_loop(state, [&] { benchmark::DoNotOptimize(tbatch::exp(w.p).data().data()); });
  state.SetBytesProcessed(state.iterations() * elementwise_bytes(w, 1));
}

void BM_sub_dense_tbatch(benchmark::State& state) {
  const Workload& w = workload(state);
  cold_loop(state, [&] { benchmark::DoNotOptimize((w.p - w.dense).data().data()); });
  state.SetBytesProcessed(state.iterations() * elementwise_bytes(w, 1));
}

void BM_add_tbatch(benchmark::State& state) {
  const Workload& w = workload(state);
  cold_loop(state, [&] { benchmark::DoNotOptimize((w.p + w.q).data().data()); });
  state.SetBytesProcessed(state.iterations() * elementwise_bytes(w, 2));
}

/// Times a plain loop that writes the padded result slot by slot, checked against `want` first:
/// valid(out, begin, n) writes the slot's n valid values (from offset `begin` in the inputs) and
/// the rest of the slot is zeroed. With `ahead`, the first 512 bytes of each input's slot
/// `ahead` slots on are prefetched first, as tbatch's kernels prefetch slots of up to 4 KiB.
template <class Valid>
void padded_plain_loop(benchmark::State& state, index_t inputs, const Tensor<float>& want,
                       const Valid& valid, index_t ahead = 0) {
  const Workload& w = workload(state);
  Tensor<float> out = Tensor<float>::zeros(w.p.data().shape());
  const index_t slot = w.slot_rows * w.width;
  const index_t prefetched = std::min<index_t>(slot * index_t(sizeof(float)), 512);
  const auto run = [&] {
    for (index_t i = 0; i < w.batch; ++i) {
      if (ahead > 0 && i + ahead < w.batch)
        for (const PaddedBatch<float>* input : {&w.p, &w.q}) {
          if (input == &w.q && inputs < 2) break;
          const auto* next =
              reinterpret_cast<const char*>(input->data().data() + (i + ahead) * slot);
          for (index_t b = 0; b < prefetched; b += 64)
            __builtin_prefetch(next + b);
        }
      const index_t begin = i * slot, n = w.lengths[std::size_t(i)] * w.width;
      valid(out.data() + begin, begin, n);
      std::memset(out.data() + begin + n, 0, std::size_t(slot - n) * sizeof(float));
    }
  };
  run();
  if (!close(out.data(), want.data(), out.numel()))
    state.SkipWithError("the plain loop's result differs from tbatch's");
  cold_loop(state, [&] {
    run();
    benchmark::DoNotOptimize(out.data());
  });
  state.SetBytesProcessed(state.iterations() * elementwise_bytes(w, inputs));
}

/// The least a padded elementwise op on one input moves: each slot's valid values copied
/// (memcpy), the rest of the slot zeroed.
void copy_slots(benchmark::State& state, index_t ahead) {
  const Workload& w = workload(state);
  padded_plain_loop(
      state, 1, w.p.data(),
      [&](float* out, index_t begin, index_t n) {
        std::memcpy(out, w.p.data().data() + begin, std::size_t(n) * sizeof(float));
      },
      ahead);
}
void BM_copy_slots_plain_loop(benchmark::State& state) {
  copy_slots(state, 0);
}
void BM_copy_slots_plain_loop_prefetching(benchmark::State& state) {
  copy_slots(state, 16);
}

/// exp(p) as a plain loop: each slot's valid values through Eigen's vectorised exp (the one
/// tbatch's float exp uses), the rest of the slot zeroed.
void BM_exp_slots_plain_loop(benchmark::State& state) {
  const Workload& w = workload(state);
  const float* x = w.p.data().data();
  padded_plain_loop(state, 1, tbatch::exp(w.p).data(), [&](float* out, index_t begin, index_t n) {
    Eigen::Map<Eigen::ArrayXf>(out, n) = Eigen::Map<const Eigen::ArrayXf>(x + begin, n).exp();
  });
}

/// The least p + q moves: each slot's valid values of both added, the rest of the slot zeroed.
void add_slots(benchmark::State& state, index_t ahead) {
  const Workload& w = workload(state);
  const float* a = w.p.data().data();
  const float* b = w.q.data().data();
  padded_plain_loop(
      state, 2, (w.p + w.q).data(),
      [&](float* out, index_t begin, index_t n) {
        for (index_t k = 0; k < n; ++k)
          out[k] = a[begin + k] + b[begin + k];
      },
      ahead);
}
void BM_add_slots_plain_loop(benchmark::State& state) {
  add_slots(state, 0);
}
void BM_add_slots_plain_loop_prefetching(benchmark::State& state) {
  add_slots(state, 16);
}

/// packed p - dense: each packed row minus its element's row of dense, D a constant.
template <index_t D>
void sub_rows_packed(const Workload& w, float* out) {
  const float* x = w.packed.data().data();
  const float* d = w.dense.data();
  const index_t* first = w.packed.first_idx().data();
  for (index_t i = 0; i < w.batch; ++i)
    for (index_t r = first[i]; r < first[i + 1]; ++r)
      for (index_t c = 0; c < D; ++c)
        out[r * D + c] = x[r * D + c] - d[i * D + c];
}

/// The bytes packed p - dense reads and writes.
index_t packed_sub_bytes(const Workload& w) {
  return 2 * w.valid_bytes() + w.batch * w.width * index_t(sizeof(float));
}

void BM_sub_dense_packed_tbatch(benchmark::State& state) {
  const Workload& w = workload(state);
  cold_loop(state, [&] { benchmark::DoNotOptimize((w.packed - w.dense).data().data()); });
  state.SetBytesProcessed(state.iterations() * packed_sub_bytes(w));
}

void BM_sub_dense_packed_plain_loop(benchmark::State& state) {
  const Workload& w = workload(state);
  Tensor<float> out = Tensor<float>::zeros(w.packed.data().shape());
  const auto run = [&] {
    if (w.width == 3)
      sub_rows_packed<3>(w, out.data());
    else if (w.width == 16)
      sub_rows_packed<16>(w, out.data());
    else
      sub_rows_packed<64>(w, out.data());
  };
  run();
  if (!close(out.data(), (w.packed - w.dense).data().data(), out.numel()))
    state.SkipWithError("the plain loop's result differs from tbatch's");
  cold_loop(state, [&] {
    run();
    benchmark::DoNotOptimize(out.data());
  });
  state.SetBytesProcessed(state.iterations() * packed_sub_bytes(w));
}

/// memcpy of the valid values' bytes, contiguous: the rate the targets are stated against.
void BM_memcpy_valid(benchmark::State& state) {
  const Workload& w = workload(state);
  std::vector<char> from(std::size_t(w.valid_bytes()), 1), to(from.size());
  cold_loop(state, [&] {
    std::memcpy(to.data(), from.data(), from.size());
    benchmark::DoNotOptimize(to.data());
  });
  state.SetBytesProcessed(state.iterations() * 2 * w.valid_bytes());
}

void workloads(benchmark::internal::Benchmark* b) {
  b->ArgName("small")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
}
/// The two workloads and the point clouds (small/2).
void packed_workloads(benchmark::internal::Benchmark* b) {
  workloads(b);
  b->Arg(2);
}

/// The two workloads and the skewed elements (small/3).
void sum_workloads(benchmark::internal::Benchmark* b) {
  workloads(b);
  b->Arg(3);
}

BENCHMARK(BM_memcpy_valid)->Apply(sum_workloads);
BENCHMARK(BM_sum_tbatch)->Apply(sum_workloads);
BENCHMARK(BM_sum_plain_loop)->Apply(sum_workloads);
// Prefetching 16 slots ahead pays on slots of up to 4 KiB only (the sequences' are 128 KiB).
BENCHMARK(BM_sum_plain_loop_prefetching)
    ->ArgName("small")
    ->Arg(1)
    ->Arg(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_exp_tbatch)->Apply(workloads);
BENCHMARK(BM_sub_dense_tbatch)->Apply(workloads);
BENCHMARK(BM_exp_slots_plain_loop)->Apply(workloads);
BENCHMARK(BM_copy_slots_plain_loop)->Apply(workloads);
BENCHMARK(BM_copy_slots_plain_loop_prefetching)
    ->ArgName("small")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_add_tbatch)->Apply(workloads);
BENCHMARK(BM_add_slots_plain_loop)->Apply(workloads);
BENCHMARK(BM_add_slots_plain_loop_prefetching)
    ->ArgName("small")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_memcpy_valid)->ArgName("small")->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_sub_dense_packed_tbatch)->Apply(packed_workloads);
BENCHMARK(BM_sub_dense_packed_plain_loop)->Apply(packed_workloads);

}  // namespace

BENCHMARK_MAIN();
