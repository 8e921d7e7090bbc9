// In compiled mode tbatch.hpp reads no Eigen header: Tensor::flat() needs tbatch/tensor/eigen.hpp,
// and without it the call stops at detail::EigenMaps, whose comment names that header.
#define TBATCH_COMPILED
#include <tbatch/tbatch.hpp>
int main() {
  tbatch::Tensor<float> t(tbatch::Shape{2, 2}, 1.f);
  return static_cast<int>(t.flat().size());
}
// expect: tbatch::detail::EigenMaps<float>
