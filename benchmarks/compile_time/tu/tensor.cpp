// tbatch core: one Tensor construction.
#include <tbatch/tensor/tensor.hpp>

int main() {
  tbatch::Tensor<float> t(tbatch::Shape{2, 3}, 1.f);
  return static_cast<int>(t.numel());
}
