#pragma once
// The Arrow C Data Interface (docs/interop.md): packed batches to and from Arrow list arrays and
// the arrow.variable_shape_tensor extension, dense tensors to and from fixed_size_list arrays
// and the arrow.fixed_shape_tensor extension, values shared without a copy both ways. Needs no
// Arrow library: the specification's two structs are in arrow_abi.hpp. Not part of tbatch.hpp.

#include "tbatch/interop/arrow_abi.hpp"
#include "tbatch/interop/arrow_export.hpp"
#include "tbatch/interop/arrow_import.hpp"
