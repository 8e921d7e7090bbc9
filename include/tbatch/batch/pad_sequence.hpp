#pragma once
// torch.nn.utils.rnn.pad_sequence: sequences of any length padded into one plain tensor, through
// the padded conversion's writer.

#include <algorithm>
#include <type_traits>
#include <vector>

#include "tbatch/base/config.hpp"
#include "tbatch/batch/conversions.hpp"

#if TBATCH_DEFINITIONS
#include "tbatch/batch/conversions_kernel.hpp"
#endif

namespace tbatch {

namespace detail {

/// pad_sequence of a list of views. Each element gets a trailing dim of 1, so the padded
/// conversion's writer, which pads every dim but the last, pads the sequence dim (the others
/// are checked equal); batch_first == false writes through the transposed view of `out`.
template <class T>
Tensor<T> padded_sequence(const std::vector<StridedView<const T>>& list, T padding_value,
                          bool batch_first);

}  // namespace detail

/// torch.nn.utils.rnn.pad_sequence: the sequences of `list` (any ElementList), each of shape
/// (L_i, *) with the same dims * (1-d sequences of scalars included), padded with
/// `padding_value` to the longest and stacked into a plain tensor (B, max L, *), or
/// (max L, B, *) when batch_first is false. ShapeError naming the element whose dims * differ
/// from element 0's or that has rank 0; ValueError for an empty list (as in torch: the dims *
/// are unknown).
template <ElementList List>
Tensor<list_value_t<List>> pad_sequence(const List& list,
                                        std::type_identity_t<list_value_t<List>> padding_value,
                                        bool batch_first = true) {
  return detail::with_element_vector(list, [&](const auto& elements) {
    return detail::padded_sequence(elements, padding_value, batch_first);
  });
}

}  // namespace tbatch

// The body, where the conversions' kernels are visible (a compiled-mode file calls the
// library's instantiation).
#if TBATCH_DEFINITIONS
namespace tbatch::detail {

template <class T>
Tensor<T> padded_sequence(const std::vector<StridedView<const T>>& list, T padding_value,
                          bool batch_first) {
  if (list.empty())
    fail<ValueError>("pad_sequence", {"the list is empty: the dims after the sequence dim are "
                                      "unknown; handle an empty batch before the call"});
  const Shape& first = list[0].shape();
  if (first.empty())
    fail<ShapeError>("pad_sequence", {"element 0 has rank 0; elements are (length, *)"});
  std::vector<StridedView<const T>> columns;
  columns.reserve(list.size());
  index_t longest = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Shape& shape = list[i].shape();
    if (shape.size() != first.size() ||
        !std::equal(shape.begin() + 1, shape.end(), first.begin() + 1))
      fail<ShapeError>("pad_sequence",
                       {"element ", i, " has shape ", shape, " but element 0 has ", first,
                        "; elements are (length, *) with the same dims after the first"});
    longest = std::max(longest, shape[0]);
    columns.push_back(list[i].unsqueeze(-1));
  }
  const auto batch = static_cast<index_t>(list.size());
  Shape shape{batch_first ? batch : longest, batch_first ? longest : batch};
  for (std::size_t d = 1; d < first.size(); ++d)
    shape.push_back(first[d]);
  Tensor<T> out = Tensor<T>::empty(shape);
  Tensor<T> slots = (batch_first ? out : out.transpose(0, 1)).unsqueeze(-1);
  write_padded(columns, shape_per_tensor_of(columns, "pad_sequence"), slots, padding_value);
  return out;
}

}  // namespace tbatch::detail
#endif
