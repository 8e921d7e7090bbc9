// A transcendental function of an integer tensor: tbatch does not promote to float, as torch would.
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<int> x(tbatch::Shape{3}, 1);
  (void)tbatch::exp(x);
}
// expect: exp needs a floating element type (float, double, float16, bfloat16): cast<float>() first
