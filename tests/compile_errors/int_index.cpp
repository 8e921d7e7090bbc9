// An int32 index where index_add takes Tensor<index_t> (int64).
#include <tbatch/tbatch.hpp>
int main() {
  const tbatch::Tensor<float> x({4, 3});
  const tbatch::Tensor<int> index({2});
  (void)tbatch::index_add(x, 0, index, x);
}
// expect: convert it with x.cast<U>()
