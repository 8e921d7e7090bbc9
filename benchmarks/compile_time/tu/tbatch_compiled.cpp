// The umbrella header and one list_to_padded in a program that links tbatch::compiled, whose
// CMake target defines TBATCH_COMPILED: the call's instantiation is declared extern.
#define TBATCH_COMPILED
#include <vector>

#include <tbatch/tbatch.hpp>

int main() {
  std::vector<tbatch::Tensor<float>> list{tbatch::Tensor<float>(tbatch::Shape{2, 3}, 1.f),
                                          tbatch::Tensor<float>(tbatch::Shape{4, 3}, 2.f)};
  tbatch::PaddedBatch<float> p = tbatch::list_to_padded(list, 0.f);
  return static_cast<int>(p.data().numel());
}
