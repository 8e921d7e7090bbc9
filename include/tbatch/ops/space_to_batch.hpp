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
//
// The plan is in space_to_batch_plan.hpp, the kernels (by element width) in
// space_to_batch_kernel.hpp; this header holds the public functions.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/batch/geometry.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/ops/space_to_batch_plan.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/ops/space_to_batch_kernel.hpp"
#include "tbatch/view/engine.hpp"
#endif

namespace tbatch {

namespace detail {

/// The kernel for T: in compiled mode the library's, through the erased entry point; otherwise
/// the kernel of T's width, instantiated here (only the widths a program uses).
template <class T>
void space_to_batch_of(const BlockPlan& plan, StridedView<const T> x, StridedView<T> out,
                       T pad_value) {
#if !TBATCH_DEFINITIONS
  space_to_batch_kernel(plan, raw_view(x), raw_view(out), &pad_value);
#else
  run_space_to_batch(plan, as_words(x), as_words(out), to_word(pad_value));
#endif
}
template <class T>
void batch_to_space_of(const BlockPlan& plan, StridedView<const T> x, StridedView<T> out) {
#if !TBATCH_DEFINITIONS
  batch_to_space_kernel(plan, raw_view(x), raw_view(out));
#else
  run_batch_to_space(plan, as_words(x), as_words(out));
#endif
}

template <class S, class T>
void check_into(const char* function, const StridedView<S>& x, const StridedView<T>& out,
                const Shape& expected) {
  if (!(out.shape() == expected))
    fail<ShapeError>(function, {"out has shape ", out.shape(), " but the result for input shape ",
                                x.shape(), " has shape ", expected});
  check_distinct_elements(out, function);
}

/// The padded-batch checks both directions share: the spatial dims must be padded dims (the
/// last dim is the shared element size, which shape_per_tensor does not describe).
TBATCH_INLINE void check_padded_spatial_dims(const char* function, const Shape& data_shape,
                                             const std::vector<index_t>& block_shape);

/// space_to_batch_nd's checks of a padded batch of data `data_shape` and its output elements'
/// shape_per_tensor (plan.blocked_shape[0] elements; see the public function).
TBATCH_INLINE Tensor<index_t> space_to_batch_sizes(
    const BatchGeometry& geometry, const Shape& data_shape, const std::vector<index_t>& block_shape,
    const std::vector<std::array<index_t, 2>>& paddings, const BlockPlan& plan);

/// batch_to_space_nd's checks of a padded batch and its output elements' shape_per_tensor.
TBATCH_INLINE Tensor<index_t> batch_to_space_sizes(const BatchGeometry& geometry,
                                                   const Shape& data_shape,
                                                   const std::vector<index_t>& block_shape,
                                                   const std::vector<std::array<index_t, 2>>& crops,
                                                   const BlockPlan& plan);

}  // namespace detail

/// Output shape of space_to_batch_nd for an input of `input_shape`: [batch * prod(block_shape)]
/// + [(size_i + pad_start_i + pad_end_i) / block_shape_i] + remaining. Validates like
/// space_to_batch_nd (ShapeError / ValueError).
TBATCH_INLINE Shape space_to_batch_nd_shape(const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& paddings);

/// Output shape of batch_to_space_nd for an input of `input_shape`: [batch / prod(block_shape)]
/// + [size_i * block_shape_i - crop_start_i - crop_end_i] + remaining. Validates like
/// batch_to_space_nd.
TBATCH_INLINE Shape batch_to_space_nd_shape(const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& crops);

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
  detail::space_to_batch_of<T>(plan, x.view(), out.view(), pad_value);
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
  detail::space_to_batch_of<T>(plan, detail::unaliased(StridedView<const T>(x), out, staging), out,
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
  detail::batch_to_space_of<T>(plan, x.view(), out.view());
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
  detail::batch_to_space_of<T>(plan, detail::unaliased(StridedView<const T>(x), out, staging), out);
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
  const detail::BlockPlan plan =
      detail::plan_space_to_batch("space_to_batch_nd", batch.data().shape(), block_shape, paddings);
  const Tensor<index_t> out_sizes = detail::space_to_batch_sizes(
      detail::geometry_of(batch), batch.data().shape(), block_shape, paddings, plan);
  Tensor<T> data = Tensor<T>::empty(plan.blocked_shape);
  detail::space_to_batch_of<T>(plan, batch.data().view(), data.view(), pad_value);
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
  const detail::BlockPlan plan =
      detail::plan_batch_to_space("batch_to_space_nd", batch.data().shape(), block_shape, crops);
  const Tensor<index_t> out_sizes = detail::batch_to_space_sizes(
      detail::geometry_of(batch), batch.data().shape(), block_shape, crops, plan);
  Tensor<T> data = Tensor<T>::empty(plan.spatial_shape);
  detail::batch_to_space_of<T>(plan, batch.data().view(), data.view());
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

#if TBATCH_DEFINITIONS

namespace tbatch {

namespace detail {

TBATCH_INLINE void check_padded_spatial_dims(const char* function, const Shape& data_shape,
                                             const std::vector<index_t>& block_shape) {
  const index_t padded_dims = static_cast<index_t>(data_shape.size()) - 2;
  if (static_cast<index_t>(block_shape.size()) > padded_dims)
    fail<ShapeError>(
        function, {"block_shape ", listed(block_shape), " has ", block_shape.size(),
                   " spatial dims but a PaddedBatch with data of shape ", data_shape, " has only ",
                   padded_dims,
                   " padded dims; the last dim (the element size) is shared by every element "
                   "and cannot be a spatial dim"});
}

TBATCH_INLINE Tensor<index_t> space_to_batch_sizes(
    const BatchGeometry& geometry, const Shape& data_shape, const std::vector<index_t>& block_shape,
    const std::vector<std::array<index_t, 2>>& paddings, const BlockPlan& plan) {
  constexpr const char* function = "space_to_batch_nd";
  check_padded_spatial_dims(function, data_shape, block_shape);
  for (std::size_t i = 0; i < paddings.size(); ++i)
    if (paddings[i][0] != 0)
      fail<ValueError>(function, {"paddings[", i, "] = ", PairText{paddings[i]},
                                  " pads the start of spatial dim ", i,
                                  ", which a PaddedBatch cannot express: it would move every "
                                  "element's data off index 0 of its slot; pad the end only"});
  const index_t elements = geometry.batch_size(), columns = geometry.columns();
  const index_t outputs = plan.blocked_shape[0];
  Tensor<index_t> out_sizes = Tensor<index_t>::empty(Shape{outputs, columns});
  index_t* out = out_sizes.data();
  // Output n = block * elements + b: element b seen from one block offset.
  for (index_t block = 0; elements > 0 && block < outputs / elements; ++block) {
    const std::vector<index_t> k = block_offsets(block, block_shape);
    for (index_t b = 0; b < elements; ++b, out += columns)
      for (index_t d = 0; d < columns; ++d) {
        const auto at = static_cast<std::size_t>(d);
        const index_t size = geometry.size(b, d);
        out[d] = at < k.size() ? blocked_extent(size, k[at], block_shape[at]) : size;
      }
  }
  return out_sizes;
}

TBATCH_INLINE Tensor<index_t> batch_to_space_sizes(const BatchGeometry& geometry,
                                                   const Shape& data_shape,
                                                   const std::vector<index_t>& block_shape,
                                                   const std::vector<std::array<index_t, 2>>& crops,
                                                   const BlockPlan& plan) {
  constexpr const char* function = "batch_to_space_nd";
  check_padded_spatial_dims(function, data_shape, block_shape);
  const index_t m = static_cast<index_t>(block_shape.size());
  const index_t columns = geometry.columns();
  const index_t outputs = plan.spatial_shape[0], inputs = geometry.batch_size();
  // Extent s[b][i] of the element each output element b was split from: along a spatial dim
  // i, the sum of the extents of b's pieces whose block offsets are 0 but along i; along a
  // later dim, the extent of the piece at offset 0.
  Tensor<index_t> whole = Tensor<index_t>::zeros(Shape{outputs, columns});
  for (index_t n = 0; n < inputs; ++n) {
    const std::vector<index_t> k = block_offsets(n / outputs, block_shape);
    for (index_t d = 0; d < columns; ++d) {
      bool piece = true;
      for (index_t c = 0; c < m && piece; ++c)
        piece = c == d || k[static_cast<std::size_t>(c)] == 0;
      if (piece) whole(n % outputs, d) += geometry.size(n, d);
    }
  }
  for (index_t n = 0; n < inputs; ++n) {
    const index_t b = n % outputs;
    const std::vector<index_t> k = block_offsets(n / outputs, block_shape);
    for (index_t d = 0; d < columns; ++d) {
      auto expected = [&](index_t c) {
        const auto at = static_cast<std::size_t>(c);
        return c < m ? blocked_extent(whole(b, c), k[at], block_shape[at]) : whole(b, c);
      };
      if (geometry.size(n, d) != expected(d)) {
        std::vector<index_t> got, want;
        for (index_t c = 0; c < columns; ++c) {
          got.push_back(geometry.size(n, c));
          want.push_back(expected(c));
        }
        fail<ValueError>(function,
                         {"shape_per_tensor[", n, "] = ", listed(got), " (block offset ", listed(k),
                          " of output element ", b, ") does not fit the elements merged with it: ",
                          "together they cover extents ",
                          listed(std::vector<index_t>(whole.data() + b * columns,
                                                      whole.data() + (b + 1) * columns)),
                          ", whose pieces space_to_batch_nd would size ", listed(want)});
      }
    }
  }
  Tensor<index_t> out_sizes = Tensor<index_t>::empty(Shape{outputs, columns});
  for (index_t b = 0; b < outputs; ++b)
    for (index_t d = 0; d < columns; ++d)
      out_sizes(b, d) = d < m ? std::clamp(whole(b, d) - crops[static_cast<std::size_t>(d)][0],
                                           index_t(0), plan.spatial_shape[d + 1])
                              : whole(b, d);
  return out_sizes;
}

}  // namespace detail

TBATCH_INLINE Shape space_to_batch_nd_shape(const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& paddings) {
  return detail::plan_space_to_batch("space_to_batch_nd_shape", input_shape, block_shape, paddings)
      .blocked_shape;
}

TBATCH_INLINE Shape batch_to_space_nd_shape(const Shape& input_shape,
                                            const std::vector<index_t>& block_shape,
                                            const std::vector<std::array<index_t, 2>>& crops) {
  return detail::plan_batch_to_space("batch_to_space_nd_shape", input_shape, block_shape, crops)
      .spatial_shape;
}

}  // namespace tbatch

#endif  // TBATCH_DEFINITIONS
