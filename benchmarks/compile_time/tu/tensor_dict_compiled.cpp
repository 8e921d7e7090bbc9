// The tensor_dict row in a program that links tbatch::compiled, whose CMake target defines
// TBATCH_COMPILED: the TensorDict members are declared here and defined in the library.
#define TBATCH_COMPILED
#include <tbatch/dict/tensor_dict.hpp>

int main() {
  tbatch::TensorDict td({{"x", tbatch::Tensor<float>(tbatch::Shape{2, 3})}}, {2});
  return static_cast<int>(td.numel());
}
