// sequences: variable-length sequences in a padded batch, smoothed inside their own borders.
//
// Four sequences of feature vectors (length L_i, 2 features) are padded into one (4, 8, 2)
// batch with a mask. Each sequence is then reflect-padded by 2 steps at both ends *per
// element*: the border mirrors the sequence's own values, never the batch padding after a
// short sequence. A 5-step moving average over each reflect-padded sequence (sliding windows
// from unfold) gives a smoothed sequence of the original length, and the ragged-aware scatter
// writes it back into the rows of the padded batch: every (element, step) update is checked
// against that element's own length, so padding cannot be overwritten. Everything is checked
// against plain loops over the original sequences; returns 1 on any mismatch.

#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <vector>

#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>  // Tensor::flat(), an Eigen map

using tbatch::index_t;
using tbatch::PaddedBatch;
using tbatch::PadMode;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

// The source position reflect padding reads for position p (may be outside [0, n)); the edge
// is not repeated: -1 -> 1, -2 -> 2, n -> n - 2.
index_t reflect_index(index_t p, index_t n) {
  if (p < 0) return -p;
  if (p >= n) return 2 * (n - 1) - p;
  return p;
}

}  // namespace

int main() {
  constexpr index_t features = 2, border = 2, window = 2 * border + 1;
  constexpr float padding_value = -1.0f;
  const std::vector<index_t> lengths{5, 3, 8, 4};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(0.0f, 10.0f);
  std::vector<Tensor<float>> sequences;
  for (index_t n : lengths) {
    Tensor<float> s(Shape{n, features});
    for (float& v : s.flat())
      v = std::round(unit(rng));
    sequences.push_back(s);
  }

  // Pad to the longest sequence; the mask tells steps from padding.
  const PaddedBatch<float> batch = tbatch::list_to_padded(sequences, padding_value);
  const Tensor<bool> mask = batch.mask();  // (4, 8)
  std::cout << "padded batch " << batch.data().shape() << ", mask " << mask.shape() << "\n";
  bool ok = batch.data().shape() == Shape{4, 8, features};
  for (index_t i = 0; i < batch.batch_size(); ++i)
    for (index_t t = 0; t < batch.data().size(1); ++t) {
      ok = ok && mask(i, t) == (t < lengths[i]);
      for (index_t d = 0; d < features; ++d)
        ok = ok && batch.data()(i, t, d) == (t < lengths[i] ? sequences[i](t, d) : padding_value);
    }

  // Reflect-pad every sequence by `border` steps at both ends. The pad list counts from the
  // element's last dim: (0, 0) for the features, (2, 2) for the steps.
  const PaddedBatch<float> reflected = tbatch::pad(batch, {0, 0, border, border}, PadMode::reflect);
  std::cout << "reflect-padded " << reflected.data().shape() << ", lengths now" << std::flush;
  for (index_t i = 0; i < reflected.batch_size(); ++i) {
    std::printf(" %lld", static_cast<long long>(reflected.shape_per_tensor()(i, 0)));
    const Tensor<float> e = reflected.element(i);
    ok = ok && e.size(0) == lengths[i] + 2 * border;
    for (index_t t = 0; t < e.size(0); ++t)
      for (index_t d = 0; d < features; ++d)
        ok = ok && e(t, d) == sequences[i](reflect_index(t - border, lengths[i]), d);
    // The same as padding the sequence on its own.
    ok =
        ok && tbatch::equal(e, tbatch::pad(sequences[i], {0, 0, border, border}, PadMode::reflect));
  }
  std::printf("\n");

  // 5-step moving average: the windows of each reflect-padded sequence as a view
  // (L, features, window) by unfold, averaged; then one update per (sequence, step).
  const index_t total = std::accumulate(lengths.begin(), lengths.end(), index_t(0));
  Tensor<index_t> element_index(Shape{total}), step_index(Shape{total});
  Tensor<float> smoothed(Shape{total, features});
  index_t k = 0;
  for (index_t i = 0; i < reflected.batch_size(); ++i) {
    // (steps, features, window): each step's window, a view; its mean is the moving average.
    const Tensor<float> windows = reflected.element(i).unfold(0, window, 1);
    const index_t steps = windows.size(0);
    tbatch::copy(tbatch::mean(windows, -1).view(), smoothed.narrow(0, k, steps).view());
    tbatch::fill(element_index.narrow(0, k, steps).view(), i);
    tbatch::copy(tbatch::arange<index_t>(steps).view(), step_index.narrow(0, k, steps).view());
    k += steps;
  }

  // Scatter the smoothed steps back into the original padded batch (a new batch; the padding
  // is copied unchanged).
  const PaddedBatch<float> result = tbatch::scatter(batch, element_index, step_index, smoothed);
  std::printf("\nseq  len  feature 0: original -> smoothed\n");
  for (index_t i = 0; i < result.batch_size(); ++i) {
    std::printf("%3lld  %3lld ", static_cast<long long>(i), static_cast<long long>(lengths[i]));
    for (index_t t = 0; t < result.data().size(1); ++t) {
      for (index_t d = 0; d < features; ++d) {
        const float got = result.data()(i, t, d);
        if (t >= lengths[i]) {
          ok = ok && got == padding_value;  // padding untouched
          continue;
        }
        float sum = 0.0f;  // the moving average straight from the sequence
        for (index_t j = -border; j <= border; ++j)
          sum += sequences[i](reflect_index(t + j, lengths[i]), d);
        ok = ok && std::abs(got - sum / float(window)) < 1e-5f;
      }
      if (t < lengths[i])
        std::printf(" %2.0f->%4.1f", batch.data()(i, t, 0), result.data()(i, t, 0));
    }
    std::printf("\n");
  }
  // The input batch is unchanged: scatter returned a new one.
  ok = ok && tbatch::equal(batch.data(), tbatch::list_to_padded(sequences, padding_value).data());

  // A step past a sequence's end is an IndexError even where the padded slot has room.
  bool rejected = false;
  try {
    tbatch::scatter(batch, Tensor<index_t>({1}, {1}), Tensor<index_t>({1}, {lengths[1]}),
                    Tensor<float>(Shape{1, features}));
  } catch (const tbatch::IndexError& e) {
    rejected = true;
    std::printf("\nwriting step %lld of sequence 1: %s\n", static_cast<long long>(lengths[1]),
                e.what());
  }
  ok = ok && rejected;

  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
