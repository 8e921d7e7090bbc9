#pragma once
// RawView: a strided view whose element type is erased to its dtype. It is the operand of the
// kernels compiled once per element width or dtype (in tbatch::compiled in compiled mode), so
// an op called on a user's Tensor<T> forwards to a non-template function instead of
// instantiating its kernel in the user's file.

#include <type_traits>
#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/view/strided_view.hpp"

namespace tbatch::detail {

/// A view of `layout` into the buffer at `base` (the element pointer, before the layout's
/// offset), whose elements are of `dtype`. Read-only uses take it as `const RawView&` and never
/// write through `base`.
struct RawView {
  void* base = nullptr;
  Layout layout;
  DType dtype = DType::float32;

  index_t element_size() const { return dtype_size(dtype); }
};

/// `v` with its element type erased.
template <class T>
RawView raw_view(const StridedView<T>& v) {
  return RawView{const_cast<std::remove_const_t<T>*>(v.element_pointer()), v.layout(),
                 dtype_of<std::remove_const_t<T>>};
}
/// The same from a view about to go away: takes its layout instead of copying it.
template <class T>
RawView raw_view(StridedView<T>&& v) {
  auto* base = const_cast<std::remove_const_t<T>*>(v.element_pointer());
  return RawView{base, std::move(v).take_layout(), dtype_of<std::remove_const_t<T>>};
}
/// `v` as a view of E, which has v's dtype or is the Word of its width (asserted: the kernel
/// that calls it was dispatched on that dtype or width).
template <class E>
StridedView<E> typed_view(const RawView& v) {
  using Value = std::remove_const_t<E>;
  if constexpr (is_word_v<Value>)
    TBATCH_ASSERT(static_cast<index_t>(sizeof(Value)) == v.element_size());
  else
    TBATCH_ASSERT(dtype_of<Value> == v.dtype);
  return StridedView<E>(static_cast<E*>(v.base), v.layout);
}

}  // namespace tbatch::detail
