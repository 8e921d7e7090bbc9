// A tensor out to DLPack and back, through the umbrella header of the DLPack component.
#include <tbatch/dlpack.hpp>

int main() {
  const tbatch::Tensor<float> x(tbatch::Shape{2, 3}, 1.f);
  const tbatch::Tensor<float> y = tbatch::from_dlpack<float>(tbatch::to_dlpack(x));
  return static_cast<int>(y.numel());
}
