#pragma once
// Streaming writer for constant-padded rows: every whole 64-byte line of the output is one
// aligned streaming store, composed in a register by masked loads from the source rows it
// covers, the pad value in the other lanes, instead of line-splitting stores and border
// elements one by one. It needs AVX-512BW (masked byte loads suppress faults
// on masked-off lanes, which may lie outside the source), detected at run time, so a build
// without -mavx512bw uses it on CPUs that have it. It calls the compilers' x86 builtins rather
// than <immintrin.h>, whose AVX-512 declarations cost every header-only file about 0.5 s to parse.

#include <array>
#include <cstdint>
#include <cstring>

#include "tbatch/base/config.hpp"
#include "tbatch/view/streaming.hpp"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define TBATCH_CONSTANT_ROWS 1
#else
#define TBATCH_CONSTANT_ROWS 0
#endif

namespace tbatch {
namespace detail {

/// True when stream_constant_rows can run on this CPU.
inline bool constant_rows_supported() {
#if TBATCH_CONSTANT_ROWS
  static const bool supported = [] {
    __builtin_cpu_init();  // in case this runs from a static initializer
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("bmi2");
  }();
  return supported;
#else
  return false;
#endif
}

/// `planes` planes of `rows` output rows of `row_length` elements, contiguous from the output
/// pointer (row j of plane i starts (i * rows + j) * row_length elements in). Each row holds the
/// pad value except columns [lo, lo + width), which copy source row `source_rows[j]` of plane i
/// (at i * in_plane_stride + source_rows[j] * in_row_stride from the source pointer, dense
/// along the row); source_rows[j] < 0 marks a row of the value only.
struct ConstantRows {
  index_t planes = 0, rows = 0, row_length = 0, lo = 0, width = 0;
  const index_t* source_rows = nullptr;
  index_t in_plane_stride = 0, in_row_stride = 0;
};

#if TBATCH_CONSTANT_ROWS

static_assert(line_bytes == 64, "a line is one 512-bit register");

#define TBATCH_AVX512_TARGET __attribute__((target("avx512f,avx512bw,bmi2")))

/// One 64-byte line in a 512-bit register, and a bit per byte lane of it.
typedef char Line __attribute__((vector_size(64)));
typedef long long LineWords __attribute__((vector_size(64)));
using LineMask = unsigned long long;

/// The lanes [begin, end) of a 64-byte line (bounds clamped to the line).
TBATCH_AVX512_TARGET inline LineMask line_lanes(index_t begin, index_t end) {
  begin = begin < 0 ? 0 : begin > line_bytes ? line_bytes : begin;
  end = end < begin ? begin : end > line_bytes ? line_bytes : end;
  return __builtin_ia32_bzhi_di(~LineMask(0), LineMask(end)) &
         ~__builtin_ia32_bzhi_di(~LineMask(0), LineMask(begin));
}

TBATCH_AVX512_TARGET inline Line load_line(std::uintptr_t at) {
  Line v;
  std::memcpy(&v, reinterpret_cast<const void*>(at), sizeof v);
  return v;
}

/// `line` with the lanes in `lanes` loaded from `at` (the other lanes are not read, so they may
/// lie outside any allocation).
TBATCH_AVX512_TARGET inline Line load_lanes(Line line, LineMask lanes, std::uintptr_t at) {
#if defined(__clang__)
  return __builtin_ia32_loaddquqi512_mask(reinterpret_cast<const Line*>(at), line, lanes);
#else
  return __builtin_ia32_loaddquqi512_mask(reinterpret_cast<const char*>(at), line, lanes);
#endif
}

TBATCH_AVX512_TARGET inline void store_lanes(std::uintptr_t at, Line line, LineMask lanes) {
#if defined(__clang__)
  __builtin_ia32_storedquqi512_mask(reinterpret_cast<Line*>(at), line, lanes);
#else
  __builtin_ia32_storedquqi512_mask(reinterpret_cast<char*>(at), line, lanes);
#endif
}

/// A streaming store of a whole line at `at` (64-byte aligned).
TBATCH_AVX512_TARGET inline void stream_line(std::uintptr_t at, Line line) {
#if defined(__clang__)
  __builtin_nontemporal_store((LineWords)line, reinterpret_cast<LineWords*>(at));
#else
  __builtin_ia32_movntdq512(reinterpret_cast<LineWords*>(at), (LineWords)line);
#endif
}

/// An output row of stream_constant_rows, as byte offsets from its output: where it ends, the
/// part it copies and the address to load from for the line at offset `at` (bias + at; integers,
/// since for a line starting before the copied part that address lies before the source row).
struct ConstantRow {
  index_t end = 0, copy_begin = 0, copy_end = 0;
  std::uintptr_t bias = 0;
  bool copies = false;
};

/// `line` with the lanes of the line at offset `at` that `row` copies loaded from its source.
TBATCH_AVX512_TARGET inline Line load_copied_lanes(const ConstantRow& row, Line line, index_t at) {
  return load_lanes(line, line_lanes(row.copy_begin - at, row.copy_end - at),
                    row.bias + std::uintptr_t(at));
}

/// Writes `rows` of T (see ConstantRows; rows of at least 64 bytes, so a line meets at most two)
/// from `out` with streaming stores, then fences. The two lines at the ends of the output, which
/// it may share with its neighbours, take masked normal stores of its own lanes. Call only when
/// constant_rows_supported().
template <class T>
TBATCH_AVX512_TARGET void stream_constant_rows(T* out, const T* in, const ConstantRows& rows,
                                               T value) {
  constexpr index_t elem = index_t(sizeof(T));
  static_assert(line_bytes % elem == 0, "elements tile a cache line");
  const index_t row_bytes = rows.row_length * elem, total = rows.planes * rows.rows * row_bytes;
  TBATCH_ASSERT(row_bytes >= line_bytes);
  if (total == 0) return;
  T pattern[static_cast<std::size_t>(line_bytes / elem)];
  for (T& p : pattern)
    p = value;
  const Line value_line = load_line(reinterpret_cast<std::uintptr_t>(pattern));
  const auto base = reinterpret_cast<std::uintptr_t>(out);

  index_t plane = 0, row = 0;  // of the next row to describe
  auto describe_next = [&] {
    ConstantRow r;
    const index_t begin = (plane * rows.rows + row) * row_bytes, s = rows.source_rows[row];
    r.end = begin + row_bytes;
    r.copies = s >= 0 && rows.width > 0;
    if (r.copies) {
      r.copy_begin = begin + rows.lo * elem;
      r.copy_end = r.copy_begin + rows.width * elem;
      r.bias = reinterpret_cast<std::uintptr_t>(in + plane * rows.in_plane_stride +
                                                s * rows.in_row_stride) -
               std::uintptr_t(r.copy_begin);
    }
    if (++row == rows.rows) row = 0, ++plane;
    return r;
  };
  const index_t row_count = rows.planes * rows.rows;
  ConstantRow current = describe_next(),
              following = row_count > 1 ? describe_next() : ConstantRow{};
  index_t described = row_count > 1 ? 2 : 1;
  for (std::uintptr_t line = base & ~std::uintptr_t(line_bytes - 1);
       line < base + std::uintptr_t(total); line += line_bytes) {
    const index_t at = index_t(line - base);  // negative for a line starting before the output
    if (current.end <= at) {
      current = following;
      following = described < row_count ? (++described, describe_next()) : ConstantRow{};
    }
    Line v;
    if (current.copies && current.copy_begin <= at && at + line_bytes <= current.copy_end) {
      v = load_line(current.bias + std::uintptr_t(at));
    } else {
      v = current.copies ? load_copied_lanes(current, value_line, at) : value_line;
      if (current.end < at + line_bytes && following.copies)
        v = load_copied_lanes(following, v, at);
    }
    if (at >= 0 && at + line_bytes <= total)
      stream_line(line, v);
    else
      store_lanes(line, v, line_lanes(-at, total - at));
  }
  streaming_fence();
}

/// stream_constant_rows over a run of `planes` planes, the i-th at out + i * strides[0] and
/// in + i * strides[1] (`rows.planes` unused): one call when the planes are contiguous in the
/// output, else one per plane.
template <class T>
TBATCH_AVX512_TARGET void stream_constant_planes(T* out, const T* in, index_t planes,
                                                 const std::array<index_t, 2>& strides,
                                                 ConstantRows rows, T value) {
  rows.in_plane_stride = strides[1];
  if (strides[0] == rows.rows * rows.row_length) {
    rows.planes = planes;
    stream_constant_rows(out, in, rows, value);
    return;
  }
  rows.planes = 1;
  for (index_t i = 0; i < planes; ++i)
    stream_constant_rows(out + i * strides[0], in + i * strides[1], rows, value);
}

#undef TBATCH_AVX512_TARGET

#endif

}  // namespace detail
}  // namespace tbatch
