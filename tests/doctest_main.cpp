// The doctest runner shared by every test binary (compiled once, without LibTorch: cmake/locosim.cmake).
// When every test it ran passed, it removes the scratch folders they asked for (tests/cli_util.hpp's
// scratch_dir); a failed test's stay for a look.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace locosim::testing {

std::vector<std::string>& scratch_folders() {
  static std::vector<std::string> folders;
  return folders;
}

}  // namespace locosim::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (failed == 0) {
    std::error_code ignored;  // a folder already gone, or one a test made unreadable: left as it is
    for (const std::string& dir : locosim::testing::scratch_folders()) std::filesystem::remove_all(dir, ignored);
  }
  return failed;
}
