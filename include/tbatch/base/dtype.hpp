#pragma once
// The twelve element types tbatch supports, their runtime tags and traits, and the conversion
// between them (cast_element).

#include <concepts>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "tbatch/base/config.hpp"
#include "tbatch/base/errors.hpp"

#if TBATCH_DEFINITIONS
#include <Eigen/Core>
#else
// Compiled mode keeps Eigen (and the <sstream>, <iostream> and intrinsics headers it brings) out
// of a user's file: the 16-bit float types are only named here. Code that computes with their
// values includes <Eigen/Core> itself.
namespace Eigen {
struct half;
struct bfloat16;
}  // namespace Eigen
#endif

namespace tbatch {

// The one list of element types, in DType order, and every table over them is made from it
// (DType, the traits below, dispatch_dtype, DLPack's codes, safetensors' names, MPI's types):
//   X(type, tag, name, dlpack_code, dlpack_bits, safetensors_name, mpi_type)
// name is torch's. The DLPack and MPI columns are bare tokens (kDLFloat, MPI_FLOAT, ...), only
// expanded by interop/dlpack.hpp and mpi/ where <dlpack/dlpack.h> and <mpi.h> are included.
// MPI has no half or bfloat16 type: MPI_BYTE on a 2-byte type moves its bits as a 2-byte blob.
#define TBATCH_FOR_EACH_ELEMENT_TYPE(X)                                     \
  X(float, float32, "float32", kDLFloat, 32, "F32", MPI_FLOAT)              \
  X(double, float64, "float64", kDLFloat, 64, "F64", MPI_DOUBLE)            \
  X(Eigen::half, float16, "float16", kDLFloat, 16, "F16", MPI_BYTE)         \
  X(Eigen::bfloat16, bfloat16, "bfloat16", kDLBfloat, 16, "BF16", MPI_BYTE) \
  X(std::int8_t, int8, "int8", kDLInt, 8, "I8", MPI_INT8_T)                 \
  X(std::int16_t, int16, "int16", kDLInt, 16, "I16", MPI_INT16_T)           \
  X(std::int32_t, int32, "int32", kDLInt, 32, "I32", MPI_INT32_T)           \
  X(std::int64_t, int64, "int64", kDLInt, 64, "I64", MPI_INT64_T)           \
  X(std::uint8_t, uint8, "uint8", kDLUInt, 8, "U8", MPI_UINT8_T)            \
  X(std::uint16_t, uint16, "uint16", kDLUInt, 16, "U16", MPI_UINT16_T)      \
  X(std::uint32_t, uint32, "uint32", kDLUInt, 32, "U32", MPI_UINT32_T)      \
  X(bool, boolean, "bool", kDLBool, 8, "BOOL", MPI_BYTE)

/// Runtime tag of an element type.
enum class DType {
#define TBATCH_DTYPE_TAG(type, tag, ...) tag,
  TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DTYPE_TAG)
#undef TBATCH_DTYPE_TAG
};

namespace detail {
template <class T>
struct DTypeOf;
#define TBATCH_DTYPE_TRAITS(type, tag, text, dlpack_code, bits, ...) \
  template <>                                                        \
  struct DTypeOf<type> {                                             \
    static constexpr DType value = DType::tag;                       \
    static constexpr std::string_view name = text;                   \
    static constexpr index_t bytes = bits / 8;                       \
  };
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DTYPE_TRAITS)
#undef TBATCH_DTYPE_TRAITS
#if TBATCH_DEFINITIONS
#define TBATCH_DTYPE_BYTES_CHECK(type, tag, text, dlpack_code, bits, ...) \
  static_assert(sizeof(type) == DTypeOf<type>::bytes);
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DTYPE_BYTES_CHECK)
#undef TBATCH_DTYPE_BYTES_CHECK
#endif

/// Calls fn(std::type_identity<T>{}) for the element type T of `dtype`; ValueError naming
/// `function` for a tag outside the enumeration.
template <class Fn>
decltype(auto) dispatch_dtype(DType dtype, Fn&& fn, const char* function = "dispatch_dtype") {
  switch (dtype) {
#define TBATCH_DTYPE_CASE(type, tag, ...) \
  case DType::tag:                        \
    return fn(std::type_identity<type>{});
    TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DTYPE_CASE)
#undef TBATCH_DTYPE_CASE
  }
  fail<ValueError>(function, {"dtype tag ", static_cast<int>(dtype),
                              " is not one of the twelve element types (expected 0 to 11)"});
}
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

/// Name of a DType tag ("float32", ...); ValueError for a tag outside the enumeration.
inline std::string_view dtype_name(DType dtype) {
  return detail::dispatch_dtype(
      dtype, []<class T>(std::type_identity<T>) { return dtype_name_of<T>; }, "dtype_name");
}
/// Size in bytes of one element of `dtype`; ValueError naming `function` for a tag outside the
/// enumeration.
inline index_t dtype_size(DType dtype, const char* function = "dtype_size") {
  return detail::dispatch_dtype(
      dtype, []<class T>(std::type_identity<T>) { return detail::DTypeOf<T>::bytes; }, function);
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

namespace detail {

/// `value` as D, every conversion defined, with torch's results on x86: a float (half and
/// bfloat16 through float) becomes an integer by truncation toward zero into int32 (for int8,
/// int16, int32, uint16) or int64 (for int64, uint32 and, as torch routes it, uint8), where a
/// NaN, an infinity or a value outside that type gives its minimum, as the x86 conversion
/// instructions do; the result then wraps modulo 2^N into D. Other conversions are
/// static_cast's, which are defined (floats to floats round, to infinity past the largest).
template <class D, class S>
D cast_element(S value) {
  if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool> && !std::is_integral_v<S>) {
    using Via = std::conditional_t<sizeof(D) == 8 || std::is_same_v<D, std::uint32_t> ||
                                       std::is_same_v<D, std::uint8_t>,
                                   std::int64_t, std::int32_t>;
    double v;
    if constexpr (std::is_floating_point_v<S>)
      v = static_cast<double>(value);
    else
      v = static_cast<double>(static_cast<float>(value));  // Eigen::half, Eigen::bfloat16
    const double limit = -static_cast<double>(std::numeric_limits<Via>::min());  // 2^31, 2^63
    const Via whole =
        v >= -limit && v < limit ? static_cast<Via>(v) : std::numeric_limits<Via>::min();
    return static_cast<D>(whole);
  } else {
    return static_cast<D>(value);
  }
}

}  // namespace detail

}  // namespace tbatch
