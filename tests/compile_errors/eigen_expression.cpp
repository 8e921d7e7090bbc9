// An Eigen expression has no memory to borrow.
#include <tbatch/tbatch.hpp>
int main() {
  Eigen::MatrixXf m(2, 2);
  (void)tbatch::borrow_eigen(m + m);
}
// expect: the expression has no memory of its own to borrow
