#pragma once
// ViewMethods: the layout interface and view-making methods shared by Tensor and StridedView.
// Each method is one call into the layout algebra; the derived class only rebinds the layout.

#include <initializer_list>
#include <optional>
#include <vector>

#include "tbatch/view/layout.hpp"

namespace tbatch {

/// CRTP base. Every method that takes a dim accepts negative dims (counted from the end) and
/// throws IndexError for a dim outside [-dim(), dim()); view-making methods share the buffer.
///
/// CRTP details: Derived provides `const Layout& layout() const`, `Derived rebound(const
/// Layout&) const` and `Derived rebound(Layout&&) const` (same buffer, a layout the layout
/// algebra made from this one, so unchecked; private, with ViewMethods<Derived> a friend),
/// `element_pointer()` (pointer to offset 0 of the buffer) and `Derived copy_reshaped(const
/// Shape&) const` (a fresh contiguous copy with that shape; reshape and flatten call it when no
/// view exists).
template <class Derived>
class ViewMethods {
 public:
  /// Sizes of the dims.
  const Shape& shape() const { return layout().shape; }
  /// Rank (number of dims).
  index_t dim() const { return layout().dim(); }
  /// Size of `d` (negative counts from the end).
  index_t size(index_t d) const { return layout().shape[layout::normalize_dim(d, dim(), "size")]; }
  /// Number of elements (product of the sizes, 1 for rank 0).
  index_t numel() const { return layout().shape.numel(); }
  /// Strides in elements, one per dim (may be negative, 0 for broadcast dims).
  const Strides& strides() const { return layout().strides; }
  /// Stride of `d` in elements.
  index_t stride(index_t d) const {
    return layout().strides[layout::normalize_dim(d, dim(), "stride")];
  }
  /// True for the row-major dense layout (size-1 dims ignored).
  bool is_contiguous() const { return layout::is_contiguous(layout()); }

  /// Python-style slice of `dim` (negative bounds count from the end and are clamped, negative
  /// steps reverse): a view. ValueError for step 0.
  Derived slice(index_t dim, std::optional<index_t> start, std::optional<index_t> stop,
                index_t step = 1) const {
    return rebind(layout::slice(layout(), dim, start, stop, step));
  }
  /// Index `i` (negative counts from the end) of `dim`, which is removed: a view of rank - 1.
  /// IndexError when i is out of range.
  Derived select(index_t dim, index_t i) const { return rebind(layout::select(layout(), dim, i)); }
  /// Elements [start, start + length) of `dim`: a view. IndexError when they leave the dim.
  Derived narrow(index_t dim, index_t start, index_t length) const {
    return rebind(layout::narrow(layout(), dim, start, length));
  }
  /// Dims reordered: dim i of the result is dim dims[i]; a view. ShapeError unless dims has
  /// rank entries; ValueError for a repeated dim.
  Derived permute(const std::vector<index_t>& dims) const {
    return rebind(layout::permute(layout(), dims));
  }
  /// Dims a and b swapped: a view.
  Derived transpose(index_t a, index_t b) const {
    return rebind(layout::transpose(layout(), a, b));
  }
  /// A size-1 dim inserted at `dim` (in [-dim() - 1, dim()]): a view.
  Derived unsqueeze(index_t dim) const { return rebind(layout::unsqueeze(layout(), dim)); }
  /// Every size-1 dim removed: a view.
  Derived squeeze() const { return rebind(layout::squeeze(layout())); }
  /// `dim` removed if its size is 1, else the same view (as torch).
  Derived squeeze(index_t dim) const { return rebind(layout::squeeze(layout(), dim)); }
  /// Broadcast view: size-1 dims and new leading dims get stride 0; -1 keeps a size. ShapeError
  /// for fewer sizes than dims or a size that does not broadcast.
  Derived expand(const std::vector<index_t>& sizes) const {
    return rebind(layout::expand(layout(), sizes));
  }
  /// The same elements with another shape, never copying; ShapeError if the strides forbid it.
  Derived view_as(const std::vector<index_t>& sizes) const {
    if (auto viewed = layout::try_view(layout(), sizes, "view_as"))
      return rebind(std::move(*viewed));
    detail::fail<ShapeError>(
        "view_as",
        {"shape ", detail::listed(sizes), " cannot be a view of a tensor with shape ", shape(),
         " and strides ", detail::listed(strides()), "; use reshape, which copies when it must"});
  }
  /// view_as when the strides allow it, else a contiguous copy (one size may be -1). ShapeError
  /// when the element count differs or more than one size is -1.
  Derived reshape(const std::vector<index_t>& sizes) const {
    if (auto viewed = layout::try_view(layout(), sizes, "reshape"))
      return rebind(std::move(*viewed));
    return self().copy_reshaped(layout::infer_size(sizes, numel(), "reshape"));
  }
  /// Merges dims [start, end]: a view when possible, else a copy. IndexError when start comes
  /// after end.
  Derived flatten(index_t start = 0, index_t end = -1) const {
    if (auto viewed = layout::try_flatten(layout(), start, end)) return rebind(std::move(*viewed));
    const index_t s = layout::normalize_dim(start, dim(), "flatten");
    const index_t e = layout::normalize_dim(end, dim(), "flatten");
    std::vector<index_t> sizes(shape().begin(), shape().begin() + s);
    sizes.push_back(-1);
    sizes.insert(sizes.end(), shape().begin() + e + 1, shape().end());
    return self().copy_reshaped(layout::infer_size(sizes, numel(), "flatten"));
  }
  /// Splits `dim` into `sizes` (one may be -1): a view. ShapeError for empty sizes or sizes whose
  /// product is not the dim's size.
  Derived unflatten(index_t dim, const std::vector<index_t>& sizes) const {
    return rebind(layout::unflatten(layout(), dim, sizes));
  }
  /// Sliding windows of `size` elements every `step` along `dim`, as a new last dim (torch): a
  /// view with dim `dim` of size (size(dim) - size) / step + 1. ValueError for step <= 0;
  /// ShapeError for a window larger than the dim.
  Derived unfold(index_t dim, index_t size, index_t step) const {
    return rebind(layout::unfold(layout(), dim, size, step));
  }
  /// Consecutive views of `size` elements along `dim` (the last may be shorter). ValueError for
  /// size <= 0.
  std::vector<Derived> split(index_t size, index_t dim = 0) const {
    return rebind_all(layout::split(layout(), size, dim));
  }
  /// Consecutive views with the given sizes along `dim`. ValueError for a negative size or sizes
  /// that do not sum to the dim's size.
  std::vector<Derived> split(const std::vector<index_t>& sizes, index_t dim = 0) const {
    return rebind_all(layout::split(layout(), sizes, dim));
  }
  /// At most `chunks` views of ceil(size / chunks) elements along `dim` (torch's rule).
  /// ValueError for chunks <= 0.
  std::vector<Derived> chunk(index_t chunks, index_t dim = 0) const {
    return rebind_all(layout::chunk(layout(), chunks, dim));
  }
  /// One view per index of `dim`, which is removed.
  std::vector<Derived> unbind(index_t dim = 0) const {
    return rebind_all(layout::unbind(layout(), dim));
  }

  /// Unchecked element access (asserted in debug builds).
  template <class... Idx>
  auto& operator()(Idx... idx) {
    return self_mutable().element_pointer()[position_of(idx...)];
  }
  template <class... Idx>
  auto& operator()(Idx... idx) const {
    return self().element_pointer()[position_of(idx...)];
  }
  /// Checked element access: IndexError for a wrong count or an out-of-range index.
  auto& at(std::initializer_list<index_t> idx) {
    return self_mutable().element_pointer()[checked_position_of(idx)];
  }
  auto& at(std::initializer_list<index_t> idx) const {
    return self().element_pointer()[checked_position_of(idx)];
  }

 protected:
  ViewMethods() = default;

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  Derived& self_mutable() { return static_cast<Derived&>(*this); }
  template <class... Idx>
  index_t position_of(Idx... idx) const {
    TBATCH_ASSERT(sizeof...(Idx) == static_cast<std::size_t>(dim()));
    index_t position = layout().offset, d = 0;
    ((TBATCH_ASSERT(index_t(idx) >= 0 && index_t(idx) < layout().shape[d]),
      position += index_t(idx) * layout().strides[d++]),
     ...);
    return position;
  }
  index_t checked_position_of(std::initializer_list<index_t> idx) const {
    if (static_cast<index_t>(idx.size()) != dim())
      detail::fail<IndexError>("at", {"got ", idx.size(), " indices for a tensor of rank ", dim()});
    index_t position = layout().offset, d = 0;
    for (index_t i : idx) {
      const index_t size = layout().shape[d];
      if (i < -size || i >= size)
        detail::fail<IndexError>("at",
                                 {"index ", i, " is out of range for dim ", d, " of size ", size});
      position += (i < 0 ? i + size : i) * layout().strides[d++];
    }
    return position;
  }
  const Layout& layout() const { return self().layout(); }
  Derived rebind(Layout&& l) const { return self().rebound(std::move(l)); }
  std::vector<Derived> rebind_all(std::vector<Layout> layouts) const {
    std::vector<Derived> out;
    out.reserve(layouts.size());
    for (auto& l : layouts)
      out.push_back(rebind(std::move(l)));
    return out;
  }
};

}  // namespace tbatch
