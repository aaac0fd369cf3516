// locosim: simulate low-communication training methods on a wide-area platform.
//   locosim run scenarios/quickstart.yaml      run every policy, print the comparison table
//   locosim check scenarios/*.yaml             validate only
// Exit codes: 0 done, 1 a run failed, 2 bad input (the message names file:line:column and key).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "config/error.hpp"
#include "sim/run.hpp"

using namespace locosim;

namespace {

constexpr int kBadInput = 2;

int check(const std::vector<std::string>& files) {
  int code = 0;
  for (const auto& file : files) {
    try {
      Scenario s = load_scenario(file);
      std::printf("ok: %s (%d workers, %zu policies)\n", file.c_str(), s.world_size(), s.policies.size());
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      code = kBadInput;
    }
  }
  return code;
}

int run(const std::string& file, const RunOptions& options) {
  Scenario scenario = load_scenario(file);
  std::printf("%s: %d workers, %zu policies, %lld steps each\n", scenario.name.c_str(), scenario.world_size(),
              scenario.policies.size(), static_cast<long long>(scenario.train.steps));
  std::vector<RunSummary> rows = run_scenario(scenario, options);
  std::printf("\n%s", format_table(rows).c_str());
  std::printf("\nrun folder: %s/%s\n", options.output_root.c_str(), scenario.name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"locosim: which low-communication training method finishes first, at what loss, on your links"};
  app.require_subcommand(1);

  std::string run_file;
  RunOptions options;
  CLI::App* run_cmd = app.add_subcommand("run", "simulate every policy of a scenario and print the comparison");
  run_cmd->add_option("scenario", run_file, "scenario YAML file")->required();
  run_cmd->add_option("-o,--output", options.output_root, "folder for run folders (default: runs)");
  run_cmd->add_option("-p,--policy", options.only_labels, "run only the policy with this label (repeatable)");
  run_cmd->add_option("-j,--jobs", options.jobs, "policies simulated at once (default: one per core)");

  std::vector<std::string> check_files;
  CLI::App* check_cmd = app.add_subcommand("check", "validate scenario files without running them");
  check_cmd->add_option("scenarios", check_files, "scenario YAML files")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kBadInput;
  }

  try {
    if (*check_cmd) return check(check_files);
    return run(run_file, options);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadInput;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locosim: %s\n", e.what());
    return 1;
  }
}
