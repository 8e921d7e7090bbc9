// tbatch TensorDict: one dict with one float entry.
#include <tbatch/dict/tensor_dict.hpp>

int main() {
  tbatch::TensorDict td({{"x", tbatch::Tensor<float>(tbatch::Shape{2, 3})}}, {2});
  return static_cast<int>(td.numel());
}
