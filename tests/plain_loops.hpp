#pragma once
// The tests' and fuzz targets' own index walk and element read: plain loops over raw strides,
// independent of the view engine under test. Free of Catch2, so the fuzz targets share it.

#include <tbatch/tbatch.hpp>
#include <vector>

namespace tbatch::testing {

/// Advances a row-major multi-index over `shape`; false after the last one.
inline bool next_index(std::vector<index_t>& idx, const Shape& shape) {
  for (std::size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < shape[d]) return true;
    idx[d] = 0;
  }
  return false;
}

/// Calls fn(const std::vector<index_t>& idx) for every multi-index of `shape`, row-major (once,
/// with an empty index, for rank 0; never when a dim is 0).
template <class Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  for (index_t s : shape)
    if (s == 0) return;
  std::vector<index_t> idx(shape.size(), 0);
  do {
    fn(idx);
  } while (next_index(idx, shape));
}

/// Offset from t.data() of the element at a multi-index, from its raw strides.
template <class T>
index_t element_offset(const Tensor<T>& t, const std::vector<index_t>& idx) {
  index_t offset = 0;
  for (std::size_t d = 0; d < idx.size(); ++d)
    offset += idx[d] * t.strides()[d];
  return offset;
}

/// Element of `t` at a multi-index, from its raw strides.
template <class T>
T element_at(const Tensor<T>& t, const std::vector<index_t>& idx) {
  return t.data()[element_offset(t, idx)];
}

/// The element itself, to write through.
template <class T>
T& element_ref(Tensor<T>& t, const std::vector<index_t>& idx) {
  return t.data()[element_offset(t, idx)];
}

}  // namespace tbatch::testing
