// The umbrella header and the maths a user writes first: centre points, scale, compare, select.
#include <tbatch/tbatch.hpp>

int main() {
  const tbatch::Tensor<float> points(tbatch::Shape{4, 3}, 1.f);
  const tbatch::Tensor<float> centre(tbatch::Shape{3}, 0.5f);
  const tbatch::Tensor<float> centred = 2.f * (points - centre);
  const tbatch::Tensor<float> kept = tbatch::where(tbatch::abs(centred) > 0.75f, centred, 0.f);
  return static_cast<int>(tbatch::exp(kept).numel());
}
