#pragma once
// tbatch::copy and tbatch::fill, and the type-erased boundary to the engine's copy and fill
// (view/engine.hpp): thin templates on the element type build RawViews and call non-template
// functions, compiled once per element width (per dtype pair for conversions). A file compiled
// in compiled mode (TBATCH_COMPILED) declares them only and does not parse the engine.

#include <type_traits>
#include <utility>

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/streaming_stores.hpp"
#include "tbatch/base/word.hpp"
#include "tbatch/view/raw_view.hpp"
#include "tbatch/view/strided_view.hpp"

#if TBATCH_DEFINITIONS
#include <cstring>

#include "tbatch/view/aliasing.hpp"
#include "tbatch/view/engine.hpp"
#endif

namespace tbatch {
namespace detail {

/// detail::copy_views of views of one dtype (ShapeError "copy" when the shapes differ),
/// compiled once per element width.
TBATCH_INLINE void copy_raw(const RawView& src, const RawView& dst, Stores stores);
/// detail::copy_views converting `src`'s dtype to `dst`'s, which is D (detail::cast_element),
/// compiled for the twelve source dtypes. A template, so that a header-only program compiles
/// the conversions to the types it converts to only, not all 144 pairs; in compiled mode the
/// library instantiates it for every D and a program sees this declaration only.
template <class D>
void cast_raw(const RawView& src, const RawView& dst, Stores stores);
/// detail::fill_view with the element at `value`, of `dst`'s dtype.
TBATCH_INLINE void fill_raw(const RawView& dst, const void* value, Stores stores);
/// The stores for writing all of `out`, the output of `function` (tbatch::copy, tbatch::fill):
/// ValueError when it holds an address twice (view/aliasing.hpp, rule 1).
TBATCH_INLINE Stores checked_output_stores(const RawView& out, const char* function);

/// copy_raw and fill_raw for one element width W (a Word) and its unsigned integer U.
template <class W>
void copy_words(const RawView& src, const RawView& dst, Stores stores);
template <class U>
void fill_bits(const RawView& dst, const void* value, Stores stores);

/// The copy and the fill of elements of T: where the definitions are compiled (header-only
/// mode), the kernel of T's width directly, without the width dispatch; in a compiled-mode file,
/// the library's copy_raw / fill_raw.
template <class T>
void copy_of(const RawView& src, const RawView& dst, Stores stores) {
#if TBATCH_DEFINITIONS
  copy_words<WordOf<T>>(src, dst, stores);
#else
  copy_raw(src, dst, stores);
#endif
}
template <class T>
void fill_of(const RawView& dst, const T& value, Stores stores) {
#if TBATCH_DEFINITIONS
  fill_bits<UnsignedOfSize<sizeof(T)>>(dst, &value, stores);
#else
  fill_raw(dst, &value, stores);
#endif
}

}  // namespace detail

/// Copies `src` into `dst` element by element (converting with detail::cast_element when the
/// types differ). Shapes must match (ShapeError); expand() the source to broadcast. A `dst` that
/// holds an address twice is a ValueError; a source that shares elements with `dst` is read through
/// a temporary (view/aliasing.hpp). Destinations of streaming_stores_min_bytes() or more are
/// written with streaming stores.
template <class S, class D>
void copy(StridedView<const S> src, StridedView<D> dst) {
  static_assert(!std::is_const_v<D>, "copy: the destination view must be writable");
  // The views are this call's own: their layouts move into the RawViews.
  const detail::RawView out = detail::raw_view(std::move(dst));
  const detail::Stores stores = detail::checked_output_stores(out, "copy");
  if constexpr (std::is_same_v<S, D>)
    detail::copy_of<D>(detail::raw_view(std::move(src)), out, stores);
  else
    detail::cast_raw<D>(detail::raw_view(std::move(src)), out, stores);
}
template <class S, class D>
requires(!std::is_const_v<S>) void copy(StridedView<S> src, StridedView<D> dst) {
  copy(StridedView<const S>(std::move(src)), std::move(dst));
}

/// Sets every element of `dst` to `value` (with streaming stores from
/// streaming_stores_min_bytes()); ValueError when `dst` holds an address twice.
template <class T>
void fill(StridedView<T> dst, std::type_identity_t<T> value) {
  const detail::RawView out = detail::raw_view(std::move(dst));
  detail::fill_of<std::remove_const_t<T>>(out, value, detail::checked_output_stores(out, "fill"));
}

#if TBATCH_DEFINITIONS

template <class W>
void detail::copy_words(const RawView& src, const RawView& dst, Stores stores) {
  TBATCH_ASSERT(src.dtype == dst.dtype);
  copy_layouts(static_cast<const W*>(src.base), src.layout, static_cast<W*>(dst.base), dst.layout,
               stores);
}

template <class U>
void detail::fill_bits(const RawView& dst, const void* value, Stores stores) {
  // Filled as the unsigned integer of the width: the compiler vectorises a fill of those, not
  // one of Word structs.
  U bits;
  std::memcpy(&bits, value, sizeof(U));
  fill_layout(static_cast<U*>(dst.base), dst.layout, bits, stores);
}

TBATCH_INLINE void detail::copy_raw(const RawView& src, const RawView& dst, Stores stores) {
  dispatch_width(dst.element_size(),
                 [&]<class W>(std::type_identity<W>) { copy_words<W>(src, dst, stores); });
}

template <class D>
void detail::cast_raw(const RawView& src, const RawView& dst, Stores stores) {
  dispatch_dtype(src.dtype, [&]<class S>(std::type_identity<S>) {
    copy_layouts(static_cast<const S*>(src.base), src.layout, static_cast<D*>(dst.base), dst.layout,
                 stores);
  });
}
#ifdef TBATCH_BUILDING_LIBRARY
#define TBATCH_DETAIL_INSTANTIATE_CAST_RAW(type, ...) \
  template void detail::cast_raw<type>(const RawView&, const RawView&, Stores);
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE_CAST_RAW)
#undef TBATCH_DETAIL_INSTANTIATE_CAST_RAW
#endif

TBATCH_INLINE void detail::fill_raw(const RawView& dst, const void* value, Stores stores) {
  dispatch_width(dst.element_size(), [&]<class W>(std::type_identity<W>) {
    fill_bits<decltype(W::bits)>(dst, value, stores);
  });
}

TBATCH_INLINE detail::Stores detail::checked_output_stores(const RawView& out,
                                                           const char* function) {
  check_distinct_layout(out.layout, function, "dst");
  return stores_for(out.layout.shape.numel() * out.element_size());
}

#endif  // TBATCH_DEFINITIONS

}  // namespace tbatch
