#pragma once
// StridedView<T>: a non-owning strided view (pointer + layout), for kernels and for wrapping
// memory the caller owns.

#include <type_traits>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/view_methods.hpp"

namespace tbatch {

/// A view of memory it does not own. Element (i0, i1, ...) is at data() + sum(i_d * strides[d]).
/// T may be const-qualified for read-only views; StridedView<T> converts to StridedView<const T>.
template <class T>
class StridedView : public ViewMethods<StridedView<T>> {
  static_assert(Element<T> || detail::is_word_v<T>,
                "StridedView<T>: T must be one of tbatch's element types");

 public:
  using value_type = std::remove_const_t<T>;

  StridedView() : layout_(layout::contiguous(Shape{0})) {}
  /// Contiguous row-major view of `shape` at `data`.
  StridedView(T* data, Shape shape) : base_(data), layout_(layout::contiguous(std::move(shape))) {}
  /// View of `shape` with `strides` (in elements, may be negative or 0) at `data`.
  StridedView(T* data, Shape shape, Strides strides)
      : base_(data), layout_{std::move(shape), std::move(strides), 0} {
    if (layout_.strides.size() != layout_.shape.size())
      detail::fail<ShapeError>(
          "StridedView",
          {"got ", layout_.strides.size(), " strides for a shape of rank ", layout_.shape.size()});
    layout_.shape.numel();
  }
  /// Internal: a view into the buffer starting at `base` with a full layout (offset included).
  StridedView(T* base, const Layout& layout) : base_(base), layout_(layout) {}
  StridedView(T* base, Layout&& layout) : base_(base), layout_(std::move(layout)) {}

  /// Read-only view of the same elements.
  operator StridedView<const T>() const& requires(!std::is_const_v<T>) {
    return StridedView<const T>(base_, layout_);
  }
  /// The same from a view about to go away: takes its layout instead of copying it.
  operator StridedView<const T>() && requires(!std::is_const_v<T>) {
    return StridedView<const T>(base_, std::move(layout_));
  }

  /// Pointer to the first element (the element at all-zero indices).
  T* data() const { return base_ + layout_.offset; }
  const Layout& layout() const { return layout_; }
  // Copy and move overloads rather than one by-value parameter: one layout copy or move less
  // per view made, which adds up in per-element loops.
  // A non-owning view cannot check a layout against memory it does not know: the caller keeps
  // `l` inside its buffer, as with the constructors.
  StridedView with_layout(const Layout& l) const { return StridedView(base_, l); }
  StridedView with_layout(Layout&& l) const { return StridedView(base_, std::move(l)); }
  T* element_pointer() const { return base_; }
  /// Internal: the layout of a view about to go away, moved out (detail::raw_view).
  Layout take_layout() && { return std::move(layout_); }

  StridedView copy_reshaped(const Shape& shape) const {
    detail::fail<ShapeError>("reshape",
                             {"a StridedView of shape ", this->shape(), " and strides ",
                              detail::listed(layout_.strides), " cannot be viewed as ", shape,
                              " without copying, and a StridedView does not own memory to copy "
                              "into; copy it into a Tensor first"});
  }

 private:
  friend class ViewMethods<StridedView>;
  StridedView rebound(const Layout& l) const { return StridedView(base_, l); }
  StridedView rebound(Layout&& l) const { return StridedView(base_, std::move(l)); }

  T* base_ = nullptr;
  Layout layout_;
};

namespace detail {
/// A read-only view of `shape` whose every element is the one at `value` (stride 0 everywhere).
template <class T>
StridedView<const T> broadcast_value(const T& value, const Shape& shape) {
  return StridedView<const T>(&value, Layout{shape, Strides(shape.size(), 0), 0});
}
}  // namespace detail

}  // namespace tbatch
