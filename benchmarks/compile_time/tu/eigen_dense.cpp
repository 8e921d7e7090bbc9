// Baseline: Eigen's dense module and one MatrixXf copy.
#include <Eigen/Dense>

int main() {
  Eigen::MatrixXf a = Eigen::MatrixXf::Constant(2, 3, 1.f);
  Eigen::MatrixXf b = a;
  return static_cast<int>(b.sum());
}
