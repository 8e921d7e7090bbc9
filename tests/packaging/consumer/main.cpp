// Uses tbatch through its umbrella header: builds a tensor, views it and checks the values.
// Exits nonzero on any mismatch.

#include <iostream>
#include <string>
#include <vector>

#include <tbatch/tbatch.hpp>

int main() {
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      std::cerr << "tbatch consumer (" << TBATCH_CONSUMER_MODE << "): FAILED " << what << "\n";
      ++failures;
    }
  };

  const std::string header_version = std::to_string(TBATCH_VERSION_MAJOR) + "." +
                                     std::to_string(TBATCH_VERSION_MINOR) + "." +
                                     std::to_string(TBATCH_VERSION_PATCH);
  const std::string expected_version = TBATCH_EXPECTED_VERSION;
  check(expected_version.empty() || header_version == expected_version,
        "tbatch/version.hpp matches the package version");

  // [[0, 1, 2], [3, 4, 5]]; its transpose is a view of the same buffer.
  tbatch::Tensor<float> t(tbatch::Shape{2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5});
  const tbatch::Tensor<float> tt = t.transpose(0, 1);
  check(tt.shape() == tbatch::Shape{3, 2}, "transpose shape");
  check(tt.at({2, 1}) == 5.0f && tt.at({1, 0}) == 1.0f, "transposed values");
  check(tt.shares_storage_with(t), "the transpose is a view");
  check(tt.contiguous().to_vector() == std::vector<float>{0, 3, 1, 4, 2, 5}, "contiguous copy");
  t.at({0, 2}) = 7.0f;
  check(tt.at({2, 0}) == 7.0f, "a write shows through the view");

  if (failures != 0) return 1;
  std::cout << "tbatch " << header_version << " consumer (" << TBATCH_CONSUMER_MODE << "): ok\n"
            << tt << "\n";
  return 0;
}
