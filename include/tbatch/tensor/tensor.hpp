#pragma once
// Tensor<T>: the class (tensor/tensor_class.hpp) and its torch-style indexing
// (tensor/indexing.hpp), which the class declares and indexing.hpp defines.

#include "tbatch/tensor/indexing.hpp"
#include "tbatch/tensor/tensor_class.hpp"
