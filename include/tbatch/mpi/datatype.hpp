#pragma once
// MPI datatypes: the RAII handle, the element types' MPI types (from the dtype list) and the
// derived row types, and MPI error codes turned into tbatch::Error.

#include <mpi.h>

#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/mpi/config.hpp"

#if TBATCH_MPI_DEFINITIONS
#include <string>
#include <type_traits>

#include "tbatch/base/errors.hpp"
#include "tbatch/mpi/balance.hpp"
#endif

namespace tbatch::mpi {

/// An MPI datatype handle. Derived types created by tbatch are owned and freed on destruction
/// (unless MPI is already finalized); predefined handles (MPI_FLOAT, ...) are never freed.
/// Move-only.
class Datatype {
 public:
  /// Wraps a predefined handle.
  static Datatype predefined(MPI_Datatype type) { return Datatype(type, false); }
  /// Takes ownership of a committed derived type.
  static Datatype owned(MPI_Datatype type) { return Datatype(type, true); }

  Datatype(Datatype&& other) noexcept
      : type_(other.type_), owned_(std::exchange(other.owned_, false)) {}
  TBATCH_INLINE Datatype& operator=(Datatype&& other) noexcept;
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;
  TBATCH_INLINE ~Datatype();

  MPI_Datatype get() const { return type_; }
  bool is_owned() const { return owned_; }

 private:
  Datatype(MPI_Datatype type, bool owned) : type_(type), owned_(owned) {}
  TBATCH_INLINE void release() noexcept;

  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  bool owned_ = false;
};

namespace detail {

/// Throws tbatch::Error "<function>: <call> failed: <MPI's error text>" unless `code` is
/// MPI_SUCCESS (reached only when the communicator's error handler returns errors).
TBATCH_INLINE void check_mpi(int code, const char* function, const char* call);

/// Commits `type` and returns it owned (freed again if the commit fails).
TBATCH_INLINE Datatype commit_owned(MPI_Datatype type, const char* function);

/// A committed contiguous type of `count` elements of `element`.
TBATCH_INLINE Datatype contiguous(index_t count, MPI_Datatype element, const char* function,
                                  const char* what);

/// The MPI datatype of one element of `dtype` (datatype_of<T> is that of dtype_of<T>).
TBATCH_INLINE Datatype element_datatype(DType dtype);

/// A committed contiguous type of `width` elements of `dtype`: one row of a batch's data.
TBATCH_INLINE Datatype row_type(DType dtype, index_t width, const char* function);

}  // namespace detail

/// The MPI datatype of one element of T: the matching predefined type for float, double and
/// the fixed-width integers, MPI_BYTE for bool, and a committed 2-byte blob
/// (MPI_Type_contiguous(2, MPI_BYTE)) for Eigen::half and Eigen::bfloat16, which MPI has no
/// type for (the bits are moved unchanged).
template <Element T>
Datatype datatype_of() {
  return detail::element_datatype(dtype_of<T>);
}

#if TBATCH_MPI_DEFINITIONS

TBATCH_INLINE Datatype& Datatype::operator=(Datatype&& other) noexcept {
  if (this != &other) {
    release();
    type_ = other.type_;
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

TBATCH_INLINE Datatype::~Datatype() {
  release();
}

TBATCH_INLINE void Datatype::release() noexcept {
  if (!owned_) return;
  owned_ = false;
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Type_free(&type_);
}

namespace detail {

using tbatch::detail::fail;

TBATCH_INLINE void check_mpi(int code, const char* function, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  fail<Error>(function, {call, " failed with MPI error code ", code, ": ",
                         std::string(text, static_cast<std::size_t>(length))});
}

TBATCH_INLINE Datatype commit_owned(MPI_Datatype type, const char* function) {
  const int code = MPI_Type_commit(&type);
  if (code != MPI_SUCCESS) {
    MPI_Type_free(&type);
    check_mpi(code, function, "MPI_Type_commit");
  }
  return Datatype::owned(type);
}

TBATCH_INLINE Datatype contiguous(index_t count, MPI_Datatype element, const char* function,
                                  const char* what) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  check_mpi(MPI_Type_contiguous(int_count(count, function, what), element, &type), function,
            "MPI_Type_contiguous");
  return commit_owned(type, function);
}

// The predefined type from TBATCH_FOR_EACH_ELEMENT_TYPE, or a 2-byte blob where MPI has none.
TBATCH_INLINE Datatype element_datatype(DType dtype) {
  return tbatch::detail::dispatch_dtype(
      dtype,
      []<class T>(std::type_identity<T>) -> Datatype {
        MPI_Datatype element = MPI_DATATYPE_NULL;
#define TBATCH_MPI_ELEMENT(type, tag, name, code, bits, safetensors, mpi_type) \
  if constexpr (std::is_same_v<T, type>) element = mpi_type;
        TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_MPI_ELEMENT)
#undef TBATCH_MPI_ELEMENT
        constexpr index_t bytes = tbatch::detail::DTypeOf<T>::bytes;
        if (element == MPI_BYTE && bytes > 1)
          return contiguous(bytes, MPI_BYTE, "mpi::datatype_of", "blob size");
        return Datatype::predefined(element);
      },
      "mpi::datatype_of");
}

TBATCH_INLINE Datatype row_type(DType dtype, index_t width, const char* function) {
  return contiguous(width, element_datatype(dtype).get(), function, "row width");
}

}  // namespace detail

#endif  // TBATCH_MPI_DEFINITIONS

}  // namespace tbatch::mpi
