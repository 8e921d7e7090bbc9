#pragma once
// The aliasing rule of every function that writes, decided in one place, on elements (not on
// byte ranges): docs/reliability.md, "Aliasing".
//  1. An output must not hold one address twice (an expanded or overlapping unfolded view):
//     ValueError, since the result would depend on the order of the writes.
//  2. An input that shares an element with the output is read as it was before the call: the
//     function copies it first, or reads all of it before its first write.
// Both tests start with cheap proofs (byte ranges, strides, a common divisor of the strides);
// only layouts they cannot settle have their element offsets marked one by one, when they span
// at most exact_alias_check_max offsets. Above that an unsettled case counts as aliased, which for
// rule 2 costs a copy and never a wrong value.

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/walk.hpp"

namespace tbatch {
namespace detail {

/// Address range [lo, hi) of the bytes a view with elements touches.
template <class T>
std::pair<const char*, const char*> byte_extent(const StridedView<T>& v) {
  const layout::Extent e = layout::extent(v.layout(), "byte_extent");
  const char* base = reinterpret_cast<const char*>(v.element_pointer());
  return {base + e.lowest * index_t(sizeof(T)), base + (e.highest + 1) * index_t(sizeof(T))};
}

/// Calls visit(offset) for the offset of every element of `l` (walked by the engine's plan).
template <class Visit>
void for_each_offset(const Layout& l, Visit&& visit) {
  const RunPlan<1> plan = plan_runs<1>(l.shape, {&l.strides});
  const index_t length = plan.run_length(), stride = plan.inner_stride(0);
  walk_runs(plan, std::array<index_t, 1>{l.offset}, [&](const std::array<index_t, 1>& first) {
    for (index_t i = 0; i < length; ++i)
      visit(first[0] + i * stride);
  });
}

/// True when two elements of `l` have one offset (rule 1). Exact when the layout spans at most
/// exact_alias_check_max offsets; above it, layouts whose sorted strides do not nest count as
/// repeating.
inline bool repeats_elements(const Layout& l) {
  if (l.shape.numel() <= 1) return false;
  SmallVector<std::array<index_t, 2>, 8> dims;  // (|stride|, size) of the dims with size > 1
  for (index_t d = 0; d < l.dim(); ++d)
    if (l.shape[d] > 1)
      dims.push_back({l.strides[d] < 0 ? -l.strides[d] : l.strides[d], l.shape[d]});
  for (std::size_t i = 1; i < dims.size(); ++i)  // insertion sort: a handful of dims
    for (std::size_t j = i; j > 0 && dims[j] < dims[j - 1]; --j)
      std::swap(dims[j], dims[j - 1]);
  if (dims[0][0] == 0) return true;
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
  const layout::Extent e = layout::extent(l, "repeats_elements");
  if (e.highest - e.lowest >= exact_alias_check_max) return true;
  std::vector<bool> seen(static_cast<std::size_t>(e.highest - e.lowest + 1));
  bool repeated = false;
  for_each_offset(l, [&](index_t offset) {
    const auto k = static_cast<std::size_t>(offset - e.lowest);
    repeated = repeated || seen[k];
    seen[k] = true;
  });
  return repeated;
}

/// The greatest common divisor of the strides of `l`'s dims with size > 1 (0 for one element).
inline index_t stride_gcd(const Layout& l) {
  index_t g = 0;
  for (index_t d = 0; d < l.dim(); ++d)
    if (l.shape[d] > 1) g = std::gcd(g, l.strides[d] < 0 ? -l.strides[d] : l.strides[d]);
  return g;
}

/// True when views `a` and `b` may have an element in common (rule 2): false is always exact;
/// true is exact when both have elements of one size and together span at most
/// exact_alias_check_max offsets.
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
    const layout::Extent ea = layout::extent(a.layout(), "may_share_elements");
    const layout::Extent eb = layout::extent(shifted, "may_share_elements");
    const index_t lowest = std::min(ea.lowest, eb.lowest);
    if (std::max(ea.highest, eb.highest) - lowest >= exact_alias_check_max) return true;
    std::vector<bool> in_a(static_cast<std::size_t>(std::max(ea.highest, eb.highest) - lowest + 1));
    for_each_offset(a.layout(), [&](index_t offset) {
      in_a[static_cast<std::size_t>(offset - lowest)] = true;
    });
    bool shared = false;
    for_each_offset(shifted, [&](index_t offset) {
      shared = shared || in_a[static_cast<std::size_t>(offset - lowest)];
    });
    return shared;
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
