#pragma once
// The DLPack component (link tbatch::dlpack): tensors and batches to and from DLPack's
// DLManagedTensor, with the rest of tbatch (tbatch.hpp), as this header always gave.
// tbatch/interop/dlpack.hpp alone includes only what the conversions need.

#include "tbatch/interop/dlpack.hpp"
#include "tbatch/tbatch.hpp"
