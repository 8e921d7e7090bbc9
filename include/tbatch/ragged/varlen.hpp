#pragma once
// The packed-sequence conventions of attention kernels and inference servers: flash-attention's
// varlen API and vLLM (rows + cu_seqlens, int32 (B + 1) with a leading 0, and max_seqlen),
// unpadding by a mask (flash-attention's unpad_input / pad_input), several short sequences
// packed into rows of a token budget, and Triton's ragged-batch inputs. docs/interop.md maps the
// names.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/batch/conversions_common.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/math/elementwise.hpp"
#include "tbatch/math/factories.hpp"
#include "tbatch/math/masked_select.hpp"
#include "tbatch/math/reductions.hpp"
#include "tbatch/ops/scatter_dense.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/copy.hpp"

namespace tbatch {
namespace detail {

/// `value` as int32; ValueError naming `function` and `what` past 2^31 - 1.
TBATCH_INLINE std::int32_t to_int32(index_t value, const char* function, const char* what);

/// The (B + 1) int32 offsets of `counts` (B): get_first_idx's running sum, each checked to fit.
TBATCH_INLINE Tensor<std::int32_t> int32_offsets(const Tensor<index_t>& counts,
                                                 const char* function);

}  // namespace detail

/// flash-attention's cu_seqlens of a packed batch: int32 (B + 1), 0 then the running sum of the
/// elements' row counts (first_idx as int32). ValueError when the rows pass 2^31 - 1.
template <Element T>
Tensor<std::int32_t> cu_seqlens(const PackedBatch<T>& batch) {
  const index_t* first = batch.first_idx().data();
  Tensor<std::int32_t> out = Tensor<std::int32_t>::empty(Shape{batch.batch_size() + 1});
  for (index_t i = 0; i <= batch.batch_size(); ++i)  // a conversion, checked value by value
    out.data()[i] = detail::to_int32(first[i], "cu_seqlens", "the row count");
  return out;
}

/// The most rows any element of the batch has (0 for an empty batch): flash-attention's
/// max_seqlen.
template <Element T>
index_t max_seqlen(const PackedBatch<T>& batch) {
  const index_t* first = batch.first_idx().data();
  index_t longest = 0;
  for (index_t i = 0; i < batch.batch_size(); ++i)
    longest = std::max(longest, first[i + 1] - first[i]);
  return longest;
}

/// The packed batch of sequences (L_i, D) whose rows `rows` (total, D) cu_seqlens (int32, B + 1)
/// delimits: a view of rows, sharing its storage. ShapeError unless rows is 2-d and cu_seqlens
/// 1-d with at least one entry; ValueError unless cu_seqlens starts at 0, never decreases and
/// ends at rows.size(0) (naming the first entry that breaks it).
template <Element T>
PackedBatch<T> packed_from_cu_seqlens(const Tensor<T>& rows,
                                      const Tensor<std::int32_t>& cu_seqlens) {
  const char* function = "packed_from_cu_seqlens";
  if (rows.dim() != 2)
    detail::fail<ShapeError>(function,
                             {"rows has shape ", rows.shape(), "; expected (total rows, D)"});
  if (cu_seqlens.dim() != 1 || cu_seqlens.size(0) < 1)
    detail::fail<ShapeError>(function, {"cu_seqlens has shape ", cu_seqlens.shape(),
                                        "; expected (B + 1) int32 offsets starting at 0"});
  const index_t batch = cu_seqlens.size(0) - 1;
  const Tensor<std::int32_t> offsets = cu_seqlens.contiguous();
  Tensor<index_t> first_idx = Tensor<index_t>::empty(Shape{batch + 1});
  Tensor<index_t> lengths = Tensor<index_t>::empty(Shape{batch, 1});
  for (index_t i = 0; i <= batch; ++i)
    first_idx.data()[i] = offsets.data()[i];
  detail::check_first_idx(function, first_idx.data(), batch, [](index_t) {});
  for (index_t i = 0; i < batch; ++i)
    lengths.data()[i] = first_idx.data()[i + 1] - first_idx.data()[i];
  if (first_idx.data()[batch] != rows.size(0))
    detail::fail<ValueError>(function, {"cu_seqlens[", batch, "] = ", first_idx.data()[batch],
                                        " but rows has ", rows.size(0), " rows"});
  return PackedBatch<T>(rows, std::move(lengths), std::move(first_idx), detail::ValidMetadata{});
}

/// unpad's result (flash-attention's unpad_input): the kept positions' rows in (b, l) order,
/// their flat positions b * L + l, and the per-sequence cu_seqlens and max_seqlen.
template <class T>
struct Unpadded {
  Tensor<T> rows;                   // (kept, ...): padded[b, l] for each kept (b, l)
  Tensor<index_t> indices;          // (kept): b * L + l
  Tensor<std::int32_t> cu_seqlens;  // (B + 1): 0, then the running count of kept positions
  index_t max_seqlen = 0;           // the most positions one sequence keeps
};

/// The positions of `padded` (B, L, ...) where `mask` (B, L, bool) holds, as rows: any
/// positions, not only a prefix of each sequence (flash-attention's unpad_input).
/// ShapeError unless padded has at least 2 dims and mask is (B, L).
template <Element T, class M>
Unpadded<T> unpad(const Tensor<T>& padded, const Tensor<M>& mask) {
  detail::require_bool_mask<M>();
  const char* function = "unpad";
  if (padded.dim() < 2 || mask.dim() != 2 || mask.size(0) != padded.size(0) ||
      mask.size(1) != padded.size(1))
    detail::fail<ShapeError>(function,
                             {"padded has shape ", padded.shape(), " and mask ", mask.shape(),
                              "; expected padded (B, L, ...) and mask (B, L)"});
  const index_t batch = padded.size(0), length = padded.size(1);
  Unpadded<T> out;
  // The kept positions b * L + l in order, and each sequence's count: the engine's selection
  // and reduction on the mask.
  out.indices = masked_select(arange<index_t>(batch * length).reshape({batch, length}), mask);
  const Tensor<index_t> counts = sum(mask, 1);
  out.cu_seqlens = detail::int32_offsets(counts, function);
  out.max_seqlen = batch == 0 ? 0 : amax(counts).item();
  // The rows: padded viewed as a batch of B * L positions, the kept ones copied once each.
  std::vector<index_t> flat{batch * length}, kept{out.indices.size(0)};
  for (index_t d = 2; d < padded.dim(); ++d) {
    flat.push_back(padded.size(d));
    kept.push_back(padded.size(d));
  }
  if (padded.dim() == 2) flat.push_back(1);  // positions of one value: a last dim of 1
  out.rows = detail::packed_selection(ExactBatch<T>(padded.reshape(flat)), out.indices)
                 .data()
                 .reshape(kept);
  return out;
}

/// unpad's inverse (flash-attention's pad_input): a (batch, length, ...) tensor holding row k
/// of `rows` at flat position indices[k] = b * length + l, zeros elsewhere. IndexError for an
/// index outside [0, batch * length), ValueError for an index given twice (naming both),
/// ShapeError unless rows and indices have as many entries.
template <Element T>
Tensor<T> pad_rows(const Tensor<T>& rows, const Tensor<index_t>& indices, index_t batch,
                   index_t length) {
  const char* function = "pad_rows";
  if (batch < 0 || length < 0)
    detail::fail<ValueError>(function,
                             {"batch ", batch, " and length ", length, " must not be negative"});
  if (rows.dim() < 1 || indices.dim() != 1 || indices.size(0) != rows.size(0))
    detail::fail<ShapeError>(function, {"rows has shape ", rows.shape(), " and indices ",
                                        indices.shape(), "; expected one index per row"});
  const index_t slots = batch * length;
  const Tensor<index_t> at = indices.contiguous();
  std::vector<index_t> owner(static_cast<std::size_t>(slots), -1);
  for (index_t k = 0; k < at.size(0); ++k) {
    const index_t p = at.data()[k];
    if (p < 0 || p >= slots)
      detail::fail<IndexError>(function, {"indices[", k, "] is ", p, "; expected 0 to ", slots - 1,
                                          " (batch ", batch, " x length ", length, ")"});
    index_t& first = owner[static_cast<std::size_t>(p)];
    if (first >= 0)
      detail::fail<ValueError>(function, {"indices[", first, "] and indices[", k, "] are both ", p,
                                          "; each position takes one row"});
    first = k;
  }
  std::vector<index_t> sizes{slots};
  for (index_t d = 1; d < rows.dim(); ++d)
    sizes.push_back(rows.size(d));
  Tensor<T> out = Tensor<T>::zeros(Shape(sizes));
  // Row k lands whole at position at[k]: the row scatter along dim 0 (Paddle's scatter).
  detail::paddle_scatter_into(function, out, at, rows, /*overwrite=*/true);
  sizes[0] = length;
  sizes.insert(sizes.begin(), batch);
  return out.reshape(sizes);
}

/// pack_sequences' result: rows of at most max_tokens tokens, each holding whole sequences.
struct PackedSequences {
  std::vector<std::vector<index_t>> sequences;   // row r: its sequences, in placement order
  std::vector<Tensor<std::int32_t>> cu_seqlens;  // row r: 0, then the running lengths
  std::vector<Tensor<index_t>> position_ids;     // row r: 0..L-1 for each of its sequences
  index_t tokens = 0;                            // every sequence's tokens
  index_t padding_one_per_row = 0;               // B * longest - tokens
  index_t padding = 0;                           // rows * longest row - tokens

  index_t rows() const { return static_cast<index_t>(sequences.size()); }
};

/// Bins sequences of `lengths` into rows of at most `max_tokens` tokens, first-fit decreasing
/// (longest first, ties by index; each into the first row with room): deterministic. Reports
/// the padding of rows padded to the longest row against one sequence per row padded to the
/// longest sequence. ValueError for max_tokens below 1, a negative length or one longer than
/// max_tokens (naming the sequence).
TBATCH_INLINE PackedSequences pack_sequences(const std::vector<index_t>& lengths,
                                             index_t max_tokens);

/// Triton's ragged-batch inputs of a packed batch: per element its count of values
/// (BATCH_ELEMENT_COUNT), their running sum (BATCH_ACCUMULATED_ELEMENT_COUNT) and the same with a
/// leading 0 (..._WITH_ZERO), all int32, and the largest count (BATCH_MAX_ELEMENT_COUNT_AS_SHAPE).
struct TritonBatchInputs {
  Tensor<std::int32_t> element_count;
  Tensor<std::int32_t> accumulated_element_count;
  Tensor<std::int32_t> accumulated_element_count_with_zero;
  index_t max_element_count = 0;
};

/// TritonBatchInputs of `batch`. ValueError when a count or the total passes 2^31 - 1.
template <Element T>
TritonBatchInputs triton_batch_inputs(const PackedBatch<T>& batch) {
  const char* function = "triton_batch_inputs";
  const index_t count = batch.batch_size(), width = batch.last_dim();
  const index_t* first = batch.first_idx().data();
  std::vector<index_t> values(static_cast<std::size_t>(count));
  TritonBatchInputs out;
  out.element_count = Tensor<std::int32_t>::empty(Shape{count});
  for (index_t i = 0; i < count; ++i) {
    values[static_cast<std::size_t>(i)] = (first[i + 1] - first[i]) * width;
    out.element_count.data()[i] =
        detail::to_int32(values[static_cast<std::size_t>(i)], function, "an element's count");
    out.max_element_count = std::max(out.max_element_count, values[static_cast<std::size_t>(i)]);
  }
  out.accumulated_element_count_with_zero =
      detail::int32_offsets(Tensor<index_t>(Shape{count}, values), function);
  out.accumulated_element_count = out.accumulated_element_count_with_zero.narrow(0, 1, count);
  return out;
}

#if TBATCH_DEFINITIONS

TBATCH_INLINE std::int32_t detail::to_int32(index_t value, const char* function, const char* what) {
  if (value > std::numeric_limits<std::int32_t>::max())
    fail<ValueError>(function, {what, " is ", value,
                                ", past int32's 2147483647: the convention's offsets are int32"});
  return static_cast<std::int32_t>(value);
}

TBATCH_INLINE Tensor<std::int32_t> detail::int32_offsets(const Tensor<index_t>& counts,
                                                         const char* function) {
  const Tensor<index_t> first = get_first_idx(counts);
  Tensor<std::int32_t> out = Tensor<std::int32_t>::empty(first.shape());
  for (index_t i = 0; i < first.numel(); ++i)
    out.data()[i] = to_int32(first.data()[i], function, "the running total");
  return out;
}

TBATCH_INLINE PackedSequences pack_sequences(const std::vector<index_t>& lengths,
                                             index_t max_tokens) {
  const char* function = "pack_sequences";
  if (max_tokens < 1)
    detail::fail<ValueError>(function, {"max_tokens is ", max_tokens, "; expected at least 1"});
  index_t longest = 0;
  PackedSequences out;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 0 || lengths[i] > max_tokens)
      detail::fail<ValueError>(function, {"sequence ", i, " has length ", lengths[i],
                                          "; expected 0 to max_tokens = ", max_tokens});
    longest = std::max(longest, lengths[i]);
    out.tokens += lengths[i];
  }
  std::vector<index_t> order(lengths.size());
  std::iota(order.begin(), order.end(), index_t(0));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return lengths[static_cast<std::size_t>(a)] > lengths[static_cast<std::size_t>(b)];
  });
  // First fit in O(log rows): a tree over the rows (at most one per sequence) holding, per
  // node, the most room left in its rows; a row not opened yet has max_tokens.
  std::size_t leaves = 1;
  while (leaves < lengths.size())
    leaves *= 2;
  std::vector<index_t> room(2 * leaves, max_tokens);
  std::vector<index_t> used;  // tokens per opened row
  for (index_t s : order) {
    const index_t n = lengths[static_cast<std::size_t>(s)];
    std::size_t node = 1;
    while (node < leaves)
      node = room[2 * node] >= n ? 2 * node : 2 * node + 1;
    const std::size_t r = node - leaves;
    if (r == used.size()) {
      used.push_back(0);
      out.sequences.emplace_back();
    }
    used[r] += n;
    out.sequences[r].push_back(s);
    room[node] = max_tokens - used[r];
    for (node /= 2; node >= 1; node /= 2)
      room[node] = std::max(room[2 * node], room[2 * node + 1]);
  }
  index_t longest_row = 0;
  for (std::size_t r = 0; r < used.size(); ++r) {
    longest_row = std::max(longest_row, used[r]);
    std::vector<index_t> counts;
    for (index_t s : out.sequences[r])
      counts.push_back(lengths[static_cast<std::size_t>(s)]);
    out.cu_seqlens.push_back(detail::int32_offsets(
        Tensor<index_t>(Shape{static_cast<index_t>(counts.size())}, counts), function));
    Tensor<index_t> positions = Tensor<index_t>::empty(Shape{used[r]});
    index_t* p = positions.data();
    for (index_t n : counts)
      for (index_t l = 0; l < n; ++l)
        *p++ = l;
    out.position_ids.push_back(std::move(positions));
  }
  out.padding_one_per_row = static_cast<index_t>(lengths.size()) * longest - out.tokens;
  out.padding = out.rows() * longest_row - out.tokens;
  return out;
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
