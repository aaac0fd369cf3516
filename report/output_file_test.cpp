// OutputFile: every failed write is reported at close(), naming the file (regression: a full disk
// left truncated files that were renamed into place as complete).
#include "report/output_file.hpp"

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/doctest_torch.hpp"

namespace fs = std::filesystem;
using namespace locosim;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("output file: what is written is on disk after close") {
  const fs::path dir = fs::temp_directory_path() / ("locosim-output-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  OutputFile file((dir / "a.csv").string());
  std::string big(200000, 'x');  // several buffers' worth
  file.out() << "head\n" << big;
  file.close();
  CHECK(read(dir / "a.csv") == "head\n" + big);
  fs::remove_all(dir);
}

TEST_CASE("output file: a full disk is an error at close, naming the file") {
  // /dev/full answers every write with ENOSPC, as a full disk does.
  OutputFile file("/dev/full");
  file.out() << std::string(100, 'x');
  CHECK_THROWS_WITH_AS(file.close(), doctest::Contains("/dev/full: cannot be written: No space left on device"),
                       std::runtime_error);
}

TEST_CASE("output file: a file-size limit is an error, not a truncated file") {
  const fs::path dir = fs::temp_directory_path() / ("locosim-output-limit-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  rlimit old{};
  getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // then write(2) fails with EFBIG
  rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string error;
  try {
    OutputFile file((dir / "big.json").string());
    file.out() << std::string(100000, 'y');
    file.close();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  CHECK(error.find("big.json: cannot be written: File too large") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("output file: a folder that cannot hold the file is an error at once") {
  CHECK_THROWS_WITH_AS(OutputFile("/nonexistent-locosim-dir/x.csv"), doctest::Contains("cannot be created"),
                       std::runtime_error);
}
