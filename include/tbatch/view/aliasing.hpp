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

#include <cstdint>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"

#if TBATCH_DEFINITIONS
#include <algorithm>
#include <array>
#include <numeric>
#include <utility>
#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/small_vector.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/view/walk.hpp"
#endif

namespace tbatch {
namespace detail {

/// True when two elements of `l` have one offset (rule 1). Exact when the layout spans at most
/// exact_alias_check_max offsets; above it, layouts whose sorted strides do not nest count as
/// repeating.
TBATCH_INLINE bool repeats_elements(const Layout& l);

/// The greatest common divisor of the strides of `l`'s dims with size > 1 (0 for one element).
TBATCH_INLINE index_t stride_gcd(const Layout& l);

/// True when the elements of layout `a` over the buffer at `a_base`, of `a_size` bytes each, and
/// those of `b` may have an element in common (rule 2): false is always exact; true is exact
/// when both have elements of one size and together span at most exact_alias_check_max offsets.
TBATCH_INLINE bool may_share_elements(const void* a_base, const Layout& a, index_t a_size,
                                      const void* b_base, const Layout& b, index_t b_size);

/// The same for views `a` and `b`.
template <class A, class B>
bool may_share_elements(const StridedView<A>& a, const StridedView<B>& b) {
  return may_share_elements(a.element_pointer(), a.layout(), index_t(sizeof(A)),
                            b.element_pointer(), b.layout(), index_t(sizeof(B)));
}

/// True when the input of layout `in` over the buffer at `in_base` holds, at every position, the
/// very element that the output of layout `out` over `out_base` holds there (elements of `size`
/// bytes both). An elementwise kernel reads each element just before it writes that element, so
/// such an input needs no copy under rule 2: `a += a`, `x = exp(x)` in place.
TBATCH_INLINE bool same_elements(const void* in_base, const Layout& in, const void* out_base,
                                 const Layout& out, index_t size);

/// Rule 1 for an output of layout `l` of `function`: ValueError naming `name` when it holds an
/// address twice.
TBATCH_INLINE void check_distinct_layout(const Layout& l, const char* function, const char* name);
/// The same for the view `out`.
template <class T>
void check_distinct_elements(const StridedView<T>& out, const char* function,
                             const char* name = "out") {
  check_distinct_layout(out.layout(), function, name);
}

#if TBATCH_DEFINITIONS

/// Address range [lo, hi) of the bytes that the elements, of `size` bytes, of layout `l` over
/// the buffer at `base` touch.
inline std::pair<const char*, const char*> byte_extent(const void* base, const Layout& l,
                                                       index_t size) {
  const layout::Extent e = layout::extent(l, "byte_extent");
  const char* first = static_cast<const char*>(base);
  return {first + e.lowest * size, first + (e.highest + 1) * size};
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

TBATCH_INLINE bool repeats_elements(const Layout& l) {
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

TBATCH_INLINE index_t stride_gcd(const Layout& l) {
  index_t g = 0;
  for (index_t d = 0; d < l.dim(); ++d)
    if (l.shape[d] > 1) g = std::gcd(g, l.strides[d] < 0 ? -l.strides[d] : l.strides[d]);
  return g;
}

TBATCH_INLINE bool may_share_elements(const void* a_base, const Layout& a, index_t a_size,
                                      const void* b_base, const Layout& b, index_t b_size) {
  if (a.shape.numel() == 0 || b.shape.numel() == 0) return false;
  const auto [a_lo, a_hi] = byte_extent(a_base, a, a_size);
  const auto [b_lo, b_hi] = byte_extent(b_base, b, b_size);
  if (!(a_lo < b_hi && b_lo < a_hi)) return false;
  if (a_size != b_size) return true;
  // b's element offsets counted from a's pointer: only a whole number of elements apart can
  // they coincide (anything else overlaps bytes, not elements, and counts as shared).
  const std::intptr_t apart =
      reinterpret_cast<std::intptr_t>(b_base) - reinterpret_cast<std::intptr_t>(a_base);
  if (apart % a_size != 0) return true;
  Layout shifted = b;
  shifted.offset += index_t(apart / a_size);
  // Every offset of a is a.offset plus a multiple of g, every offset of b likewise.
  const index_t g = std::gcd(stride_gcd(a), stride_gcd(shifted));
  const index_t difference = shifted.offset - a.offset;
  if (g > 1 && difference % g != 0) return false;
  const layout::Extent ea = layout::extent(a, "may_share_elements");
  const layout::Extent eb = layout::extent(shifted, "may_share_elements");
  const index_t lowest = std::min(ea.lowest, eb.lowest);
  if (std::max(ea.highest, eb.highest) - lowest >= exact_alias_check_max) return true;
  std::vector<bool> in_a(static_cast<std::size_t>(std::max(ea.highest, eb.highest) - lowest + 1));
  for_each_offset(a,
                  [&](index_t offset) { in_a[static_cast<std::size_t>(offset - lowest)] = true; });
  bool shared = false;
  for_each_offset(shifted, [&](index_t offset) {
    shared = shared || in_a[static_cast<std::size_t>(offset - lowest)];
  });
  return shared;
}

TBATCH_INLINE void check_distinct_layout(const Layout& l, const char* function, const char* name) {
  if (repeats_elements(l))
    fail<ValueError>(function,
                     {name, " has shape ", l.shape, " and strides ", listed(l.strides),
                      ", which put several of its elements at one address (an expanded or "
                      "overlapping view); expected a view whose elements are distinct, such as a "
                      "clone()"});
}

#endif  // TBATCH_DEFINITIONS

}  // namespace detail

#if TBATCH_DEFINITIONS

TBATCH_INLINE bool detail::same_elements(const void* in_base, const Layout& in,
                                         const void* out_base, const Layout& out, index_t size) {
  if (!(in.shape == out.shape)) return false;
  if (static_cast<const char*>(in_base) + in.offset * size !=
      static_cast<const char*>(out_base) + out.offset * size)
    return false;
  for (index_t d = 0; d < in.dim(); ++d)
    if (in.shape[d] > 1 && in.strides[d] != out.strides[d]) return false;
  return true;
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
