// tbatch space_to_batch_nd: one 2x2 block rearrangement.
#include <tbatch/ops/space_to_batch.hpp>

int main() {
  tbatch::Tensor<float> x(tbatch::Shape{1, 4, 4, 1}, 1.f);
  tbatch::Tensor<float> y = tbatch::space_to_batch_nd(x, {2, 2}, {{0, 0}, {0, 0}});
  return static_cast<int>(y.size(0));
}
