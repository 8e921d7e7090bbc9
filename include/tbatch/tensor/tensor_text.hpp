#pragma once
// The text operator<< prints for tensors, batches and RaggedTensorDict. Numbers follow
// torch._tensor_str: one format per tensor, chosen from its printed values. Everything here works
// on double / int64 / uint64 / bool and strings, so the part that knows the element type (printed()
// in tensor/tensor_class.hpp, one function for every dtype) only reads the elements.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/shape.hpp"

#if TBATCH_DEFINITIONS
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "tbatch/view/layout.hpp"
#include "tbatch/view/walk.hpp"
#endif

namespace tbatch::detail {

inline constexpr index_t print_threshold = 1000;  // elide above this many elements, as numpy
inline constexpr index_t print_edge = 3;          // elements kept at each end of an elided dim

/// A tensor's shape and its printed elements (all, or the elided selection) as text, row-major.
struct PrintedTensor {
  Shape shape;
  std::vector<std::string> cells;
};

TBATCH_INLINE bool elided(const Shape& shape);

/// Offsets (in elements) of the elements a tensor of `shape` and `strides` starting at `offset`
/// prints, row-major: all of them, or when elided the print_edge first and last of each dim. An
/// elided dim is two dims (which end, which of its print_edge elements), and the engine's walk
/// writes each printed element's offset at its row-major position.
TBATCH_INLINE std::vector<index_t> printed_offsets(const Shape& shape, const Strides& strides,
                                                   index_t offset);

/// torch's float format: whole numbers as "3.", else 4 decimals; scientific when the nonzero
/// finite magnitudes span more than 1000x, exceed 1e8, or (not whole) go below 1e-4.
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<double>& values);
/// Integers and bools as Python prints them.
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<std::int64_t>& values);
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<std::uint64_t>& values);
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<bool>& values);

/// "[a, b, ...]".
TBATCH_INLINE void append_sizes(std::string& text, const index_t* sizes, std::size_t count);
TBATCH_INLINE void append_shape(std::string& text, const Shape& shape);

TBATCH_INLINE void append_block(std::string& text, const PrintedTensor& t, std::size_t dim,
                                bool elide, std::size_t width, std::size_t column,
                                std::size_t& next_cell);

/// The nested-bracket values of `t`, each cell right-aligned to the widest, for text whose
/// current line already has `column` characters (where the outer bracket goes).
TBATCH_INLINE void append_values(std::string& text, const PrintedTensor& t, std::size_t column);

/// "tensor(<values>, shape=[...], dtype=...)", on a line of its own.
TBATCH_INLINE void append_tensor(std::string& text, const PrintedTensor& t, std::string_view dtype);

/// ",\n<indent><name>=<values>": a field on its own line, its rows aligned under the first.
TBATCH_INLINE void append_field(std::string& text, std::size_t indent, std::string_view name,
                                const PrintedTensor& t);

/// "<name>(batch_size=B, data_shape=[...], dtype=...": the first line of a batch's text.
TBATCH_INLINE std::string batch_header(const char* name, index_t batch_size,
                                       const Shape& data_shape, std::string_view dtype);

/// Writes `text` untouched by the stream's precision, flags and width; the width is consumed, as
/// every formatted output does.
TBATCH_INLINE std::ostream& write_text(std::ostream& out, const std::string& text);

}  // namespace tbatch::detail

#if TBATCH_DEFINITIONS

namespace tbatch::detail {

TBATCH_INLINE bool elided(const Shape& shape) {
  return shape.numel() > print_threshold;
}

TBATCH_INLINE std::vector<index_t> printed_offsets(const Shape& shape, const Strides& strides,
                                                   index_t offset) {
  const bool elide = elided(shape);
  Shape printed;
  Strides at;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (elide && shape[d] > 2 * print_edge) {
      printed.push_back(2);
      at.push_back((shape[d] - print_edge) * strides[d]);
      printed.push_back(print_edge);
    } else {
      printed.push_back(shape[d]);
    }
    at.push_back(strides[d]);
  }
  const Strides position = layout::contiguous_strides(printed);
  std::vector<index_t> offsets(static_cast<std::size_t>(printed.numel()));
  if (offsets.empty()) return offsets;
  const RunPlan<2> plan = plan_runs<2>(printed, {&position, &at});
  const index_t length = plan.run_length();
  const index_t to = plan.inner_stride(0), from = plan.inner_stride(1);
  walk_runs(plan, {0, offset}, [&](const std::array<index_t, 2>& first) {
    for (index_t i = 0; i < length; ++i)
      offsets[static_cast<std::size_t>(first[0] + i * to)] = first[1] + i * from;
  });
  return offsets;
}

TBATCH_INLINE std::vector<std::string> formatted(const std::vector<double>& values) {
  bool whole = true;
  double smallest = 0, largest = 0;
  for (const double v : values) {
    if (!std::isfinite(v) || v == 0) continue;
    whole = whole && v == std::ceil(v);
    const double magnitude = std::fabs(v);
    if (largest == 0 || magnitude < smallest) smallest = magnitude;
    if (magnitude > largest) largest = magnitude;
  }
  const bool scientific =
      largest > 0 && (largest / smallest > 1000 || largest > 1e8 || (!whole && smallest < 1e-4));
  const char* format = scientific ? "%.4e" : whole ? "%.0f." : "%.4f";
  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (const double v : values) {
    if (std::isnan(v)) {
      cells.push_back(std::string("nan"));  // never "-nan"
    } else if (std::isinf(v)) {
      cells.push_back(std::string(v > 0 ? "inf" : "-inf"));
    } else {
      char buffer[32];  // fixed formats only meet magnitudes <= 1e8
      const int length = std::snprintf(buffer, sizeof buffer, format, v);
      cells.push_back(std::string(buffer, static_cast<std::size_t>(length)));
    }
  }
  return cells;
}
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<std::int64_t>& values) {
  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (const std::int64_t v : values)
    cells.push_back(std::to_string(v));
  return cells;
}
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<std::uint64_t>& values) {
  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (const std::uint64_t v : values)
    cells.push_back(std::to_string(v));
  return cells;
}
TBATCH_INLINE std::vector<std::string> formatted(const std::vector<bool>& values) {
  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (const bool v : values)
    cells.push_back(std::string(v ? "true" : "false"));
  return cells;
}

TBATCH_INLINE void append_sizes(std::string& text, const index_t* sizes, std::size_t count) {
  text += '[';
  for (std::size_t d = 0; d < count; ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(sizes[d]);
  }
  text += ']';
}

TBATCH_INLINE void append_shape(std::string& text, const Shape& shape) {
  append_sizes(text, shape.data(), shape.size());
}

TBATCH_INLINE void append_block(std::string& text, const PrintedTensor& t, std::size_t dim,
                                bool elide, std::size_t width, std::size_t column,
                                std::size_t& next_cell) {
  if (dim == t.shape.size()) {
    const std::string& cell = t.cells[next_cell++];
    text.append(width - cell.size(), ' ');
    text += cell;
    return;
  }
  // As torch: inner dims on one line, then one line per row and a blank line per extra dim.
  const std::size_t dims_below = t.shape.size() - dim - 1;
  std::string separator = ",";
  if (dims_below == 0) {
    separator += ' ';
  } else {
    separator.append(dims_below, '\n');
    separator.append(column + dim + 1, ' ');
  }
  const index_t size = t.shape[dim];
  text += '[';
  for (index_t i = 0; i < size; ++i) {
    if (i > 0) text += separator;
    if (elide && size > 2 * print_edge && i == print_edge) {
      text += "...";
      text += separator;
      i = size - print_edge;
    }
    append_block(text, t, dim + 1, elide, width, column, next_cell);
  }
  text += ']';
}

TBATCH_INLINE void append_values(std::string& text, const PrintedTensor& t, std::size_t column) {
  std::size_t width = 0;
  for (const std::string& cell : t.cells)
    width = std::max(width, cell.size());
  std::size_t next_cell = 0;
  append_block(text, t, 0, elided(t.shape), width, column, next_cell);
}

TBATCH_INLINE void append_tensor(std::string& text, const PrintedTensor& t,
                                 std::string_view dtype) {
  text += "tensor(";
  append_values(text, t, 7);
  text += ", shape=";
  append_shape(text, t.shape);
  text += ", dtype=";
  text.append(dtype.data(), dtype.size());
  text += ')';
}

TBATCH_INLINE void append_field(std::string& text, std::size_t indent, std::string_view name,
                                const PrintedTensor& t) {
  text += ",\n";
  text.append(indent, ' ');
  text.append(name.data(), name.size());
  text += '=';
  append_values(text, t, indent + name.size() + 1);
}

TBATCH_INLINE std::string batch_header(const char* name, index_t batch_size,
                                       const Shape& data_shape, std::string_view dtype) {
  std::string text = name;
  text += "(batch_size=";
  text += std::to_string(batch_size);
  text += ", data_shape=";
  append_shape(text, data_shape);
  text += ", dtype=";
  text.append(dtype.data(), dtype.size());
  return text;
}

TBATCH_INLINE std::ostream& write_text(std::ostream& out, const std::string& text) {
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.width(0);
  return out;
}

}  // namespace tbatch::detail

#endif  // TBATCH_DEFINITIONS
