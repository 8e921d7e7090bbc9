#pragma once
// Streaming (non-temporal) stores for outputs larger than the cache. A normal store first
// reads the destination line into the cache (read-for-ownership), so copying n bytes moves 3n
// through memory; a streaming store writes the line without reading it, 2n. An output too big
// to stay in the cache gains that third; a smaller one would lose the cached lines its consumer
// is about to read, so the choice is by output size, with a threshold the user can change.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/streaming_stores.hpp"
#include "tbatch/base/tuning.hpp"

#if TBATCH_STREAMING_STORES
#include <emmintrin.h>
#endif

namespace tbatch {
namespace detail {

// Streaming stores go out in whole cache lines: a line only partly written by them is flushed on
// its own, read-modify-write in memory. Partial lines at the ends of a range take normal stores.
constexpr std::size_t stream_unit = 16;  // bytes per streaming store

inline std::size_t bytes_to_line(const void* p) {
  constexpr auto line = static_cast<std::size_t>(line_bytes);
  return (line - reinterpret_cast<std::uintptr_t>(p) % line) % line;
}

/// memcpy (no overlap) whose whole cache lines of `dst` are written with streaming stores.
inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if TBATCH_STREAMING_STORES
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const std::size_t head = std::min(bytes, bytes_to_line(out));
  std::memcpy(out, in, head);
  out += head, in += head, bytes -= head;
  constexpr auto line = static_cast<std::size_t>(line_bytes);
  for (; bytes >= line; out += line, in += line, bytes -= line)
    for (std::size_t u = 0; u < line; u += stream_unit)
      _mm_stream_si128(reinterpret_cast<__m128i*>(out + u),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + u)));
  std::memcpy(out, in, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

/// std::fill_n whose whole cache lines are written with streaming stores.
template <class T>
void stream_fill(T* out, index_t n, T value) {
#if TBATCH_STREAMING_STORES
  if constexpr (std::is_trivially_copyable_v<T> && stream_unit % sizeof(T) == 0) {
    // A T-aligned pointer reaches line alignment in whole elements, from where the repeated
    // pattern lines up with the elements.
    const index_t head = std::min<index_t>(n, static_cast<index_t>(bytes_to_line(out) / sizeof(T)));
    std::fill_n(out, head, value);
    out += head, n -= head;
    constexpr index_t per_unit = index_t(stream_unit / sizeof(T)),
                      per_line = line_bytes / index_t(sizeof(T));
    T pattern[static_cast<std::size_t>(per_unit)];
    std::fill_n(pattern, per_unit, value);
    __m128i unit;
    std::memcpy(&unit, pattern, stream_unit);
    for (; n >= per_line; out += per_line, n -= per_line)
      for (index_t u = 0; u < per_line; u += per_unit)
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + u), unit);
  }
#endif
  std::fill_n(out, n, value);
}

/// Orders this thread's streaming stores before its later stores, so whoever it hands the
/// output to (the caller, another thread after a join) sees them.
inline void streaming_fence() {
#if TBATCH_STREAMING_STORES
  _mm_sfence();
#endif
}

/// Calls move(std::integral_constant<std::size_t, W>{}) with the widest move W of 32, 16, 8
/// and 4 bytes that fits in `bytes` (4 to a line), for two_moves.
template <class Move>
[[gnu::always_inline]] inline void by_move_width(std::size_t bytes, Move&& move) {
  if (bytes >= 32)
    move(std::integral_constant<std::size_t, 32>{});
  else if (bytes >= 16)
    move(std::integral_constant<std::size_t, 16>{});
  else if (bytes >= 8)
    move(std::integral_constant<std::size_t, 8>{});
  else
    move(std::integral_constant<std::size_t, 4>{});
}

/// Copies a row of `bytes` (W to 2W) bytes as two W-byte moves, the second ending at the row's
/// end, overlapping the first.
template <std::size_t W>
[[gnu::always_inline]] inline void two_moves(char* out, const char* in, std::size_t bytes) {
  std::memcpy(out, in, W);
  std::memcpy(out + bytes - W, in + bytes - W, W);
}

/// The row copier (no overlap), inline: a row shorter than a line is two fixed-size moves
/// (by_move_width), a row of up to inline_row_max_lines lines is copied in whole lines (the
/// last one ending at the row's end), a longer row is one memcpy. A memcpy call per short row
/// costs more than its copy.
template <class T>
[[gnu::always_inline]] inline void copy_row(T* out, const T* in, index_t n) {
  auto* o = reinterpret_cast<char*>(out);
  const auto* i = reinterpret_cast<const char*>(in);
  const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
  constexpr auto line = static_cast<std::size_t>(line_bytes);
  if (bytes > static_cast<std::size_t>(inline_row_max_lines) * line) {
    std::memcpy(o, i, bytes);
  } else if (bytes >= line) {
    std::size_t at = 0;
    for (; at + line <= bytes; at += line)
      std::memcpy(o + at, i + at, line);
    if (at < bytes) std::memcpy(o + bytes - line, i + bytes - line, line);
  } else if (bytes >= 4) {
    by_move_width(bytes, [&]<std::size_t W>(std::integral_constant<std::size_t, W>) {
      two_moves<W>(o, i, bytes);
    });
  } else {
    for (std::size_t k = 0; k < bytes; ++k)
      o[k] = i[k];
  }
}

/// copy_row over `rows` rows, row r from in + r * in_stride to out + r * out_stride. Rows
/// shorter than a line, the same for every row, are copied by a loop per move width.
template <class T>
void copy_rows(T* out, index_t out_stride, const T* in, index_t in_stride, index_t rows,
               index_t n) {
  const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
  if (bytes >= static_cast<std::size_t>(line_bytes) || bytes < 4) {
    for (index_t r = 0; r < rows; ++r)
      copy_row(out + r * out_stride, in + r * in_stride, n);
    return;
  }
  by_move_width(bytes, [&]<std::size_t W>(std::integral_constant<std::size_t, W>) {
    if (bytes == W)  // one move, not two over the same bytes
      for (index_t r = 0; r < rows; ++r)
        std::memcpy(out + r * out_stride, in + r * in_stride, W);
    else
      for (index_t r = 0; r < rows; ++r)
        two_moves<W>(reinterpret_cast<char*>(out + r * out_stride),
                     reinterpret_cast<const char*>(in + r * in_stride), bytes);
  });
}

/// The copy and fill of a row, with the given stores.
template <class T>
void copy_row_with(Stores stores, T* out, const T* in, index_t n) {
  if (stores == Stores::streaming)
    stream_copy(out, in, static_cast<std::size_t>(n) * sizeof(T));
  else  // a whole element per call: memcpy (copy_row's inline lines suit a 2-D loop's short rows)
    std::memcpy(static_cast<void*>(out), in, static_cast<std::size_t>(n) * sizeof(T));
}
template <class T>
void fill_row_with(Stores stores, T* out, index_t n, T value) {
  if (stores == Stores::streaming)
    stream_fill(out, n, value);
  else
    std::fill_n(out, n, value);
}

}  // namespace detail
}  // namespace tbatch
