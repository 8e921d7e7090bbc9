// Baseline of the compile-time targets: Eigen's dense module and one MatrixXf product.
#include <Eigen/Dense>

int main() {
  Eigen::MatrixXf m = Eigen::MatrixXf::Constant(2, 3, 1.f);
  Eigen::MatrixXf p = m * m.transpose();
  return static_cast<int>(p.sum());
}
