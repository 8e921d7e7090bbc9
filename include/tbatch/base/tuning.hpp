#pragma once
// Every tuning constant of tbatch's kernels, one line each. They change speed only, never
// results. The measurement behind each value is in docs/benchmarks.md, "Tuning constants".

#include <algorithm>

#include "tbatch/base/config.hpp"

namespace tbatch {
namespace detail {

/// A cache line: the chunk dense row kernels move at once and the unit of streaming stores.
inline constexpr index_t line_bytes = 64;
/// Elements of T in one line_bytes chunk (at least one).
template <class T>
inline constexpr index_t chunk_width = std::max<index_t>(1, line_bytes / index_t(sizeof(T)));
/// Rows up to this many lines are copied inline by copy_row; longer ones by memcpy.
inline constexpr index_t inline_row_max_lines = 16;

/// With TBATCH_OPENMP, loops whose work exceeds this many bytes run on max_threads() threads.
inline constexpr index_t parallel_min_bytes = index_t(1) << 20;
/// The default output size from which kernels write with streaming stores (user-settable).
inline constexpr index_t default_streaming_min_bytes = index_t(16) << 20;

/// Copies and fills below this many bytes skip the ordered plan and go row by row (dense rows).
inline constexpr index_t small_copy_bytes = index_t(1) << 14;
/// Larger dense-row copies and fills skip the ordered plan when their rows are this long or more.
inline constexpr index_t dense_row_min_bytes = index_t(1) << 12;
/// A copy's row dim may swap with a longer outer dim whose destination span is at most this.
inline constexpr index_t row_swap_span_bytes = index_t(1) << 12;
/// Rows (source elements along the run) of one tile of a transposed copy.
inline constexpr index_t copy_tile_rows = 128;
/// Bytes of a tile's columns in a transposed copy (copy_tile_bytes / element size columns).
inline constexpr index_t copy_tile_bytes = 128;
/// A transposed copy is tiled only when both tiled dims have at least this many elements.
inline constexpr index_t min_tile_extent = 8;
/// The widest span of offsets (elements) the aliasing tests mark one by one to settle a case.
inline constexpr index_t exact_alias_check_max = index_t(1) << 16;

/// pad: the shortest output row (bytes) written by the streaming constant-row writer.
inline constexpr index_t streamed_row_min_bytes = 384;
/// pad, constant mode: dense output rows up to this long are filled whole, then copied into.
inline constexpr index_t pad_fill_first_row_bytes = 128;
/// pad: bytes of output per block, so a block's interior is in cache when its borders read it.
inline constexpr index_t pad_block_bytes = index_t(1) << 19;
/// pad of a batch: the most rows an element (or slot) may have to be padded row by row.
inline constexpr index_t pad_rows_limit = 4096;
/// pad of a batch: rows of source-row tables kept before they are dropped and rebuilt.
inline constexpr index_t pad_rows_cache = index_t(1) << 17;
/// space_to_batch_nd: boxes whose (batch, o_1) slabs are smaller (elements) go in one copy.
inline constexpr index_t min_slab_elements = 4096;
/// scatter of batches: update offsets computed on the stack per block.
inline constexpr index_t index_block = 1024;
/// scatter_reduce mean: positions of self counted at once (index_t counts per position).
inline constexpr index_t mean_count_block = index_t(1) << 18;
/// The target's widest vector register, in bytes (AVX-512: 64, AVX: 32, otherwise 16), or
/// TBATCH_VECTOR_REGISTER_BYTES where that is defined.
#if defined(TBATCH_VECTOR_REGISTER_BYTES)
inline constexpr index_t vector_register_bytes = TBATCH_VECTOR_REGISTER_BYTES;
#elif defined(__AVX512F__)
inline constexpr index_t vector_register_bytes = 64;
#elif defined(__AVX__)
inline constexpr index_t vector_register_bytes = 32;
#else
inline constexpr index_t vector_register_bytes = 16;
#endif
/// Reductions fold a tile's columns with up to this many bytes of accumulators in registers.
inline constexpr index_t fold_register_bytes = 8 * vector_register_bytes;
/// Blocks of rows: input slots up to this many bytes apart are prefetched a few blocks ahead.
inline constexpr index_t prefetch_slot_max_bytes = 4096;
/// Blocks of rows: the cache lines prefetched from the start of such a slot, whatever its rows.
inline constexpr index_t prefetch_slot_max_lines = 8;
/// Blocks of rows: how many blocks ahead of the one computed its inputs are prefetched.
inline constexpr index_t block_lookahead = 16;
/// Blocks of short rows: an operand's one row per block (a (B, D) operand) is repeated into a
/// tile of this many bytes, so that the block is computed in runs of the tile's rows.
inline constexpr index_t row_tile_bytes = 1024;

}  // namespace detail
}  // namespace tbatch
