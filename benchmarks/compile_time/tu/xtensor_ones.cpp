// Comparison row: xtensor's xarray and one xt::ones.
#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>

int main() {
  xt::xarray<float> a = xt::ones<float>({3, 4});
  return static_cast<int>(a.size());
}
