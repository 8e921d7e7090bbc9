// Uses tbatch through its umbrella header: builds a tensor, views it and checks the values.
// Exits nonzero on any mismatch.

#include <iostream>
#include <string>
#include <vector>

#include <tbatch/tbatch.hpp>

// Linking tbatch::compiled must select compiled mode, and only linking it.
#if defined(TBATCH_CONSUMER_EXPECTS_COMPILED) != defined(TBATCH_COMPILED)
#error "TBATCH_COMPILED is defined exactly when the consumer links tbatch::compiled"
#endif

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

  // A conversion and an error: in compiled mode both run the library's code.
  const tbatch::PaddedBatch<float> padded = tbatch::list_to_padded(
      std::vector<tbatch::Tensor<float>>{t, tbatch::Tensor<float>(tbatch::Shape{1, 3}, 1.f)}, 0.f);
  check(padded.data().shape() == tbatch::Shape{2, 2, 3}, "list_to_padded pads to the longest");
  check(padded.data().at({1, 1, 2}) == 0.f && padded.data().at({1, 0, 2}) == 1.f,
        "list_to_padded values");
  try {
    tbatch::set_max_threads(-1);
    check(false, "set_max_threads(-1) throws");
  } catch (const tbatch::ValueError& e) {
    check(std::string(e.what()) ==
              "set_max_threads: threads is -1, expected >= 0 (0: OpenMP's default)",
          "the error message");
  }

  if (failures != 0) return 1;
  std::cout << "tbatch " << header_version << " consumer (" << TBATCH_CONSUMER_MODE << "): ok\n"
            << tt << "\n";
  return 0;
}
