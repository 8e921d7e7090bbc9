// Operands of different element types: tbatch does not promote, as torch would.
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<float> a(tbatch::Shape{3}, 1.f);
  const tbatch::Tensor<double> b(tbatch::Shape{3}, 1.0);
  (void)(a + b);
}
// expect: convert one with cast<U>() first
