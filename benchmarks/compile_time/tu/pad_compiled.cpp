// The pad row in a program that links tbatch::compiled, whose CMake target defines
// TBATCH_COMPILED: pad's kernels are compiled in the library, once per element width.
#define TBATCH_COMPILED
#include <tbatch/ops/pad.hpp>

int main() {
  tbatch::Tensor<float> x(tbatch::Shape{2, 3}, 1.f);
  tbatch::Tensor<float> y = tbatch::pad(x, {1, 1}, tbatch::PadMode::constant);
  return static_cast<int>(y.numel());
}
