// tbatch core in a program that links tbatch::compiled (TBATCH_COMPILED): one Tensor copy and
// its printing, whose engine and printer the library compiles.
#define TBATCH_COMPILED
#include <iostream>

#include <tbatch/tensor/tensor.hpp>

int main() {
  const tbatch::Tensor<float> t(tbatch::Shape{2, 3}, 1.f);
  const tbatch::Tensor<float> u = t.transpose(0, 1).clone();
  std::cout << u << '\n';
  return static_cast<int>(u.numel());
}
