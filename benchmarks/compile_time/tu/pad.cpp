// tbatch pad: one constant pad of a dense tensor.
#include <tbatch/ops/pad.hpp>

int main() {
  tbatch::Tensor<float> x(tbatch::Shape{2, 3}, 1.f);
  tbatch::Tensor<float> y = tbatch::pad(x, {1, 1}, tbatch::PadMode::constant);
  return static_cast<int>(y.numel());
}
