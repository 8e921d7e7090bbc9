#pragma once
// The DLPack component (link tbatch::dlpack): tensors to and from DLPack's DLManagedTensor.

#include "tbatch/interop/dlpack.hpp"
