// Helpers for tests that run the built `locosim` binary: a scratch folder with a generated corpus,
// and a way to run the CLI and capture its exit code and output.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace locosim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `$LOCOSIM_BIN/<program> <args>` with `cwd` as the working directory; `environment` holds
// arguments of env(1) put before it ("-u VAR NAME=value").
CliResult run_locosim(const std::string& args, const std::string& cwd, const std::string& program = "locosim",
                      const std::string& environment = "");

// A fresh, empty folder under the system temp folder, named after `name`; removed when the test
// program ends with every test passed (a failed test's folders stay for a look).
std::string scratch_dir(const std::string& name);
// The folders to remove then (the test runner, tests/doctest_main.cpp, removes them).
std::vector<std::string>& scratch_folders();

// A learnable text of about `bytes` bytes (a tiny deterministic grammar), written to `path`.
void write_corpus(const std::string& path, size_t bytes);

void write_file(const std::string& path, const std::string& text);
// `text` with the first `from` replaced by `to`; fails the test if `from` is not in it.
std::string replaced(std::string text, const std::string& from, const std::string& to);

// `text` of a scenario under scenarios/tests/ (using the kjv corpus), made to run from a scratch
// folder: corpus.txt there instead, the repository's platforms and traces by absolute path.
// Call from the repository root (ctest's working directory).
std::string portable_scenario(const std::string& text);
std::string read_file(const std::string& path);
// The value of `"key": value` in a summary.json, as written: every digit of a number, a string with its
// quotes. Fails the test when the key is not there.
std::string json_value(const std::string& json, const std::string& key);
double json_number(const std::string& json, const std::string& key);
// Every file under `root`, by its path relative to it, with its bytes.
std::map<std::string, std::string> files_under(const std::string& root);

// The scenario every CLI test starts from: 2 workers on an inline asymmetric platform, the tiny
// model with seq_len 16, 12 steps, ddp and diloco, corpus.txt beside it.
std::string small_scenario_yaml();

// A CSV's text without its first column (metrics.csv's time_s: wall-clock on the real backend,
// simulated in the simulator).
std::string without_times(const std::string& csv);

// One row of events.csv (worker,kind,start_s,end_s,bytes,peer).
struct EventRow {
  int worker = 0;
  std::string kind;
  double start_s = 0, end_s = 0, bytes = 0;
};

// Every row of an events.csv's text, in file order (fails the test on another header).
std::vector<EventRow> event_rows(const std::string& events_csv);

// From an events.csv's text: per worker, the bytes it sent between consecutive compute spans (one
// step's syncs), those not zero.
std::map<int, std::vector<double>> sent_per_sync(const std::string& events_csv);

}  // namespace locosim::testing
