// Const data cannot back a writable tensor.
#include <tbatch/tbatch.hpp>
int main() {
  const Eigen::MatrixXf m(2, 2);
  (void)tbatch::borrow_eigen(m);
}
// expect: use eigen_view for a read-only view
