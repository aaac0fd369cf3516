// CLI test helpers (see cli_util.hpp).
#include "tests/cli_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

#include <doctest/doctest.h>

namespace locosim::testing {
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string json_value(const std::string& json, const std::string& key) {
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(json, m, std::regex("\"" + key + "\": ([^,\n]+)")), key);
  return m[1].str();
}

double json_number(const std::string& json, const std::string& key) { return std::stod(json_value(json, key)); }

std::map<std::string, std::string> files_under(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files[fs::relative(entry.path(), root).string()] = read_file(entry.path().string());
  }
  return files;
}

void write_file(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

CliResult run_locosim(const std::string& args, const std::string& cwd, const std::string& program,
                      const std::string& environment) {
  const char* bin = std::getenv("LOCOSIM_BIN");
  if (!bin) throw std::runtime_error("LOCOSIM_BIN is not set (run the tests through ctest)");
  std::string out = cwd + "/.stdout", err = cwd + "/.stderr";
  std::string command = "cd '" + cwd + "' && " + (environment.empty() ? "" : "env " + environment + " ") + "'" + std::string(bin) + "/" + program + "' " + args + " >'" + out + "' 2>'" +
                        err + "' </dev/null";
  int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "test setup: '" << from << "' not in the scenario");
  return text.replace(at, from.size(), to);
}

std::string portable_scenario(const std::string& text) {
  const std::string tests = fs::absolute("scenarios/tests").string();
  std::string out = replaced(text, "path: kjv", "path: corpus.txt");
  out = std::regex_replace(out, std::regex("\\.\\./\\.\\./platforms/"), fs::absolute("platforms").string() + "/");
  return std::regex_replace(out, std::regex("traces/"), tests + "/traces/");
}

std::string scratch_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("locosim-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  scratch_folders().push_back(dir.string());
  return dir.string();
}

void write_corpus(const std::string& path, size_t bytes) {
  const char* subjects[] = {"the cat", "a dog", "the bird", "my friend"};
  const char* verbs[] = {"sees", "likes", "follows", "finds"};
  const char* objects[] = {"the house.", "a tree.", "the river.", "some bread."};
  std::string text;
  uint64_t state = 42;
  while (text.size() < bytes) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    text += std::string(subjects[(state >> 33) % 4]) + " " + verbs[(state >> 40) % 4] + " " + objects[(state >> 50) % 4] +
            "\n";
  }
  write_file(path, text);
}

std::string small_scenario_yaml() {
  return R"(name: small
seed: 3
platform:
  accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}
  hosts:
    - {name: fast, accelerator: gpu, uplink: {bandwidth: 50 Mbps, latency: 10 ms}, downlink: {bandwidth: 500 Mbps, latency: 10 ms}}
    - {name: slow, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 20 ms}, downlink: {bandwidth: 100 Mbps, latency: 20 ms}}
data: {path: corpus.txt, eval_fraction: 0.1}
model: {preset: tiny, seq_len: 16}
train:
  steps: 12
  batch_size: 4
  eval_every: 6
  eval_batches: 2
  optimizer: {lr: 3.0e-3}
policies:
  - ddp
  - {name: diloco, inner_steps: 4}
)";
}

std::string without_times(const std::string& csv) {
  std::string out, line;
  std::istringstream in(csv);
  while (std::getline(in, line)) out += line.substr(line.find(',') + 1) + "\n";
  return out;
}

std::vector<EventRow> event_rows(const std::string& events_csv) {
  std::istringstream in(events_csv);
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "worker,kind,start_s,end_s,bytes,peer");
  std::vector<EventRow> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    rows.push_back({std::stoi(f.at(0)), f.at(1), std::stod(f.at(2)), std::stod(f.at(3)), std::stod(f.at(4))});
  }
  return rows;
}

std::map<int, std::vector<double>> sent_per_sync(const std::string& events_csv) {
  std::map<int, std::vector<double>> out;
  std::map<int, double> open;
  auto close = [&](int worker) {
    if (open[worker] > 0) out[worker].push_back(open[worker]);
    open[worker] = 0;
  };
  for (const EventRow& e : event_rows(events_csv)) {
    if (e.kind == "compute") close(e.worker);
    if (e.kind == "send") open[e.worker] += e.bytes;
  }
  for (auto& [worker, bytes] : open) close(worker);
  return out;
}

}  // namespace locosim::testing
