#pragma once
// AnyTensor: a Tensor<T> of any of the twelve element types, chosen at run time, with the
// layout-level helpers TensorDict applies to each of its entries.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor.hpp"
#include "tbatch/view/for_each.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/raw_view.hpp"

#if TBATCH_DEFINITIONS
#include <cstring>

#include "tbatch/view/copy.hpp"
#include "tbatch/view/engine.hpp"
#endif

namespace tbatch {

/// A tensor whose element type is known only at run time: a buffer, a layout and a DType tag.
/// Copies share the buffer, as Tensor copies do. Operations that only move elements (views,
/// copies, indexing, assignment) run on words of the element's size, so they are compiled once
/// per width rather than once per dtype; typed access (get<T>) checks the dtype.
class AnyTensor {
 public:
  /// An empty float32 tensor of shape {0}.
  AnyTensor() : AnyTensor(Tensor<float>()) {}
  template <Element T>
  AnyTensor(const Tensor<T>& tensor)
      : storage_(tensor.storage_), layout_(tensor.layout_), dtype_(dtype_of<T>) {}
  template <Element T>
  AnyTensor(Tensor<T>&& tensor)
      : storage_(std::move(tensor.storage_)),
        layout_(std::move(tensor.layout_)),
        dtype_(dtype_of<T>) {}

  /// An uninitialised contiguous tensor of `dtype` (for outputs written next).
  static TBATCH_INLINE AnyTensor empty(DType dtype, Shape shape);
  /// The elements of `dtype` that layout `l` addresses in `storage` (shared, not copied).
  /// ValueError naming `function` when the layout reaches outside the storage or its elements
  /// are not aligned to their size.
  static TBATCH_INLINE AnyTensor from_storage(std::shared_ptr<Storage> storage, Layout l,
                                              DType dtype,
                                              const char* function = "AnyTensor::from_storage");
  /// A zero-filled tensor of `dtype`.
  static TBATCH_INLINE AnyTensor zeros(DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  /// The address of the first element (a contiguous tensor's elements follow it).
  void* data_ptr() const {
    return static_cast<char*>(storage_->data()) + layout_.offset * element_size();
  }
  /// Bytes per element.
  index_t element_size() const { return dtype_size(dtype_); }
  const Layout& layout() const { return layout_; }
  /// The shared buffer itself.
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  const Shape& shape() const { return layout_.shape; }
  index_t dim() const { return layout_.dim(); }
  /// The size of dim `dim` (negative counts from the end); IndexError outside the rank.
  index_t size(index_t dim) const {
    return shape()[layout::normalize_dim(dim, this->dim(), "AnyTensor::size")];
  }
  index_t numel() const { return shape().numel(); }
  const Strides& strides() const { return layout_.strides; }
  bool is_contiguous() const { return layout::is_contiguous(layout_); }

  template <Element T>
  bool holds() const {
    return dtype_ == dtype_of<T>;
  }
  /// The tensor as Tensor<T> (sharing the buffer); TypeError naming `function` when it holds
  /// another dtype.
  template <Element T>
  Tensor<T> get(const char* function = "AnyTensor::get") const {
    if (!holds<T>())
      detail::fail<TypeError>(
          function, {"the tensor has dtype ", dtype_, ", not the requested ", dtype_name_of<T>});
    return Tensor<T>(storage_, layout_);
  }

  /// fn(const Tensor<T>&) with the tensor as its own dtype T (sharing the buffer).
  template <class Fn>
  decltype(auto) visit(Fn&& fn) const {
    return detail::dispatch_dtype(dtype_, [&]<class T>(std::type_identity<T>) -> decltype(auto) {
      return fn(static_cast<const Tensor<T>&>(Tensor<T>(storage_, layout_)));
    });
  }

  /// True when both view the same buffer.
  bool shares_storage_with(const AnyTensor& other) const { return storage_ == other.storage_; }

  // --- Layout-level helpers: each rebinds the same buffer or makes a contiguous copy. ---

  /// The same buffer seen through `l` (shape, strides, offset in elements). ValueError when `l`
  /// addresses an element outside the buffer, ShapeError when its strides do not match its
  /// rank.
  TBATCH_INLINE AnyTensor with_layout(Layout l) const;
  /// A contiguous copy of the elements, laid out with `shape` (same element count).
  TBATCH_INLINE AnyTensor copy_reshaped(const Shape& shape) const;
  /// The elements seen with fully resolved `sizes`: a view when the strides allow it, else a
  /// contiguous copy.
  TBATCH_INLINE AnyTensor reshaped(const std::vector<index_t>& sizes, const char* function) const;
  TBATCH_INLINE AnyTensor clone() const;
  AnyTensor contiguous() const { return is_contiguous() ? *this : clone(); }
  /// The result of a plan made by detail::plan_index for this tensor's layout: a view for basic
  /// indices, a gathered copy for index tensors and masks.
  TBATCH_INLINE AnyTensor index_planned(detail::IndexPlan&& plan) const;
  /// Writes `value` (same dtype, broadcast to the indexed shape) into the elements the plan
  /// selects; TypeError / ShapeError naming `function` otherwise.
  TBATCH_INLINE void index_put_planned(const detail::IndexPlan& plan, const AnyTensor& value,
                                       const char* function);
  /// Copies `source` (same dtype and shape) into this tensor's elements.
  TBATCH_INLINE void assign(const AnyTensor& source, const char* function);
  /// Copies `source` (same dtype, shape piece.shape) into the elements of this tensor's buffer
  /// that `piece` describes: a layout made from layout() by the layout algebra (a piece of a
  /// stack or cat output, say).
  TBATCH_INLINE void assign_at(const Layout& piece, const AnyTensor& source, const char* function);
  /// A copy of `source` converted to this tensor's dtype element by element; nullopt when an
  /// element does not fit (see detail::convert_element). Same dtype: `source` itself.
  template <Element S>
  std::optional<AnyTensor> converted_like(const Tensor<S>& source) const {
    return detail::dispatch_dtype(dtype_,
                                  [&]<class D>(std::type_identity<D>) -> std::optional<AnyTensor> {
                                    if constexpr (std::is_same_v<D, S>) {
                                      return AnyTensor(source);
                                    } else {
                                      Tensor<D> out = Tensor<D>::empty(source.shape());
                                      bool fits = true;
                                      for_each(
                                          [&](D& o, const S& in) {
                                            const auto c = detail::convert_element<D>(in);
                                            if (c)
                                              o = *c;
                                            else
                                              fits = false;
                                          },
                                          out.view(), source.view());
                                      if (!fits) return std::nullopt;
                                      return AnyTensor(std::move(out));
                                    }
                                  });
  }

  /// Element-wise equality with a tensor of the same dtype and shape (TypeError / ShapeError
  /// naming `function` otherwise). NaN equals nothing and -0.0 equals 0.0, as in operator==;
  /// integers and bools are equal when their bits are.
  TBATCH_INLINE Tensor<bool> equal_elements(const AnyTensor& other, const char* function) const;
  /// True when every element is non-zero (true for no elements).
  TBATCH_INLINE bool all_nonzero() const;
  /// True when some element is non-zero.
  TBATCH_INLINE bool any_nonzero() const;

  // A template so that only programs that print an AnyTensor compile the twelve printers.
  template <class Char, class Traits>
  friend std::basic_ostream<Char, Traits>& operator<<(std::basic_ostream<Char, Traits>& out,
                                                      const AnyTensor& t) {
    t.visit([&](const auto& tensor) { out << tensor; });
    return out;
  }

 private:
  AnyTensor(std::shared_ptr<Storage> storage, Layout&& l, DType dtype)
      : storage_(std::move(storage)), layout_(std::move(l)), dtype_(dtype) {}

  TBATCH_INLINE void require_dtype(DType expected, const char* function) const;
  /// The buffer seen through `l` as words of the element size W (const W for reading).
  template <class W>
  StridedView<W> words(const Layout& l) const {
    return StridedView<W>(static_cast<W*>(storage_->data()), l);
  }
  /// Calls fn(std::type_identity<W>{}, bits) with the word W of the element size, which
  /// comparisons read elements as, and the detail::ComparedBits of the dtype.
  template <class Fn>
  void visit_compared(Fn&& fn) const;

  std::shared_ptr<Storage> storage_;
  Layout layout_;
  DType dtype_ = DType::float32;
};

#if TBATCH_DEFINITIONS

namespace detail {

/// Equality and non-zero tests on elements read as words U: integers and bool are equal exactly
/// when their bits are; a floating type's values through `magnitude` (every bit but the sign's)
/// and `infinity` (+inf's bits, which every NaN's magnitude exceeds): NaN is unequal to
/// everything and nonzero, -0.0 equals 0.0 and is zero. Comparing bits keeps one compiled loop
/// per element width instead of one per type.
template <class U>
struct ComparedBits {
  U magnitude, infinity;
  bool nonzero(U x) const { return (x & magnitude) != 0; }
  bool equal(U x, U y) const {
    return (x == y && (x & magnitude) <= infinity) || ((x | y) & magnitude) == 0;
  }
};

/// The bits of +inf for the floating dtypes, nullopt for the others.
inline std::optional<std::uint64_t> infinity_bits(DType dtype) {
  return dispatch_dtype(dtype, []<class T>(std::type_identity<T>) -> std::optional<std::uint64_t> {
    if constexpr (FloatingElement<T>)
      return to_word(std::numeric_limits<T>::infinity()).bits;
    else
      return std::nullopt;
  });
}

}  // namespace detail

template <class Fn>
void AnyTensor::visit_compared(Fn&& fn) const {
  const std::optional<std::uint64_t> infinity = detail::infinity_bits(dtype_);
  detail::dispatch_width(element_size(), [&]<class W>(std::type_identity<W>) {
    using U = decltype(W::bits);
    const U all = static_cast<U>(~U(0));
    fn(std::type_identity<W>{},
       infinity ? detail::ComparedBits<U>{static_cast<U>(all >> 1), static_cast<U>(*infinity)}
                : detail::ComparedBits<U>{all, all});
  });
}

TBATCH_INLINE AnyTensor AnyTensor::empty(DType dtype, Shape shape) {
  const index_t n = shape.numel();
  return AnyTensor(Storage::allocate(n, dtype_size(dtype, "AnyTensor::empty")),
                   layout::contiguous(std::move(shape)), dtype);
}

TBATCH_INLINE AnyTensor AnyTensor::from_storage(std::shared_ptr<Storage> storage, Layout l,
                                                DType dtype, const char* function) {
  const index_t size = dtype_size(dtype, function);
  if (reinterpret_cast<std::uintptr_t>(storage->data()) % std::uintptr_t(size) != 0)
    detail::fail<ValueError>(
        function, {"the buffer is not aligned to its ", size, "-byte elements of dtype ", dtype});
  layout::check_inside(l, storage->bytes() / size, function);
  return AnyTensor(std::move(storage), std::move(l), dtype);
}

TBATCH_INLINE AnyTensor AnyTensor::zeros(DType dtype, Shape shape) {
  const index_t n = shape.numel();
  return AnyTensor(Storage::allocate_zeroed(n, dtype_size(dtype, "AnyTensor::zeros")),
                   layout::contiguous(std::move(shape)), dtype);
}

TBATCH_INLINE AnyTensor AnyTensor::with_layout(Layout l) const {
  layout::check_inside(l, storage_->bytes() / element_size(), "AnyTensor::with_layout");
  return AnyTensor(storage_, std::move(l), dtype_);
}

TBATCH_INLINE AnyTensor AnyTensor::copy_reshaped(const Shape& shape) const {
  AnyTensor out = clone();
  out.layout_ = layout::contiguous(shape);
  return out;
}

TBATCH_INLINE AnyTensor AnyTensor::reshaped(const std::vector<index_t>& sizes,
                                            const char* function) const {
  if (auto viewed = layout::try_view(layout_, sizes, function)) return with_layout(*viewed);
  return copy_reshaped(Shape(sizes));
}

TBATCH_INLINE AnyTensor AnyTensor::clone() const {
  AnyTensor out = empty(dtype_, shape());
  out.assign_at(out.layout_, *this, "AnyTensor::clone");
  return out;
}

TBATCH_INLINE AnyTensor AnyTensor::index_planned(detail::IndexPlan&& plan) const {
  if (!plan.has_advanced()) return with_layout(std::move(plan.basic));
  detail::Indexed gathered =
      detail::gather_indexed(detail::RawView{storage_->data(), layout_, dtype_}, plan);
  return AnyTensor(std::move(gathered.storage), std::move(gathered.layout), dtype_);
}

TBATCH_INLINE void AnyTensor::index_put_planned(const detail::IndexPlan& plan,
                                                const AnyTensor& value, const char* function) {
  value.require_dtype(dtype_, function);
  detail::put_indexed(detail::RawView{storage_->data(), layout_, dtype_}, plan,
                      detail::RawView{value.storage_->data(), value.layout_, dtype_}, function);
}

TBATCH_INLINE void AnyTensor::assign(const AnyTensor& source, const char* function) {
  assign_at(layout_, source, function);
}

TBATCH_INLINE void AnyTensor::assign_at(const Layout& piece, const AnyTensor& source,
                                        const char* function) {
  source.require_dtype(dtype_, function);
  if (!(source.shape() == piece.shape))
    detail::fail<ShapeError>(function, {"source shape ", source.shape(),
                                        " does not match destination shape ", piece.shape});
  // A dense piece from another buffer (the pieces of stack and cat) is one memcpy: the engine
  // would reach the same memcpy after re-binding both sides as views, which costs more than
  // a small piece.
  if (layout::is_contiguous(piece) && source.is_contiguous() && !shares_storage_with(source)) {
    const index_t size = element_size();
    if (source.numel() > 0)
      std::memcpy(static_cast<char*>(storage_->data()) + piece.offset * size,
                  static_cast<const char*>(source.storage_->data()) + source.layout_.offset * size,
                  static_cast<std::size_t>(source.numel() * size));
    return;
  }
  const detail::RawView out{storage_->data(), piece, dtype_};
  detail::copy_raw(detail::RawView{source.storage_->data(), source.layout_, dtype_}, out,
                   detail::checked_output_stores(out, "copy"));
}

TBATCH_INLINE Tensor<bool> AnyTensor::equal_elements(const AnyTensor& other,
                                                     const char* function) const {
  other.require_dtype(dtype_, function);
  if (!(other.shape() == shape()))
    detail::fail<ShapeError>(function, {"shapes ", shape(), " and ", other.shape(), " differ"});
  Tensor<bool> out = Tensor<bool>::empty(shape());
  visit_compared([&]<class W>(std::type_identity<W>, const auto& bits) {
    for_each([&bits](bool& r, const W& x, const W& y) { r = bits.equal(x.bits, y.bits); },
             out.view(), words<const W>(layout_), other.words<const W>(other.layout_));
  });
  return out;
}

TBATCH_INLINE bool AnyTensor::all_nonzero() const {
  bool all = true;
  visit_compared([&]<class W>(std::type_identity<W>, const auto& bits) {
    for_each([&](const W& x) { all = all && bits.nonzero(x.bits); }, words<const W>(layout_));
  });
  return all;
}

TBATCH_INLINE bool AnyTensor::any_nonzero() const {
  bool any = false;
  visit_compared([&]<class W>(std::type_identity<W>, const auto& bits) {
    for_each([&](const W& x) { any = any || bits.nonzero(x.bits); }, words<const W>(layout_));
  });
  return any;
}

TBATCH_INLINE void AnyTensor::require_dtype(DType expected, const char* function) const {
  if (dtype_ != expected)
    detail::fail<TypeError>(function,
                            {"the tensor has dtype ", dtype_, ", not the expected ", expected});
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
