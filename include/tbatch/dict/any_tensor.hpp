#pragma once
// AnyTensor: a Tensor<T> of any of the twelve element types, chosen at run time, with the
// layout-level helpers TensorDict applies to each of its entries.

#include <Eigen/Core>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/shape.hpp"
#include "tbatch/core/tensor.hpp"
#include "tbatch/view/engine.hpp"
#include "tbatch/view/indexing.hpp"
#include "tbatch/view/layout.hpp"

namespace tbatch {

namespace detail {

/// Calls fn(std::type_identity<T>{}) for the element type T of `dtype`.
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32:
      return fn(std::type_identity<float>{});
    case DType::float64:
      return fn(std::type_identity<double>{});
    case DType::float16:
      return fn(std::type_identity<Eigen::half>{});
    case DType::bfloat16:
      return fn(std::type_identity<Eigen::bfloat16>{});
    case DType::int8:
      return fn(std::type_identity<std::int8_t>{});
    case DType::int16:
      return fn(std::type_identity<std::int16_t>{});
    case DType::int32:
      return fn(std::type_identity<std::int32_t>{});
    case DType::int64:
      return fn(std::type_identity<std::int64_t>{});
    case DType::uint8:
      return fn(std::type_identity<std::uint8_t>{});
    case DType::uint16:
      return fn(std::type_identity<std::uint16_t>{});
    case DType::uint32:
      return fn(std::type_identity<std::uint32_t>{});
    case DType::boolean:
      return fn(std::type_identity<bool>{});
  }
  fail<ValueError>("dispatch_dtype", "dtype tag ", static_cast<int>(dtype),
                   " is not one of the twelve element types (expected 0 to 11)");
}

/// `value` as element type D when D can represent it: integers must be in D's range (floats are
/// truncated toward zero first, NaN and infinities never fit), finite floats must not exceed D's
/// largest finite value; any value converts to bool (non-zero is true). nullopt otherwise, so no
/// conversion ever reaches undefined behaviour.
template <Element D, Element S>
std::optional<D> convert_element(S value) {
  if constexpr (std::is_same_v<D, S>) {
    return value;
  } else if constexpr (std::is_same_v<D, bool>) {
    return widen(value) != 0;
  } else {
    const auto wide = widen(value);  // float, double, int64, uint64 or bool
    using W = std::remove_cv_t<decltype(wide)>;
    if constexpr (FloatingElement<D>) {
      if constexpr (!std::is_same_v<W, bool> && !std::is_same_v<D, double>) {
        const double highest =
            static_cast<double>(static_cast<float>(Eigen::NumTraits<D>::highest()));
        const double magnitude = std::abs(static_cast<double>(wide));
        if (std::isfinite(magnitude) && magnitude > highest) return std::nullopt;
      }
      if constexpr (std::is_same_v<D, Eigen::half> || std::is_same_v<D, Eigen::bfloat16>)
        return static_cast<D>(static_cast<float>(wide));
      else
        return static_cast<D>(wide);
    } else {  // integral D
      if constexpr (std::is_floating_point_v<W>) {
        if (!std::isfinite(wide)) return std::nullopt;
        const double whole = std::trunc(static_cast<double>(wide));
        // The bounds are powers of two (exact in double): [min, max + 1).
        const double lo = static_cast<double>(std::numeric_limits<D>::min());
        const double hi = 2.0 * (static_cast<double>(std::numeric_limits<D>::max() / 2) + 1.0);
        if (whole < lo || whole >= hi) return std::nullopt;
        return static_cast<D>(whole);
      } else if constexpr (std::is_same_v<W, bool>) {
        return static_cast<D>(wide);
      } else {
        if (!std::in_range<D>(wide)) return std::nullopt;
        return static_cast<D>(wide);
      }
    }
  }
}

}  // namespace detail

/// A tensor whose element type is known only at run time: a std::variant of Tensor<T> over the
/// twelve element types. Copies share the buffer, as Tensor copies do.
class AnyTensor {
 public:
  /// The alternatives are in DType order: variant().index() == static_cast<size_t>(dtype()).
  using Variant = std::variant<Tensor<float>, Tensor<double>, Tensor<Eigen::half>,
                               Tensor<Eigen::bfloat16>, Tensor<std::int8_t>, Tensor<std::int16_t>,
                               Tensor<std::int32_t>, Tensor<std::int64_t>, Tensor<std::uint8_t>,
                               Tensor<std::uint16_t>, Tensor<std::uint32_t>, Tensor<bool>>;

  /// An empty float32 tensor of shape {0}.
  AnyTensor() = default;
  // Copy and move overloads rather than one by-value parameter: one tensor move less per entry
  // that TensorDict's per-entry walks wrap.
  template <Element T>
  AnyTensor(const Tensor<T>& tensor) : value_(tensor) {}
  template <Element T>
  AnyTensor(Tensor<T>&& tensor) : value_(std::move(tensor)) {}

  /// An uninitialised contiguous tensor of `dtype` (for outputs written next).
  static AnyTensor empty(DType dtype, Shape shape) {
    return detail::dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      return AnyTensor(Tensor<T>::empty(std::move(shape)));
    });
  }
  /// A zero-filled tensor of `dtype`.
  static AnyTensor zeros(DType dtype, Shape shape) {
    return detail::dispatch_dtype(dtype, [&]<class T>(std::type_identity<T>) {
      return AnyTensor(Tensor<T>(std::move(shape)));
    });
  }

  DType dtype() const { return static_cast<DType>(value_.index()); }
  const Layout& layout() const {
    return std::visit([](const auto& t) -> const Layout& { return t.layout(); }, value_);
  }
  const Shape& shape() const { return layout().shape; }
  index_t dim() const { return layout().dim(); }
  index_t numel() const { return shape().numel(); }
  const Strides& strides() const { return layout().strides; }
  bool is_contiguous() const { return layout::is_contiguous(layout()); }

  template <Element T>
  bool holds() const {
    return std::holds_alternative<Tensor<T>>(value_);
  }
  /// The tensor as Tensor<T>; TypeError naming `function` when it holds another dtype.
  template <Element T>
  const Tensor<T>& get(const char* function = "AnyTensor::get") const {
    if (const auto* tensor = std::get_if<Tensor<T>>(&value_)) return *tensor;
    detail::fail<TypeError>(function, "the tensor has dtype ", dtype(), ", not the requested ",
                            dtype_name_of<T>);
  }
  template <Element T>
  const Tensor<T>* get_if() const {
    return std::get_if<Tensor<T>>(&value_);
  }
  const Variant& variant() const { return value_; }

  /// fn(const Tensor<T>&) or fn(Tensor<T>&) for the held dtype.
  template <class Fn>
  decltype(auto) visit(Fn&& fn) const {
    return std::visit(std::forward<Fn>(fn), value_);
  }
  template <class Fn>
  decltype(auto) visit(Fn&& fn) {
    return std::visit(std::forward<Fn>(fn), value_);
  }

  /// True when both view the same buffer (never across dtypes).
  bool shares_storage_with(const AnyTensor& other) const {
    return std::visit(
        [&](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          const auto* o = other.get_if<T>();
          return o != nullptr && t.shares_storage_with(*o);
        },
        value_);
  }

  // --- Layout-level helpers: each rebinds the same buffer or makes a contiguous copy. ---

  /// The same buffer seen through `l` (the caller guarantees `l` stays inside the buffer, as
  /// every function of the layout algebra does when given this tensor's layout).
  AnyTensor with_layout(Layout l) const {
    return std::visit([&](const auto& t) { return AnyTensor(t.with_layout(std::move(l))); },
                      value_);
  }
  /// A contiguous copy of the elements, laid out with `shape` (same element count).
  AnyTensor copy_reshaped(const Shape& shape) const {
    return std::visit([&](const auto& t) { return AnyTensor(t.copy_reshaped(shape)); }, value_);
  }
  /// The elements seen with fully resolved `sizes`: a view when the strides allow it, else a
  /// contiguous copy.
  AnyTensor reshaped(const std::vector<index_t>& sizes, const char* function) const {
    if (auto viewed = layout::try_view(layout(), sizes, function)) return with_layout(*viewed);
    return copy_reshaped(Shape(sizes));
  }
  AnyTensor clone() const {
    return std::visit([](const auto& t) { return AnyTensor(t.clone()); }, value_);
  }
  AnyTensor contiguous() const {
    return std::visit([](const auto& t) { return AnyTensor(t.contiguous()); }, value_);
  }
  /// The result of a plan made by detail::plan_index for this tensor's layout: a view for basic
  /// indices, a gathered copy for index tensors and masks.
  AnyTensor index_planned(detail::IndexPlan&& plan) const {
    if (!plan.has_advanced()) return with_layout(std::move(plan.basic));
    return std::visit([&](const auto& t) { return AnyTensor(detail::apply_index_plan(t, plan)); },
                      value_);
  }
  /// Writes `value` (same dtype, broadcast to the indexed shape) into the elements the plan
  /// selects; TypeError / ShapeError naming `function` otherwise.
  void index_put_planned(const detail::IndexPlan& plan, const AnyTensor& value,
                         const char* function) {
    std::visit(
        [&](auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          detail::put_index_plan(t, plan, value.get<T>(function), function);
        },
        value_);
  }
  /// Copies `source` (same dtype and shape) into this tensor's elements.
  void assign(const AnyTensor& source, const char* function) {
    assign_at(layout(), source, function);
  }
  /// Copies `source` (same dtype, shape piece.shape) into the elements of this tensor's buffer
  /// that `piece` describes: a layout made from layout() by the layout algebra (a piece of a
  /// stack or cat output, say).
  void assign_at(const Layout& piece, const AnyTensor& source, const char* function) {
    std::visit(
        [&](auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          const Tensor<T>& s = source.get<T>(function);
          if (!(s.shape() == piece.shape))
            detail::fail<ShapeError>(function, "source shape ", s.shape(),
                                     " does not match destination shape ", piece.shape);
          // Dense blocks in separate buffers (the pieces of stack and cat): one memcpy.
          if (layout::is_contiguous(piece) && s.is_contiguous() && !s.shares_storage_with(t)) {
            if (s.numel() > 0)
              std::memcpy(static_cast<void*>(t.element_pointer() + piece.offset), s.data(),
                          static_cast<std::size_t>(s.numel()) * sizeof(T));
            return;
          }
          copy(s.view(), StridedView<T>(t.element_pointer(), piece));
        },
        value_);
  }
  /// A copy of `source` converted to this tensor's dtype element by element; nullopt when an
  /// element does not fit (see detail::convert_element). Same dtype: `source` itself.
  template <Element S>
  std::optional<AnyTensor> converted_like(const Tensor<S>& source) const {
    return std::visit(
        [&](const auto& t) -> std::optional<AnyTensor> {
          using D = typename std::decay_t<decltype(t)>::value_type;
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
        },
        value_);
  }

  /// Element-wise equality with a tensor of the same dtype and shape (TypeError / ShapeError
  /// naming `function` otherwise). NaN equals nothing, as in operator==.
  Tensor<bool> equal_elements(const AnyTensor& other, const char* function) const {
    return std::visit(
        [&](const auto& t) {
          using T = typename std::decay_t<decltype(t)>::value_type;
          const Tensor<T>& o = other.get<T>(function);
          if (!(o.shape() == t.shape()))
            detail::fail<ShapeError>(function, "shapes ", t.shape(), " and ", o.shape(), " differ");
          Tensor<bool> out = Tensor<bool>::empty(t.shape());
          for_each(
              [](bool& r, const T& x, const T& y) { r = detail::widen(x) == detail::widen(y); },
              out.view(), t.view(), o.view());
          return out;
        },
        value_);
  }
  /// True when every element is non-zero (true for no elements).
  bool all_nonzero() const {
    return std::visit(
        [](const auto& t) {
          bool all = true;
          for_each([&](const auto& x) { all = all && detail::widen(x) != 0; }, t.view());
          return all;
        },
        value_);
  }
  /// True when some element is non-zero.
  bool any_nonzero() const {
    return std::visit(
        [](const auto& t) {
          bool any = false;
          for_each([&](const auto& x) { any = any || detail::widen(x) != 0; }, t.view());
          return any;
        },
        value_);
  }

  friend std::ostream& operator<<(std::ostream& out, const AnyTensor& t) {
    return std::visit([&](const auto& tensor) -> std::ostream& { return out << tensor; }, t.value_);
  }

 private:
  Variant value_;
};

static_assert(
    std::is_same_v<
        std::variant_alternative_t<static_cast<std::size_t>(DType::float16), AnyTensor::Variant>,
        Tensor<Eigen::half>> &&
        std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(DType::boolean),
                                                  AnyTensor::Variant>,
                       Tensor<bool>> &&
        std::variant_size_v<AnyTensor::Variant> == 12,
    "AnyTensor::Variant must list the element types in DType order");

}  // namespace tbatch
