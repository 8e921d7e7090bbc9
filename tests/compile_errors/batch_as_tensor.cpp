// A padded batch where padded_to_packed takes its data tensor.
#include <tbatch/tbatch.hpp>
int main() {
  const std::vector<tbatch::Tensor<float>> list{tbatch::Tensor<float>({2, 3})};
  const auto batch = tbatch::list_to_padded(list, 0);
  (void)tbatch::padded_to_packed(batch, batch.shape_per_tensor());
}
// expect: for a batch call to_packed(batch)
