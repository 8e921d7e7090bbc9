// Thread stress test, built and run under ThreadSanitizer by the tsan preset (and as a plain
// test by the test preset). Worker threads share one source tensor and one output tensor: each
// converts lists of views of the source, pads and scatters into its own slot of the output,
// clones views that share storage and allocates buffers large enough for the buffer cache, while
// another thread keeps changing the cache limit and the streaming-stores threshold. Every result
// is checked against a plain loop; a data race is TSan's report, a wrong value is this program's.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include <tbatch/tbatch.hpp>

using namespace tbatch;

namespace {

constexpr int worker_count = 4;
constexpr int iterations = 40;
constexpr index_t slot_rows = 24, columns = 16;

std::atomic<int> failures{0};

void expect(bool ok, int thread, const char* what) {
  if (!ok && failures.fetch_add(1) < 20) std::fprintf(stderr, "thread %d: %s\n", thread, what);
}

float source_value(index_t row, index_t column) {
  return float(row * columns + column);
}

/// True when `t` (rows x columns) holds `value(row, column)` everywhere.
template <class Value>
bool holds(const Tensor<float>& t, Value&& value) {
  const Tensor<float> dense = t.contiguous();
  for (index_t r = 0; r < t.size(0); ++r)
    for (index_t c = 0; c < t.size(1); ++c)
      if (dense.data()[r * t.size(1) + c] != value(r, c)) return false;
  return true;
}

void work(int id, const Tensor<float>& source, Tensor<float> output) {
  std::mt19937 rng(static_cast<unsigned>(id));
  auto pick = [&](index_t lo, index_t hi) {
    return std::uniform_int_distribution<index_t>(lo, hi)(rng);
  };
  for (int it = 0; it < iterations; ++it) {
    // Conversions of views of the shared source.
    std::vector<Tensor<float>> list;
    std::vector<index_t> starts;
    for (int i = 0; i < 6; ++i) {
      const index_t rows = pick(0, 20), start = pick(0, source.size(0) - rows);
      list.push_back(source.narrow(0, start, rows));
      starts.push_back(start);
    }
    const PaddedBatch<float> padded = list_to_padded(list, -1.f);
    const PackedBatch<float> packed = to_packed(padded);
    for (index_t i = 0; i < packed.batch_size(); ++i) {
      const index_t start = starts[static_cast<std::size_t>(i)];
      expect(holds(packed.element(i),
                   [&](index_t r, index_t c) { return source_value(start + r, c); }),
             id, "to_packed(list_to_padded(views)) differs from the source rows");
    }

    // pad into this thread's slot of the shared output: (slot_rows + 2, columns + 2).
    const Tensor<float> rows = source.narrow(0, index_t(id) * slot_rows, slot_rows);
    Tensor<float> slot = output.select(0, id);
    const float border = float(it);
    pad_into(rows.view(), {1, 1, 1, 1}, slot.view(), PadMode::constant, border);
    expect(holds(slot,
                 [&](index_t r, index_t c) {
                   const bool inside = r >= 1 && r <= slot_rows && c >= 1 && c <= columns;
                   return inside ? source_value(index_t(id) * slot_rows + r - 1, c - 1) : border;
                 }),
           id, "pad_into a slot of the shared output");

    // Scatter-add into the slot's interior: every row gets row `it % slot_rows` of the source
    // added once.
    Tensor<float> interior = slot.narrow(0, 1, slot_rows).narrow(1, 1, columns);
    const Tensor<float> before = interior.clone();
    Tensor<index_t> index(Shape{slot_rows});
    for (index_t r = 0; r < slot_rows; ++r)
      index.data()[r] = r;
    const Tensor<float> added = source.narrow(0, it % slot_rows, 1).expand({slot_rows, columns});
    index_add_(interior, 0, index, added);
    expect(holds(interior,
                 [&](index_t r, index_t c) {
                   return before.contiguous().data()[r * columns + c] +
                          source_value(it % slot_rows, c);
                 }),
           id, "index_add_ into the slot");

    // Copies of tensors that share storage, large enough for the buffer cache (2 MiB).
    const Tensor<float> big = Tensor<float>::full(Shape{512, 1024}, float(id));
    const Tensor<float> clone = big.narrow(0, 1, 511).clone();
    expect(clone.numel() == 511 * 1024 && clone.contiguous().data()[12345] == float(id), id,
           "clone of a view of a large tensor");
  }
}

}  // namespace

int main() {
  const index_t source_rows = worker_count * slot_rows + 40;
  Tensor<float> source(Shape{source_rows, columns});
  for (index_t r = 0; r < source_rows; ++r)
    for (index_t c = 0; c < columns; ++c)
      source.data()[r * columns + c] = source_value(r, c);
  Tensor<float> output(Shape{worker_count, slot_rows + 2, columns + 2});

  std::atomic<bool> stop{false};
  std::thread knobs([&] {
    for (int turn = 0; !stop.load(); ++turn) {
      set_buffer_cache_limit(turn % 2 == 0 ? 0 : std::size_t(64) << 20);
      set_streaming_stores_min_bytes(turn % 3 == 0 ? index_t(4096) : index_t(16) << 20);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::vector<std::thread> workers;
  for (int id = 0; id < worker_count; ++id)
    workers.emplace_back(work, id, std::cref(source), output);
  for (std::thread& t : workers)
    t.join();
  stop = true;
  knobs.join();

  if (failures.load() > 0) {
    std::fprintf(stderr, "stress_threads: %d wrong results\n", failures.load());
    return 1;
  }
  std::printf("stress_threads: %d threads x %d iterations, all results right\n", worker_count,
              iterations);
  return 0;
}
