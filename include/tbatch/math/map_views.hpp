#pragma once
// map_views: the elementwise loop body on the engine. It runs fn over same-shaped views (broadcast
// inputs have stride 0), with a vectorisable loop for runs whose output is dense and whose
// inputs are dense or broadcast, and streaming stores for large outputs. The maths' kernels and
// tbatch::elementwise (a user's fused expression) are both written on it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tbatch/base/streaming_stores.hpp"
#include "tbatch/view/for_each.hpp"
#include "tbatch/view/streaming.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch::detail {

/// One input of a dense run: its elements (stride 1) or one broadcast value (stride 0), fixed at
/// compile time so that the loop over the run vectorises. The broadcast value is read once,
/// before the loop: the output may alias it.
template <bool Dense, class T>
struct RunInput;
template <class T>
struct RunInput<true, T> {
  const T* p;
  T operator[](index_t i) const { return p[i]; }
};
template <class T>
struct RunInput<false, T> {
  T value;
  T operator[](index_t) const { return value; }
};

/// Writes the dense run out[0, n): body(dst, begin, count) computes elements [begin, begin +
/// count) into dst. Through the cache directly; with streaming stores, a few KiB at a time into
/// a buffer in L1 and from there to whole output lines, so that the output's lines are never
/// read (a cached store reads the line first).
template <class Out, class Body>
void write_run(Out* out, index_t n, Stores stores, const Body& body) {
  if (stores == Stores::cached) {
    body(out, index_t(0), n);
    return;
  }
  constexpr index_t chunk_bytes = 4096;
  constexpr index_t chunk = chunk_bytes / index_t(sizeof(Out));
  alignas(64) unsigned char storage[chunk_bytes];
  Out* buffer = reinterpret_cast<Out*>(storage);
  for (index_t begin = 0; begin < n; begin += chunk) {
    const index_t count = std::min(chunk, n - begin);
    body(buffer, begin, count);
    stream_copy(out + begin, buffer, static_cast<std::size_t>(count) * sizeof(Out));
  }
}

/// out[i] = fn(inputs[i]...) over a run whose output is dense and whose inputs are dense or
/// broadcast (`stride` holds the output's and then each input's stride, 0 or 1): picks the
/// compile-time form of each input, one at a time.
template <class Out, class Fn, class Inputs, std::size_t N, class... Ready>
void dense_run(Out* out, index_t n, Stores stores, const std::array<index_t, N>& stride,
               const Fn& fn, const Inputs& inputs, const Ready&... ready) {
  constexpr std::size_t k = sizeof...(Ready);
  if constexpr (k == std::tuple_size_v<Inputs>) {
    write_run(out, n, stores, [&](Out* dst, index_t begin, index_t count) {
      for (index_t i = 0; i < count; ++i)
        dst[i] = fn(ready[begin + i]...);
    });
  } else {
    const auto* p = std::get<k>(inputs);
    using E = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    if (stride[k + 1] == 0)
      dense_run(out, n, stores, stride, fn, inputs, ready..., RunInput<false, E>{*p});
    else
      dense_run(out, n, stores, stride, fn, inputs, ready..., RunInput<true, E>{p});
  }
}

/// out = fn(inputs...) elementwise: the views share out's shape (broadcast inputs have stride
/// 0). The engine plans the walk with the output first; each run is a loop body here. A dense
/// run of the output may instead go to dense_body(out, n, stores, inputs...) when all inputs
/// are dense too (a kernel with a vectorised form of the whole run). With `streamed`, outputs
/// from the streaming threshold are written with streaming stores: that pays for a kernel that
/// only moves data (a + b), and costs one with more inputs or more arithmetic per element
/// (docs/benchmarks.md measures both), so the other kernels write through the cache.
template <class Out, class Fn, class DenseBody, class... In>
void map_views_with(const char* function, bool streamed, const Fn& fn, const DenseBody& dense_body,
                    const StridedView<Out>& out, const StridedView<const In>&... inputs) {
  constexpr std::size_t N = 1 + sizeof...(In);
  const Stores stores = streamed ? stores_for_output(out) : Stores::cached;
  for_each_run(
      function,
      [&](index_t n, const std::array<index_t, N>& stride, Out* o, const In*... in) {
        bool dense = stride[0] == 1, all_dense = stride[0] == 1;
        for (std::size_t k = 1; k < N; ++k) {
          dense = dense && (stride[k] == 0 || stride[k] == 1);
          all_dense = all_dense && stride[k] == 1;
        }
        if constexpr (!std::is_same_v<DenseBody, std::nullptr_t>) {
          if (all_dense) {
            dense_body(o, n, stores, in...);
            return;
          }
        }
        if (dense) {
          dense_run(o, n, stores, stride, fn, std::tuple<const In*...>(in...));
          return;
        }
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          for (index_t i = 0; i < n; ++i)
            o[i * stride[0]] = fn(in[i * stride[I + 1]]...);
        }
        (std::make_index_sequence<N - 1>{});
      },
      out, inputs...);
  if (stores == Stores::streaming) streaming_fence();
}
/// Visits the blocks (walk_blocks, with their inputs prefetched where that pays) whose operand 0
/// is `out`: rows(at, rows) writes the block's rows, then a padded slot's padding is written.
template <class Rows, class Out, class... In>
void write_blocks(const Rows& rows_of, const RowBlocks<1 + sizeof...(In)>& blocks, Out* out,
                  const In*... inputs) {
  walk_blocks_prefetching(
      blocks,
      [&](const std::array<index_t, 1 + sizeof...(In)>& at, index_t rows) {
        rows_of(at, rows);
        blocks.fill_padding(out + at[0], rows);
      },
      prefetch_inputs(blocks, inputs...));
}

/// The inputs' pointers at row r of the block whose operands start at `at` (operand j + 1's
/// rows blocks.row[j + 1] apart).
template <std::size_t N, class... In>
std::tuple<const In*...> block_row(const RowBlocks<N>& blocks, const std::array<index_t, N>& at,
                                   index_t r, const In*... inputs) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<const In*...>((inputs + at[I + 1] + r * blocks.row[I + 1])...);
  }
  (std::make_index_sequence<sizeof...(In)>{});
}

/// map_blocks with a run per row, or per block where its rows follow each other in every operand.
template <class Out, class Fn, class... In>
void map_row_runs(const Fn& fn, const RowBlocks<1 + sizeof...(In)>& blocks, Out* out,
                  const In*... inputs) {
  constexpr std::size_t N = 1 + sizeof...(In);
  const bool joined = blocks.blocks_are_runs();  // a padded slot's rows, say
  write_blocks(
      [&](const std::array<index_t, N>& at, index_t rows) {
        const index_t runs = joined ? 1 : rows,
                      length = joined ? rows * blocks.width : blocks.width;
        for (index_t r = 0; r < runs && length > 0; ++r)
          dense_run(out + at[0] + r * blocks.row[0], length, Stores::cached, blocks.col, fn,
                    block_row(blocks, at, r, inputs...));
      },
      blocks, out, inputs...);
}

/// map_blocks for rows of one line whose inputs are dense along them (col 1): a row's values are
/// computed with its length a constant into a local array (registers, which no input can alias)
/// and stored at once.
template <class Out, class Fn, class... In>
void map_line_rows(const Fn& fn, const RowBlocks<1 + sizeof...(In)>& blocks, Out* out,
                   const In*... inputs) {
  constexpr std::size_t N = 1 + sizeof...(In);
  constexpr index_t width = chunk_width<Out>;
  write_blocks(
      [&](const std::array<index_t, N>& at, index_t rows) {
        for (index_t r = 0; r < rows; ++r) {
          Out values[std::size_t(width)];
          std::apply(
              [&](const In*... row) {
                for (index_t i = 0; i < width; ++i)
                  values[i] = fn(row[i]...);
              },
              block_row(blocks, at, r, inputs...));
          std::memcpy(out + at[0] + r * blocks.row[0], values, sizeof values);
        }
      },
      blocks, out, inputs...);
}

/// map_blocks for blocks whose output's rows follow each other, and each input's too (row ==
/// width, col 1) or it is one row or one value per block (row 0: a (B, D) or (B, 1) operand):
/// those are repeated into a tile of row_tile_bytes once per block, so that the block is
/// computed in runs of the tile's rows.
template <class Out, class Fn, class... In>
void map_tiled_rows(const Fn& fn, const RowBlocks<1 + sizeof...(In)>& blocks, Out* out,
                    const In*... inputs) {
  constexpr std::size_t N = 1 + sizeof...(In);
  constexpr index_t widest = index_t(std::max({sizeof(Out), sizeof(In)...}));
  const index_t width = blocks.width;
  std::tuple<std::array<In, std::size_t(row_tile_bytes) / sizeof(In)>...> tiles;
  write_blocks(
      [&](const std::array<index_t, N>& at, index_t rows) {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
          const index_t tile_rows = std::min(rows, row_tile_bytes / (width * widest));
          const auto repeat = [&](std::size_t j, auto& tile, const auto* first) {
            if (blocks.row[j] != 0) return;
            for (index_t k = 0; k < tile_rows; ++k)
              for (index_t c = 0; c < width; ++c)
                tile[std::size_t(k * width + c)] = first[blocks.col[j] * c];
          };
          (repeat(I + 1, std::get<I>(tiles), inputs + at[I + 1]), ...);
          for (index_t r = 0; r < rows; r += tile_rows) {
            const index_t length = std::min(tile_rows, rows - r) * width;
            const std::tuple<const In*...> row = block_row(blocks, at, r, inputs...);
            const std::tuple<const In*...> run(
                (blocks.row[I + 1] == 0 ? std::get<I>(tiles).data() : std::get<I>(row))...);
            Out* o = out + at[0] + r * width;
            for (index_t i = 0; i < length; ++i)
              o[i] = fn(std::get<I>(run)[i]...);
          }
        }
        (std::make_index_sequence<N - 1>{});
      },
      blocks, out, inputs...);
}

/// out = fn(inputs...) over blocks of rows (walk_blocks; operand 0 the output, which overlaps no
/// input): each row is a dense run of the output whose inputs are dense or broadcast (col 1 or
/// 0), written through the cache. For batches of many small elements, which one map_views call
/// per element would spend in planning. A run per row costs more in its setup than in its loop
/// where rows are short, so rows of one line, and short rows paired with one row per block (an
/// element minus its centroid), take the loops above (docs/benchmarks.md).
template <class Out, class Fn, class... In>
void map_blocks(const Fn& fn, const RowBlocks<1 + sizeof...(In)>& blocks, Out* out,
                const In*... inputs) {
  if (blocks.blocks_are_runs()) return map_row_runs(fn, blocks, out, inputs...);
  const index_t width = blocks.width;
  bool dense = true, tiled = width > 0 && blocks.row[0] == width;
  for (std::size_t j = 1; j < blocks.row.size(); ++j) {
    dense = dense && blocks.col[j] == 1;
    tiled = tiled && (blocks.row[j] == 0 || (blocks.col[j] == 1 && blocks.row[j] == width));
  }
  constexpr index_t widest = index_t(std::max({sizeof(Out), sizeof(In)...}));
  if (dense && width == chunk_width<Out> && width * index_t(sizeof(Out)) == line_bytes)
    return map_line_rows(fn, blocks, out, inputs...);
  if (tiled && 2 * width * widest <= row_tile_bytes)
    return map_tiled_rows(fn, blocks, out, inputs...);
  map_row_runs(fn, blocks, out, inputs...);
}

template <class Out, class Fn, class... In>
void map_views(const char* function, const Fn& fn, const StridedView<Out>& out,
               const StridedView<const In>&... inputs) {
  map_views_with(function, false, fn, nullptr, out, inputs...);
}

}  // namespace tbatch::detail
