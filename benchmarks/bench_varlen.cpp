// Benchmarks of the packed-sequence conventions (ragged/varlen.hpp), each next to a plain loop
// doing the same work: unpad and pad_rows on a random prefix mask (lengths U[1, L]) of
// B = 1e5 sequences of L = 8 x D = 16 floats and of B = 1,024 of L = 512 x D = 64, and
// pack_sequences of 1e5 lengths U[1, 512] into rows of 2,048 tokens against the O(N * rows)
// first-fit decreasing scan. Before timing, each benchmark runs both sides once and compares
// their results; a mismatch fails the benchmark.
//
// bytes/s counts the kept rows read and written (unpad), and the kept rows read plus the padded
// output written (pad_rows). Both sides allocate their outputs through tbatch's Tensor, so the
// allocation costs the same.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <tbatch/tbatch.hpp>

#include "workloads.hpp"

namespace {

using tbatch::index_t;
using tbatch::Shape;
using tbatch::Tensor;
using tbatch::Unpadded;

/// A padded (B, L, D) float batch, its prefix mask of U[1, L] lengths and tbatch's unpad of it
/// (pad_rows' input).
struct Masked {
  Tensor<float> padded;
  Tensor<bool> mask;
  Unpadded<float> unpadded;

  Masked(index_t batch, index_t length, index_t width)
      : padded(tbatch_bench::random_tensor(Shape{batch, length, width}, 11)),
        mask(Tensor<bool>::zeros(Shape{batch, length})) {
    std::mt19937 rng(12);
    std::uniform_int_distribution<index_t> kept(1, length);
    for (index_t b = 0; b < batch; ++b)
      std::fill_n(mask.data() + b * length, kept(rng), true);
    unpadded = tbatch::unpad(padded, mask);
  }
  index_t kept_bytes() const { return unpadded.rows.numel() * index_t(sizeof(float)); }
  index_t padded_bytes() const { return padded.numel() * index_t(sizeof(float)); }
};

/// The inputs of the shape (B, L, D) the benchmark's arguments name, made on first use.
const Masked& masked(const benchmark::State& state) {
  static std::map<std::array<index_t, 3>, Masked> made;
  const std::array<index_t, 3> shape{state.range(0), state.range(1), state.range(2)};
  auto found = made.find(shape);
  if (found == made.end()) found = made.try_emplace(shape, shape[0], shape[1], shape[2]).first;
  return found->second;
}

/// unpad by hand: count each sequence's kept positions (cu_seqlens, max_seqlen), then copy the
/// kept rows and write their flat positions.
Unpadded<float> plain_unpad(const Tensor<float>& padded, const Tensor<bool>& mask) {
  const index_t batch = padded.size(0), length = padded.size(1), width = padded.size(2);
  const bool* keep = mask.data();
  Unpadded<float> out;
  out.cu_seqlens = Tensor<std::int32_t>::empty(Shape{batch + 1});
  std::int32_t* offsets = out.cu_seqlens.data();
  offsets[0] = 0;
  for (index_t b = 0; b < batch; ++b) {
    index_t kept = 0;
    for (index_t l = 0; l < length; ++l)
      kept += keep[b * length + l];
    offsets[b + 1] = offsets[b] + static_cast<std::int32_t>(kept);
    out.max_seqlen = std::max(out.max_seqlen, kept);
  }
  out.rows = Tensor<float>::empty(Shape{offsets[batch], width});
  out.indices = Tensor<index_t>::empty(Shape{offsets[batch]});
  float* row = out.rows.data();
  index_t* index = out.indices.data();
  for (index_t p = 0; p < batch * length; ++p) {
    if (!keep[p]) continue;
    std::memcpy(row, padded.data() + p * width, static_cast<std::size_t>(width) * sizeof(float));
    row += width;
    *index++ = p;
  }
  return out;
}

/// pad_rows by hand: a zeroed (B, L, D) output and each row copied to its position, range
/// checked (no duplicate check: tbatch's costs one pass over a table of B * L entries).
Tensor<float> plain_pad_rows(const Tensor<float>& rows, const Tensor<index_t>& indices,
                             index_t batch, index_t length) {
  const index_t width = rows.size(1);
  Tensor<float> out = Tensor<float>::zeros(Shape{batch, length, width});
  for (index_t k = 0; k < rows.size(0); ++k) {
    const index_t p = indices.data()[k];
    if (p < 0 || p >= batch * length) throw std::out_of_range("plain_pad_rows: index");
    std::memcpy(out.data() + p * width, rows.data() + k * width,
                static_cast<std::size_t>(width) * sizeof(float));
  }
  return out;
}

/// Runs unpad and the plain loop once, untimed, and fails the benchmark when they differ. The
/// call also takes the first touch of fresh output memory (hundreds of ms for 128 MiB on a VM,
/// which a loop reusing its buffers does not pay) out of the timing.
bool unpad_agrees(benchmark::State& state, const Masked& in) {
  const Unpadded<float> want = plain_unpad(in.padded, in.mask);
  const Unpadded<float> got = tbatch::unpad(in.padded, in.mask);
  if (tbatch::equal(want.rows, got.rows) && tbatch::equal(want.indices, got.indices) &&
      tbatch::equal(want.cu_seqlens, got.cu_seqlens) && want.max_seqlen == got.max_seqlen)
    return true;
  state.SkipWithError("unpad differs from the plain loop");
  return false;
}

/// pad_rows' counterpart of unpad_agrees.
bool pad_rows_agrees(benchmark::State& state, const Masked& in) {
  const Unpadded<float>& u = in.unpadded;
  const index_t batch = in.padded.size(0), length = in.padded.size(1);
  if (tbatch::equal(plain_pad_rows(u.rows, u.indices, batch, length),
                    tbatch::pad_rows(u.rows, u.indices, batch, length)))
    return true;
  state.SkipWithError("pad_rows differs from the plain loop");
  return false;
}

void BM_unpad(benchmark::State& state) {
  const Masked& in = masked(state);
  if (!unpad_agrees(state, in)) return;
  for (auto _ : state) {
    Unpadded<float> out = tbatch::unpad(in.padded, in.mask);
    benchmark::DoNotOptimize(out.rows.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * in.kept_bytes());
}

void BM_unpad_plain_loop(benchmark::State& state) {
  const Masked& in = masked(state);
  if (!unpad_agrees(state, in)) return;
  for (auto _ : state) {
    Unpadded<float> out = plain_unpad(in.padded, in.mask);
    benchmark::DoNotOptimize(out.rows.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * in.kept_bytes());
}

void BM_pad_rows(benchmark::State& state) {
  const Masked& in = masked(state);
  if (!pad_rows_agrees(state, in)) return;
  const Unpadded<float>& u = in.unpadded;
  for (auto _ : state) {
    Tensor<float> out = tbatch::pad_rows(u.rows, u.indices, in.padded.size(0), in.padded.size(1));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * (in.kept_bytes() + in.padded_bytes()));
}

void BM_pad_rows_plain_loop(benchmark::State& state) {
  const Masked& in = masked(state);
  if (!pad_rows_agrees(state, in)) return;
  const Unpadded<float>& u = in.unpadded;
  for (auto _ : state) {
    Tensor<float> out = plain_pad_rows(u.rows, u.indices, in.padded.size(0), in.padded.size(1));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * (in.kept_bytes() + in.padded_bytes()));
}

constexpr index_t kSequences = 100'000, kLongest = 512, kRowTokens = 2048;

const std::vector<index_t>& sequence_lengths() {
  static const std::vector<index_t> lengths = [] {
    std::mt19937 rng(13);
    std::uniform_int_distribution<index_t> length(1, kLongest);
    std::vector<index_t> out(kSequences);
    for (index_t& n : out)
      n = length(rng);
    return out;
  }();
  return lengths;
}

/// pack_sequences' rows as plain vectors.
struct PlainPacking {
  std::vector<std::vector<index_t>> sequences;
  std::vector<std::vector<std::int32_t>> cu_seqlens;
  std::vector<std::vector<index_t>> position_ids;
};

/// First-fit decreasing by hand: longest first (ties by index), each sequence into the first
/// row with room, found by scanning the rows from the first; then each row's offsets and
/// positions.
PlainPacking plain_pack(const std::vector<index_t>& lengths, index_t max_tokens) {
  std::vector<index_t> order(lengths.size());
  std::iota(order.begin(), order.end(), index_t(0));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)];
  });
  PlainPacking out;
  std::vector<index_t> used;
  for (index_t s : order) {
    const index_t n = lengths[static_cast<std::size_t>(s)];
    std::size_t r = 0;
    while (r < used.size() && used[r] + n > max_tokens)
      ++r;
    if (r == used.size()) {
      used.push_back(0);
      out.sequences.emplace_back();
    }
    used[r] += n;
    out.sequences[r].push_back(s);
  }
  for (const std::vector<index_t>& row : out.sequences) {
    std::vector<std::int32_t> offsets{0};
    std::vector<index_t> positions;
    for (index_t s : row) {
      const index_t n = lengths[static_cast<std::size_t>(s)];
      offsets.push_back(offsets.back() + static_cast<std::int32_t>(n));
      for (index_t l = 0; l < n; ++l)
        positions.push_back(l);
    }
    out.cu_seqlens.push_back(std::move(offsets));
    out.position_ids.push_back(std::move(positions));
  }
  return out;
}

/// pack_sequences' counterpart of unpad_agrees.
bool packing_agrees(benchmark::State& state) {
  const PlainPacking plain = plain_pack(sequence_lengths(), kRowTokens);
  const tbatch::PackedSequences packed = tbatch::pack_sequences(sequence_lengths(), kRowTokens);
  bool same = plain.sequences == packed.sequences;
  for (std::size_t r = 0; same && r < plain.sequences.size(); ++r) {
    const Tensor<std::int32_t>& offsets = packed.cu_seqlens[r];
    const Tensor<index_t>& positions = packed.position_ids[r];
    same = std::equal(plain.cu_seqlens[r].begin(), plain.cu_seqlens[r].end(), offsets.data(),
                      offsets.data() + offsets.numel()) &&
           std::equal(plain.position_ids[r].begin(), plain.position_ids[r].end(), positions.data(),
                      positions.data() + positions.numel());
  }
  if (!same) state.SkipWithError("pack_sequences differs from the plain loop");
  return same;
}

void BM_pack_sequences(benchmark::State& state) {
  if (!packing_agrees(state)) return;
  for (auto _ : state) {
    tbatch::PackedSequences out = tbatch::pack_sequences(sequence_lengths(), kRowTokens);
    benchmark::DoNotOptimize(out.sequences.data());
  }
  state.SetItemsProcessed(state.iterations() * kSequences);
}

void BM_pack_sequences_plain_loop(benchmark::State& state) {
  if (!packing_agrees(state)) return;
  for (auto _ : state) {
    PlainPacking out = plain_pack(sequence_lengths(), kRowTokens);
    benchmark::DoNotOptimize(out.sequences.data());
  }
  state.SetItemsProcessed(state.iterations() * kSequences);
}

void masked_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "L", "D"})->Args({100'000, 8, 16})->Args({1024, 512, 64});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_unpad)->Apply(masked_shapes);
BENCHMARK(BM_unpad_plain_loop)->Apply(masked_shapes);
BENCHMARK(BM_pad_rows)->Apply(masked_shapes);
BENCHMARK(BM_pad_rows_plain_loop)->Apply(masked_shapes);
BENCHMARK(BM_pack_sequences)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pack_sequences_plain_loop)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
