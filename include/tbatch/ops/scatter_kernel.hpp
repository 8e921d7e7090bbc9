#pragma once
// What the scatter family and the segment reductions share around the scatter primitive
// (view/scatter_runs.hpp): updates at computed offsets, the views an index moves along, the
// argument checks and Reduce::mean's hit counts. The scatter family includes it only where its
// kernels are compiled (TBATCH_DEFINITIONS).

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/tuning.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/reduce_combiners.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/scatter_runs.hpp"

namespace tbatch {
namespace detail {

/// Updates whose targets are computed per update: src and dst_base have shape (N, row...),
/// dst_base with stride 0 on dim 0, and offset_of(k) is the element offset (from dst_base) of
/// update k's row. Offsets are computed in blocks on the stack, so nothing is allocated.
template <class T, class Op, class OffsetOf>
void scatter_at_offsets(StridedView<const T> src, StridedView<T> dst_base, OffsetOf&& offset_of,
                        const Op& op) {
  constexpr index_t block = index_block;
  std::array<index_t, block> offsets;
  LayoutStrides offset_strides(src.shape().size(), 0);
  offset_strides[0] = 1;
  const index_t n = src.size(0);
  for (index_t k0 = 0; k0 < n; k0 += block) {
    const index_t length = std::min(block, n - k0);
    for (index_t k = 0; k < length; ++k)
      offsets[static_cast<std::size_t>(k)] = offset_of(k0 + k);
    Shape shape = src.shape();
    shape.set(0, length);
    scatter_along(src.narrow(0, k0, length),
                  StridedView<const index_t>(offsets.data(), std::move(shape), offset_strides), 1,
                  dst_base.narrow(0, k0, length), op);
  }
}

/// The 1-d view `v` (length shape[dim]) seen with `shape`: stride 0 on every other dim.
template <class T>
StridedView<T> spread_along(const StridedView<T>& v, const Shape& shape, index_t dim) {
  Layout l{shape, LayoutStrides(shape.size(), 0), v.layout().offset};
  l.strides[dim] = v.dim() == 0 ? 0 : v.strides()[0];
  return v.with_layout(std::move(l));
}

/// `v` with dim `dim` replaced by `size` positions at stride 0: the base an index moves along.
template <class T>
StridedView<T> indexed_base(const StridedView<T>& v, index_t dim, index_t size) {
  Layout l = v.layout();
  l.shape.set(dim, size);
  l.strides[dim] = 0;
  return v.with_layout(std::move(l));
}

/// 0-d tensors (and views) behave as 1-d ones of one element (as torch's scatter / index_add).
template <class V>
V nonempty_dims(const V& t) {
  return t.dim() == 0 ? t.unsqueeze(0) : t;
}

/// `input` as a view of T, or, when it shares elements with `out` (the view a kernel is about to
/// write), a view of its copy kept in `staging`, which stays empty (no allocation) otherwise.
template <class T, class D>
StridedView<const T> unaliased_view(const RawView& input, const StridedView<D>& out,
                                    std::optional<Tensor<T>>& staging) {
  const StridedView<const T> view = typed_view<const T>(input);
  if (!may_share_elements(view, out)) return view;
  staging = Tensor<T>::from_view(view);
  return StridedView<const T>(staging->view());
}

// ---------------------------------------------------------------------------------------------
// Argument checks.

/// "name[i, j]" for the flat row-major position `flat` of `shape` ("name" when 0-d).
inline std::string index_position(std::string_view name, const Shape& shape, index_t flat) {
  std::vector<index_t> coords(shape.size());
  unravel_index(shape, flat, [&](std::size_t d, index_t at) { coords[d] = at; });
  return shape.size() == 0 ? std::string(name) : concat(name, listed(coords));
}

/// " (expected 0 to size - 1)", or a note that an empty dim has no valid index.
inline std::string expected_range(index_t size) {
  return size > 0 ? concat(" (expected 0 to ", size - 1, ")")
                  : std::string(" (it is empty, so no index is valid)");
}

/// True when every value of `v` lies in [0, size): one branch-free pass through the engine.
inline bool all_within(StridedView<const index_t> v, index_t size) {
  bool ok = true;
  for_each_run(
      "index check",
      [&](index_t n, const std::array<index_t, 1>& stride, const index_t* p) {
        const auto limit = static_cast<std::uint64_t>(size);
        bool bad = false;
        if (stride[0] == 1) {
          for (index_t i = 0; i < n; ++i)
            bad |= static_cast<std::uint64_t>(p[i]) >= limit;
        } else {
          for (index_t i = 0; i < n; ++i)
            bad |= static_cast<std::uint64_t>(p[i * stride[0]]) >= limit;
        }
        ok = ok && !bad;
      },
      v);
  return ok;
}

/// IndexError naming the first (row-major) entry of `index` outside [0, limit(flat)), where
/// describe(flat) says what that entry indexes ("dim 0 of x").
template <class Limit, class Describe>
[[noreturn]] void fail_first_out_of_range(const char* function, std::string_view name,
                                          const Tensor<index_t>& index, Limit&& limit,
                                          Describe&& describe) {
  const Tensor<index_t> dense = index.contiguous();
  for (index_t flat = 0; flat < dense.numel(); ++flat) {
    const index_t value = dense.data()[flat];
    const index_t size = limit(flat);
    if (value < 0 || value >= size)
      fail<IndexError>(function, {index_position(name, index.shape(), flat), " = ", value,
                                  " is out of range for ", describe(flat), " with size ", size,
                                  expected_range(size)});
  }
  fail<IndexError>(function, {name, " has a value out of range"});  // unreachable: caller found one
}

/// IndexError unless every value of `index` lies in [0, size); `what` names the indexed dim.
inline void check_index_range(const char* function, std::string_view name,
                              const Tensor<index_t>& index, index_t size, std::string_view what) {
  if (all_within(index.view(), size)) return;
  fail_first_out_of_range(
      function, name, index, [&](index_t) { return size; }, [&](index_t) { return what; });
}

/// The shape `shape` without its first `count` dims, appended to `front`.
inline Shape joined(Shape front, const Shape& shape, std::size_t from) {
  for (std::size_t d = from; d < shape.size(); ++d)
    front.push_back(shape[d]);
  return front;
}

// ---------------------------------------------------------------------------------------------
// Reduce::mean: the hit counts and the division, without a count per element of self.

/// The line of `index` along `dim` at position 0 of every other dim (which keeps size 1).
inline StridedView<const index_t> first_line(StridedView<const index_t> index, index_t dim) {
  for (index_t k = 0; k < index.dim(); ++k)
    if (k != dim) index = index.narrow(k, 0, 1);
  return index;
}

/// True when every line of `index` along `dim` holds the values of the first: its strides say
/// so (an index expanded over the other dims), or one pass over its values finds no difference
/// (it stops comparing at the first one).
inline bool lines_equal_along(const StridedView<const index_t>& index, index_t dim) {
  if (varies_only_along(index, dim)) return true;
  const StridedView<const index_t> first = first_line(index, dim).expand(index.shape().to_vector());
  bool equal = true;
  for_each_run(
      "scatter_reduce",
      [&](index_t n, const std::array<index_t, 2>& stride, const index_t* at, const index_t* line) {
        if (!equal) return;
        bool differ = false;  // no early exit inside a run: the loop vectorises
        for (index_t i = 0; i < n; ++i)
          differ |= at[i * stride[0]] != line[i * stride[1]];
        equal = !differ;
      },
      index, first);
  return equal;
}

/// Adds 1 to counts (zeroed; `index`'s shape but any size along `dim`) at every slot `index`
/// hits.
inline void count_hits(const StridedView<const index_t>& index, index_t dim,
                       const StridedView<index_t>& counts) {
  const index_t one = 1;
  scatter_along(broadcast_value(one, index.shape()), index, counts.stride(dim),
                indexed_base(counts, dim, index.size(dim)), SumOp<index_t>{});
}

/// Calls visit(slots_block, index_block) on blocks that tile `slots` and `index` (same shape
/// but along `dim`), each whole along `dim` and of at most max_elements elements unless it is
/// one line. Blocks are cut along the outermost dim other than `dim` first. A block holds
/// several positions of that dim only when at least 8 fit: fewer could leave the walk runs
/// of a few elements (when that dim is the innermost), which cost more than the longer runs
/// along `dim` of one position per block (and one position then holds >= max_elements / 8).
template <class T, class Visit>
void for_each_line_block(const StridedView<T>& slots, const StridedView<const index_t>& index,
                         index_t dim, index_t max_elements, Visit& visit) {
  index_t cut = 0;
  while (cut < slots.dim() && (cut == dim || slots.size(cut) == 1))
    ++cut;
  if (cut == slots.dim() || slots.numel() <= max_elements) {
    visit(slots, index);
    return;
  }
  const index_t positions = slots.size(cut);
  const index_t fit = max_elements / (slots.numel() / positions);
  const index_t step = fit >= 8 ? fit : 1;
  for (index_t start = 0; start < positions; start += step) {
    const index_t length = std::min(step, positions - start);
    for_each_line_block(slots.narrow(cut, start, length), index.narrow(cut, start, length), dim,
                        max_elements, visit);
  }
}

/// Reduce::mean's last step over `slots`, the part of self that `index` reaches (index's shape
/// but self's size along `dim`), holding the sums: every slot hit divides by its hit count,
/// plus one for self's own value when include_self; slots never hit keep self. When every line
/// of the index along `dim` is the same (one_line), one count per position along `dim` serves
/// every line; otherwise the counts are made block by block (for_each_line_block) in one
/// scratch.
template <class T>
void divide_by_hit_counts(const StridedView<T>& slots, const StridedView<const index_t>& index,
                          index_t dim, bool one_line, bool include_self) {
  const index_t extra = include_self ? 1 : 0;
  const auto divide = [extra](T& value, const index_t& count) {
    if (count > 0) value = mean_of(value, count + extra);
  };
  if (one_line) {
    std::vector<index_t> line_sizes(static_cast<std::size_t>(slots.dim()), 1);
    line_sizes[static_cast<std::size_t>(dim)] = slots.size(dim);
    Tensor<index_t> counts{Shape(line_sizes)};
    count_hits(first_line(index, dim), dim, counts.view());
    for_each(divide, slots,
             StridedView<const index_t>(counts.view()).expand(slots.shape().to_vector()));
    return;
  }
  Tensor<index_t> scratch = Tensor<index_t>::empty(Shape{0});
  auto count_and_divide = [&](const StridedView<T>& slot_block,
                              const StridedView<const index_t>& index_part) {
    if (scratch.numel() < slot_block.numel())  // the first block is the largest
      scratch = Tensor<index_t>::empty(Shape{slot_block.numel()});
    const StridedView<index_t> counts(scratch.data(), slot_block.shape());
    fill_view(counts, index_t(0), Stores::cached);
    count_hits(index_part, dim, counts);
    for_each(divide, slot_block, StridedView<const index_t>(counts));
  };
  for_each_line_block(slots, index, dim, mean_count_block, count_and_divide);
}

}  // namespace detail
}  // namespace tbatch
