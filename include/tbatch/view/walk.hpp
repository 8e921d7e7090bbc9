#pragma once
// The walk over same-shaped strided views: it drops size-1 dims, orders dims by the
// destination's strides, merges dims that are contiguous together and visits innermost runs.
// This file holds tbatch's only N-d index walk.

#include <algorithm>
#include <array>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "tbatch/base/shape.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/base/tuning.hpp"

namespace tbatch {
namespace detail {

/// A walk over N operands: `sizes` (merged dims; the last one is the run) and each operand's
/// strides for those dims. numel == 0 means there is nothing to visit.
template <std::size_t N>
struct RunPlan {
  SmallVector<index_t, 8> sizes;
  std::array<SmallVector<index_t, 8>, N> strides;
  index_t numel = 0;

  index_t run_length() const { return sizes.back(); }
  index_t inner_stride(std::size_t k) const { return strides[k].back(); }
  /// Operand k's stride between consecutive runs of walk_rows (0 when there is one run).
  index_t row_stride(std::size_t k) const {
    return sizes.size() < 2 ? 0 : strides[k][sizes.size() - 2];
  }
};

/// True when a dim at stride `outer` steps over exactly the `inner_size` elements of the dim
/// inside it (at stride `inner`): the two are contiguous together and merge into one dim.
/// tbatch's one answer to which dims merge (the engine's plans, layout::try_view's chunks).
inline bool merges(index_t outer, index_t inner, index_t inner_size) {
  return outer == inner * inner_size;
}

/// Adds dim d of `shape` to `plan` as its new innermost dim, merged into the last one when the
/// two merge in every operand.
template <std::size_t N, class StrideList>
void append_dim(RunPlan<N>& plan, const Shape& shape,
                const std::array<const StrideList*, N>& strides, std::size_t d) {
  const index_t size = shape[d];
  bool merged = !plan.sizes.empty();
  for (std::size_t k = 0; k < N && merged; ++k)
    merged = merges(plan.strides[k].back(), (*strides[k])[d], size);
  if (merged) {
    plan.sizes.back() *= size;
    for (std::size_t k = 0; k < N; ++k)
      plan.strides[k].back() = (*strides[k])[d];
  } else {
    plan.sizes.push_back(size);
    for (std::size_t k = 0; k < N; ++k)
      plan.strides[k].push_back((*strides[k])[d]);
  }
}

/// The plan of a single element: one run of length 1.
template <std::size_t N>
void finish_plan(RunPlan<N>& plan) {
  if (!plan.sizes.empty()) return;
  plan.sizes.push_back(1);
  for (auto& s : plan.strides)
    s.push_back(0);
}

/// Plans the walk over operands that share `shape`; operand 0 (the destination) decides the
/// visiting order, later operands break its ties and its broadcast (stride-0) dims.
template <std::size_t N, class StrideList = Strides>
RunPlan<N> plan_runs(const Shape& shape, const std::array<const StrideList*, N>& strides) {
  RunPlan<N> plan;
  plan.numel = shape.numel();
  if (plan.numel == 0) return plan;
  SmallVector<std::size_t, 8> dims;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) dims.push_back(d);
  // true when dim a should be visited outside dim b (it has the larger stride).
  auto outer_than = [&](std::size_t a, std::size_t b) {
    for (std::size_t k = 0; k < N; ++k) {
      const index_t sa = std::abs((*strides[k])[a]), sb = std::abs((*strides[k])[b]);
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa > sb;
    }
    return false;
  };
  for (std::size_t i = 1; i < dims.size(); ++i)  // stable insertion sort, outermost first
    for (std::size_t j = i; j > 0 && outer_than(dims[j], dims[j - 1]); --j)
      std::swap(dims[j], dims[j - 1]);
  for (std::size_t d : dims)
    append_dim(plan, shape, strides, d);
  finish_plan(plan);
  return plan;
}

/// plan_runs in the operands' own dim order (no reordering), so that its runs visit elements in
/// index order: cheaper, for callers that only take plans of dense rows (is_dense_rows).
template <std::size_t N, class StrideList = Strides>
RunPlan<N> plan_runs_in_order(const Shape& shape, const std::array<const StrideList*, N>& strides) {
  RunPlan<N> plan;
  plan.numel = shape.numel();
  if (plan.numel == 0) return plan;
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) append_dim(plan, shape, strides, d);
  finish_plan(plan);
  return plan;
}

/// True when `plan` is, in every operand, rows of dense runs each starting at least a run
/// after the previous one (forward, rows not overlapping): at most two planned dims.
template <std::size_t N>
bool is_dense_rows(const RunPlan<N>& plan) {
  if (plan.numel == 0 || plan.sizes.size() > 2) return false;
  const index_t length = plan.run_length();
  for (std::size_t k = 0; k < N; ++k)
    if ((length > 1 && plan.inner_stride(k) != 1) ||
        (plan.sizes.size() == 2 && plan.row_stride(k) < length))
      return false;
  return true;
}

/// Visits `plan` two dims at a time: calls visit(offsets, rows) with each operand's element
/// offset (added to `origin`) of the first of `rows` runs, run r starting r * row_stride(k)
/// further. The dims outside those two are walked as an odometer, the only N-d walk in tbatch;
/// a kernel's loop over the rows (and the run) is its own, inline.
template <std::size_t N, class Visit>
void walk_rows(const RunPlan<N>& plan, std::array<index_t, N> origin, Visit&& visit) {
  if (plan.numel == 0) return;
  if (plan.sizes.size() == 1) {
    visit(origin, index_t(1));
    return;
  }
  const std::size_t outer = plan.sizes.size() - 2;
  const index_t rows = plan.sizes[outer];
  SmallVector<index_t, 8> counter(outer, 0);
  std::array<index_t, N> offsets = origin;
  while (true) {
    visit(offsets, rows);
    std::size_t d = outer;
    while (true) {
      if (d == 0) return;
      --d;
      for (std::size_t k = 0; k < N; ++k)
        offsets[k] += plan.strides[k][d];
      if (++counter[d] < plan.sizes[d]) break;
      for (std::size_t k = 0; k < N; ++k)
        offsets[k] -= plan.strides[k][d] * plan.sizes[d];
      counter[d] = 0;
    }
  }
}

/// Visits every run of `plan`: calls visit(offsets) with each operand's element offset of the
/// run's first element (added to `origin`).
template <std::size_t N, class Visit>
void walk_runs(const RunPlan<N>& plan, std::array<index_t, N> origin, Visit&& visit) {
  std::array<index_t, N> row_stride;
  for (std::size_t k = 0; k < N; ++k)
    row_stride[k] = plan.row_stride(k);
  walk_rows(plan, origin, [&](std::array<index_t, N> at, index_t rows) {
    for (index_t r = 0; r < rows; ++r) {
      visit(static_cast<const std::array<index_t, N>&>(at));
      for (std::size_t k = 0; k < N; ++k)
        at[k] += row_stride[k];
    }
  });
}

/// Where each block of RowBlocks starts in one operand, in elements from its origin: block k at
/// k * step + offsets[k * offsets_stride] * scale. Regular slots (a padded batch's, a dense
/// operand's) have a step and no offsets; a packed batch's rows start at its row offsets
/// (first_idx) times the row stride. Computed as the walk goes, so no table is built per call.
struct BlockStarts {
  static constexpr index_t no_offsets[1] = {0};
  const index_t* offsets = no_offsets;
  index_t offsets_stride = 0, scale = 0, step = 0, base = 0;

  index_t operator()(index_t k) const {
    return base + k * step + offsets[k * offsets_stride] * scale;
  }
  /// Block k at k * step.
  static BlockStarts every(index_t step) { return {no_offsets, 0, 0, step, 0}; }
  /// The blocks from block `first` on: block k of the result is block first + k.
  BlockStarts from(index_t first) const {
    return {offsets + first * offsets_stride, offsets_stride, scale, step, base + first * step};
  }
};

/// The row count of each block: block k has ends[k * stride] - begins[k * stride] rows (a
/// packed batch's row offsets one apart), or counts[k * stride] rows with begins at 0.
struct BlockRows {
  const index_t* ends = BlockStarts::no_offsets;
  const index_t* begins = BlockStarts::no_offsets;
  index_t stride = 0, begins_stride = 0;

  index_t operator()(index_t k) const { return ends[k * stride] - begins[k * begins_stride]; }
  /// counts[k * stride] rows in block k (stride 0: all blocks alike).
  static BlockRows counts(const index_t* counts, index_t stride) {
    return {counts, BlockStarts::no_offsets, stride, 0};
  }
  /// offsets[(k + 1) * stride] - offsets[k * stride] rows in block k.
  static BlockRows between(const index_t* offsets, index_t stride) {
    return {offsets + stride, offsets, stride, stride};
  }
  /// The blocks from block `first` on.
  BlockRows from(index_t first) const {
    return {ends + first * stride, begins + first * begins_stride, stride, begins_stride};
  }
};

/// Blocks of rows over N operands, for elements of different row counts that share a row
/// structure (a batch's (L_i, D) elements): block k is rows(k) rows of `width` values; operand
/// j's block k starts start[j](k) elements from its origin, its rows row[j] apart and its
/// values col[j] apart (0: broadcast).
/// pad_to, when not 0: operand 0's blocks are padded slots, each block's rows following each
/// other and the slot's padding after them up to pad_to elements from the block's start; the
/// kernel writes that padding as 0 (while the slot is in cache).
template <std::size_t N>
struct RowBlocks {
  std::array<BlockStarts, N> start{};
  BlockRows rows{};
  index_t count = 0, width = 0;
  std::array<index_t, N> row{}, col{};
  index_t pad_to = 0;

  /// With pad_to, writes the padding of the slot at `slot` (operand 0's block of `filled` rows)
  /// as 0; without, nothing. Called after the rows, so that each slot is written in address
  /// order (faster for padded exp on small slots: docs/benchmarks.md).
  template <class T>
  void fill_padding(T* slot, index_t filled) const {
    if (pad_to != 0) std::fill(slot + filled * width, slot + pad_to, T{});
  }
  /// True when every operand's blocks are `step` apart and the row counts are counts: the
  /// blocks of a padded batch and of dense operands, not a packed batch's.
  bool regular() const {
    for (std::size_t j = 0; j < N; ++j)
      if (start[j].offsets_stride != 0) return false;
    return rows.begins_stride == 0;
  }
  /// True when each block is one run in every operand: its rows follow each other (row ==
  /// width), or the operand is one broadcast value (row and col 0).
  bool blocks_are_runs() const {
    for (std::size_t j = 0; j < N; ++j)
      if (row[j] != (col[j] == 0 ? 0 : width)) return false;
    return true;
  }
};

/// Calls fn(std::integral_constant<index_t, W>{}) with W = width when width is `unit` times one of
/// the multiples `first, rest...` (rows of one or two vector registers, say), so that a blocks
/// kernel's loops along a row have a constant length; with W = 0 otherwise.
template <index_t unit, index_t first, index_t... rest, class Fn>
void with_constant_width(index_t width, Fn&& fn) {
  if (width == unit * first) return fn(std::integral_constant<index_t, unit * first>{});
  if constexpr (sizeof...(rest) == 0)
    fn(std::integral_constant<index_t, 0>{});
  else
    with_constant_width<unit, rest...>(width, fn);
}

/// Prefetches a block of `rows` rows of `width` values of `value_bytes` each (`row` apart, values
/// `col` apart) from `first`: the first `slot_lines` cache lines of its slot when the block is
/// dense, the first line of each row otherwise. The dense count is fixed for the call: a count
/// that followed each block's rows cost a mispredicted branch per block (docs/benchmarks.md).
/// Always inlined, as the callback below: GCC takes a function of prefetches alone for one
/// without effects and deletes its calls.
[[gnu::always_inline]] inline void prefetch_block(const char* first, index_t rows, index_t width,
                                                  index_t row, index_t col, index_t value_bytes,
                                                  index_t slot_lines) {
  if (col == 1 && row == width) {
    for (index_t line = 0; line < slot_lines; ++line)
      __builtin_prefetch(first + line * line_bytes);
    return;
  }
  for (index_t r = 0; r < (row == 0 ? std::min<index_t>(rows, 1) : rows); ++r)
    __builtin_prefetch(first + r * row * value_bytes);
}

/// walk_blocks' ahead callback that prefetches a block's inputs (operands 1 to N - 1) where the
/// hardware does not: operands of regular slots of up to prefetch_slot_max_bytes with room for
/// more rows than a block has (a padded batch of small elements), whose short runs with gaps
/// the hardware prefetcher does not follow. Longer slots are runs it follows, and prefetching
/// them as well was slower (docs/benchmarks.md, "Prefetching padded slots").
template <std::size_t N>
struct InputPrefetch {
  const RowBlocks<N>* blocks;
  std::array<const char*, N> origin{};
  std::array<index_t, N> value_bytes{};
  std::array<bool, N> gapped{};
  std::array<index_t, N> slot_lines{};  // of a gapped slot, prefetched from its start

  bool active() const {
    for (bool g : gapped)
      if (g) return true;
    return false;
  }
  [[gnu::always_inline]] void operator()(const std::array<index_t, N>& at, index_t rows) const {
    for (std::size_t j = 1; j < N; ++j)
      if (gapped[j])
        prefetch_block(origin[j] + at[j] * value_bytes[j], rows, blocks->width, blocks->row[j],
                       blocks->col[j], value_bytes[j], slot_lines[j]);
  }
};

/// The InputPrefetch of `blocks` whose input operands start at `inputs`.
template <std::size_t N, class... In>
InputPrefetch<N> prefetch_inputs(const RowBlocks<N>& blocks, const In*... inputs) {
  static_assert(sizeof...(In) + 1 == N, "prefetch_inputs: one origin per input operand");
  InputPrefetch<N> prefetch{
      &blocks, {nullptr, reinterpret_cast<const char*>(inputs)...}, {0, index_t(sizeof(In))...}};
  for (std::size_t j = 1; j < N; ++j) {
    const BlockStarts& start = blocks.start[j];
    const index_t slot_bytes = start.step * prefetch.value_bytes[j];
    prefetch.gapped[j] = start.offsets_stride == 0 && blocks.row[j] != 0 &&
                         start.step > blocks.row[j] && slot_bytes <= prefetch_slot_max_bytes;
    prefetch.slot_lines[j] =
        std::min((slot_bytes + line_bytes - 1) / line_bytes, prefetch_slot_max_lines);
  }
  return prefetch;
}

/// walk_blocks over blocks that start `step` apart in every operand and whose row counts are
/// counts (a padded batch's slots, a dense operand's rows): the offsets and the count's address
/// advance by a step per block instead of being computed from the block's index, which took
/// 1.2-1.3x the time of a padded sum over 1e5 elements of mostly one row (docs/benchmarks.md).
template <std::size_t N, class Visit, class Ahead>
void walk_regular_blocks(const RowBlocks<N>& blocks, Visit&& visit, Ahead&& ahead) {
  std::array<index_t, N> at, later, step;
  for (std::size_t j = 0; j < N; ++j) {
    step[j] = blocks.start[j].step;
    at[j] = blocks.start[j](0);
    later[j] = at[j] + block_lookahead * step[j];
  }
  const BlockRows& rows_of = blocks.rows;
  const index_t begin = rows_of.begins[0];
  const index_t* end = rows_of.ends;
  for (index_t k = 0; k < blocks.count; ++k, end += rows_of.stride) {
    if (k + block_lookahead < blocks.count) {
      ahead(static_cast<const std::array<index_t, N>&>(later),
            end[block_lookahead * rows_of.stride] - begin);
      for (std::size_t j = 0; j < N; ++j)
        later[j] += step[j];
    }
    const index_t rows = *end - begin;
    if (rows != 0 || blocks.pad_to != 0)
      visit(static_cast<const std::array<index_t, N>&>(at), rows);
    for (std::size_t j = 0; j < N; ++j)
      at[j] += step[j];
  }
}

/// Visits each non-empty block of `blocks` as walk_rows visits a plan's rows: calls visit(offsets,
/// rows) with each operand's offset of the block's first row; the kernel's loop over the rows
/// (row[j] apart) and along them is its own, inline. With pad_to, empty blocks are visited too
/// (their padding is the whole slot). Before block k, ahead(offsets, rows) is called with block
/// k + block_lookahead's (when there is one): an active InputPrefetch, say.
template <std::size_t N, class Visit, class Ahead>
void walk_blocks(const RowBlocks<N>& blocks, Visit&& visit, Ahead&& ahead) {
  if (blocks.width == 0 && blocks.pad_to == 0) return;
  if (blocks.regular()) return walk_regular_blocks(blocks, visit, ahead);
  const auto offsets = [&](index_t k) {
    std::array<index_t, N> at;
    for (std::size_t j = 0; j < N; ++j)
      at[j] = blocks.start[j](k);
    return at;
  };
  for (index_t k = 0; k < blocks.count; ++k) {
    if (k + block_lookahead < blocks.count)
      ahead(offsets(k + block_lookahead), blocks.rows(k + block_lookahead));
    const index_t rows = blocks.rows(k);
    if (rows == 0 && blocks.pad_to == 0) continue;
    visit(offsets(k), rows);
  }
}
template <std::size_t N, class Visit>
void walk_blocks(const RowBlocks<N>& blocks, Visit&& visit) {
  walk_blocks(blocks, visit, [](const std::array<index_t, N>&, index_t) {});
}
/// walk_blocks with `prefetch` when it is active, and without a callback otherwise: the kernel's
/// walk is then the plain one (a second instance of it, not a test per block).
template <std::size_t N, class Visit>
void walk_blocks_prefetching(const RowBlocks<N>& blocks, Visit&& visit,
                             const InputPrefetch<N>& prefetch) {
  if (prefetch.active())
    walk_blocks(blocks, visit, prefetch);
  else
    walk_blocks(blocks, visit);
}

}  // namespace detail
}  // namespace tbatch
