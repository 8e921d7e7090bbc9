#pragma once
// The plan of space_to_batch_nd / batch_to_space_nd: the arguments validated and, per spatial
// dim, the runs of block offsets that see the same range of valid cells (see space_to_batch.hpp
// for the method); and the kernels' entry points on type-erased views.

#include <array>
#include <ostream>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <algorithm>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#endif

namespace tbatch::detail {

/// Block offsets k in [k_start, k_start + k_count) of one spatial dim that all see the output
/// cells o in [o_start, o_start + o_count) as valid (their spatial coordinate is inside the data).
struct BlockRun {
  index_t k_start = 0, k_count = 0, o_start = 0, o_count = 0;
};

/// One spatial dim of the correspondence spatial coordinate c = o * block + k - start between a
/// spatial view (c in [0, size)) and a blocked view (o in [0, blocks), k in [0, block)).
struct BlockDim {
  index_t size = 0, start = 0, block = 1, blocks = 0;
  std::vector<BlockRun> runs;
};

/// The runs of block offsets of one spatial dim. Offset k sees o valid when
/// start <= o * block + k < start + size, i.e. ceil((start - k) / block) <= o <
/// ceil((start + size - k) / block). Writing start = q0 * block + r0, the lower bound is q0 + 1
/// for k < r0 and q0 for k >= r0; the upper bound likewise with end = q1 * block + r1. So the
/// cuts {r0, r1} split [0, block) into at most three runs. Requires start + size <= blocks * block.
TBATCH_INLINE std::vector<BlockRun> block_runs(index_t size, index_t start, index_t block,
                                               index_t blocks);

/// Everything space_to_batch_nd and batch_to_space_nd need, validated: the spatial side
/// [batch, sizes..., remaining...], the blocked side [batch * prod(block), blocks...,
/// remaining...], and per spatial dim the runs of block offsets.
struct BlockPlan {
  Shape spatial_shape;
  Shape blocked_shape;
  std::vector<index_t> block_and_batch;  // block_shape..., batch: the blocked side's dim 0 split
  std::vector<BlockDim> dims;
};

/// "[a, b]" for a start/end pair in messages.
struct PairText {
  const std::array<index_t, 2>& pair;
  friend std::ostream& operator<<(std::ostream& out, const PairText& p) {
    return out << '[' << p.pair[0] << ", " << p.pair[1] << ']';
  }
};

/// Checks the arguments both directions share (TF's checks): one [start, end] pair of `pairs`
/// per block_shape entry, block_shape entries >= 1 with a product that fits index_t, input
/// rank >= 1 + M, pairs non-negative. Returns prod(block_shape).
TBATCH_INLINE index_t check_block_arguments(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& pairs,
                                            const char* pairs_name);

/// Validates space_to_batch_nd's arguments for an input of `input_shape` and plans it.
TBATCH_INLINE BlockPlan plan_space_to_batch(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& paddings);

/// Validates batch_to_space_nd's arguments for an input of `input_shape` and plans it.
TBATCH_INLINE BlockPlan plan_batch_to_space(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& crops);

/// Row-major block offsets of linear offset index `linear` (the last block dim fastest).
TBATCH_INLINE std::vector<index_t> block_offsets(index_t linear,
                                                 const std::vector<index_t>& block_shape);

/// Cells o >= 0 with o * block + k < size: the valid extent block offset k sees of a spatial
/// extent `size` that starts at 0.
TBATCH_INLINE index_t blocked_extent(index_t size, index_t k, index_t block);

/// space_to_batch_nd's kernel: writes `out` (plan.blocked_shape, disjoint from `x`) from `x`
/// (plan.spatial_shape) and `pad_value` (one element of x's dtype). Compiled once per element
/// width; in compiled mode, in the library.
TBATCH_INLINE void space_to_batch_kernel(const BlockPlan& plan, const RawView& x,
                                         const RawView& out, const void* pad_value);
/// batch_to_space_nd's kernel: writes `out` (plan.spatial_shape, disjoint from `x`) from `x`
/// (plan.blocked_shape).
TBATCH_INLINE void batch_to_space_kernel(const BlockPlan& plan, const RawView& x,
                                         const RawView& out);

}  // namespace tbatch::detail

#if TBATCH_DEFINITIONS

namespace tbatch::detail {

TBATCH_INLINE std::vector<BlockRun> block_runs(index_t size, index_t start, index_t block,
                                               index_t blocks) {
  const index_t end = start + size;
  const index_t q0 = start / block, r0 = start % block, q1 = end / block, r1 = end % block;
  const std::array<index_t, 4> cuts{0, std::min(r0, r1), std::max(r0, r1), block};
  std::vector<BlockRun> runs;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const index_t k_begin = cuts[i], k_end = cuts[i + 1];
    if (k_begin == k_end) continue;
    const index_t lo = std::min(k_begin < r0 ? q0 + 1 : q0, blocks);
    const index_t hi = std::clamp(k_begin < r1 ? q1 + 1 : q1, lo, blocks);
    runs.push_back(BlockRun{k_begin, k_end - k_begin, lo, hi - lo});
  }
  return runs;
}

TBATCH_INLINE index_t check_block_arguments(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& pairs,
                                            const char* pairs_name) {
  const std::size_t m = block_shape.size();
  if (pairs.size() != m)
    fail<ShapeError>(
        function, {pairs_name, " has ", pairs.size(), " [start, end] pairs but block_shape ",
                   listed(block_shape), " has ", m, " entries; expected one pair per spatial dim"});
  index_t product = 1;
  for (std::size_t i = 0; i < m; ++i) {
    if (block_shape[i] < 1)
      fail<ValueError>(function, {"block_shape[", i, "] = ", block_shape[i], " must be >= 1"});
    if (multiply_overflows(product, block_shape[i], product))
      fail<ShapeError>(function, {"the product of block_shape ", listed(block_shape),
                                  " overflows a 64-bit index"});
  }
  if (input_shape.size() < 1 + m)
    fail<ShapeError>(function, {"input of shape ", input_shape, " has rank ", input_shape.size(),
                                " but block_shape ", listed(block_shape), " needs rank >= ", 1 + m,
                                " (batch + ", m, " spatial dims + remaining dims)"});
  for (std::size_t i = 0; i < m; ++i)
    if (pairs[i][0] < 0 || pairs[i][1] < 0)
      fail<ValueError>(function,
                       {pairs_name, "[", i, "] = ", PairText{pairs[i]}, " must be non-negative"});
  return product;
}

TBATCH_INLINE BlockPlan plan_space_to_batch(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& paddings) {
  const index_t product =
      check_block_arguments(function, input_shape, block_shape, paddings, "paddings");
  BlockPlan plan;
  plan.spatial_shape = input_shape;
  plan.block_and_batch = block_shape;
  plan.block_and_batch.push_back(input_shape[0]);
  plan.blocked_shape.push_back(checked_mul(input_shape[0], product, function));
  for (std::size_t i = 0; i < block_shape.size(); ++i) {
    const index_t size = input_shape[i + 1], block = block_shape[i];
    const index_t padded =
        checked_add(checked_add(size, paddings[i][0], function), paddings[i][1], function);
    if (padded % block != 0)
      fail<ShapeError>(
          function, {"padded_shape[", i, "] = ", padded, " (input dim ", i + 1, " of size ", size,
                     " + paddings[", i, "] = ", PairText{paddings[i]},
                     ") is not divisible by block_shape[", i, "] = ", block});
    const index_t blocks = padded / block;
    plan.blocked_shape.push_back(blocks);
    plan.dims.push_back(BlockDim{size, paddings[i][0], block, blocks,
                                 block_runs(size, paddings[i][0], block, blocks)});
  }
  for (std::size_t d = block_shape.size() + 1; d < input_shape.size(); ++d)
    plan.blocked_shape.push_back(input_shape[d]);
  index_t numel = 1;
  for (index_t s : plan.blocked_shape)
    numel = checked_mul(numel, s, function);
  return plan;
}

TBATCH_INLINE BlockPlan plan_batch_to_space(const char* function, const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& crops) {
  const index_t product = check_block_arguments(function, input_shape, block_shape, crops, "crops");
  if (input_shape[0] % product != 0)
    fail<ShapeError>(function, {"input batch dim ", input_shape[0], " (shape ", input_shape,
                                ") is not divisible by the product of block_shape ",
                                listed(block_shape), ", ", product});
  BlockPlan plan;
  plan.blocked_shape = input_shape;
  const index_t batch = input_shape[0] / product;
  plan.block_and_batch = block_shape;
  plan.block_and_batch.push_back(batch);
  plan.spatial_shape.push_back(batch);
  for (std::size_t i = 0; i < block_shape.size(); ++i) {
    const index_t blocks = input_shape[i + 1], block = block_shape[i];
    const index_t uncropped = checked_mul(blocks, block, function);
    const index_t start = crops[i][0], end = crops[i][1];
    if (start > uncropped || end > uncropped - start)
      fail<ShapeError>(
          function, {"crops[", i, "] = ", PairText{crops[i]}, " remove more than the ", uncropped,
                     " elements of dim ", i + 1, " (input size ", blocks, " * block_shape[", i,
                     "] ", block, "); cropped_shape[", i, "] must be >= 0"});
    const index_t size = uncropped - start - end;
    plan.spatial_shape.push_back(size);
    plan.dims.push_back(
        BlockDim{size, start, block, blocks, block_runs(size, start, block, blocks)});
  }
  for (std::size_t d = block_shape.size() + 1; d < input_shape.size(); ++d)
    plan.spatial_shape.push_back(input_shape[d]);
  return plan;
}

TBATCH_INLINE std::vector<index_t> block_offsets(index_t linear,
                                                 const std::vector<index_t>& block_shape) {
  std::vector<index_t> offsets(block_shape.size());
  for (std::size_t i = block_shape.size(); i-- > 0;) {
    offsets[i] = linear % block_shape[i];
    linear /= block_shape[i];
  }
  return offsets;
}

TBATCH_INLINE index_t blocked_extent(index_t size, index_t k, index_t block) {
  return size > k ? (size - k - 1) / block + 1 : 0;
}

}  // namespace tbatch::detail

#endif  // TBATCH_DEFINITIONS
