// tbatch segment reductions: one segment_reduce over packed rows.
#include <tbatch/ops/segment.hpp>

int main() {
  using tbatch::index_t;
  using tbatch::Tensor;
  Tensor<float> r = tbatch::segment_reduce(Tensor<float>(tbatch::Shape{5, 3}, 1.f),
                                           Tensor<index_t>({3}, {0, 2, 5}), tbatch::Reduce::mean);
  return static_cast<int>(r.numel());
}
