// Borrowing a temporary Eigen matrix would leave a dangling tensor.
#include <tbatch/tbatch.hpp>
int main() {
  (void)tbatch::borrow_eigen(Eigen::MatrixXf(2, 2));
}
// expect: a temporary Matrix or Array is freed at the end of the statement
