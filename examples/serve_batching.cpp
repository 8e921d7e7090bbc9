// Serving requests of different lengths without padding each to the longest: 40 requests of
// U[1, 300] tokens (16-float embeddings, one query each) are packed into rows of at most 512
// tokens. Each row goes on as flash-attention's varlen kernels take it: the rows of its tokens,
// int32 cu_seqlens and max_seqlen. Attention pooling runs on every sequence of the row (scores,
// the softmax along each sequence, the weighted sum of its tokens) and each result is scattered
// back to its request. Every request's result is checked against a loop over that request
// alone; the program exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "tbatch/tbatch.hpp"

using namespace tbatch;

namespace {

constexpr index_t kRequests = 40, kLongest = 300, kDim = 16, kRowTokens = 512;

bool close(double got, double want) {
  return std::abs(got - want) <= 1e-5 * (1 + std::abs(want));
}

Tensor<float> random_normal(std::mt19937& rng, const Shape& shape) {
  std::normal_distribution<float> normal(0.f, 1.f);
  Tensor<float> t(shape);
  for (index_t k = 0; k < t.numel(); ++k)
    t.data()[k] = normal(rng);
  return t;
}

/// The varlen kernel's side: `rows` (tokens, D) holds the sequences cu_seqlens delimits and
/// `queries` (B, D) one query per sequence. Each sequence's tokens serve as keys and values:
/// softmax_l(token_l . query / sqrt(D)) weighs the tokens. Returns (B, D).
Tensor<float> attention_pooling(const Tensor<float>& rows, const Tensor<std::int32_t>& cu_seqlens,
                                const Tensor<float>& queries) {
  const PackedBatch<float> tokens = packed_from_cu_seqlens(rows, cu_seqlens);  // a view
  const float scale = 1.f / std::sqrt(static_cast<float>(rows.size(1)));
  // (L_i, D) x (D, 1) per sequence: one score per token.
  const PackedBatch<float> scores = bmm(tokens, queries.unsqueeze(-1)) * scale;
  const PackedBatch<float> weights = softmax(scores, 0);  // along each sequence
  return bmm(transpose(weights), tokens).squeeze(1);      // (B, 1, D) -> (B, D)
}

/// The same for one request, in double: the reference.
std::vector<double> pooled_by_loop(const Tensor<float>& tokens, const Tensor<float>& query) {
  const index_t n = tokens.size(0);
  std::vector<double> score(static_cast<std::size_t>(n)), out(kDim, 0.0);
  double top = -INFINITY, total = 0;
  for (index_t l = 0; l < n; ++l) {
    double dot = 0;
    for (index_t c = 0; c < kDim; ++c)
      dot += tokens(l, c) * query(c);
    score[static_cast<std::size_t>(l)] = dot / std::sqrt(double(kDim));
    top = std::max(top, score[static_cast<std::size_t>(l)]);
  }
  for (double& s : score)
    total += (s = std::exp(s - top));
  for (index_t l = 0; l < n; ++l)
    for (index_t c = 0; c < kDim; ++c)
      out[static_cast<std::size_t>(c)] += score[static_cast<std::size_t>(l)] / total * tokens(l, c);
  return out;
}

}  // namespace

int main() {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<index_t> length_of(1, kLongest);
  std::vector<index_t> lengths;
  std::vector<Tensor<float>> requests;  // (L_i, D) token embeddings
  for (index_t i = 0; i < kRequests; ++i) {
    lengths.push_back(length_of(rng));
    requests.push_back(random_normal(rng, Shape{lengths.back(), kDim}));
  }
  const Tensor<float> queries = random_normal(rng, Shape{kRequests, kDim});

  const PackedSequences packing = pack_sequences(lengths, kRowTokens);
  std::printf("%lld requests, %lld tokens, packed into %lld rows of at most %lld tokens\n",
              static_cast<long long>(kRequests), static_cast<long long>(packing.tokens),
              static_cast<long long>(packing.rows()), static_cast<long long>(kRowTokens));
  std::printf("padding: %lld tokens, against %lld with one request per row (%lld saved)\n",
              static_cast<long long>(packing.padding),
              static_cast<long long>(packing.padding_one_per_row),
              static_cast<long long>(packing.padding_one_per_row - packing.padding));

  Tensor<float> pooled = Tensor<float>::zeros(Shape{kRequests, kDim});
  for (index_t r = 0; r < packing.rows(); ++r) {
    const std::vector<index_t>& members = packing.sequences[static_cast<std::size_t>(r)];
    const Tensor<index_t> ids(Shape{static_cast<index_t>(members.size())}, members);
    std::vector<Tensor<float>> member_tokens;
    for (index_t i : members)
      member_tokens.push_back(requests[static_cast<std::size_t>(i)]);
    // What the kernel is handed: the row's tokens one after the other and their offsets.
    const Tensor<float> rows = cat(member_tokens, 0);
    const Tensor<std::int32_t>& offsets = packing.cu_seqlens[static_cast<std::size_t>(r)];
    const index_t longest = max_seqlen(packed_from_cu_seqlens(rows, offsets));
    std::printf("row %2lld: %zu requests, %3lld tokens, max_seqlen %3lld\n",
                static_cast<long long>(r), members.size(), static_cast<long long>(rows.size(0)),
                static_cast<long long>(longest));
    // Row j of the kernel's result belongs to request members[j].
    scatter_(pooled, ids, attention_pooling(rows, offsets, queries.index({ids})));
  }

  int bad = 0;
  for (index_t i = 0; i < kRequests; ++i) {
    const std::vector<double> want =
        pooled_by_loop(requests[static_cast<std::size_t>(i)], queries.select(0, i));
    for (index_t c = 0; c < kDim; ++c)
      bad += !close(pooled(i, c), want[static_cast<std::size_t>(c)]);
  }
  if (bad != 0) {
    std::printf("%d values differ from the per-request loop\n", bad);
    return 1;
  }
  std::printf("every request's result matches the per-request loop\n");
  return 0;
}
