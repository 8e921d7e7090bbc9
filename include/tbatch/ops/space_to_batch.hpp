#pragma once
// space_to_batch_nd / batch_to_space_nd with TensorFlow's SpaceToBatchND / BatchToSpaceND
// semantics, on dense tensors (any strided view), exact batches and padded batches.
//
// Both are written as views. With zero paddings, TF's pad -> reshape -> permute -> reshape is
// a view of the input: each spatial dim i splits into (o_i, k_i) with strides
// (block_i * stride_i, stride_i) (an unfold), the block offsets k move in front of the batch,
// and the output is one strided copy of that view into the output seen as
// [block_shape..., batch, blocks..., remaining...]. The engine merges every dim it can (a dim
// with block 1 and no padding folds into its neighbours), so the innermost run is
// prod(remaining) elements long. With paddings, the block offsets of each spatial dim split
// into at most three runs that see the same range of valid output cells; each combination of
// runs is one box copy, and only the padded slabs around those boxes are filled. Large boxes
// are handed to the engine one (batch, o_1) slab at a time, for cache locality.
// batch_to_space_nd is the same correspondence copied the other way, with crops in place of
// paddings and nothing to fill.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <ostream>
#include <type_traits>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/parallel.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"

namespace tbatch {

namespace detail {

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
inline std::vector<BlockRun> block_runs(index_t size, index_t start, index_t block,
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
inline index_t check_block_arguments(const char* function, const Shape& input_shape,
                                     const std::vector<index_t>& block_shape,
                                     const std::vector<std::array<index_t, 2>>& pairs,
                                     const char* pairs_name) {
  const std::size_t m = block_shape.size();
  if (pairs.size() != m)
    fail<ShapeError>(function, pairs_name, " has ", pairs.size(),
                     " [start, end] pairs but block_shape ", listed(block_shape), " has ", m,
                     " entries; expected one pair per spatial dim");
  index_t product = 1;
  for (std::size_t i = 0; i < m; ++i) {
    if (block_shape[i] < 1)
      fail<ValueError>(function, "block_shape[", i, "] = ", block_shape[i], " must be >= 1");
    if (multiply_overflows(product, block_shape[i], product))
      fail<ShapeError>(function, "the product of block_shape ", listed(block_shape),
                       " overflows a 64-bit index");
  }
  if (input_shape.size() < 1 + m)
    fail<ShapeError>(function, "input of shape ", input_shape, " has rank ", input_shape.size(),
                     " but block_shape ", listed(block_shape), " needs rank >= ", 1 + m,
                     " (batch + ", m, " spatial dims + remaining dims)");
  for (std::size_t i = 0; i < m; ++i)
    if (pairs[i][0] < 0 || pairs[i][1] < 0)
      fail<ValueError>(function, pairs_name, "[", i, "] = ", PairText{pairs[i]},
                       " must be non-negative");
  return product;
}

/// Validates space_to_batch_nd's arguments for an input of `input_shape` and plans it.
inline BlockPlan plan_space_to_batch(const char* function, const Shape& input_shape,
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
      fail<ShapeError>(function, "padded_shape[", i, "] = ", padded, " (input dim ", i + 1,
                       " of size ", size, " + paddings[", i, "] = ", PairText{paddings[i]},
                       ") is not divisible by block_shape[", i, "] = ", block);
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

/// Validates batch_to_space_nd's arguments for an input of `input_shape` and plans it.
inline BlockPlan plan_batch_to_space(const char* function, const Shape& input_shape,
                                     const std::vector<index_t>& block_shape,
                                     const std::vector<std::array<index_t, 2>>& crops) {
  const index_t product = check_block_arguments(function, input_shape, block_shape, crops, "crops");
  if (input_shape[0] % product != 0)
    fail<ShapeError>(function, "input batch dim ", input_shape[0], " (shape ", input_shape,
                     ") is not divisible by the product of block_shape ", listed(block_shape), ", ",
                     product);
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
      fail<ShapeError>(function, "crops[", i, "] = ", PairText{crops[i]}, " remove more than the ",
                       uncropped, " elements of dim ", i + 1, " (input size ", blocks,
                       " * block_shape[", i, "] ", block, "); cropped_shape[", i, "] must be >= 0");
    const index_t size = uncropped - start - end;
    plan.spatial_shape.push_back(size);
    plan.dims.push_back(
        BlockDim{size, start, block, blocks, block_runs(size, start, block, blocks)});
  }
  for (std::size_t d = block_shape.size() + 1; d < input_shape.size(); ++d)
    plan.spatial_shape.push_back(input_shape[d]);
  return plan;
}

/// Calls visit(spatial_box, blocked_box) for every box of valid cells: spatial_box is a view
/// of the spatial side ([batch, sizes..., remaining...]) and blocked_box of the blocked side
/// seen as [block_shape..., batch, blocks..., remaining...], both of shape [k counts...,
/// batch, o counts..., remaining...]. Recurses over the spatial dims, choosing one run of block
/// offsets per dim; on the spatial side each choice is a narrow and an unfold of that dim.
template <class S, class B, class Visit>
void for_each_block_box(const std::vector<BlockDim>& dims, std::size_t d, StridedView<S> spatial,
                        StridedView<B> blocked, Visit& visit) {
  const std::size_t m = dims.size();
  if (d == m) {
    // spatial is [batch, o counts..., remaining..., k counts...]: bring the k dims to the front
    // (a rotation of its dims, built directly: a permute would check a dims list).
    const Layout& from = spatial.layout();
    const std::size_t rank = from.shape.size() - m;
    Layout rotated{Shape(from.shape.begin() + rank, from.shape.end()),
                   Strides(from.strides.begin() + rank, from.strides.end()), from.offset};
    for (std::size_t i = 0; i < rank; ++i) {
      rotated.shape.push_back(from.shape[i]);
      rotated.strides.push_back(from.strides[i]);
    }
    visit(spatial.with_layout(std::move(rotated)), blocked);
    return;
  }
  const BlockDim& dim = dims[d];
  const index_t spatial_dim = static_cast<index_t>(d) + 1;
  const index_t blocks_dim = static_cast<index_t>(m + 1 + d);
  for (const BlockRun& run : dim.runs) {
    if (run.o_count == 0) continue;
    // The cells o * block + k - start for o in the run's o range and k in its k range.
    const index_t first = run.o_start * dim.block + run.k_start - dim.start;
    const index_t length = (run.o_count - 1) * dim.block + run.k_count;
    for_each_block_box(
        dims, d + 1,
        spatial.narrow(spatial_dim, first, length).unfold(spatial_dim, run.k_count, dim.block),
        blocked.narrow(static_cast<index_t>(d), run.k_start, run.k_count)
            .narrow(blocks_dim, run.o_start, run.o_count),
        visit);
  }
}

/// Fills every cell of the blocked view ([block_shape..., batch, blocks..., remaining...]) whose
/// spatial coordinate falls in the padding, as disjoint slabs: for spatial dim d, the cells
/// valid along dims < d and padding along d.
template <class T>
void fill_block_padding(const std::vector<BlockDim>& dims, std::size_t d, StridedView<T> blocked,
                        T value, Stores stores) {
  const std::size_t m = dims.size();
  if (d == m) return;
  const BlockDim& dim = dims[d];
  const index_t blocks_dim = static_cast<index_t>(m + 1 + d);
  for (const BlockRun& run : dim.runs) {
    const StridedView<T> column = blocked.narrow(static_cast<index_t>(d), run.k_start, run.k_count);
    const index_t o_end = run.o_start + run.o_count;
    if (run.o_start > 0) fill_view(column.narrow(blocks_dim, 0, run.o_start), value, stores);
    if (o_end < dim.blocks)
      fill_view(column.narrow(blocks_dim, o_end, dim.blocks - o_end), value, stores);
    if (run.o_count > 0)
      fill_block_padding(dims, d + 1, column.narrow(blocks_dim, run.o_start, run.o_count), value,
                         stores);
  }
}

/// Copies one space_to_batch_nd box, [k counts..., batch, o counts..., remaining...] on both
/// sides (m k dims). One copy walks the box in the destination's order, block offsets
/// outermost, so each source cache line, which the block offsets of its cell share, would be
/// fetched from memory once per offset. Copying one (batch, o_1) slab at a time lets every
/// block offset read those lines while they are still in cache; boxes with slabs under
/// min_slab_elements go in one copy. Every slab has the same plan, made once, in the source's
/// order: the source streams, the prod(block) destination streams take a run each in turn (the
/// destination order would read each source row in block_shape[-1] strided passes). Each slab
/// is the engine's copy of that plan from the slab's first element.
template <class T>
void copy_space_to_batch_box(StridedView<const T> from, StridedView<T> to, index_t m,
                             Stores stores) {
  const index_t batch = m > 0 ? from.size(m) : 1, rows = m > 0 ? from.size(m + 1) : 1;
  if (batch * rows <= 1 || from.numel() / (batch * rows) < min_slab_elements) {
    // The callers made `from` and the output disjoint already: no second overlap check.
    copy_planned(as_words(from), as_words(to), stores);
    return;
  }
  const StridedView<const T> from_slab = from.select(m, 0).select(m, 0);
  const StridedView<T> to_slab = to.select(m, 0).select(m, 0);
  const RunPlan<2> slab = plan_source_order(from_slab, to_slab);
  parallel_for(
      0, batch * rows, 1, to.numel() * index_t(sizeof(T)) > parallel_min_bytes, [&](index_t s) {
        const index_t b = s / rows, o = s % rows;
        copy_runs(
            slab, from_slab, to_slab, stores,
            {b * to.stride(m) + o * to.stride(m + 1), b * from.stride(m) + o * from.stride(m + 1)});
      });
}

template <class T>
void run_space_to_batch(const BlockPlan& plan, StridedView<const T> x, StridedView<T> out,
                        T pad_value) {
  // An empty output may split its batch dim into sizes whose nonzero product overflows.
  if (out.numel() == 0) return;
  const StridedView<T> blocked = out.unflatten(0, plan.block_and_batch);
  const Stores stores = stores_for_output(out);
  fill_block_padding(plan.dims, 0, blocked, pad_value, stores);
  const index_t m = static_cast<index_t>(plan.dims.size());
  auto copy_box = [m, stores](StridedView<const T> from, StridedView<T> to) {
    copy_space_to_batch_box(from, to, m, stores);
  };
  for_each_block_box(plan.dims, 0, x, blocked, copy_box);
}

template <class T>
void run_batch_to_space(const BlockPlan& plan, StridedView<const T> x, StridedView<T> out) {
  if (out.numel() == 0) return;  // as in run_space_to_batch
  const StridedView<const T> blocked = x.unflatten(0, plan.block_and_batch);
  [[maybe_unused]] const index_t m = static_cast<index_t>(plan.dims.size());
  const Stores stores = stores_for_output(out);
  auto copy_box = [=](StridedView<T> to, StridedView<const T> from) {  // m only with OpenMP
#if defined(TBATCH_OPENMP) && defined(_OPENMP)
    // Large boxes split into (batch, o_1) slabs, one copy each, across the threads.
    const index_t batch = m > 0 ? to.size(m) : 1, rows = m > 0 ? to.size(m + 1) : 1;
    if (batch * rows > 1 && to.numel() * index_t(sizeof(T)) > parallel_min_bytes) {
      parallel_for(0, batch * rows, 1, true, [&](index_t s) {
        const index_t b = s / rows, o = s % rows;
        copy_views(from.select(m, b).select(m, o), to.select(m, b).select(m, o), stores);
      });
      return;
    }
#endif
    copy_views(from, to, stores);
  };
  for_each_block_box(plan.dims, 0, out, blocked, copy_box);
}

template <class S, class T>
void check_into(const char* function, const StridedView<S>& x, const StridedView<T>& out,
                const Shape& expected) {
  if (!(out.shape() == expected))
    fail<ShapeError>(function, "out has shape ", out.shape(), " but the result for input shape ",
                     x.shape(), " has shape ", expected);
  check_distinct_elements(out, function);
}

/// Row-major block offsets of linear offset index `linear` (the last block dim fastest).
inline std::vector<index_t> block_offsets(index_t linear, const std::vector<index_t>& block_shape) {
  std::vector<index_t> offsets(block_shape.size());
  for (std::size_t i = block_shape.size(); i-- > 0;) {
    offsets[i] = linear % block_shape[i];
    linear /= block_shape[i];
  }
  return offsets;
}

/// Cells o >= 0 with o * block + k < size: the valid extent block offset k sees of a spatial
/// extent `size` that starts at 0.
inline index_t blocked_extent(index_t size, index_t k, index_t block) {
  return size > k ? (size - k - 1) / block + 1 : 0;
}

/// The padded-batch checks both directions share: the spatial dims must be padded dims (the
/// last dim is the shared element size, which shape_per_tensor does not describe).
template <class T>
void check_padded_spatial_dims(const char* function, const PaddedBatch<T>& batch,
                               const std::vector<index_t>& block_shape) {
  const index_t padded_dims = batch.element_rank() - 1;
  if (static_cast<index_t>(block_shape.size()) > padded_dims)
    fail<ShapeError>(function, "block_shape ", listed(block_shape), " has ", block_shape.size(),
                     " spatial dims but a PaddedBatch with data of shape ", batch.data().shape(),
                     " has only ", padded_dims,
                     " padded dims; the last dim (the element size) is shared by every element "
                     "and cannot be a spatial dim");
}

}  // namespace detail

/// Output shape of space_to_batch_nd for an input of `input_shape`: [batch * prod(block_shape)]
/// + [(size_i + pad_start_i + pad_end_i) / block_shape_i] + remaining. Validates like
/// space_to_batch_nd (ShapeError / ValueError).
inline Shape space_to_batch_nd_shape(const Shape& input_shape,
                                     const std::vector<index_t>& block_shape,
                                     const std::vector<std::array<index_t, 2>>& paddings) {
  return detail::plan_space_to_batch("space_to_batch_nd_shape", input_shape, block_shape, paddings)
      .blocked_shape;
}

/// Output shape of batch_to_space_nd for an input of `input_shape`: [batch / prod(block_shape)]
/// + [size_i * block_shape_i - crop_start_i - crop_end_i] + remaining. Validates like
/// batch_to_space_nd.
inline Shape batch_to_space_nd_shape(const Shape& input_shape,
                                     const std::vector<index_t>& block_shape,
                                     const std::vector<std::array<index_t, 2>>& crops) {
  return detail::plan_batch_to_space("batch_to_space_nd_shape", input_shape, block_shape, crops)
      .spatial_shape;
}

/// TensorFlow's SpaceToBatchND. `x` is [batch] + M spatial dims + remaining dims, M =
/// block_shape.size(). The spatial dims are padded with `pad_value` by paddings[i] = [start,
/// end], split into blocks of block_shape, and the offsets within a block move in front of the
/// batch: output [batch * prod(block_shape)] + [padded_i / block_shape_i] + remaining, where
/// output batch index (offset-in-block, row-major, last block dim fastest) * batch + b holds
/// x[b, o_i * block_i + k_i - pad_start_i, ...]. x may be any strided view.
/// Errors: ValueError for block_shape entries < 1 or negative paddings; ShapeError for a
/// paddings count != M, rank < 1 + M, a padded size not divisible by its block, or sizes that
/// overflow a 64-bit index.
template <class T>
Tensor<T> space_to_batch_nd(const Tensor<T>& x, const std::vector<index_t>& block_shape,
                            const std::vector<std::array<index_t, 2>>& paddings,
                            std::type_identity_t<T> pad_value = T(0)) {
  const detail::BlockPlan plan =
      detail::plan_space_to_batch("space_to_batch_nd", x.shape(), block_shape, paddings);
  Tensor<T> out = Tensor<T>::empty(plan.blocked_shape);
  detail::run_space_to_batch<T>(plan, x.view(), out.view(), pad_value);
  return out;
}

/// space_to_batch_nd into a caller-owned view `out` of shape space_to_batch_nd_shape(...)
/// (ShapeError otherwise) that must not map two elements to one address (ValueError).
/// Allocates nothing, except a copy of `x` when it shares elements with `out`.
template <class S, class T>
requires std::same_as<std::remove_const_t<S>, T>
void space_to_batch_nd_into(StridedView<S> x, const std::vector<index_t>& block_shape,
                            const std::vector<std::array<index_t, 2>>& paddings, StridedView<T> out,
                            std::type_identity_t<T> pad_value = T(0)) {
  const detail::BlockPlan plan =
      detail::plan_space_to_batch("space_to_batch_nd_into", x.shape(), block_shape, paddings);
  detail::check_into("space_to_batch_nd_into", x, out, plan.blocked_shape);
  Tensor<T> staging;
  detail::run_space_to_batch<T>(plan, detail::unaliased(StridedView<const T>(x), out, staging), out,
                                pad_value);
}

/// TensorFlow's BatchToSpaceND, the inverse of space_to_batch_nd: `x` is [batch] + M block
/// dims + remaining dims with batch divisible by prod(block_shape); output [batch /
/// prod(block_shape)] + [size_i * block_shape_i - crop_start_i - crop_end_i] + remaining, where
/// output[b, c_i, ...] = x[k * (batch / prod) + b, o_i, ...] with c_i + crop_start_i = o_i *
/// block_i + k_i. batch_to_space_nd(space_to_batch_nd(x, b, p), b, p) == x.
/// Errors: ValueError for block_shape entries < 1 or negative crops; ShapeError for a crops
/// count != M, rank < 1 + M, a batch not divisible by prod(block_shape), crops larger than
/// the dim, or sizes that overflow a 64-bit index.
template <class T>
Tensor<T> batch_to_space_nd(const Tensor<T>& x, const std::vector<index_t>& block_shape,
                            const std::vector<std::array<index_t, 2>>& crops) {
  const detail::BlockPlan plan =
      detail::plan_batch_to_space("batch_to_space_nd", x.shape(), block_shape, crops);
  Tensor<T> out = Tensor<T>::empty(plan.spatial_shape);
  detail::run_batch_to_space<T>(plan, x.view(), out.view());
  return out;
}

/// batch_to_space_nd into a caller-owned view `out` of shape batch_to_space_nd_shape(...)
/// (ShapeError otherwise) that must not map two elements to one address (ValueError).
/// Allocates nothing, except a copy of `x` when it shares elements with `out`.
template <class S, class T>
requires std::same_as<std::remove_const_t<S>, T>
void batch_to_space_nd_into(StridedView<S> x, const std::vector<index_t>& block_shape,
                            const std::vector<std::array<index_t, 2>>& crops, StridedView<T> out) {
  const detail::BlockPlan plan =
      detail::plan_batch_to_space("batch_to_space_nd_into", x.shape(), block_shape, crops);
  detail::check_into("batch_to_space_nd_into", x, out, plan.spatial_shape);
  Tensor<T> staging;
  detail::run_batch_to_space<T>(plan, detail::unaliased(StridedView<const T>(x), out, staging),
                                out);
}

/// An exact batch follows the dense rule: its data is [batch] + spatial + remaining, and the
/// result is the exact batch of batch * prod(block_shape) elements. Errors as the dense form.
template <class T>
ExactBatch<T> space_to_batch_nd(const ExactBatch<T>& batch, const std::vector<index_t>& block_shape,
                                const std::vector<std::array<index_t, 2>>& paddings,
                                std::type_identity_t<T> pad_value = T(0)) {
  return ExactBatch<T>(space_to_batch_nd(batch.data(), block_shape, paddings, pad_value));
}

/// The dense rule on an exact batch's data: batch / prod(block_shape) elements. Errors as the
/// dense form.
template <class T>
ExactBatch<T> batch_to_space_nd(const ExactBatch<T>& batch, const std::vector<index_t>& block_shape,
                                const std::vector<std::array<index_t, 2>>& crops) {
  return ExactBatch<T>(batch_to_space_nd(batch.data(), block_shape, crops));
}

/// A padded batch: the dense rule on its data, and each output element's shape_per_tensor is
/// the extent of its valid data. Output element k * batch + b (k the block offset) sees
/// ceil((s_i - k_i) / block_i) cells (0 when s_i <= k_i) along spatial dim i of element b's
/// extent s_i; later padded dims keep b's extent. The spatial dims must be padded dims
/// (ShapeError), and paddings must start at 0 (ValueError): a pad_start would move every
/// element's data off index 0 of its slot, where a padded batch keeps it. Cells outside the
/// valid boxes hold the input's padding or `pad_value`.
template <class T>
PaddedBatch<T> space_to_batch_nd(const PaddedBatch<T>& batch,
                                 const std::vector<index_t>& block_shape,
                                 const std::vector<std::array<index_t, 2>>& paddings,
                                 std::type_identity_t<T> pad_value = T(0)) {
  constexpr const char* function = "space_to_batch_nd";
  const detail::BlockPlan plan =
      detail::plan_space_to_batch(function, batch.data().shape(), block_shape, paddings);
  detail::check_padded_spatial_dims(function, batch, block_shape);
  for (std::size_t i = 0; i < paddings.size(); ++i)
    if (paddings[i][0] != 0)
      detail::fail<ValueError>(function, "paddings[", i, "] = ", detail::PairText{paddings[i]},
                               " pads the start of spatial dim ", i,
                               ", which a PaddedBatch cannot express: it would move every "
                               "element's data off index 0 of its slot; pad the end only");
  const index_t elements = batch.batch_size(), columns = batch.element_rank() - 1;
  const index_t outputs = plan.blocked_shape[0];
  const detail::BatchGeometry geometry = detail::geometry_of(batch);
  Tensor<index_t> out_sizes = Tensor<index_t>::empty(Shape{outputs, columns});
  index_t* out = out_sizes.data();
  // Output n = block * elements + b: element b seen from one block offset.
  for (index_t block = 0; elements > 0 && block < outputs / elements; ++block) {
    const std::vector<index_t> k = detail::block_offsets(block, block_shape);
    for (index_t b = 0; b < elements; ++b, out += columns)
      for (index_t d = 0; d < columns; ++d) {
        const auto at = static_cast<std::size_t>(d);
        const index_t size = geometry.size(b, d);
        out[d] = at < k.size() ? detail::blocked_extent(size, k[at], block_shape[at]) : size;
      }
  }
  Tensor<T> data = Tensor<T>::empty(plan.blocked_shape);
  detail::run_space_to_batch<T>(plan, batch.data().view(), data.view(), pad_value);
  return PaddedBatch<T>(std::move(data), out_sizes);
}

/// The inverse on a padded batch: the dense rule on its data, and output element b's extent
/// along spatial dim i is s_i - crop_start_i, clipped to [0, cropped size], where s_i is the sum
/// of the extents of the elements merged into b along dim i. The elements merged into b must
/// have exactly the extents space_to_batch_nd gives the pieces of an element of extent s
/// (ValueError naming the first that does not), so batch_to_space_nd(space_to_batch_nd(p, b,
/// pads), b, pads) restores p's shape_per_tensor.
template <class T>
PaddedBatch<T> batch_to_space_nd(const PaddedBatch<T>& batch,
                                 const std::vector<index_t>& block_shape,
                                 const std::vector<std::array<index_t, 2>>& crops) {
  constexpr const char* function = "batch_to_space_nd";
  const detail::BlockPlan plan =
      detail::plan_batch_to_space(function, batch.data().shape(), block_shape, crops);
  detail::check_padded_spatial_dims(function, batch, block_shape);
  const index_t m = static_cast<index_t>(block_shape.size());
  const index_t columns = batch.element_rank() - 1;
  const index_t outputs = plan.spatial_shape[0], inputs = batch.batch_size();
  const detail::BatchGeometry geometry = detail::geometry_of(batch);
  // Extent s[b][i] of the element each output element b was split from: along a spatial dim
  // i, the sum of the extents of b's pieces whose block offsets are 0 but along i; along a
  // later dim, the extent of the piece at offset 0.
  Tensor<index_t> whole = Tensor<index_t>::zeros(Shape{outputs, columns});
  for (index_t n = 0; n < inputs; ++n) {
    const std::vector<index_t> k = detail::block_offsets(n / outputs, block_shape);
    for (index_t d = 0; d < columns; ++d) {
      bool piece = true;
      for (index_t c = 0; c < m && piece; ++c)
        piece = c == d || k[static_cast<std::size_t>(c)] == 0;
      if (piece) whole(n % outputs, d) += geometry.size(n, d);
    }
  }
  for (index_t n = 0; n < inputs; ++n) {
    const index_t b = n % outputs;
    const std::vector<index_t> k = detail::block_offsets(n / outputs, block_shape);
    for (index_t d = 0; d < columns; ++d) {
      auto expected = [&](index_t c) {
        const auto at = static_cast<std::size_t>(c);
        return c < m ? detail::blocked_extent(whole(b, c), k[at], block_shape[at]) : whole(b, c);
      };
      if (geometry.size(n, d) != expected(d)) {
        std::vector<index_t> got, want;
        for (index_t c = 0; c < columns; ++c) {
          got.push_back(geometry.size(n, c));
          want.push_back(expected(c));
        }
        detail::fail<ValueError>(
            function, "shape_per_tensor[", n, "] = ", detail::listed(got), " (block offset ",
            detail::listed(k), " of output element ", b,
            ") does not fit the elements merged with it: ", "together they cover extents ",
            detail::listed(
                std::vector<index_t>(whole.data() + b * columns, whole.data() + (b + 1) * columns)),
            ", whose pieces space_to_batch_nd would size ", detail::listed(want));
      }
    }
  }
  Tensor<index_t> out_sizes = Tensor<index_t>::empty(Shape{outputs, columns});
  for (index_t b = 0; b < outputs; ++b)
    for (index_t d = 0; d < columns; ++d)
      out_sizes(b, d) = d < m ? std::clamp(whole(b, d) - crops[static_cast<std::size_t>(d)][0],
                                           index_t(0), plan.spatial_shape[d + 1])
                              : whole(b, d);
  Tensor<T> data = Tensor<T>::empty(plan.spatial_shape);
  detail::run_batch_to_space<T>(plan, batch.data().view(), data.view());
  return PaddedBatch<T>(std::move(data), out_sizes);
}

// A PackedBatch is rejected at compile time. Its elements share no padded extent, yet
// space_to_batch_nd is defined on one: a padded size must divide by the block, and pad_end /
// crop_end count from the end of that common extent. Convert explicitly, choosing the extent:
// to_packed(space_to_batch_nd(to_padded(batch, value, max_shape), block_shape, paddings)).
template <class T>
PackedBatch<T> space_to_batch_nd(const PackedBatch<T>& batch,
                                 const std::vector<index_t>& block_shape,
                                 const std::vector<std::array<index_t, 2>>& paddings,
                                 std::type_identity_t<T> pad_value = T(0)) = delete;
template <class T>
PackedBatch<T> batch_to_space_nd(const PackedBatch<T>& batch,
                                 const std::vector<index_t>& block_shape,
                                 const std::vector<std::array<index_t, 2>>& crops) = delete;

}  // namespace tbatch
