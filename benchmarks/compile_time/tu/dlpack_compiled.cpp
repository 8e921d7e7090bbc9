// The same in a program that links tbatch::compiled, whose CMake target defines TBATCH_COMPILED.
#define TBATCH_COMPILED
#include <tbatch/dlpack.hpp>

int main() {
  const tbatch::Tensor<float> x(tbatch::Shape{2, 3}, 1.f);
  const tbatch::Tensor<float> y = tbatch::from_dlpack<float>(tbatch::to_dlpack(x));
  return static_cast<int>(y.numel());
}
