#pragma once
// The aliasing rule of every function that writes, decided in one place, on elements (not on
// byte ranges): docs/reliability.md, "Aliasing".
//  1. An output must not hold one address twice (an expanded or overlapping unfolded view):
//     ValueError, since the result would depend on the order of the writes.
//  2. An input that shares an element with the output is read as it was before the call: the
//     function copies it first.
// Both tests start with cheap proofs (byte ranges, strides, a common divisor of the strides);
// only layouts they cannot settle have their element offsets listed, up to
// exact_alias_check_max elements. Above that an unsettled case counts as aliased, which for
// rule 2 costs a copy and never a wrong value.

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/core/errors.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

/// The most elements whose offsets the aliasing tests list to settle a case exactly.
inline constexpr index_t exact_alias_check_max = index_t(1) << 16;

/// Address range [lo, hi) of the bytes a view with elements touches.
template <class T>
std::pair<const char*, const char*> byte_extent(const StridedView<T>& v) {
  const layout::Extent e = layout::extent(v.layout(), "byte_extent");
  const char* base = reinterpret_cast<const char*>(v.element_pointer());
  return {base + e.lowest * index_t(sizeof(T)), base + (e.highest + 1) * index_t(sizeof(T))};
}

/// The offset of every element of `l` (walked by the engine's run plan), sorted.
inline std::vector<index_t> sorted_offsets(const Layout& l) {
  std::vector<index_t> out;
  out.reserve(static_cast<std::size_t>(l.shape.numel()));
  const RunPlan<1> plan = plan_runs<1>(l.shape, {&l.strides});
  const index_t length = plan.run_length(), stride = plan.inner_stride(0);
  walk_runs(plan, std::array<index_t, 1>{l.offset}, [&](const std::array<index_t, 1>& first) {
    for (index_t i = 0; i < length; ++i)
      out.push_back(first[0] + i * stride);
  });
  std::sort(out.begin(), out.end());
  return out;
}

/// True when two elements of `l` have one offset (rule 1). Exact up to exact_alias_check_max
/// elements; above it, layouts whose sorted strides do not nest count as repeating.
inline bool repeats_elements(const Layout& l) {
  if (l.shape.numel() <= 1) return false;
  std::vector<std::array<index_t, 2>> dims;  // (|stride|, size) of the dims with size > 1
  for (index_t d = 0; d < l.dim(); ++d)
    if (l.shape[d] > 1)
      dims.push_back({l.strides[d] < 0 ? -l.strides[d] : l.strides[d], l.shape[d]});
  std::sort(dims.begin(), dims.end());
  if (dims.front()[0] == 0) return true;
  // Each stride beyond the reach of the smaller ones: distinct offsets (the common case).
  index_t reach = 0;
  bool nested = true;
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) {
      nested = false;
      break;
    }
    reach += stride * (size - 1);
  }
  if (nested) return false;
  if (l.shape.numel() > exact_alias_check_max) return true;
  const std::vector<index_t> offsets = sorted_offsets(l);
  return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

/// The greatest common divisor of the strides of `l`'s dims with size > 1 (0 for one element).
inline index_t stride_gcd(const Layout& l) {
  index_t g = 0;
  for (index_t d = 0; d < l.dim(); ++d)
    if (l.shape[d] > 1) g = std::gcd(g, l.strides[d] < 0 ? -l.strides[d] : l.strides[d]);
  return g;
}

/// True when views `a` and `b` may have an element in common (rule 2): false is always exact;
/// true is exact when both have elements of one size and together at most
/// exact_alias_check_max elements.
template <class A, class B>
bool may_share_elements(const StridedView<A>& a, const StridedView<B>& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto [a_lo, a_hi] = byte_extent(a);
  const auto [b_lo, b_hi] = byte_extent(b);
  if (!(a_lo < b_hi && b_lo < a_hi)) return false;
  constexpr index_t size = index_t(sizeof(A));
  if constexpr (size != index_t(sizeof(B))) {
    return true;
  } else {
    // b's element offsets counted from a's pointer: only a whole number of elements apart can
    // they coincide (anything else overlaps bytes, not elements, and counts as shared).
    const std::intptr_t apart = reinterpret_cast<std::intptr_t>(b.element_pointer()) -
                                reinterpret_cast<std::intptr_t>(a.element_pointer());
    if (apart % size != 0) return true;
    Layout shifted = b.layout();
    shifted.offset += index_t(apart / size);
    // Every offset of a is a.offset plus a multiple of g, every offset of b likewise.
    const index_t g = std::gcd(stride_gcd(a.layout()), stride_gcd(shifted));
    const index_t difference = shifted.offset - a.layout().offset;
    if (g > 1 && difference % g != 0) return false;
    if (a.numel() + b.numel() > exact_alias_check_max) return true;
    const std::vector<index_t> in_a = sorted_offsets(a.layout()), in_b = sorted_offsets(shifted);
    auto i = in_a.begin();
    auto j = in_b.begin();
    while (i != in_a.end() && j != in_b.end()) {
      if (*i == *j) return true;
      *i < *j ? ++i : ++j;
    }
    return false;
  }
}

/// Rule 1 for the output `out` of `function`: ValueError naming `name` when it holds an address
/// twice.
template <class T>
void check_distinct_elements(const StridedView<T>& out, const char* function,
                             const char* name = "out") {
  if (repeats_elements(out.layout()))
    fail<ValueError>(function, name, " has shape ", out.shape(), " and strides ",
                     listed(out.strides()),
                     ", which put several of its elements at one address (an expanded or "
                     "overlapping view); expected a view whose elements are distinct, such as a "
                     "clone()");
}

}  // namespace detail
}  // namespace tbatch
