// The scatter row in a program that links tbatch::compiled, whose CMake target defines
// TBATCH_COMPILED: the scatter kernels are compiled in the library, per element width or dtype.
#define TBATCH_COMPILED
#include <tbatch/ops/scatter.hpp>

int main() {
  using tbatch::index_t;
  using tbatch::Tensor;
  Tensor<float> x =
      tbatch::scatter(Tensor<float>({3, 2}, {1, 1, 2, 2, 3, 3}), Tensor<index_t>({4}, {2, 1, 0, 1}),
                      Tensor<float>({4, 2}, {1, 1, 2, 2, 3, 3, 4, 4}), false);
  return static_cast<int>(x.numel());
}
