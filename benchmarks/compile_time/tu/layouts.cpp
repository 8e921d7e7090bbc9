// tbatch batch layouts: one PackedBatch built from its three tensors.
#include <tbatch/batch/layouts.hpp>

int main() {
  using tbatch::index_t;
  tbatch::PackedBatch<float> b(tbatch::Tensor<float>(tbatch::Shape{5, 3}, 1.f),
                               tbatch::Tensor<index_t>({2, 1}, {2, 3}),
                               tbatch::Tensor<index_t>({3}, {0, 2, 5}));
  return static_cast<int>(b.batch_size());
}
