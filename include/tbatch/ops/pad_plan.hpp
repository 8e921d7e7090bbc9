#pragma once
// pad's modes and plan: the pads per dim, the padded shape, and where each border value is read.

#include <algorithm>
#include <array>
#include <cstddef>
#include <ostream>
#include <string_view>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {

/// How pad fills the border. For the source [1, 2, 3] padded by 2 on both sides:
/// constant (value v) [v, v, 1, 2, 3, v, v]; reflect (edge not repeated) [3, 2, 1, 2, 3, 2, 1];
/// symmetric (edge repeated) [2, 1, 1, 2, 3, 3, 2]; replicate (clamp) [1, 1, 1, 2, 3, 3, 3];
/// circular (wrap) [2, 3, 1, 2, 3, 1, 2].
enum class PadMode { constant, reflect, replicate, circular, symmetric };

/// Name of a mode as torch spells it ("constant", "reflect", ...); "invalid" for other values.
TBATCH_INLINE std::string_view pad_mode_name(PadMode mode);
inline std::ostream& operator<<(std::ostream& out, PadMode mode) {
  return out << pad_mode_name(mode);
}

namespace detail {

/// Padding of one dim: elements added before index 0 and after the last index (negative
/// values crop).
struct DimPad {
  index_t before = 0;
  index_t after = 0;

  bool pads() const { return before != 0 || after != 0; }
};

TBATCH_INLINE void check_pad_mode(PadMode mode, const char* function);

/// Only constant mode uses `value` (torch rejects a value for the other modes as well).
template <class T>
void check_pad_value(PadMode mode, T value, const char* function) {
  if (mode != PadMode::constant && !(value == T(0)))
    fail<ValueError>(function, {"value ", widen(value), " is only used by mode constant; mode ",
                                mode, " takes no value (leave it 0)"});
}

/// Per-dim pads (first dim first) from a flat list in torch order: (before, after) of the last
/// dim, then of the dim before it, ... `subject` completes "but <subject> rank r".
TBATCH_INLINE std::vector<DimPad> pads_from_flat(const std::vector<index_t>& flat, index_t rank,
                                                 const char* function, const char* subject);

/// Per-dim pads from {before, after} pairs, one per dim, first dim first; no pairs at all pads
/// nothing (so `pad(x, {})`, which picks this form, means no padding as in the flat form).
TBATCH_INLINE std::vector<DimPad> pads_from_pairs(const std::vector<std::array<index_t, 2>>& pairs,
                                                  index_t rank, const char* function,
                                                  const char* subject);

/// " of element i" for errors about batch elements, nothing for dense tensors.
struct ElementSuffix {
  index_t element = -1;
  friend std::ostream& operator<<(std::ostream& out, const ElementSuffix& s) {
    if (s.element >= 0) out << " of element " << s.element;
    return out;
  }
};

/// The shape of `shape` padded by `pads`, after checking every dim against the mode's limits:
/// output sizes >= 0; reflect needs pads < size, symmetric and circular pads <= size,
/// replicate a non-empty dim (only positive pads count; crops need no source data).
TBATCH_INLINE Shape padded_shape(const Shape& shape, const std::vector<DimPad>& pads, PadMode mode,
                                 const char* function, index_t element = -1);

/// One dim of a pad, in output positions: [lo, hi) holds source elements lo - before ...,
/// [0, lo) is the leading border and [hi, size_out) the trailing one.
struct PadDim {
  index_t size_in = 0, size_out = 0, before = 0, after = 0, lo = 0, hi = 0;

  bool pads() const { return before != 0 || after != 0; }
};

TBATCH_INLINE std::vector<PadDim> plan_pad(const Shape& shape, const std::vector<DimPad>& pads);

/// Slope of the map from a border's output positions to the positions it copies:
/// reflect and symmetric run backwards, replicate stays put, circular runs forwards.
TBATCH_INLINE index_t border_slope(PadMode mode);

/// The output position whose element the border position `j` copies: the mode's index rule
/// maps j's source coordinate (outside [0, size_in)) back into the source, and the result is
/// shifted to where the interior holds it.
TBATCH_INLINE index_t border_source(PadMode mode, const PadDim& p, index_t j);

/// The source index output position `j` of dim `p` reads: j - before inside the source, the
/// mode's index rule in a border, -1 in a constant border.
TBATCH_INLINE index_t source_index(PadMode mode, const PadDim& p, index_t j);

/// True when both borders of a dim copy only positions of the written interior [lo, hi); a
/// crop on the far side can remove the data a border mirrors (reflect (2, -3) of 4 elements).
TBATCH_INLINE bool borders_read_interior(PadMode mode, const PadDim& p);

inline constexpr const char* tensor_subject = "the tensor has";
inline constexpr const char* batch_subject = "the batch's elements have";

}  // namespace detail
}  // namespace tbatch

#if TBATCH_DEFINITIONS

namespace tbatch {

TBATCH_INLINE std::string_view pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
    case PadMode::symmetric:
      return "symmetric";
  }
  return "invalid";
}

namespace detail {

TBATCH_INLINE void check_pad_mode(PadMode mode, const char* function) {
  if (pad_mode_name(mode) == "invalid")
    fail<ValueError>(function,
                     {"mode ", static_cast<int>(mode),
                      " is not a PadMode; expected constant, reflect, replicate, circular or "
                      "symmetric"});
}

TBATCH_INLINE std::vector<DimPad> pads_from_flat(const std::vector<index_t>& flat, index_t rank,
                                                 const char* function, const char* subject) {
  if (flat.size() % 2 != 0)
    fail<ValueError>(function,
                     {"pad ", listed(flat), " has odd length ", flat.size(),
                      "; expected (before, after) pairs listed from the last dim backwards"});
  const index_t pairs = static_cast<index_t>(flat.size() / 2);
  if (pairs > rank)
    fail<ShapeError>(
        function, {"pad ", listed(flat), " holds ", pairs, " (before, after) pairs but ", subject,
                   " rank ", rank, "; expected at most ", 2 * rank, " values"});
  std::vector<DimPad> pads(static_cast<std::size_t>(rank));
  for (std::size_t k = 0; k < flat.size() / 2; ++k)
    pads[static_cast<std::size_t>(rank) - 1 - k] = DimPad{flat[2 * k], flat[2 * k + 1]};
  return pads;
}

TBATCH_INLINE std::vector<DimPad> pads_from_pairs(const std::vector<std::array<index_t, 2>>& pairs,
                                                  index_t rank, const char* function,
                                                  const char* subject) {
  if (pairs.empty()) return std::vector<DimPad>(static_cast<std::size_t>(rank));
  if (static_cast<index_t>(pairs.size()) != rank)
    fail<ShapeError>(function,
                     {"got ", pairs.size(), " {before, after} pairs but ", subject, " rank ", rank,
                      "; expected one pair per dim, first dim first, or none"});
  std::vector<DimPad> pads;
  pads.reserve(pairs.size());
  for (const auto& pair : pairs)
    pads.push_back(DimPad{pair[0], pair[1]});
  return pads;
}

TBATCH_INLINE Shape padded_shape(const Shape& shape, const std::vector<DimPad>& pads, PadMode mode,
                                 const char* function, index_t element) {
  TBATCH_ASSERT(pads.size() == shape.size());
  const ElementSuffix of{element};
  Shape out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const index_t size = shape[d], before = pads[d].before, after = pads[d].after;
    // Both partial sums are checked, so -before and -after are representable below.
    checked_add(size, after, function);
    const index_t padded = checked_add(checked_add(size, before, function), after, function);
    if (padded < 0)
      fail<ShapeError>(
          function, {"padding (", before, ", ", after, ") at dim ", d, of, " would make its size ",
                     size, " negative (", padded, "); crops may remove at most the whole dim"});
    const bool grows = before > 0 || after > 0;
    const index_t widest = std::max(before, after);
    if (mode == PadMode::reflect && grows && widest >= size)
      fail<ValueError>(function, {"padding (", before, ", ", after, ") at dim ", d, of,
                                  " must be less than its size ", size, " for mode reflect"});
    if ((mode == PadMode::symmetric || mode == PadMode::circular) && grows && widest > size)
      fail<ValueError>(function, {"padding (", before, ", ", after, ") at dim ", d, of,
                                  " must be at most its size ", size, " for mode ", mode});
    if (mode == PadMode::replicate && grows && size == 0)
      fail<ValueError>(function, {"padding (", before, ", ", after, ") at dim ", d, of,
                                  " needs a non-empty dim for mode replicate, but its size is 0"});
    out.push_back(padded);
  }
  return out;
}

TBATCH_INLINE std::vector<PadDim> plan_pad(const Shape& shape, const std::vector<DimPad>& pads) {
  std::vector<PadDim> plan(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    PadDim& p = plan[d];
    p.size_in = shape[d];
    p.before = pads[d].before;
    p.after = pads[d].after;
    p.size_out = p.size_in + p.before + p.after;
    p.lo = std::clamp<index_t>(p.before, 0, p.size_out);
    p.hi = std::clamp<index_t>(p.before + p.size_in, 0, p.size_out);
  }
  return plan;
}

TBATCH_INLINE index_t border_slope(PadMode mode) {
  switch (mode) {
    case PadMode::reflect:
    case PadMode::symmetric:
      return -1;
    case PadMode::replicate:
      return 0;
    default:
      return 1;
  }
}

TBATCH_INLINE index_t border_source(PadMode mode, const PadDim& p, index_t j) {
  const index_t c = j - p.before, n = p.size_in;
  index_t m = 0;
  switch (mode) {
    case PadMode::reflect:
      m = c < 0 ? -c : 2 * (n - 1) - c;
      break;
    case PadMode::symmetric:
      m = c < 0 ? -c - 1 : 2 * n - 1 - c;
      break;
    case PadMode::replicate:
      m = c < 0 ? 0 : n - 1;
      break;
    case PadMode::circular:
      m = c < 0 ? c + n : c - n;
      break;
    case PadMode::constant:
      break;
  }
  return m + p.before;
}

TBATCH_INLINE index_t source_index(PadMode mode, const PadDim& p, index_t j) {
  const index_t c = j - p.before;
  if (c >= 0 && c < p.size_in) return c;
  if (mode == PadMode::constant) return -1;
  return border_source(mode, p, j) - p.before;
}

TBATCH_INLINE bool borders_read_interior(PadMode mode, const PadDim& p) {
  auto inside = [&](index_t j0, index_t j1) {
    if (j0 >= j1) return true;
    const index_t a = border_source(mode, p, j0), b = border_source(mode, p, j1 - 1);
    return std::min(a, b) >= p.lo && std::max(a, b) < p.hi;
  };
  return inside(0, p.lo) && inside(p.hi, p.size_out);
}

}  // namespace detail
}  // namespace tbatch

#endif  // TBATCH_DEFINITIONS
