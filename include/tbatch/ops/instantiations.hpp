#pragma once
// The function templates that the tbatch::compiled library (CMake option TBATCH_COMPILED)
// instantiates for every dtype. tbatch.hpp declares them `extern` when TBATCH_COMPILED is
// defined, so a translation unit that calls them compiles only the call; src/compiled.cpp
// defines them once. Expand with TBATCH_DETAIL_INSTANTIATION_KIND defined as `extern` (the
// declarations) or as nothing (the definitions), inside namespace tbatch.

#include <array>
#include <vector>

#include "tbatch/base/dtype.hpp"
#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/pad_sequence.hpp"

#define TBATCH_DETAIL_INSTANTIATE_LISTS(T, Item)                                                   \
  TBATCH_DETAIL_INSTANTIATION_KIND template PaddedBatch<T> detail::padded_from_list<Item, T>(      \
      const std::vector<Item>&, T, const std::vector<index_t>&);                                   \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T> detail::packed_from_list<Item, T>(      \
      const std::vector<Item>&);                                                                   \
  TBATCH_DETAIL_INSTANTIATION_KIND template PaddedBatch<T> detail::padded_into_from_list<Item, T>( \
      const std::vector<Item>&, T, Tensor<T>);                                                     \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T> detail::packed_into_from_list<Item, T>( \
      const std::vector<Item>&, Tensor<T>);

#define TBATCH_DETAIL_INSTANTIATE(T, ...)                                                         \
  TBATCH_DETAIL_INSTANTIATE_LISTS(T, Tensor<T>)                                                   \
  TBATCH_DETAIL_INSTANTIATE_LISTS(T, StridedView<const T>)                                        \
  TBATCH_DETAIL_INSTANTIATION_KIND template Tensor<T> detail::padded_sequence<T>(                 \
      const std::vector<StridedView<const T>>&, T, bool);                                         \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T>                                        \
  detail::packed_from_batch<PaddedBatch<T>>(const PaddedBatch<T>&);                               \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T>                                        \
  detail::packed_from_batch<ExactBatch<T>>(const ExactBatch<T>&);                                 \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T>                                        \
  detail::packed_selection<PackedBatch<T>>(const PackedBatch<T>&, const Tensor<index_t>&);        \
  TBATCH_DETAIL_INSTANTIATION_KIND template PackedBatch<T>                                        \
  detail::packed_selection<ExactBatch<T>>(const ExactBatch<T>&, const Tensor<index_t>&);          \
  TBATCH_DETAIL_INSTANTIATION_KIND template PaddedBatch<T>                                        \
  detail::padded_from_batch<PackedBatch<T>>(const PackedBatch<T>&, T,                             \
                                            const std::vector<index_t>&);                         \
  TBATCH_DETAIL_INSTANTIATION_KIND template PaddedBatch<T>                                        \
  detail::padded_from_batch<PaddedBatch<T>>(const PaddedBatch<T>&, T,                             \
                                            const std::vector<index_t>&);                         \
  TBATCH_DETAIL_INSTANTIATION_KIND template PaddedBatch<T>                                        \
  detail::padded_from_batch<ExactBatch<T>>(const ExactBatch<T>&, T, const std::vector<index_t>&); \
  TBATCH_DETAIL_INSTANTIATION_KIND template Tensor<T> detail::stack_equal<T>(                     \
      const std::vector<Tensor<T>>&, const char*);                                                \
  TBATCH_DETAIL_INSTANTIATION_KIND template Tensor<T> detail::tiled_to_packed<T>(                 \
      const Tensor<T>&, const Tensor<index_t>&);
