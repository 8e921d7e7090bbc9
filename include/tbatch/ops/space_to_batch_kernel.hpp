#pragma once
// The kernels of space_to_batch_nd / batch_to_space_nd on the view engine, typed by element
// width, and their type-erased entry points (defined where the library is built). Included by
// space_to_batch.hpp in header-only mode and in the library, not in a compiled-mode user file.

#include <cstddef>
#include <type_traits>
#include <vector>

#include "tbatch/base/parallel.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/ops/space_to_batch_plan.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/raw_view.hpp"

namespace tbatch::detail {

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
    if (!copy_dense_rows(from.element_pointer(), from.layout(), to.element_pointer(), to.layout(),
                         stores))
      copy_planned(from, to, stores);
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

#ifdef TBATCH_BUILDING_LIBRARY
TBATCH_INLINE void space_to_batch_kernel(const BlockPlan& plan, const RawView& x,
                                         const RawView& out, const void* pad_value) {
  dispatch_width(x.element_size(), [&]<class W>(std::type_identity<W>) {
    run_space_to_batch<W>(plan, typed_view<const W>(x), typed_view<W>(out),
                          *static_cast<const W*>(pad_value));
  });
}
TBATCH_INLINE void batch_to_space_kernel(const BlockPlan& plan, const RawView& x,
                                         const RawView& out) {
  dispatch_width(x.element_size(), [&]<class W>(std::type_identity<W>) {
    run_batch_to_space<W>(plan, typed_view<const W>(x), typed_view<W>(out));
  });
}
#endif

}  // namespace tbatch::detail
