#pragma once
// The scatter family on dense tensors: Paddle's scatter / scatter_nd_add, torch's scatter_reduce /
// index_add, and their in-place variants. The public functions are thin templates over
// non-template kernels on views whose element type is erased (RawView): assignment runs per
// element width, the reductions per dtype, compiled once (in tbatch::compiled in compiled mode).

#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "tbatch/base/errors.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/ops/reduce_combiners.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/view/engine.hpp"
#endif

namespace tbatch {
namespace detail {

// The kernels behind the entry points, after nothing but their argument checks: `x` / `self` is
// written in place; `function` names the entry point in errors.

TBATCH_INLINE void paddle_scatter_raw(const char* function, const RawView& x,
                                      const Tensor<index_t>& index, const RawView& updates,
                                      bool overwrite);
TBATCH_INLINE void scatter_nd_add_raw(const char* function, const RawView& x,
                                      const Tensor<index_t>& index, const RawView& updates);
TBATCH_INLINE void scatter_reduce_raw(const char* function, const RawView& self, index_t dim,
                                      const Tensor<index_t>& index, const RawView& src,
                                      Reduce reduce, bool include_self);
/// `alpha` points at one element of self's dtype.
TBATCH_INLINE void index_add_raw(const char* function, const RawView& self, index_t dim,
                                 const Tensor<index_t>& index, const RawView& source,
                                 const void* alpha);

#if TBATCH_DEFINITIONS
// Their bodies for the element type T, to which the library's entry points dispatch.

template <class T>
void paddle_scatter_raw(const char* function, const RawView& x, const Tensor<index_t>& index,
                        const RawView& updates, bool overwrite) {
  if (x.dtype == DType::boolean && !overwrite)
    fail_bool_reduction(function, "overwrite=false (adding updates)");
  const Shape& x_shape = x.layout.shape;
  if (x_shape.size() < 1)
    fail<ShapeError>(function, {"x must have rank >= 1, got shape ", x_shape});
  if (!(index.dim() <= 1 || (index.dim() == 2 && index.size(1) == 1)))
    fail<ShapeError>(function,
                     {"index must be 0-d, 1-d or of shape [N, 1], got shape ", index.shape()});
  const index_t n = index.numel();
  const Shape expected =
      index.dim() == 0 ? joined(Shape{}, x_shape, 1) : joined(Shape{n}, x_shape, 1);
  if (!(updates.layout.shape == expected))
    fail<ShapeError>(function, {"updates has shape ", updates.layout.shape, " but index of shape ",
                                index.shape(), " and x of shape ", x_shape, " need ", expected,
                                " (the index count followed by x.shape[1:])"});
  check_index_range(function, "index", index, x_shape[0], "dim 0 of x");

  const StridedView<T> target = typed_view<T>(x);
  check_distinct_elements(target, function, "x");
  const Tensor<index_t> rows = unaliased(index, target).reshape({n});
  std::optional<Tensor<T>> staging;
  StridedView<const T> source = unaliased_view(updates, target, staging);
  if (index.dim() == 0) source = source.unsqueeze(0);
  const StridedView<const index_t> at = spread_along(rows.view(), source.shape(), 0);
  const StridedView<T> base = indexed_base(target, 0, n);
  const index_t scale = x.layout.strides[0];
  if (overwrite) {
    scatter_along(source, at, scale, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, scale, base, AssignOp<T>{});
    scatter_along(source, at, scale, base, SumOp<T>{});
  }
}

template <class T>
void scatter_nd_add_raw(const char* function, const RawView& x, const Tensor<index_t>& index,
                        const RawView& updates) {
  if (x.dtype == DType::boolean) fail_bool_reduction(function, "adding updates");
  const Shape& x_shape = x.layout.shape;
  const index_t rank = x.layout.dim();
  if (index.dim() < 1)
    fail<ShapeError>(function,
                     {"index must have rank >= 1 (its last dim holds the coordinates), got "
                      "shape ",
                      index.shape()});
  const index_t q = index.size(-1);
  if (q > rank)
    fail<ShapeError>(function, {"index.shape[-1] = ", q, " exceeds the rank ", rank,
                                " of x (shape ", x_shape, ")"});
  const Shape leading(index.shape().begin(), index.shape().end() - 1);
  const Shape expected = joined(leading, x_shape, static_cast<std::size_t>(q));
  if (!(updates.layout.shape == expected))
    fail<ShapeError>(function, {"updates has shape ", updates.layout.shape, " but index of shape ",
                                index.shape(), " and x of shape ", x_shape, " need ", expected,
                                " (index.shape[:-1] + x.shape[", q, ":])"});
  for (index_t c = 0; c < q; ++c) {
    if (all_within(index.view().select(-1, c), x_shape[c])) continue;
    fail_first_out_of_range(
        function, "index", index, [&](index_t flat) { return x_shape[flat % q]; },
        [&](index_t flat) { return concat("dim ", flat % q, " of x"); });
  }

  if constexpr (!std::is_same_v<T, bool>) {
    const StridedView<T> target = typed_view<T>(x);
    check_distinct_elements(target, function, "x");
    const index_t k = leading.numel();
    const Tensor<index_t> coords = unaliased(index, target).reshape({k, q});
    std::vector<index_t> update_sizes{k};
    update_sizes.insert(update_sizes.end(), x_shape.begin() + q, x_shape.end());
    // The updates as (k, x.shape[q:]): a view, or a copy when the leading dims do not merge.
    std::optional<Tensor<T>> staging;
    StridedView<const T> source = unaliased_view(updates, target, staging);
    std::optional<Layout> rows = layout::try_view(source.layout(), update_sizes, "reshape");
    if (!rows) {
      staging = Tensor<T>::from_view(source);
      source = staging->view();
      rows = layout::try_view(source.layout(), update_sizes, "reshape");
    }
    source = source.with_layout(std::move(*rows));
    const auto& strides = x.layout.strides;
    LayoutStrides base_strides{0};
    base_strides.insert(base_strides.end(), strides.begin() + q, strides.end());
    Layout base_layout{joined(Shape{k}, x_shape, static_cast<std::size_t>(q)),
                       std::move(base_strides), x.layout.offset};
    scatter_at_offsets(
        source, target.with_layout(std::move(base_layout)),
        [&](index_t update) {
          index_t offset = 0;
          for (index_t c = 0; c < q; ++c)
            offset += coords(update, c) * strides[c];
          return offset;
        },
        SumOp<T>{});
  }
}

template <class T>
void scatter_reduce_raw(const char* function, const RawView& self_raw, index_t dim,
                        const Tensor<index_t>& index_tensor, const RawView& src_raw, Reduce reduce,
                        bool include_self) {
  check_reduce(function, reduce);
  if (self_raw.dtype == DType::boolean) fail_bool_reduction(function, concat("reduce ", reduce));
  if constexpr (!std::is_same_v<T, bool>) {
    const StridedView<T> self = nonempty_dims(typed_view<T>(self_raw));
    const Tensor<index_t> index = nonempty_dims(index_tensor);
    const StridedView<const T> src = nonempty_dims(typed_view<const T>(src_raw));
    if (index.dim() != self.dim() || src.dim() != self.dim())
      fail<ShapeError>(function, {"self, index and src must have the same number of dims, got ",
                                  self_raw.layout.dim(), ", ", index_tensor.dim(), " and ",
                                  src_raw.layout.dim(), " (shapes ", self_raw.layout.shape, ", ",
                                  index_tensor.shape(), ", ", src_raw.layout.shape, ")"});
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    for (index_t k = 0; k < self.dim(); ++k) {
      if (index.size(k) > src.size(k))
        fail<ShapeError>(function, {"index has size ", index.size(k), " at dim ", k,
                                    ", larger than src's ", src.size(k), " (index shape ",
                                    index.shape(), ", src shape ", src.shape(), ")"});
      if (k != d && index.size(k) > self.size(k))
        fail<ShapeError>(
            function, {"index has size ", index.size(k), " at dim ", k, ", larger than self's ",
                       self.size(k), " (index shape ", index.shape(), ", self shape ", self.shape(),
                       "; only dim ", d, " may be larger)"});
    }
    check_index_range(function, "index", index_tensor, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self, function, "self");
    if (index.numel() == 0) return;

    const Shape& shape = index.shape();
    const Tensor<index_t> at = unaliased(index, self);
    std::optional<Tensor<T>> staging;
    StridedView<const T> source = nonempty_dims(unaliased_view(src_raw, self, staging));
    StridedView<T> slots = self;  // the part of self the index reaches
    for (index_t k = 0; k < self.dim(); ++k) {
      source = source.narrow(k, 0, shape[k]);
      if (k != d) slots = slots.narrow(k, 0, shape[k]);
    }
    const StridedView<T> base = indexed_base(slots, d, shape[d]);
    const index_t scale = self.strides()[d];

    // Reduce::mean counts the hits of each slot. When every line of the index along d is the
    // same, one count per position along d serves them all, and the scatters read that one
    // line broadcast (which the row kernels take).
    StridedView<const index_t> targets = at.view();
    const bool one_line = reduce == Reduce::mean && lines_equal_along(targets, d);
    if (one_line) targets = first_line(targets, d).expand(shape.to_vector());
    if (!include_self) {
      const T identity = reduce_identity<T>(reduce);
      scatter_along(broadcast_value(identity, shape), targets, scale, base, AssignOp<T>{});
    }
    with_reduce_op<T>(reduce,
                      [&](const auto& op) { scatter_along(source, targets, scale, base, op); });
    if (reduce == Reduce::mean) divide_by_hit_counts(slots, targets, d, one_line, include_self);
  }
}

template <class T>
void index_add_raw(const char* function, const RawView& self_raw, index_t dim,
                   const Tensor<index_t>& index, const RawView& source_raw,
                   const void* alpha_bits) {
  if (self_raw.dtype == DType::boolean) fail_bool_reduction(function, "adding");
  if constexpr (!std::is_same_v<T, bool>) {
    const StridedView<T> self = nonempty_dims(typed_view<T>(self_raw));
    const StridedView<const T> source = nonempty_dims(typed_view<const T>(source_raw));
    if (index.dim() > 1)
      fail<ShapeError>(function, {"index must be 0-d or 1-d, got shape ", index.shape()});
    if (source.dim() != self.dim())
      fail<ShapeError>(function,
                       {"source must have the same number of dims as self, got ",
                        source_raw.layout.dim(), " and ", self_raw.layout.dim(), " (shapes ",
                        source_raw.layout.shape, " and ", self_raw.layout.shape, ")"});
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    const index_t n = index.numel();
    if (source.size(d) != n)
      fail<ShapeError>(function, {"source has size ", source.size(d), " at dim ", d,
                                  " but index has ", n, " entries; they must be equal"});
    for (index_t k = 0; k < self.dim(); ++k)
      if (k != d && source.size(k) != self.size(k))
        fail<ShapeError>(function, {"source has shape ", source_raw.layout.shape, " and self ",
                                    self_raw.layout.shape, "; they must match at every dim but ", d,
                                    " (dim ", k, ": ", source.size(k), " vs ", self.size(k), ")"});
    check_index_range(function, "index", index, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self, function, "self");

    T alpha;
    std::memcpy(&alpha, alpha_bits, sizeof(T));
    const Tensor<index_t> at = unaliased(index, self).reshape({n});
    std::optional<Tensor<T>> staging;
    const StridedView<const T> values = nonempty_dims(unaliased_view(source_raw, self, staging));
    const StridedView<const index_t> at_view = spread_along(at.view(), values.shape(), d);
    const StridedView<T> base = indexed_base(self, d, n);
    const index_t scale = self.strides()[d];
    if (alpha == T(1))
      scatter_along(values, at_view, scale, base, SumOp<T>{});
    else
      scatter_along(values, at_view, scale, base, ScaledSumOp<T>{alpha});
  }
}
#endif  // TBATCH_DEFINITIONS

// The entry points' thin part: the kernel of T itself in header-only mode (and the library), so
// a file compiles only the dtypes it scatters; the library's entry point in compiled mode.

template <class T>
void paddle_scatter_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates, bool overwrite) {
#if TBATCH_DEFINITIONS
  paddle_scatter_raw<T>(function, raw_view(x.view()), index, raw_view(updates.view()), overwrite);
#else
  paddle_scatter_raw(function, raw_view(x.view()), index, raw_view(updates.view()), overwrite);
#endif
}

template <class T>
void scatter_nd_add_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates) {
#if TBATCH_DEFINITIONS
  scatter_nd_add_raw<T>(function, raw_view(x.view()), index, raw_view(updates.view()));
#else
  scatter_nd_add_raw(function, raw_view(x.view()), index, raw_view(updates.view()));
#endif
}

template <class T>
void scatter_reduce_into(const char* function, Tensor<T>& self, index_t dim,
                         const Tensor<index_t>& index, const Tensor<T>& src, Reduce reduce,
                         bool include_self) {
#if TBATCH_DEFINITIONS
  scatter_reduce_raw<T>(function, raw_view(self.view()), dim, index, raw_view(src.view()), reduce,
                        include_self);
#else
  scatter_reduce_raw(function, raw_view(self.view()), dim, index, raw_view(src.view()), reduce,
                     include_self);
#endif
}

template <class T>
void index_add_into(const char* function, Tensor<T>& self, index_t dim,
                    const Tensor<index_t>& index, const Tensor<T>& source, T alpha) {
#if TBATCH_DEFINITIONS
  index_add_raw<T>(function, raw_view(self.view()), dim, index, raw_view(source.view()), &alpha);
#else
  index_add_raw(function, raw_view(self.view()), dim, index, raw_view(source.view()), &alpha);
#endif
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Paddle: scatter, scatter_nd_add.

/// Paddle's scatter: row index[i] of x receives updates[i]. index is 0-d, 1-d or [N, 1] with
/// values in [0, x.size(0)); updates has shape [N] + x.shape[1:] (x.shape[1:] for a 0-d index).
/// overwrite=true copies rows in index order, so the last update of a row wins; overwrite=false
/// zeroes every referenced row once, then adds every update into it. Unreferenced rows keep x.
/// Returns a new tensor of x's shape. Errors: IndexError for an index value outside
/// [0, x.size(0)) (naming its position); ShapeError for an index of another shape or updates of
/// the wrong shape.
template <class T>
Tensor<T> scatter(const Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates,
                  bool overwrite = true) {
  Tensor<T> out = x.clone();
  detail::paddle_scatter_into("scatter", out, index, updates, overwrite);
  return out;
}

/// In-place scatter: writes into x (which may be a view) and allocates nothing unless an input
/// overlaps x's memory (then that input is copied first). Everything is checked before the
/// first write; ValueError when x is a broadcast view (stride 0 over a dim of size > 1); other
/// errors as scatter.
template <class T>
Tensor<T>& scatter_(Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates,
                    bool overwrite = true) {
  detail::paddle_scatter_into("scatter_", x, index, updates, overwrite);
  return x;
}

/// Paddle's scatter_nd_add: index has shape [..., Q] (Q <= x.dim()); each index row addresses
/// x[i_0, ..., i_{Q-1}] (a slice of shape x.shape[Q:]) and adds the matching slice of updates,
/// whose shape is index.shape[:-1] + x.shape[Q:]. Duplicates accumulate, in index order.
/// Returns a new tensor of x's shape. IndexError for an index value out of range (naming its
/// position); ShapeError for Q > x.dim() or updates of the wrong shape.
template <class T>
Tensor<T> scatter_nd_add(const Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates) {
  Tensor<T> out = x.clone();
  detail::scatter_nd_add_into("scatter_nd_add", out, index, updates);
  return out;
}

/// In-place scatter_nd_add into x (any writable view); checked before the first write, with
/// scatter_nd_add's errors, and ValueError when x is a broadcast view.
template <class T>
Tensor<T>& scatter_nd_add_(Tensor<T>& x, const Tensor<index_t>& index, const Tensor<T>& updates) {
  detail::scatter_nd_add_into("scatter_nd_add_", x, index, updates);
  return x;
}

// ---------------------------------------------------------------------------------------------
// torch: scatter_reduce, index_add.

/// torch.Tensor.scatter_reduce: for every position p of index, the slot of self at p with
/// p[dim] replaced by index[p] is reduced with src[p]. index, src and self have the same rank;
/// index.size(d) <= src.size(d) for every d and <= self.size(d) for d != dim. include_self=false
/// makes a slot that is hit at least once reduce over src values only; slots never hit keep
/// self. Reduce::mean divides by the number of values reduced (self counts when include_self);
/// integer means floor. Integer sums and products wrap. Returns a new tensor of self's shape.
/// Errors: IndexError for a bad dim or an index value outside [0, self.size(dim)); ShapeError
/// for ranks or sizes that break the rules above; TypeError for bool tensors; ValueError for
/// a `reduce` that is not a Reduce.
template <class T>
Tensor<T> scatter_reduce(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                         const Tensor<T>& src, Reduce reduce, bool include_self = true) {
  Tensor<T> out = self.clone();
  detail::scatter_reduce_into("scatter_reduce", out, dim, index, src, reduce, include_self);
  return out;
}

/// In-place scatter_reduce into self. Allocates nothing unless an input overlaps self (then
/// that input is copied first), except Reduce::mean's hit counts: one per position along dim
/// when every line of index along dim holds the same values (an index expanded over the other
/// dims, or equal by value), else one scratch of at most 2^18 counts (2 MiB) or one line along
/// dim, reused block by block. Checked before the first write, with scatter_reduce's errors,
/// and ValueError when self is a broadcast view.
template <class T>
Tensor<T>& scatter_reduce_(Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                           const Tensor<T>& src, Reduce reduce, bool include_self = true) {
  detail::scatter_reduce_into("scatter_reduce_", self, dim, index, src, reduce, include_self);
  return self;
}

/// torch.Tensor.index_add: self.select(dim, index[i]) += alpha * source.select(dim, i). index is
/// 0-d or 1-d with source.size(dim) entries; source matches self at every other dim. Duplicates
/// accumulate in index order; integer results wrap. Returns a new tensor of self's shape.
/// Errors: IndexError for a bad dim or an index value outside [0, self.size(dim)); ShapeError
/// for mismatched shapes; TypeError for bool tensors.
template <class T>
Tensor<T> index_add(const Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                    const Tensor<T>& source, std::type_identity_t<T> alpha = T(1)) {
  Tensor<T> out = self.clone();
  detail::index_add_into("index_add", out, dim, index, source, alpha);
  return out;
}

/// In-place index_add into self; allocates nothing unless an input overlaps self. Checked
/// before the first write, with index_add's errors, and ValueError when self is a broadcast
/// view.
template <class T>
Tensor<T>& index_add_(Tensor<T>& self, index_t dim, const Tensor<index_t>& index,
                      const Tensor<T>& source, std::type_identity_t<T> alpha = T(1)) {
  detail::index_add_into("index_add_", self, dim, index, source, alpha);
  return self;
}

}  // namespace tbatch

// The library's entry points (compiled mode), one function for every dtype.
#ifdef TBATCH_BUILDING_LIBRARY

namespace tbatch::detail {

TBATCH_INLINE void paddle_scatter_raw(const char* function, const RawView& x,
                                      const Tensor<index_t>& index, const RawView& updates,
                                      bool overwrite) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    paddle_scatter_raw<T>(function, x, index, updates, overwrite);
  });
}

TBATCH_INLINE void scatter_nd_add_raw(const char* function, const RawView& x,
                                      const Tensor<index_t>& index, const RawView& updates) {
  dispatch_dtype(x.dtype, [&]<class T>(std::type_identity<T>) {
    scatter_nd_add_raw<T>(function, x, index, updates);
  });
}

TBATCH_INLINE void scatter_reduce_raw(const char* function, const RawView& self_raw, index_t dim,
                                      const Tensor<index_t>& index_tensor, const RawView& src_raw,
                                      Reduce reduce, bool include_self) {
  dispatch_dtype(self_raw.dtype, [&]<class T>(std::type_identity<T>) {
    scatter_reduce_raw<T>(function, self_raw, dim, index_tensor, src_raw, reduce, include_self);
  });
}

TBATCH_INLINE void index_add_raw(const char* function, const RawView& self_raw, index_t dim,
                                 const Tensor<index_t>& index, const RawView& source_raw,
                                 const void* alpha_bits) {
  dispatch_dtype(self_raw.dtype, [&]<class T>(std::type_identity<T>) {
    index_add_raw<T>(function, self_raw, dim, index, source_raw, alpha_bits);
  });
}

}  // namespace tbatch::detail

#endif  // TBATCH_BUILDING_LIBRARY
