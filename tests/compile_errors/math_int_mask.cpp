// A mask that is not Tensor<bool>: it would otherwise convert silently (non-zero is true).
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<float> x(tbatch::Shape{3}, 1.f);
  const tbatch::Tensor<int> mask(tbatch::Shape{3}, 1);
  (void)tbatch::masked_fill(x, mask, 0.f);
}
// expect: a mask or condition must be a Tensor<bool>
