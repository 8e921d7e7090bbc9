#pragma once
// Tensor<T>: a shared, Eigen-allocated buffer plus a layout. Copies share the buffer (as
// torch::Tensor and cv::Mat); clone() copies the data.

#include <Eigen/Core>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <type_traits>
#include <vector>

#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/shape.hpp"
#include "tbatch/core/storage.hpp"
#include "tbatch/detail/tensor_text.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/view_methods.hpp"

namespace tbatch {

class TensorIndex;

/// An n-d array of T (any of the twelve element types) with runtime rank.
template <class T>
class Tensor : public ViewMethods<Tensor<T>> {
  static_assert(Element<T> && !std::is_const_v<T>,
                "Tensor<T>: T must be one of tbatch's (non-const) element types");

 public:
  using value_type = T;
  using ViewMethods<Tensor<T>>::numel;
  using ViewMethods<Tensor<T>>::shape;

  /// An empty tensor of shape {0}.
  Tensor() : Tensor(Shape{0}) {}
  /// A zero-filled contiguous tensor of shape `sizes` (ShapeError when its element count
  /// overflows).
  explicit Tensor(Shape sizes)
      : storage_(Storage::allocate_zeroed(sizes.numel(), sizeof(T))),
        layout_(layout::contiguous(std::move(sizes))) {}
  /// A contiguous tensor of shape `sizes` with every element `fill_value`.
  Tensor(Shape sizes, T fill_value) : Tensor(empty(std::move(sizes))) {
    // A fresh contiguous buffer: no aliasing check to make.
    detail::fill_view(view(), fill_value, detail::stores_for_output(view()));
  }
  /// A tensor of shape `sizes` holding `values` in row-major order; ShapeError if the count
  /// differs.
  Tensor(Shape sizes, const std::vector<T>& values) : Tensor(empty(std::move(sizes))) {
    if (static_cast<index_t>(values.size()) != numel())
      detail::fail<ShapeError>("Tensor", "got ", values.size(), " values for shape ", this->shape(),
                               ", which holds ", numel(), " elements");
    std::copy(values.begin(), values.end(), data());
  }

  /// An uninitialised contiguous tensor of `shape` (for outputs that are fully written next).
  static Tensor empty(Shape shape) {
    const index_t n = shape.numel();
    return Tensor(Storage::allocate(n, sizeof(T)), layout::contiguous(std::move(shape)));
  }
  /// Same as Tensor(shape): zeros.
  static Tensor zeros(Shape shape) { return Tensor(std::move(shape)); }
  /// Same as Tensor(shape, value).
  static Tensor full(Shape shape, T value) { return Tensor(std::move(shape), value); }
  /// 0, 1, ..., n-1 as T, shape {n}. ShapeError for n < 0.
  static Tensor arange(index_t n) {
    if (n < 0) detail::fail<ShapeError>("arange", "n ", n, " must be >= 0");
    Tensor out = empty(Shape{n});
    for (index_t i = 0; i < n; ++i)
      out.data()[i] = static_cast<T>(i);
    return out;
  }
  /// A contiguous copy of a view of memory the caller owns.
  static Tensor from_view(StridedView<const T> source) {
    Tensor out = empty(source.shape());
    tbatch::copy(source, out.view());
    return out;
  }
  /// Copy of a 2-d Eigen expression (rows, cols), row-major, converted to T.
  template <class Derived>
  static Tensor from_eigen(const Eigen::DenseBase<Derived>& m) {
    Tensor out = empty(Shape{m.rows(), m.cols()});
    out.matrix() = m.derived().template cast<T>();
    return out;
  }

  /// Pointer to the first element of this view.
  T* data() { return base() + layout_.offset; }
  const T* data() const { return base() + layout_.offset; }
  index_t offset() const { return layout_.offset; }
  /// True when both tensors view the same buffer.
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }
  /// The shared buffer itself (for wrappers such as TensorDict that track ownership).
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  StridedView<T> view() { return StridedView<T>(base(), layout_); }
  StridedView<const T> view() const { return StridedView<const T>(base(), layout_); }

  /// Values in row-major order.
  std::vector<T> to_vector() const {
    const Tensor dense = contiguous();
    return std::vector<T>(dense.data(), dense.data() + dense.numel());
  }
  /// A contiguous copy that shares nothing with this tensor.
  Tensor clone() const { return from_view(view()); }
  /// This tensor if already contiguous, else a contiguous copy.
  Tensor contiguous() const { return this->is_contiguous() ? *this : clone(); }

  /// Contiguous tensors as a flat Eigen array of numel() elements, sharing the buffer.
  /// ValueError when the tensor is not contiguous.
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> flat() {
    require_contiguous("flat");
    return {data(), numel()};
  }
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> flat() const {
    require_contiguous("flat");
    return {data(), numel()};
  }
  using MatrixMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                               Eigen::OuterStride<>>;
  using ConstMatrixMap =
      Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                 Eigen::OuterStride<>>;
  /// Rank-2 tensors with unit column stride as a row-major Eigen matrix (rows may be strided),
  /// sharing the buffer. ShapeError unless the rank is 2; ValueError for a column stride other
  /// than 1 or overlapping rows.
  MatrixMap matrix() {
    require_matrix();
    return {data(), this->size(0), this->size(1), Eigen::OuterStride<>(row_stride())};
  }
  ConstMatrixMap matrix() const {
    require_matrix();
    return {data(), this->size(0), this->size(1), Eigen::OuterStride<>(row_stride())};
  }

  /// Indexing with torch semantics: integers, Slice, Ellipsis, NewAxis (views); integer index
  /// tensors and boolean masks (copies). Defined in core/indexing.hpp. IndexError for too many
  /// indices, more than one Ellipsis, an index out of range or a mask of the wrong shape;
  /// ShapeError when index tensors do not broadcast together.
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  /// Writes `value` (broadcast to the indexed shape) into the indexed elements; with repeated
  /// positions the last write wins. index's errors, and ShapeError when value does not
  /// broadcast.
  void index_put(std::initializer_list<TensorIndex> indices, const Tensor& value);
  /// Sets the indexed elements to `value`. index's errors.
  void index_fill(std::initializer_list<TensorIndex> indices, T value);

  // Hooks for ViewMethods.
  const Layout& layout() const { return layout_; }
  /// The same buffer seen through `l` (shape, strides, offset in elements). ValueError when `l`
  /// addresses an element outside the buffer, ShapeError when its strides do not match its
  /// rank.
  Tensor with_layout(Layout l) const {
    layout::check_inside(l, storage_->bytes() / index_t(sizeof(T)), "Tensor::with_layout");
    return Tensor(storage_, std::move(l));
  }
  T* element_pointer() { return base(); }
  const T* element_pointer() const { return base(); }
  Tensor copy_reshaped(const Shape& sizes) const {
    Tensor out = clone();
    out.layout_ = layout::contiguous(sizes);
    return out;
  }

 private:
  friend class AnyTensor;  // views its untyped storage as Tensor<T> after checking the dtype
  friend class ViewMethods<Tensor>;

  // Copy and move overloads: one layout copy or move less per view made (see StridedView). For
  // layouts the layout algebra made from this one, which stay inside the buffer.
  Tensor rebound(const Layout& l) const { return Tensor(storage_, l); }
  Tensor rebound(Layout&& l) const { return Tensor(storage_, std::move(l)); }

  Tensor(std::shared_ptr<Storage> storage, Layout&& l)
      : storage_(std::move(storage)), layout_(std::move(l)) {}
  Tensor(const std::shared_ptr<Storage>& storage, const Layout& l)
      : storage_(storage), layout_(l) {}

  T* base() const { return static_cast<T*>(storage_->data()); }

  void require_contiguous(const char* function) const {
    if (!this->is_contiguous())
      detail::fail<ValueError>(function, "needs a contiguous tensor, got strides ",
                               detail::listed(layout_.strides), " for shape ", this->shape(),
                               "; call contiguous() first");
  }
  void require_matrix() const {
    if (this->dim() != 2)
      detail::fail<ShapeError>("matrix", "needs a rank-2 tensor, got shape ", this->shape());
    if (this->size(1) > 1 && layout_.strides[1] != 1)
      detail::fail<ValueError>("matrix", "needs unit column stride, got strides ",
                               detail::listed(layout_.strides), "; call contiguous() first");
    if (this->size(0) > 1 && layout_.strides[0] < this->size(1))
      detail::fail<ValueError>("matrix", "needs rows that do not overlap, got strides ",
                               detail::listed(layout_.strides));
  }
  index_t row_stride() const { return this->size(0) > 1 ? layout_.strides[0] : this->size(1); }

  std::shared_ptr<Storage> storage_;
  Layout layout_;
};

namespace detail {
/// Widens an element for comparison and printing (half, bfloat16 -> float; int8 -> int).
template <class T>
auto widen(T value) {
  if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
    return static_cast<float>(value);
  else if constexpr (std::is_same_v<T, bool>)
    return value;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>(value);
  else
    return value;
}
}  // namespace detail

/// Same shape and equal values (NaN never equals anything, as torch.equal).
template <class T>
bool operator==(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  bool equal = true;
  for_each([&](const T& x, const T& y) { equal = equal && detail::widen(x) == detail::widen(y); },
           a.view(), b.view());
  return equal;
}
template <class T>
bool operator!=(const Tensor<T>& a, const Tensor<T>& b) {
  return !(a == b);
}

/// Same shape and |a - b| <= atol + rtol * |b| everywhere (NaN is never close).
template <class T>
bool allclose(const Tensor<T>& a, const Tensor<T>& b, double rtol = 1e-5, double atol = 1e-8) {
  if (!(a.shape() == b.shape())) return false;
  bool close = true;
  for_each(
      [&](const T& x, const T& y) {
        const double dx = static_cast<double>(detail::widen(x));
        const double dy = static_cast<double>(detail::widen(y));
        close = close && std::abs(dx - dy) <= atol + rtol * std::abs(dy);
      },
      a.view(), b.view());
  return close;
}

namespace detail {
/// The elements `t` prints, formatted (detail/tensor_text.hpp); only this part depends on T.
template <class T>
PrintedTensor printed(const Tensor<T>& t) {
  // Floats of every width print as double, integers as int64 / uint64.
  using Printed = std::conditional_t<FloatingElement<T>, double, decltype(widen(T{}))>;
  std::vector<Printed> values;
  for (const index_t offset : printed_offsets(t.shape(), t.strides(), t.offset()))
    values.push_back(static_cast<Printed>(widen(t.element_pointer()[offset])));
  return {t.shape(), formatted(values)};
}
}  // namespace detail

namespace detail {

/// `input`, or a copy of it when it shares elements with `out`, the view a function is about
/// to write (rule 2 of view/aliasing.hpp).
template <class S, class D>
Tensor<S> unaliased(const Tensor<S>& input, const StridedView<D>& out) {
  return may_share_elements(input.view(), out) ? input.clone() : input;
}

/// `input`, or, when it shares elements with `out`, a view of its copy kept in `staging`.
template <class T, class D>
StridedView<const T> unaliased(const StridedView<const T>& input, const StridedView<D>& out,
                               Tensor<T>& staging) {
  if (!may_share_elements(input, out)) return input;
  staging = Tensor<T>::from_view(input);
  return StridedView<const T>(staging.view());
}

/// `list`, or, when some of its tensors share elements with `out`, `staging` holding the list
/// with those tensors copied (rule 2 of view/aliasing.hpp).
template <class T>
const std::vector<Tensor<T>>& unaliased(const std::vector<Tensor<T>>& list,
                                        const StridedView<T>& out,
                                        std::vector<Tensor<T>>& staging) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!may_share_elements(list[i].view(), out)) continue;
    staging = list;
    for (std::size_t j = i; j < list.size(); ++j)
      staging[j] = unaliased(list[j], out);
    return staging;
  }
  return list;
}

}  // namespace detail

/// torch-like text, "tensor([[1., 2.],\n        [3., 4.]], shape=[2, 2], dtype=float32)"; more
/// than 1000 elements are elided. The stream's precision and flags play no part.
template <class T>
std::ostream& operator<<(std::ostream& out, const Tensor<T>& t) {
  std::string text;
  detail::append_tensor(text, detail::printed(t), dtype_name_of<T>);
  return detail::write_text(out, text);
}

}  // namespace tbatch

#include "tbatch/core/indexing.hpp"
