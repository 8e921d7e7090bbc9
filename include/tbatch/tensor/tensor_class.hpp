#pragma once
// Tensor<T>: a shared, Eigen-allocated buffer plus a layout. Copies share the buffer (as
// torch::Tensor and cv::Mat); clone() copies the data.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/base/storage.hpp"
#include "tbatch/base/streaming_stores.hpp"
#include "tbatch/tensor/tensor_text.hpp"
#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/copy.hpp"
#include "tbatch/view/for_each.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/strided_view.hpp"
#include "tbatch/view/view_methods.hpp"

namespace tbatch {

class TensorIndex;
template <class T>
class Tensor;

namespace detail {
/// Eigen's map types over a tensor's memory (Tensor::flat, matrix, from_eigen). Defined in
/// tbatch/tensor/eigen.hpp; incomplete here, so a compiled-mode file that uses the maps without
/// including that header stops at this type.
template <class T>
struct EigenMaps;

/// `t` with its element type erased (view/raw_view.hpp).
template <class T>
RawView raw_view(const Tensor<T>& t);

/// The storage under layout `l` over memory the caller owns, element [0, ..., 0] at `first`
/// (Tensor::borrow, the DLPack import): checks the strides' rank, a null or misaligned `first`
/// and the extent's overflow, and sets l.offset to `first`'s place in the storage, which starts
/// at the lowest address `l` reaches. The storage holds `keep_alive`.
inline std::shared_ptr<Storage> borrowed_storage(void* first, Layout& l, index_t element_size,
                                                 std::string_view dtype_name,
                                                 std::shared_ptr<const void> keep_alive,
                                                 const char* function) {
  if (l.strides.size() != l.shape.size())
    fail<ShapeError>(function, {"strides ", listed(l.strides), " do not match shape ", l.shape,
                                " (rank ", l.shape.size(), ")"});
  if (l.shape.numel() == 0) return Storage::borrow(nullptr, 0, std::move(keep_alive));
  if (first == nullptr) fail<ValueError>(function, {"data is null for shape ", l.shape});
  if (reinterpret_cast<std::uintptr_t>(first) % std::uintptr_t(element_size) != 0)
    fail<ValueError>(function, {"data ", static_cast<const void*>(first), " is not aligned to ",
                                element_size, " bytes, as ", dtype_name, " needs"});
  // extent() checks the span, which bounds -e.lowest (l.offset is 0 here): no step can wrap.
  const layout::Extent e = layout::extent(l, function);
  const index_t bytes = checked_mul(e.highest - e.lowest + 1, element_size, function);
  l.offset = -e.lowest;
  return Storage::borrow(static_cast<char*>(first) + e.lowest * element_size, bytes,
                         std::move(keep_alive));
}
}  // namespace detail

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
    // A fresh contiguous buffer: no aliasing check to make. The layout is lent to the RawView
    // rather than copied (a small tensor's fill costs little more than the copy).
    detail::RawView all{base(), std::move(layout_), dtype_of<T>};
    detail::fill_of<T>(all, fill_value,
                       detail::stores_for(all.layout.shape.numel() * index_t(sizeof(T))));
    layout_ = std::move(all.layout);
  }
  /// A tensor of shape `sizes` holding `values` in row-major order; ShapeError if the count
  /// differs. A braced list always means values: Tensor<float>({2, 2}, {1}) is a ShapeError,
  /// not a fill (write Tensor<float>({2, 2}, 1) to fill).
  Tensor(Shape sizes, std::initializer_list<T> values)
      : Tensor(std::move(sizes), values.begin(), static_cast<index_t>(values.size())) {}
  Tensor(Shape sizes, const std::vector<T>& values)
      : Tensor(std::move(sizes), values.begin(), static_cast<index_t>(values.size())) {}

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
    if (n < 0) detail::fail<ShapeError>("arange", {"n ", n, " must be >= 0"});
    Tensor out = empty(Shape{n});
    for (index_t i = 0; i < n; ++i)
      out.data()[i] = static_cast<T>(i);
    return out;
  }
  /// A tensor over `data`, memory the caller owns: no copy and no allocation. `data` points at
  /// element [0, ..., 0]; `strides` are in elements, any sign, 0 allowed (default: row-major).
  /// tbatch never frees `data`. The memory must stay valid while any tensor, view or batch made
  /// from the result exists: pass its owner as `keep_alive` (held until the last of them is
  /// gone), or outlive them yourself. ValueError for a null or misaligned `data` with elements,
  /// ShapeError for strides of another rank or a span that overflows. docs/interop.md.
  static Tensor borrow(T* data, Shape shape, std::shared_ptr<const void> keep_alive = {}) {
    Strides strides = layout::contiguous_strides(shape);
    return borrow(data, std::move(shape), std::move(strides), std::move(keep_alive));
  }
  static Tensor borrow(T* data, Shape shape, Strides strides,
                       std::shared_ptr<const void> keep_alive = {}) {
    Layout l{std::move(shape), std::move(strides), 0};
    std::shared_ptr<Storage> storage = detail::borrowed_storage(
        data, l, index_t(sizeof(T)), dtype_name_of<T>, std::move(keep_alive), "Tensor::borrow");
    return Tensor(std::move(storage), std::move(l));
  }
  /// Tensor::borrow over a span of exactly shape.numel() elements (ShapeError otherwise).
  static Tensor borrow(std::span<T> values, Shape shape,
                       std::shared_ptr<const void> keep_alive = {}) {
    if (static_cast<index_t>(values.size()) != shape.numel())
      detail::fail<ShapeError>(
          "Tensor::borrow",
          {"span has ", values.size(), " elements but shape ", shape, " holds ", shape.numel()});
    return borrow(values.data(), std::move(shape), std::move(keep_alive));
  }
  /// A contiguous copy of a view of memory the caller owns.
  static Tensor from_view(StridedView<const T> source) {
    Tensor out = empty(source.shape());
    tbatch::copy(source, out.view());
    return out;
  }
  /// Copy of a 2-d Eigen expression (rows, cols), row-major, converted to T as cast<T>() does.
  /// Needs tbatch/tensor/eigen.hpp in compiled mode, as flat() and matrix() do.
  template <class Derived, class Maps = detail::EigenMaps<T>>
  static Tensor from_eigen(const Derived& m) {
    return Maps::copy_of(m);
  }

  /// A contiguous copy with every value converted to U as torch's CPU casts on x86 convert it
  /// (a copy also when U is T): floats to integers truncate toward zero and wrap modulo 2^N;
  /// NaN, infinities and values past int32 (int64 for int64, uint32, uint8) give 0 or the
  /// target's minimum (detail::cast_element has the rule); nothing is undefined behaviour.
  template <Element U>
  Tensor<std::remove_cv_t<U>> cast() const {
    using D = std::remove_cv_t<U>;
    auto out = Tensor<D>::empty(shape());
    if constexpr (std::is_same_v<D, T>)
      detail::copy_of<T>(detail::raw_view(*this), detail::raw_view(out),
                         detail::stores_for_output(out));
    else
      detail::cast_raw<D>(detail::raw_view(*this), detail::raw_view(out),
                          detail::stores_for_output(out));
    return out;
  }
  /// cast<U>() of values U holds: ValueError naming the row-major index of the first value it
  /// cannot, the value and U's range. An integer U holds the values whose truncation toward
  /// zero is in its range (never NaN or an infinity); a floating U every value that does not
  /// overflow to an infinity (rounding is fine); bool any value (non-zero, NaN too, is true).
  template <Element U>
  Tensor<std::remove_cv_t<U>> checked_cast() const;

  /// Tensors of different element types never convert implicitly; this turns the long
  /// "no matching function" notes of such a mistake into one message with the fix.
  template <Element U>
  requires(!std::same_as<U, T>) operator Tensor<U>() const {
    static_assert(detail::dependent_false<U>,
                  "tbatch: a Tensor<T> is not a Tensor<U>; convert it with x.cast<U>() (index "
                  "tensors are Tensor<index_t>, that is int64: idx.cast<tbatch::index_t>())");
    return {};
  }

  /// The runtime tag of T.
  DType dtype() const { return dtype_of<T>; }
  /// The value of a tensor of one element (0-d, or any shape with numel() == 1), as torch's
  /// item(); ValueError otherwise.
  T item() const {
    if (numel() != 1)
      detail::fail<ValueError>("item", {"needs a tensor of one element, got shape ", shape(), " (",
                                        numel(), " elements)"});
    return *data();
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
  /// ValueError when the tensor is not contiguous. The Eigen maps (flat, matrix, from_eigen,
  /// borrow_eigen, eigen_view) are defined in tbatch/tensor/eigen.hpp, which tbatch.hpp includes
  /// in header-only mode; a compiled-mode file that uses them includes it.
  template <class Maps = detail::EigenMaps<T>>
  typename Maps::Flat flat() {
    require_contiguous("flat");
    return {data(), numel()};
  }
  template <class Maps = detail::EigenMaps<T>>
  typename Maps::ConstFlat flat() const {
    require_contiguous("flat");
    return {data(), numel()};
  }
  /// Rank-2 tensors with unit column stride as a row-major Eigen matrix (rows may be strided),
  /// sharing the buffer. ShapeError unless the rank is 2; ValueError for a column stride other
  /// than 1 or overlapping rows.
  template <class Maps = detail::EigenMaps<T>>
  typename Maps::Matrix matrix() {
    require_matrix();
    return Maps::matrix(data(), this->size(0), this->size(1), row_stride());
  }
  template <class Maps = detail::EigenMaps<T>>
  typename Maps::ConstMatrix matrix() const {
    require_matrix();
    return Maps::matrix(data(), this->size(0), this->size(1), row_stride());
  }

  /// Indexing with torch semantics: integers, Slice, Ellipsis, NewAxis (views); integer index
  /// tensors and boolean masks (copies). Defined in tensor/indexing.hpp. IndexError for too many
  /// indices, more than one Ellipsis, an index out of range or a mask of the wrong shape;
  /// ShapeError when index tensors do not broadcast together.
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  /// Writes `value` (broadcast to the indexed shape) into the indexed elements; with repeated
  /// positions the last write wins. index's errors, and ShapeError when value does not
  /// broadcast.
  void index_put(std::initializer_list<TensorIndex> indices, const Tensor& value);
  /// Sets the indexed elements to `value`, a number of any element type (as
  /// TensorDict::index_put takes): ValueError when T cannot hold it (checked_cast's rule),
  /// else index's errors.
  template <Element S>
  void index_put(std::initializer_list<TensorIndex> indices, S value);
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

  template <class Iterator>
  Tensor(Shape sizes, Iterator values, index_t count) : Tensor(empty(std::move(sizes))) {
    if (count != numel())
      detail::fail<ShapeError>(
          "Tensor", {"got ", count, " values for shape ", this->shape(), ", which holds ", numel(),
                     " elements", count == 1 ? " (to fill, pass the value without braces)" : ""});
    std::copy_n(values, count, data());
  }

  T* base() const { return static_cast<T*>(storage_->data()); }

  /// index_fill and the scalar index_put, whose errors name `function`.
  void fill_indexed(std::initializer_list<TensorIndex> indices, T value, const char* function);

  void require_contiguous(const char* function) const {
    if (!this->is_contiguous())
      detail::fail<ValueError>(
          function, {"needs a contiguous tensor, got strides ", detail::listed(layout_.strides),
                     " for shape ", this->shape(), "; call contiguous() first"});
  }
  void require_matrix() const {
    if (this->dim() != 2)
      detail::fail<ShapeError>("matrix", {"needs a rank-2 tensor, got shape ", this->shape()});
    if (this->size(1) > 1 && layout_.strides[1] != 1)
      detail::fail<ValueError>(
          "matrix", {"needs unit column stride, got strides ", detail::listed(layout_.strides),
                     "; call contiguous() first"});
    if (this->size(0) > 1 && layout_.strides[0] < this->size(1))
      detail::fail<ValueError>("matrix", {"needs rows that do not overlap, got strides ",
                                          detail::listed(layout_.strides)});
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

namespace detail {
/// `value` as element type D when D holds it (Tensor::checked_cast's rule), else nullopt: the
/// checked conversion of checked_cast, the scalar index_put and TensorDict's writes.
template <Element D, Element S>
std::optional<D> convert_element(S value) {
  if constexpr (std::is_same_v<D, S>) {
    return value;
  } else if constexpr (std::is_same_v<D, bool>) {
    return widen(value) != 0;
  } else if constexpr (FloatingElement<D>) {
    const D out = cast_element<D>(value);
    if (std::isinf(static_cast<double>(widen(out))) &&
        !std::isinf(static_cast<double>(widen(value))))
      return std::nullopt;
    return out;
  } else {
    const auto wide = widen(value);  // float, double, int64, uint64 or bool
    using W = std::remove_cv_t<decltype(wide)>;
    if constexpr (std::is_floating_point_v<W>) {
      const double whole = std::trunc(static_cast<double>(wide));  // NaN stays NaN: no fit
      // The bounds are powers of two (exact in double): [min, max + 1).
      const double lo = static_cast<double>(std::numeric_limits<D>::min());
      const double hi = 2.0 * (static_cast<double>(std::numeric_limits<D>::max() / 2) + 1.0);
      if (!(whole >= lo && whole < hi)) return std::nullopt;
      return static_cast<D>(whole);
    } else if constexpr (std::is_same_v<W, bool>) {
      return static_cast<D>(wide);
    } else {
      if (!std::in_range<D>(wide)) return std::nullopt;
      return static_cast<D>(wide);
    }
  }
}

/// The values element type T holds, for messages: "range [-128, 127]", "finite values up to
/// 65504".
template <Element T>
std::string held_values() {
  if constexpr (FloatingElement<T>)
    return concat("finite values up to ", static_cast<double>(std::numeric_limits<T>::max()));
  else
    return concat("range [", widen(std::numeric_limits<T>::min()), ", ",
                  widen(std::numeric_limits<T>::max()), "]");
}
}  // namespace detail

template <class T>
template <Element U>
Tensor<std::remove_cv_t<U>> Tensor<T>::checked_cast() const {
  using D = std::remove_cv_t<U>;
  Tensor<D> out = Tensor<D>::empty(shape());
  // out is contiguous, so an element's place in it is its row-major index whatever order the
  // engine visits them in.
  const D* const first = out.data();
  index_t bad = -1;
  T bad_value{};
  for_each(
      [&](D& o, const T& x) {
        if (const std::optional<D> c = detail::convert_element<D>(x)) {
          o = *c;
        } else if (const index_t at = &o - first; bad < 0 || at < bad) {
          bad = at;
          bad_value = x;
        }
      },
      out, *this);
  if (bad >= 0)
    detail::fail<ValueError>(
        "checked_cast", {"element ", bad, " (row-major) is ", detail::widen(bad_value), ", which ",
                         dtype_name_of<D>, " cannot hold (", detail::held_values<D>(), ")"});
  return out;
}

/// Same shape and equal values (NaN never equals anything, as torch.equal). `a == b` compares
/// elementwise (tbatch/math/elementwise.hpp).
template <class T>
bool equal(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  bool same = true;
  for_each([&](const T& x, const T& y) { same = same && detail::widen(x) == detail::widen(y); },
           a.view(), b.view());
  return same;
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

/// `input`, or a copy of it when it shares elements with `out`, the view a function is about
/// to write (rule 2 of view/aliasing.hpp).
template <class S, class D>
Tensor<S> unaliased(const Tensor<S>& input, const StridedView<D>& out) {
  return may_share_elements(input.element_pointer(), input.layout(), index_t(sizeof(S)),
                            out.element_pointer(), out.layout(), index_t(sizeof(D)))
             ? input.clone()
             : input;
}

/// `input`, or, when it shares elements with `out`, a view of its copy kept in `staging`.
template <class T, class D>
StridedView<const T> unaliased(const StridedView<const T>& input, const StridedView<D>& out,
                               Tensor<T>& staging) {
  if (!may_share_elements(input, out)) return input;
  staging = Tensor<T>::from_view(input);
  return StridedView<const T>(staging.view());
}

}  // namespace detail

namespace detail {
/// The elements of `t`, of dtype T, that operator<< prints, formatted (tensor/tensor_text.hpp).
template <class T>
PrintedTensor printed_as(const RawView& t);
/// The same for any dtype, dispatched inside: defined by the library only (compiled mode).
TBATCH_INLINE PrintedTensor printed(const RawView& t);
/// Writes the printed elements of a tensor of `dtype` as operator<< of a tensor does.
TBATCH_INLINE std::ostream& write_printed(std::ostream& out, const PrintedTensor& printed,
                                          DType dtype);
/// The elements `t` prints: where the definitions are compiled (header-only mode), formatted for
/// T only; in a compiled-mode file, by the library's printed().
template <class T>
PrintedTensor printed(const Tensor<T>& t) {
#if TBATCH_DEFINITIONS
  return printed_as<T>(raw_view(t));
#else
  return printed(raw_view(t));
#endif
}
}  // namespace detail

/// torch-like text, "tensor([[1., 2.],\n        [3., 4.]], shape=[2, 2], dtype=float32)"; more
/// than 1000 elements are elided. The stream's precision and flags play no part.
template <class T>
std::ostream& operator<<(std::ostream& out, const Tensor<T>& t) {
  return detail::write_printed(out, detail::printed(t), dtype_of<T>);
}

template <class T>
detail::RawView detail::raw_view(const Tensor<T>& t) {
  return RawView{const_cast<T*>(t.element_pointer()), t.layout(), dtype_of<T>};
}

#if TBATCH_DEFINITIONS

template <class T>
detail::PrintedTensor detail::printed_as(const RawView& t) {
  // Floats of every width print as double, integers as int64 / uint64.
  using Printed = std::conditional_t<FloatingElement<T>, double, decltype(widen(T{}))>;
  const T* elements = static_cast<const T*>(t.base);
  std::vector<Printed> values;
  for (const index_t offset : printed_offsets(t.layout.shape, t.layout.strides, t.layout.offset))
    values.push_back(static_cast<Printed>(widen(elements[offset])));
  return {t.layout.shape, formatted(values)};
}

// Only the library dispatches over every dtype: header-only code prints through printed_as<T>.
#ifdef TBATCH_BUILDING_LIBRARY
TBATCH_INLINE detail::PrintedTensor detail::printed(const RawView& t) {
  return dispatch_dtype(t.dtype, [&]<class T>(std::type_identity<T>) { return printed_as<T>(t); });
}
#endif

TBATCH_INLINE std::ostream& detail::write_printed(std::ostream& out, const PrintedTensor& printed,
                                                  DType dtype) {
  std::string text;
  append_tensor(text, printed, dtype_name(dtype));
  return write_text(out, text);
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
