#pragma once
// The twelve element types tbatch supports and their traits.

#include <Eigen/Core>
#include <concepts>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

namespace tbatch {

/// Runtime tag of an element type.
enum class DType {
  float32,
  float64,
  float16,
  bfloat16,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  boolean
};

namespace detail {
template <class T>
struct DTypeOf;
#define TBATCH_DTYPE(type, tag, text)              \
  template <>                                      \
  struct DTypeOf<type> {                           \
    static constexpr DType value = DType::tag;     \
    static constexpr std::string_view name = text; \
  };
TBATCH_DTYPE(float, float32, "float32")
TBATCH_DTYPE(double, float64, "float64")
TBATCH_DTYPE(Eigen::half, float16, "float16")
TBATCH_DTYPE(Eigen::bfloat16, bfloat16, "bfloat16")
TBATCH_DTYPE(std::int8_t, int8, "int8")
TBATCH_DTYPE(std::int16_t, int16, "int16")
TBATCH_DTYPE(std::int32_t, int32, "int32")
TBATCH_DTYPE(std::int64_t, int64, "int64")
TBATCH_DTYPE(std::uint8_t, uint8, "uint8")
TBATCH_DTYPE(std::uint16_t, uint16, "uint16")
TBATCH_DTYPE(std::uint32_t, uint32, "uint32")
TBATCH_DTYPE(bool, boolean, "bool")
#undef TBATCH_DTYPE
}  // namespace detail

/// True for the twelve supported element types (cv-qualifiers ignored).
template <class T>
concept Element = requires {
  detail::DTypeOf<std::remove_cv_t<T>>::value;
};

/// The DType tag of element type T.
template <Element T>
inline constexpr DType dtype_of = detail::DTypeOf<std::remove_cv_t<T>>::value;

/// Name of element type T, as torch spells it ("float32", "int64", "bool", ...).
template <Element T>
inline constexpr std::string_view dtype_name_of = detail::DTypeOf<std::remove_cv_t<T>>::name;

/// Name of a DType tag.
inline std::string_view dtype_name(DType dtype) {
  constexpr std::string_view names[] = {"float32", "float64", "float16", "bfloat16",
                                        "int8",    "int16",   "int32",   "int64",
                                        "uint8",   "uint16",  "uint32",  "bool"};
  return names[static_cast<int>(dtype)];
}
inline std::ostream& operator<<(std::ostream& out, DType dtype) {
  return out << dtype_name(dtype);
}

/// Floating-point element types, including Eigen::half and Eigen::bfloat16.
template <class T>
concept FloatingElement = Element<T> &&(std::is_floating_point_v<std::remove_cv_t<T>> ||
                                        std::is_same_v<std::remove_cv_t<T>, Eigen::half> ||
                                        std::is_same_v<std::remove_cv_t<T>, Eigen::bfloat16>);

/// Integer element types (bool excluded).
template <class T>
concept IntegralElement =
    Element<T> && std::integral<std::remove_cv_t<T>> && !std::is_same_v<std::remove_cv_t<T>, bool>;

/// Element types with arithmetic (everything except bool).
template <class T>
concept ArithmeticElement = FloatingElement<T> || IntegralElement<T>;

}  // namespace tbatch
