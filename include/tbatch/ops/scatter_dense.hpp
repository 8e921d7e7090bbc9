#pragma once
// The scatter family on dense tensors: Paddle's scatter / scatter_nd_add, torch's scatter_reduce /
// index_add, and their in-place variants.

#include <vector>

#include "tbatch/base/errors.hpp"
#include "tbatch/ops/reduce.hpp"
#include "tbatch/ops/scatter_kernel.hpp"
#include "tbatch/tensor/tensor.hpp"

namespace tbatch {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Implementations shared by the out-of-place and in-place entry points.

template <class T>
void paddle_scatter_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates, bool overwrite) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!overwrite) fail_bool_reduction(function, "overwrite=false (adding updates)");
  }
  if (x.dim() < 1) fail<ShapeError>(function, "x must have rank >= 1, got shape ", x.shape());
  if (!(index.dim() <= 1 || (index.dim() == 2 && index.size(1) == 1)))
    fail<ShapeError>(function, "index must be 0-d, 1-d or of shape [N, 1], got shape ",
                     index.shape());
  const index_t n = index.numel();
  const Shape expected =
      index.dim() == 0 ? joined(Shape{}, x.shape(), 1) : joined(Shape{n}, x.shape(), 1);
  if (!(updates.shape() == expected))
    fail<ShapeError>(function, "updates has shape ", updates.shape(), " but index of shape ",
                     index.shape(), " and x of shape ", x.shape(), " need ", expected,
                     " (the index count followed by x.shape[1:])");
  check_index_range(function, "index", index, x.size(0), "dim 0 of x");
  check_distinct_elements(x.view(), function, "x");

  const Tensor<index_t> rows = unaliased(index, x.view()).reshape({n});
  const Tensor<T> source = unaliased(index.dim() == 0 ? updates.unsqueeze(0) : updates, x.view());
  const StridedView<const index_t> at = spread_along(rows.view(), source.shape(), 0);
  const StridedView<T> base = indexed_base(x.view(), 0, n);
  const index_t scale = x.stride(0);
  if (overwrite) {
    scatter_along(source.view(), at, scale, base, AssignOp<T>{});
  } else if constexpr (!std::is_same_v<T, bool>) {
    const T zero(0);
    scatter_along(broadcast_value(zero, source.shape()), at, scale, base, AssignOp<T>{});
    scatter_along(source.view(), at, scale, base, SumOp<T>{});
  }
}

template <class T>
void scatter_nd_add_into(const char* function, Tensor<T>& x, const Tensor<index_t>& index,
                         const Tensor<T>& updates) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "adding updates");
  } else {
    if (index.dim() < 1)
      fail<ShapeError>(function,
                       "index must have rank >= 1 (its last dim holds the coordinates), got "
                       "shape ",
                       index.shape());
    const index_t q = index.size(-1);
    if (q > x.dim())
      fail<ShapeError>(function, "index.shape[-1] = ", q, " exceeds the rank ", x.dim(),
                       " of x (shape ", x.shape(), ")");
    const Shape leading(index.shape().begin(), index.shape().end() - 1);
    const Shape expected = joined(leading, x.shape(), static_cast<std::size_t>(q));
    if (!(updates.shape() == expected))
      fail<ShapeError>(function, "updates has shape ", updates.shape(), " but index of shape ",
                       index.shape(), " and x of shape ", x.shape(), " need ", expected,
                       " (index.shape[:-1] + x.shape[", q, ":])");
    for (index_t c = 0; c < q; ++c) {
      if (all_within(index.view().select(-1, c), x.size(c))) continue;
      fail_first_out_of_range(
          function, "index", index, [&](index_t flat) { return x.size(flat % q); },
          [&](index_t flat) { return concat("dim ", flat % q, " of x"); });
    }
    check_distinct_elements(x.view(), function, "x");

    const index_t k = leading.numel();
    const Tensor<index_t> coords = unaliased(index, x.view()).reshape({k, q});
    std::vector<index_t> update_sizes{k};
    update_sizes.insert(update_sizes.end(), x.shape().begin() + q, x.shape().end());
    const Tensor<T> source = unaliased(updates, x.view()).reshape(update_sizes);
    LayoutStrides base_strides{0};
    base_strides.insert(base_strides.end(), x.strides().begin() + q, x.strides().end());
    Layout base_layout{joined(Shape{k}, x.shape(), static_cast<std::size_t>(q)),
                       std::move(base_strides), x.offset()};
    const auto& strides = x.strides();
    scatter_at_offsets(
        source.view(), x.view().with_layout(std::move(base_layout)),
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
void scatter_reduce_into(const char* function, Tensor<T>& self_tensor, index_t dim,
                         const Tensor<index_t>& index_tensor, const Tensor<T>& src_tensor,
                         Reduce reduce, bool include_self) {
  check_reduce(function, reduce);
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, concat("reduce ", reduce));
  } else {
    Tensor<T> self = nonempty_dims(self_tensor);
    const Tensor<index_t> index = nonempty_dims(index_tensor);
    const Tensor<T> src = nonempty_dims(src_tensor);
    if (index.dim() != self.dim() || src.dim() != self.dim())
      fail<ShapeError>(function, "self, index and src must have the same number of dims, got ",
                       self_tensor.dim(), ", ", index_tensor.dim(), " and ", src_tensor.dim(),
                       " (shapes ", self_tensor.shape(), ", ", index_tensor.shape(), ", ",
                       src_tensor.shape(), ")");
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    for (index_t k = 0; k < self.dim(); ++k) {
      if (index.size(k) > src.size(k))
        fail<ShapeError>(function, "index has size ", index.size(k), " at dim ", k,
                         ", larger than src's ", src.size(k), " (index shape ", index.shape(),
                         ", src shape ", src.shape(), ")");
      if (k != d && index.size(k) > self.size(k))
        fail<ShapeError>(function, "index has size ", index.size(k), " at dim ", k,
                         ", larger than self's ", self.size(k), " (index shape ", index.shape(),
                         ", self shape ", self.shape(), "; only dim ", d, " may be larger)");
    }
    check_index_range(function, "index", index_tensor, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self.view(), function, "self");
    if (index.numel() == 0) return;

    const Shape& shape = index.shape();
    const Tensor<index_t> at = unaliased(index, self.view());
    const Tensor<T> staged_src = unaliased(src, self.view());
    StridedView<const T> source = staged_src.view();
    StridedView<T> slots = self.view();  // the part of self the index reaches
    for (index_t k = 0; k < self.dim(); ++k) {
      source = source.narrow(k, 0, shape[k]);
      if (k != d) slots = slots.narrow(k, 0, shape[k]);
    }
    const StridedView<T> base = indexed_base(slots, d, shape[d]);
    const index_t scale = self.stride(d);

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
void index_add_into(const char* function, Tensor<T>& self_tensor, index_t dim,
                    const Tensor<index_t>& index, const Tensor<T>& source_tensor, T alpha) {
  if constexpr (std::is_same_v<T, bool>) {
    fail_bool_reduction(function, "adding");
  } else {
    Tensor<T> self = nonempty_dims(self_tensor);
    const Tensor<T> source = nonempty_dims(source_tensor);
    if (index.dim() > 1)
      fail<ShapeError>(function, "index must be 0-d or 1-d, got shape ", index.shape());
    if (source.dim() != self.dim())
      fail<ShapeError>(function, "source must have the same number of dims as self, got ",
                       source_tensor.dim(), " and ", self_tensor.dim(), " (shapes ",
                       source_tensor.shape(), " and ", self_tensor.shape(), ")");
    const index_t d = layout::normalize_dim(dim, self.dim(), function);
    const index_t n = index.numel();
    if (source.size(d) != n)
      fail<ShapeError>(function, "source has size ", source.size(d), " at dim ", d,
                       " but index has ", n, " entries; they must be equal");
    for (index_t k = 0; k < self.dim(); ++k)
      if (k != d && source.size(k) != self.size(k))
        fail<ShapeError>(function, "source has shape ", source_tensor.shape(), " and self ",
                         self_tensor.shape(), "; they must match at every dim but ", d, " (dim ", k,
                         ": ", source.size(k), " vs ", self.size(k), ")");
    check_index_range(function, "index", index, self.size(d), concat("dim ", d, " of self"));
    check_distinct_elements(self.view(), function, "self");

    const Tensor<index_t> at = unaliased(index, self.view()).reshape({n});
    const Tensor<T> values = unaliased(source, self.view());
    const StridedView<const index_t> at_view = spread_along(at.view(), values.shape(), d);
    const StridedView<T> base = indexed_base(self.view(), d, n);
    if (alpha == T(1))
      scatter_along(values.view(), at_view, self.stride(d), base, SumOp<T>{});
    else
      scatter_along(values.view(), at_view, self.stride(d), base, ScaledSumOp<T>{alpha});
  }
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
