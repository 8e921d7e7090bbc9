// The mean of an integer tensor: not an integer, so tbatch asks for a cast where torch raises.
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<int> x(tbatch::Shape{3}, 1);
  (void)tbatch::mean(x, 0);
}
// expect: mean needs a floating element type (the mean of integers is not an integer)
