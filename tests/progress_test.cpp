// Progress lines (only on a terminal, never in CI) and the CLI's `report` subcommand.
#include "cli/progress.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/doctest_torch.hpp"
#include "tests/tiny_run.hpp"

using namespace locosim;
namespace fs = std::filesystem;

namespace {

std::string file_text(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

// Runs the built `locosim` with stdout and stderr into a file (so: not a terminal); returns the exit code.
int run_cli(const std::string& args, const std::string& env, std::string* output) {
  const char* bin = std::getenv("LOCOSIM_BIN");
  REQUIRE_MESSAGE(bin != nullptr, "LOCOSIM_BIN (the build folder) is set by ctest");
  const std::string log = (fs::temp_directory_path() / "locosim-progress-test.log").string();
  const int status = std::system((env + " " + bin + "/locosim " + args + " >" + log + " 2>&1").c_str());
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  *output = ss.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("progress: live lines only on a terminal, outside CI and off dumb terminals") {
  CHECK(live_progress_allowed(true, nullptr, "xterm-256color"));
  CHECK(live_progress_allowed(true, "false", "xterm"));
  CHECK(live_progress_allowed(true, "", "xterm"));
  CHECK_FALSE(live_progress_allowed(false, nullptr, "xterm"));  // a pipe or a file
  CHECK_FALSE(live_progress_allowed(true, "true", "xterm"));
  CHECK_FALSE(live_progress_allowed(true, "1", "xterm"));
  CHECK_FALSE(live_progress_allowed(true, nullptr, "dumb"));
  CHECK_FALSE(live_progress_allowed(true, nullptr, nullptr));
}

TEST_CASE("progress: a line says step, simulated time, elapsed and ETA") {
  CHECK(progress_line("diloco", 120, 300, 4320, 12, 8) == "diloco    step 120/300  sim 72.0 min  elapsed 0:12  eta 0:18");
  CHECK(progress_line("ddp", 0, 50, 0, 3, 3) == "ddp  step  0/50  sim 0.0 s  elapsed 0:03  eta ?");
  CHECK(progress_line("x", 1, 10, 9000, 3700, 1) == "x  step  1/10  sim 2.50 h  elapsed 1:01:40  eta 9:15:00");
}

TEST_CASE("progress: the board redraws in place on a terminal and prints plain lines elsewhere") {
  std::FILE* plain = std::tmpfile();
  ProgressBoard quiet(plain, false);
  quiet.draw({"a  step 1/2"});
  quiet.print("[1/2] a done");
  quiet.clear();
  CHECK(file_text(plain) == "[1/2] a done\n");
  std::fclose(plain);

  std::FILE* tty = std::tmpfile();
  ProgressBoard live(tty, true);
  live.draw({"a  step 1/4", "b  step 2/4"});
  live.print("[1/2] a done");  // goes above the block, which is drawn again below it
  live.clear();
  CHECK(file_text(tty) ==
        "a  step 1/4\nb  step 2/4\n\x1b[2A\r\x1b[J[1/2] a done\na  step 1/4\nb  step 2/4\n\x1b[2A\r\x1b[J");
  std::fclose(tty);
}

TEST_CASE("progress: a run off a terminal prints no live lines, and `locosim report` prints its table") {
  const std::string dir = testing::tiny_scenario_dir("report-cli");
  testing::write_text(dir + "/scenario.yaml", testing::tiny_scenario_yaml());
  std::string out;
  REQUIRE(run_cli("run " + dir + "/scenario.yaml -o " + dir + "/runs -j 2 --link-bucket '0.5 s'", "TERM=xterm CI=", &out) == 0);
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(out.find('\r') == std::string::npos);
  CHECK(out.find("step ") == std::string::npos);
  CHECK(out.find("] ddp simulated in") != std::string::npos);
  CHECK(out.find("] diloco simulated in") != std::string::npos);
  std::ifstream links(dir + "/runs/tiny/ddp/links.csv");
  std::string header, first;
  std::getline(links, header);
  std::getline(links, first);
  CHECK(first.rfind("home-0.up,up,0,home-0,0,0.5,", 0) == 0);  // --link-bucket replaced the automatic width
  std::string rejected;
  CHECK(run_cli("run " + dir + "/scenario.yaml -o " + dir + "/runs --link-bucket fast", "", &rejected) == 2);
  CHECK(rejected.find("--link-bucket fast") != std::string::npos);

  std::string report;
  REQUIRE(run_cli("report " + dir + "/runs/tiny", "", &report) == 0);
  const size_t table = out.find("policy ");
  REQUIRE(table != std::string::npos);
  CHECK(out.substr(table, out.find("\nrun folder:") - table) == report);  // the run's own table, again
  CHECK(run_cli("report " + dir, "", &report) == 2);
  CHECK(report.find("not a locosim run folder") != std::string::npos);
}
