#pragma once
// TensorDict: the class (dict/tensor_dict_class.hpp), its members defined by concern
// (entries, indexing, shape ops, stacking, apply) and RaggedTensorDict, which stack_ragged returns.

#include "tbatch/dict/apply.hpp"
#include "tbatch/dict/ragged_tensor_dict.hpp"
#include "tbatch/dict/tensor_dict_class.hpp"
#include "tbatch/dict/tensor_dict_entries.hpp"
#include "tbatch/dict/tensor_dict_indexing.hpp"
#include "tbatch/dict/tensor_dict_shape_ops.hpp"
#include "tbatch/dict/tensor_dict_stack.hpp"
