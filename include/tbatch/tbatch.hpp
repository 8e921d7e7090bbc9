#pragma once
// Umbrella header: everything public in tbatch except the optional parts, which have headers of
// their own: tbatch/core/eigen_tensor.hpp (Eigen Tensor module interop) and tbatch/mpi.hpp.

#include "tbatch/version.hpp"

#include "tbatch/core/config.hpp"
#include "tbatch/core/dtype.hpp"
#include "tbatch/core/errors.hpp"
#include "tbatch/core/indexing.hpp"
#include "tbatch/core/parallel.hpp"
#include "tbatch/core/shape.hpp"
#include "tbatch/core/storage.hpp"
#include "tbatch/core/tensor.hpp"

#include "tbatch/view/engine.hpp"
#include "tbatch/view/index_types.hpp"
#include "tbatch/view/layout.hpp"
#include "tbatch/view/strided_view.hpp"

#include "tbatch/batch/conversions.hpp"
#include "tbatch/batch/layouts.hpp"
#include "tbatch/batch/metadata.hpp"
#include "tbatch/batch/pad_sequence.hpp"

#include "tbatch/ops/pad.hpp"
#include "tbatch/ops/scatter.hpp"
#include "tbatch/ops/segment.hpp"
#include "tbatch/ops/space_to_batch.hpp"

#include "tbatch/dict/any_tensor.hpp"
#include "tbatch/dict/tensor_dict.hpp"

// Linked with tbatch::compiled: the heavy conversions and kernels are compiled there once.
#ifdef TBATCH_COMPILED
#include "tbatch/detail/instantiations.hpp"
namespace tbatch {
#define TBATCH_DETAIL_INSTANTIATION_KIND extern
TBATCH_FOR_EACH_ELEMENT_TYPE(TBATCH_DETAIL_INSTANTIATE)
#undef TBATCH_DETAIL_INSTANTIATION_KIND
}  // namespace tbatch
#endif
