// An int32 tensor as an index expression entry.
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<float> x({4, 3});
  (void)x.index({tbatch::Tensor<int>({2})});
}
// expect: index tensors are Tensor<index_t> (int64) positions or Tensor<bool> masks
