// The Catch2 main shared by every test executable. A test that cannot run on this machine calls
// TBATCH_SKIP (test_support.hpp); when nothing failed and something was skipped the executable
// exits with tbatch_skip_exit_code, which ctest's SKIP_RETURN_CODE reports as a skip, not a pass.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

namespace tbatch::testing {
int skipped_test_cases = 0;
}  // namespace tbatch::testing

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && tbatch::testing::skipped_test_cases > 0) return 77;
  return failed;
}
