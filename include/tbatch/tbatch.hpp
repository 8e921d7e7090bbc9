#pragma once
// Umbrella header: everything public in tbatch except the optional parts, which have headers of
// their own: tbatch/tensor/eigen_tensor.hpp (Eigen Tensor module interop), tbatch/dlpack.hpp,
// tbatch/io/safetensors.hpp and tbatch/mpi.hpp. Included layer by layer, lowest first. In
// compiled mode it includes no Eigen header: the Eigen maps of tbatch/tensor/eigen.hpp are then
// included by the files that use them.

#include "tbatch/version.hpp"

#include "tbatch/base/config.hpp"
#include "tbatch/base/dtype.hpp"
#include "tbatch/base/errors.hpp"
#include "tbatch/base/parallel.hpp"
#include "tbatch/base/shape.hpp"
#include "tbatch/base/storage.hpp"

#include "tbatch/view/copy.hpp"
#include "tbatch/view/for_each.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"

#include "tbatch/tensor/any_tensor.hpp"
#include "tbatch/tensor/tensor.hpp"
#if TBATCH_DEFINITIONS
#include "tbatch/tensor/eigen.hpp"
#endif

#include "tbatch/math/elementwise.hpp"
#include "tbatch/math/factories.hpp"
#include "tbatch/math/joins.hpp"
#include "tbatch/math/masked_select.hpp"
#include "tbatch/math/matmul.hpp"
#include "tbatch/math/reductions.hpp"
#include "tbatch/math/softmax.hpp"

#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/batch/pad_sequence.hpp"

#include "tbatch/ops/pad.hpp"
#include "tbatch/ops/scatter.hpp"
#include "tbatch/ops/segment.hpp"
#include "tbatch/ops/space_to_batch.hpp"
#include "tbatch/ragged/bmm.hpp"
#include "tbatch/ragged/elementwise.hpp"
#include "tbatch/ragged/positions.hpp"
#include "tbatch/ragged/reductions.hpp"
#include "tbatch/ragged/selection.hpp"
#include "tbatch/ragged/varlen.hpp"

#include "tbatch/dict/tensor_dict.hpp"

// Linked with tbatch::compiled: the heavy conversions and kernels are compiled there once.
#ifdef TBATCH_COMPILED
#include "tbatch/ops/instantiations.hpp"
namespace tbatch {
#define TBATCH_DETAIL_INSTANTIATION_KIND extern
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE)
#undef TBATCH_DETAIL_INSTANTIATION_KIND
}  // namespace tbatch
#endif
