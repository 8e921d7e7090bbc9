#pragma once
// Layout algebra: shape, strides (in elements) and offset, and the pure functions that make
// views. Tensor, StridedView and TensorDict all call these; none re-implements them.

#include <optional>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/base/small_vector.hpp"

#if TBATCH_DEFINITIONS
#include <algorithm>
#include <limits>

#include "tbatch/base/checked_math.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/view/walk.hpp"
#endif

namespace tbatch {

/// Where a tensor's elements live in its buffer: element (i0, i1, ...) is at
/// offset + sum(i_d * strides[d]).
struct Layout {
  Shape shape;
  Strides strides;
  index_t offset = 0;

  index_t dim() const { return static_cast<index_t>(shape.size()); }
};

namespace layout {

/// Row-major strides of `shape`. ShapeError when they overflow, which a size-0 dim does not
/// prevent: {0, 2^62, 4} has no elements but a stride of 2^64.
TBATCH_INLINE Strides contiguous_strides(const Shape& shape);

/// A row-major layout of `shape` at offset 0 (strides and so the element count checked for
/// overflow).
TBATCH_INLINE Layout contiguous(Shape shape);

/// True when the elements are row-major and dense (size-1 dims may have any stride).
TBATCH_INLINE bool is_contiguous(const Layout& l);

/// True when some dim of more than one element has stride 0 (a broadcast or expanded view: it
/// reads fewer elements than it has).
TBATCH_INLINE bool repeats_elements(const Layout& l);

/// Maps a possibly negative `dim` into [0, rank); IndexError naming `function` otherwise.
TBATCH_INLINE index_t normalize_dim(index_t dim, index_t rank, const char* function);

/// Elements [start, stop) with `step` along `dim`, Python slice rules: negative start/stop
/// count from the end, out-of-range bounds clamp, a negative step walks backwards.
TBATCH_INLINE Layout slice(const Layout& l, index_t dim, std::optional<index_t> start,
                           std::optional<index_t> stop, index_t step = 1);

/// Element `index` of `dim` (negative counts from the end); removes the dim.
TBATCH_INLINE Layout select(const Layout& l, index_t dim, index_t index);

/// `length` elements of `dim` from `start` (negative start counts from the end).
TBATCH_INLINE Layout narrow(const Layout& l, index_t dim, index_t start, index_t length);

/// Reorders the dims: output dim i is input dim dims[i].
TBATCH_INLINE Layout permute(const Layout& l, const std::vector<index_t>& dims);

/// Swaps dims a and b.
TBATCH_INLINE Layout transpose(const Layout& l, index_t a, index_t b);

/// Inserts a size-1 dim at `dim` (in [-rank-1, rank]).
TBATCH_INLINE Layout unsqueeze(const Layout& l, index_t dim);

/// Removes every size-1 dim.
TBATCH_INLINE Layout squeeze(const Layout& l);

/// Removes `dim` if its size is 1; otherwise returns the layout unchanged (as torch).
TBATCH_INLINE Layout squeeze(const Layout& l, index_t dim);

/// Broadcasts size-1 dims (stride 0) and prepends new leading dims; -1 keeps a size.
TBATCH_INLINE Layout expand(const Layout& l, const std::vector<index_t>& sizes);

/// Resolves one -1 in `sizes` so the product equals `numel`; ShapeError otherwise.
TBATCH_INLINE Shape infer_size(const std::vector<index_t>& sizes, index_t numel,
                               const char* function);

/// The same elements seen with shape `sizes` (one -1 allowed), without copying; nullopt when
/// the strides cannot express it (then a copy is needed).
TBATCH_INLINE std::optional<Layout> try_view(const Layout& l, const std::vector<index_t>& sizes,
                                             const char* function);

/// Collapses dims [start, end] into one; nullopt when that needs a copy.
TBATCH_INLINE std::optional<Layout> try_flatten(const Layout& l, index_t start, index_t end);

/// Splits `dim` into `sizes` (one -1 allowed); always a view.
TBATCH_INLINE Layout unflatten(const Layout& l, index_t dim, const std::vector<index_t>& sizes);

/// Sliding windows along `dim` (torch's Tensor.unfold): `dim` becomes the window count
/// (size_of_dim - size) / step + 1 with stride step * stride, and a new last dim of `size`
/// holds each window's elements. Always a view; windows overlap when step < size.
TBATCH_INLINE Layout unfold(const Layout& l, index_t dim, index_t size, index_t step);

/// Consecutive pieces of `dim` with the given sizes, which must sum to the dim's size.
TBATCH_INLINE std::vector<Layout> split(const Layout& l, const std::vector<index_t>& sizes,
                                        index_t dim);

/// Pieces of `size` elements along `dim` (the last may be shorter).
TBATCH_INLINE std::vector<Layout> split(const Layout& l, index_t size, index_t dim);

/// At most `chunks` pieces of ceil(size / chunks) elements along `dim` (as torch.chunk).
TBATCH_INLINE std::vector<Layout> chunk(const Layout& l, index_t chunks, index_t dim);

/// Every element of `dim`, each with the dim removed.
TBATCH_INLINE std::vector<Layout> unbind(const Layout& l, index_t dim);

/// The lowest and highest element offsets a layout with elements addresses (offset included).
/// extent() guarantees that highest - lowest + 1, the span, fits in index_t.
struct Extent {
  index_t lowest;
  index_t highest;
};
/// The extent of `l` (which must have elements); ShapeError naming `function` when a dim's
/// reach, either end or the span overflows index_t, so callers may subtract the ends freely.
TBATCH_INLINE Extent extent(const Layout& l, const char* function);

/// ValueError naming `function` unless every element that `l` addresses lies in [0, capacity)
/// (a buffer of `capacity` elements); ShapeError for strides that do not match the shape's
/// rank. A layout without elements addresses none.
TBATCH_INLINE void check_inside(const Layout& l, index_t capacity, const char* function);

/// True when `from` broadcasts to exactly `to` (numpy rules, as expand() accepts).
TBATCH_INLINE bool broadcasts_to(const Shape& from, const Shape& to);

/// `l` broadcast to `shape` (numpy rules: new leading dims and size-1 dims get stride 0), a view
/// of the same elements; ShapeError naming `function` and `name` when it does not broadcast.
TBATCH_INLINE Layout broadcast(const Layout& l, const Shape& shape, const char* function,
                               const char* name);

/// The shape both `a` and `b` broadcast to (numpy rules); ShapeError naming `function`.
TBATCH_INLINE Shape broadcast_shapes(const Shape& a, const Shape& b, const char* function);

}  // namespace layout

#if TBATCH_DEFINITIONS

TBATCH_INLINE Strides layout::contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  index_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    if (detail::multiply_overflows(stride, std::max<index_t>(shape[d], 1), stride))
      detail::fail<ShapeError>(
          "Tensor",
          {"shape ", shape, " is too large: its row-major strides overflow a 64-bit index"});
  }
  return strides;
}

TBATCH_INLINE Layout layout::contiguous(Shape shape) {
  auto strides = contiguous_strides(shape);
  return Layout{std::move(shape), std::move(strides), 0};
}

TBATCH_INLINE bool layout::is_contiguous(const Layout& l) {
  const index_t* sizes = l.shape.data();
  const index_t* strides = l.strides.data();
  index_t expected = 1;
  for (std::size_t d = l.shape.size(); d-- > 0;) {
    if (sizes[d] == 0) return true;
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

TBATCH_INLINE bool layout::repeats_elements(const Layout& l) {
  for (std::size_t d = 0; d < l.shape.size(); ++d)
    if (l.shape[d] > 1 && l.strides[d] == 0) return true;
  return false;
}

TBATCH_INLINE index_t layout::normalize_dim(index_t dim, index_t rank, const char* function) {
  if (dim < -rank || dim >= rank) {
    if (rank == 0)
      detail::fail<IndexError>(function,
                               {"dim ", dim, " given for a tensor of rank 0, which has no dims"});
    detail::fail<IndexError>(function, {"dim ", dim, " is out of range for a tensor of rank ", rank,
                                        " (expected ", -rank, " to ", rank - 1, ")"});
  }
  return dim < 0 ? dim + rank : dim;
}

TBATCH_INLINE Layout layout::slice(const Layout& l, index_t dim, std::optional<index_t> start,
                                   std::optional<index_t> stop, index_t step) {
  const index_t d = normalize_dim(dim, l.dim(), "slice");
  if (step == 0) detail::fail<ValueError>("slice", {"step 0 at dim ", dim, " must be non-zero"});
  const index_t size = l.shape[d];
  auto adjust = [&](std::optional<index_t> bound, index_t fallback, index_t lo, index_t hi) {
    if (!bound) return fallback;
    index_t v = *bound < 0 ? *bound + size : *bound;
    return std::clamp(v, lo, hi);
  };
  index_t first = 0, length = 0;
  if (step > 0) {
    first = adjust(start, 0, 0, size);
    const index_t last = adjust(stop, size, 0, size);
    length = last > first ? (last - first + step - 1) / step : 0;
  } else {
    first = adjust(start, size - 1, -1, size - 1);
    const index_t last = adjust(stop, -1, -1, size - 1);
    length = first > last ? (first - last - 1) / (-step) + 1 : 0;
  }
  Layout out = l;
  if (length > 0) out.offset += first * l.strides[d];
  out.shape.set(d, length);
  out.strides[d] = l.strides[d] * step;
  return out;
}

TBATCH_INLINE Layout layout::select(const Layout& l, index_t dim, index_t index) {
  const index_t d = normalize_dim(dim, l.dim(), "select");
  const index_t size = l.shape[d];
  if (index < -size || index >= size)
    detail::fail<IndexError>("select",
                             {"index ", index, " is out of range for dim ", dim, " of size ", size,
                              " (expected ", -size, " to ", size - 1, ")"});
  if (index < 0) index += size;
  Layout out = l;
  out.offset += index * l.strides[d];
  out.shape.erase(d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

TBATCH_INLINE Layout layout::narrow(const Layout& l, index_t dim, index_t start, index_t length) {
  const index_t d = normalize_dim(dim, l.dim(), "narrow");
  const index_t size = l.shape[d];
  if (start < -size || start > size)
    detail::fail<IndexError>(
        "narrow", {"start ", start, " is out of range for dim ", dim, " of size ", size});
  if (start < 0) start += size;
  if (length < 0 || length > size - start)
    detail::fail<IndexError>("narrow", {"length ", length, " from start ", start, " exceeds dim ",
                                        dim, " of size ", size});
  Layout out = l;
  if (length > 0) out.offset += start * l.strides[d];
  out.shape.set(d, length);
  return out;
}

TBATCH_INLINE Layout layout::permute(const Layout& l, const std::vector<index_t>& dims) {
  const index_t rank = l.dim();
  if (static_cast<index_t>(dims.size()) != rank)
    detail::fail<ShapeError>("permute", {"got ", dims.size(), " dims for a tensor of rank ", rank,
                                         "; expected a permutation of all ", rank, " dims"});
  detail::SmallVector<bool, 8> seen(dims.size(), false);
  Layout out;
  out.offset = l.offset;
  out.strides.resize(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const index_t d = normalize_dim(dims[i], rank, "permute");
    if (seen[d]) detail::fail<ValueError>("permute", {"dim ", dims[i], " appears more than once"});
    seen[d] = true;
    out.shape.push_back(l.shape[d]);
    out.strides[i] = l.strides[d];
  }
  return out;
}

TBATCH_INLINE Layout layout::transpose(const Layout& l, index_t a, index_t b) {
  const index_t da = normalize_dim(a, l.dim(), "transpose");
  const index_t db = normalize_dim(b, l.dim(), "transpose");
  Layout out = l;
  out.shape.set(da, l.shape[db]);
  out.shape.set(db, l.shape[da]);
  std::swap(out.strides[da], out.strides[db]);
  return out;
}

TBATCH_INLINE Layout layout::unsqueeze(const Layout& l, index_t dim) {
  const index_t d = normalize_dim(dim, l.dim() + 1, "unsqueeze");
  Layout out = l;
  const index_t stride = d < l.dim() ? l.strides[d] * std::max<index_t>(l.shape[d], 1) : 1;
  out.shape.insert(d, 1);
  out.strides.insert(out.strides.begin() + d, stride);
  return out;
}

TBATCH_INLINE Layout layout::squeeze(const Layout& l) {
  Layout out;
  out.offset = l.offset;
  for (index_t d = 0; d < l.dim(); ++d) {
    if (l.shape[d] == 1) continue;
    out.shape.push_back(l.shape[d]);
    out.strides.push_back(l.strides[d]);
  }
  return out;
}

TBATCH_INLINE Layout layout::squeeze(const Layout& l, index_t dim) {
  const index_t d = normalize_dim(dim, l.dim(), "squeeze");
  if (l.shape[d] != 1) return l;
  Layout out = l;
  out.shape.erase(d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

TBATCH_INLINE Layout layout::expand(const Layout& l, const std::vector<index_t>& sizes) {
  const index_t rank = l.dim();
  const index_t new_rank = static_cast<index_t>(sizes.size());
  if (new_rank < rank)
    detail::fail<ShapeError>("expand", {"the number of sizes (", new_rank,
                                        ") must be at least the tensor's rank (", rank, ")"});
  Layout out;
  out.offset = l.offset;
  out.strides.resize(sizes.size());
  const index_t lead = new_rank - rank;
  for (index_t i = 0; i < new_rank; ++i) {
    const index_t want = sizes[static_cast<std::size_t>(i)];
    if (i < lead) {
      if (want < 0)
        detail::fail<ShapeError>("expand",
                                 {"size ", want, " at new leading dim ", i, " must be >= 0"});
      out.shape.push_back(want);
      out.strides[i] = 0;
      continue;
    }
    const index_t d = i - lead;
    const index_t have = l.shape[d];
    if (want == -1 || want == have) {
      out.shape.push_back(have);
      out.strides[i] = l.strides[d];
    } else if (have == 1 && want >= 0) {
      out.shape.push_back(want);
      out.strides[i] = 0;
    } else {
      detail::fail<ShapeError>(
          "expand", {"size ", want, " at dim ", i, " does not match the existing size ", have,
                     " (only size-1 dims expand)"});
    }
  }
  out.shape.numel();
  return out;
}

TBATCH_INLINE Shape layout::infer_size(const std::vector<index_t>& sizes, index_t numel,
                                       const char* function) {
  std::optional<std::size_t> infer_at;
  index_t known = 1;
  index_t extent = 1;  // the product with size-0 dims as 1, which row-major strides must fit
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer_at)
        detail::fail<ShapeError>(
            function, {"only one size may be -1, got -1 at dims ", *infer_at, " and ", i});
      infer_at = i;
    } else if (sizes[i] < 0) {
      detail::fail<ShapeError>(
          function, {"size ", sizes[i], " at dim ", i, " is invalid; expected >= 0 or -1"});
    } else {
      known = detail::checked_mul(known, sizes[i], function);
      extent = detail::checked_mul(extent, std::max<index_t>(sizes[i], 1), function);
    }
  }
  index_t inferred = 0;
  if (infer_at) {
    if (known == 0 || numel % known != 0)
      detail::fail<ShapeError>(function, {"shape ", detail::listed(sizes), " is invalid for ",
                                          numel, " elements: the other sizes multiply to ", known});
    inferred = numel / known;
  } else if (known != numel) {
    detail::fail<ShapeError>(function, {"shape ", Shape(sizes.begin(), sizes.end()),
                                        " is invalid for ", numel, " elements"});
  }
  Shape resolved;  // built directly: no intermediate vector to allocate
  for (std::size_t i = 0; i < sizes.size(); ++i)
    resolved.push_back(infer_at && i == *infer_at ? inferred : sizes[i]);
  return resolved;
}

TBATCH_INLINE std::optional<Layout> layout::try_view(const Layout& l,
                                                     const std::vector<index_t>& sizes,
                                                     const char* function) {
  const index_t numel = l.shape.numel();
  Shape shape = infer_size(sizes, numel, function);
  if (numel == 0 || l.dim() == 0 || is_contiguous(l)) {
    Layout out = contiguous(std::move(shape));
    out.offset = l.offset;
    return out;
  }
  // Walk old dims from the back in chunks, each the dims the engine merges into one (a chunk
  // so far is one dim of tensor_numel elements at its innermost stride), and give each chunk's
  // new dims strides based on that stride.
  Strides strides(shape.size());
  index_t view_d = static_cast<index_t>(shape.size()) - 1;
  index_t chunk_base_stride = l.strides.back();
  index_t tensor_numel = 1, view_numel = 1;
  for (index_t tensor_d = l.dim() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= l.shape[tensor_d];
    const bool chunk_ends = tensor_d == 0 || (l.shape[tensor_d - 1] != 1 &&
                                              !detail::merges(l.strides[tensor_d - 1],
                                                              chunk_base_stride, tensor_numel));
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = l.strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return Layout{std::move(shape), std::move(strides), l.offset};
}

TBATCH_INLINE std::optional<Layout> layout::try_flatten(const Layout& l, index_t start,
                                                        index_t end) {
  if (l.dim() == 0) return try_view(l, {1}, "flatten");
  const index_t s = normalize_dim(start, l.dim(), "flatten");
  const index_t e = normalize_dim(end, l.dim(), "flatten");
  if (s > e)
    detail::fail<IndexError>("flatten", {"start dim ", start, " comes after end dim ", end});
  std::vector<index_t> sizes;
  for (index_t d = 0; d < s; ++d)
    sizes.push_back(l.shape[d]);
  index_t merged = 1;
  for (index_t d = s; d <= e; ++d)
    merged *= l.shape[d];
  sizes.push_back(merged);
  for (index_t d = e + 1; d < l.dim(); ++d)
    sizes.push_back(l.shape[d]);
  return try_view(l, sizes, "flatten");
}

TBATCH_INLINE Layout layout::unflatten(const Layout& l, index_t dim,
                                       const std::vector<index_t>& sizes) {
  const index_t d = normalize_dim(dim, l.dim(), "unflatten");
  if (sizes.empty()) detail::fail<ShapeError>("unflatten", {"sizes must not be empty"});
  const Shape inner = infer_size(sizes, l.shape[d], "unflatten");
  Layout out;
  out.offset = l.offset;
  for (index_t i = 0; i < l.dim(); ++i) {
    if (i != d) {
      out.shape.push_back(l.shape[i]);
      out.strides.push_back(l.strides[i]);
      continue;
    }
    index_t stride = l.strides[d];
    Strides inner_strides(inner.size());
    // The product only overflows for an empty view, e.g. sizes (0, 2^62), whose strides never
    // address memory: they saturate to 0 instead of overflowing.
    for (std::size_t k = inner.size(); k-- > 0;) {
      inner_strides[k] = stride;
      if (detail::multiply_overflows(stride, inner[k], stride)) stride = 0;
    }
    for (std::size_t k = 0; k < inner.size(); ++k) {
      out.shape.push_back(inner[k]);
      out.strides.push_back(inner_strides[k]);
    }
  }
  return out;
}

TBATCH_INLINE Layout layout::unfold(const Layout& l, index_t dim, index_t size, index_t step) {
  const index_t d = normalize_dim(dim, l.dim(), "unfold");
  if (step <= 0) detail::fail<ValueError>("unfold", {"step ", step, " must be positive"});
  if (size < 0 || size > l.shape[d])
    detail::fail<ShapeError>("unfold", {"window size ", size, " at dim ", dim,
                                        " must be between 0 and the dim's size ", l.shape[d]});
  Layout out = l;
  out.shape.set(d, (l.shape[d] - size) / step + 1);
  // With one window the stride is never used; keeping it avoids overflowing on a huge step.
  out.strides[d] = out.shape[d] > 1 ? l.strides[d] * step : l.strides[d];
  out.shape.push_back(size);
  out.strides.push_back(l.strides[d]);
  return out;
}

TBATCH_INLINE std::vector<Layout> layout::split(const Layout& l, const std::vector<index_t>& sizes,
                                                index_t dim) {
  const index_t d = normalize_dim(dim, l.dim(), "split");
  index_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0)
      detail::fail<ValueError>("split",
                               {"split size ", sizes[i], " at position ", i, " must be >= 0"});
    total = detail::checked_add(total, sizes[i], "split");
  }
  if (total != l.shape[d])
    detail::fail<ValueError>(
        "split", {"split sizes sum to ", total, " but dim ", dim, " has size ", l.shape[d]});
  std::vector<Layout> pieces;
  index_t start = 0;
  for (index_t size : sizes) {
    pieces.push_back(narrow(l, d, start, size));
    start += size;
  }
  return pieces;
}

TBATCH_INLINE std::vector<Layout> layout::split(const Layout& l, index_t size, index_t dim) {
  const index_t d = normalize_dim(dim, l.dim(), "split");
  if (size <= 0 && !(size == 0 && l.shape[d] == 0))
    detail::fail<ValueError>("split", {"split size ", size, " must be positive"});
  std::vector<index_t> sizes;
  for (index_t start = 0; start < l.shape[d]; start += size)
    sizes.push_back(std::min(size, l.shape[d] - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(l, sizes, d);
}

TBATCH_INLINE std::vector<Layout> layout::chunk(const Layout& l, index_t chunks, index_t dim) {
  const index_t d = normalize_dim(dim, l.dim(), "chunk");
  if (chunks <= 0) detail::fail<ValueError>("chunk", {"chunks ", chunks, " must be positive"});
  const index_t size = l.shape[d];
  const index_t piece = (size + chunks - 1) / chunks;
  if (piece == 0) return std::vector<Layout>(static_cast<std::size_t>(chunks), l);
  return split(l, piece, d);
}

TBATCH_INLINE std::vector<Layout> layout::unbind(const Layout& l, index_t dim) {
  const index_t d = normalize_dim(dim, l.dim(), "unbind");
  std::vector<Layout> pieces;
  pieces.reserve(static_cast<std::size_t>(l.shape[d]));
  for (index_t i = 0; i < l.shape[d]; ++i)
    pieces.push_back(select(l, d, i));
  return pieces;
}

TBATCH_INLINE layout::Extent layout::extent(const Layout& l, const char* function) {
  Extent e{l.offset, l.offset};
  bool overflows = false;
  for (index_t d = 0; d < l.dim() && !overflows; ++d) {
    index_t reach = 0;
    overflows = detail::multiply_overflows(l.shape[d] - 1, l.strides[d], reach);
    index_t& end = reach < 0 ? e.lowest : e.highest;
    overflows = overflows || detail::add_overflows(end, reach, end);
  }
  index_t span = 0;
  if (overflows || detail::subtract_overflows(e.highest, e.lowest, span) ||
      span == std::numeric_limits<index_t>::max())
    detail::fail<ShapeError>(
        function, {"shape ", l.shape, " with strides ", detail::listed(l.strides), " and offset ",
                   l.offset, " spans more elements than a 64-bit index holds"});
  return e;
}

TBATCH_INLINE void layout::check_inside(const Layout& l, index_t capacity, const char* function) {
  if (l.strides.size() != l.shape.size())
    detail::fail<ShapeError>(function, {"layout has ", l.strides.size(),
                                        " strides for a shape of rank ", l.shape.size()});
  if (l.shape.numel() == 0) return;
  const Extent e = extent(l, function);
  if (e.lowest < 0 || e.highest >= capacity)
    detail::fail<ValueError>(
        function, {"layout with shape ", l.shape, ", strides ", detail::listed(l.strides),
                   " and offset ", l.offset, " reaches elements ", e.lowest, " to ", e.highest,
                   ", outside the buffer of ", capacity, " elements"});
}

TBATCH_INLINE bool layout::broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t lead = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

TBATCH_INLINE Layout layout::broadcast(const Layout& l, const Shape& shape, const char* function,
                                       const char* name) {
  if (!broadcasts_to(l.shape, shape))
    detail::fail<ShapeError>(
        function, {name, " of shape ", l.shape, " does not broadcast to the shape ", shape});
  Layout out{shape, Strides(shape.size(), 0), l.offset};
  const std::size_t lead = shape.size() - l.shape.size();
  for (std::size_t i = 0; i < l.shape.size(); ++i)
    if (l.shape[i] == shape[lead + i]) out.strides[lead + i] = l.strides[i];
  return out;
}

TBATCH_INLINE Shape layout::broadcast_shapes(const Shape& a, const Shape& b, const char* function) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out;
  for (std::size_t i = 0; i < rank; ++i) {
    const index_t sa = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const index_t sb = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      detail::fail<ShapeError>(
          function, {"shapes ", a, " and ", b, " cannot be broadcast together (dim ", i, ": ", sa,
                     " vs ", sb, ")"});
    out.push_back(sa == 1 ? sb : sa);
  }
  return out;
}

#endif  // TBATCH_DEFINITIONS
}  // namespace tbatch
