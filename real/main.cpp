// locosim-real: run a scenario's policy on real machines, with the simulator's algorithm code.
//   RANK=0 WORLD_SIZE=4 MASTER_ADDR=host MASTER_PORT=29500 locosim-real scenario.yaml --policy diloco
//   locosim-real scenario.yaml --policy diloco --spawn 4        # N ranks on this machine
//   srun -N 4 -n 4 locosim-real scenario.yaml --policy diloco    # on a SLURM allocation
//   locosim-real scenario.yaml --serve-relay 10.0.0.5:29600       # the relay, for ranks given --relay 10.0.0.5:29600
// Every rank and relay of a job must hold the job's secret (LOCOSIM_JOB_SECRET or
// LOCOSIM_JOB_SECRET_FILE; README "Security"); --spawn makes one for its ranks.
// Exit codes: 0 done (ranks other than 0 may have been lost: the others finished without them, and
// the run folder says so), 1 rank 0 failed (the message names the rank and the step), 2 bad input.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "scenario/device.hpp"
#include "config/cli_options.hpp"
#include "config/error.hpp"
#include "config/nearest.hpp"
#include "config/section.hpp"
#include "models/cpu_kernels.hpp"
#include "real/launcher.hpp"
#include "real/rank.hpp"
#include "real/relay.hpp"
#include "report/resume.hpp"
#include "report/run_files.hpp"
#include "report/run_folder.hpp"
#include "report/stop_signals.hpp"
#include "report/summary.hpp"

using namespace locosim;

namespace {


const PolicySpec& choose_policy(const Scenario& scenario, const std::string& label) {
  if (label.empty() && scenario.policies.size() == 1) return scenario.policies[0];
  std::string labels;
  std::vector<std::string> names;
  for (const auto& p : scenario.policies) {
    if (p.label == label) return p;
    labels += (labels.empty() ? "" : ", ") + p.label;
    names.push_back(p.label);
  }
  if (label.empty()) throw std::invalid_argument("--policy is required: the scenario has several (" + labels + ")");
  const std::string closest = nearest_name(label, names);
  throw std::invalid_argument("--policy " + label + ": not in the scenario (" + labels + ")" +
                              (closest.empty() ? "" : "; did you mean '" + closest + "'?"));
}

// Whether `dir` holds a finished run of `policy` that this program wrote with the same --reduce: the
// scenario's hash leaves the reduce mode out (it does not change the simulator's numbers), so the
// writer named in resolved.yaml's first line must match too. A simulator's run there is not this run.
bool finished_real_run(const std::filesystem::path& dir, const Scenario& scenario, const PolicySpec& policy,
                       ReduceMode reduce) {
  if (!is_finished_run(dir, run_hash(scenario, policy))) return false;
  std::ifstream resolved(dir / "resolved.yaml");
  std::string first;
  std::getline(resolved, first);
  return first == run_identity_header(real_program(reduce), policy.label);
}

// The run's table as `locosim run` prints it. Times are measured on this machine; bytes are priced
// like the simulator's, as the model of timing.params: said under the table, since a run of seconds
// that "sent" gigabytes otherwise reads as a bug.
void print_table(const Scenario& scenario, const std::filesystem::path& dir) {
  std::printf("\n%s", format_table({read_summary_json((dir / "summary.json").string())}).c_str());
  if (scenario.timing.params) {
    std::printf("MB columns priced as timing.params = %.3g parameters, as the simulator prices them; "
                "wall-clock and utilization measured\n", *scenario.timing.params);
  }
}

}  // namespace

int main(int argc, char** argv) {
  pin_cpu_kernels(argv);  // first: the same numbers on every x86-64 machine (and as the simulator)
  ignore_file_size_signal();  // a write past `ulimit -f` fails naming its file, not a silent SIGXFSZ
  CLI::App app{"locosim-real: one policy of a scenario on a real cluster (torch c10d: Gloo)"};
  app.set_version_flag("--version", "locosim-real " LOCOSIM_VERSION);
  std::string file, label, reduce = "exact";
  RealOptions options;
  int spawn = 0;
  app.add_option("scenario", file, "scenario YAML file")->required();
  app.add_option("-p,--policy", label, "label of the policy to run (required if the scenario has several)");
  app.add_option("-o,--output", options.output_root, "folder for run folders (default: runs-real)");
  app.add_option("--reduce", reduce, "exact: the simulator's numerics bit for bit; native: the backend's all-reduce")
      ->check(CLI::IsMember({"exact", "native"}));
  app.add_option("--timeout", options.timeout_s,
                 "seconds before a collective or the rendezvous fails (default 60); a rank whose heartbeat stops "
                 "for a sixth of it (2 to 10 s) is lost, and the others re-form the group without it")
      ->check(integer_in(1, 86400));
  app.add_option("--spawn", spawn, "start N ranks on this machine (and a relay when the scenario's all-gathers use one)")
      ->check(integer_in(1, 4096));
  std::string serve_relay_at;
  app.add_option("--relay", options.relay, "host:port of the relay the all-gathers go through (see --serve-relay)");
  bool force = false;
  app.add_flag("--force", force, "with --spawn: compute the run again although a finished one is in the output folder");
  app.add_option("--serve-relay", serve_relay_at,
                 "be the relay of the scenario's ranks, listening on this host:port (0.0.0.0:PORT for every "
                 "interface): store each all-gather payload, forward it to the other ranks");
  app.failure_message([](const CLI::App* cli, const CLI::Error& e) {  // "error: " as every bad input
    return "error: " + CLI::FailureMessage::simple(cli, e);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitBadInput;
  }
  options.reduce = reduce == "exact" ? ReduceMode::exact : ReduceMode::native;

  try {
    Scenario scenario = load_scenario(file);
    if (scenario.simulator_only) throw *scenario.simulator_only;
    if (!options.relay.empty()) check_relay_address(options.relay);
    if (!serve_relay_at.empty()) {
      check_relay_address(serve_relay_at, "--serve-relay");
      const size_t colon = serve_relay_at.rfind(':');
      serve_relay(serve_relay_at.substr(0, colon), static_cast<uint16_t>(std::stoi(serve_relay_at.substr(colon + 1))),
                  scenario.world_size(), JobSecret::from_environment(), relay_max_frame_bytes(scenario),
                  std::chrono::seconds(options.timeout_s));
      return 0;
    }
    if (const std::string problem = output_root_problem(options.output_root); !problem.empty()) {
      throw std::invalid_argument("-o/--output: " + problem);
    }
    const PolicySpec& policy = choose_policy(scenario, label);
    // Refuse now, not after training, to write where something locosim did not create would be replaced.
    const auto scenario_dir = child_path(options.output_root, scenario.name);
    check_replaceable(scenario_dir);
    const auto run_dir = child_path(scenario_dir, policy.label);
    check_replaceable(run_dir);
    if (spawn > 0 && !force && finished_real_run(run_dir, scenario, policy, options.reduce)) {
      std::printf("%s finished earlier (same scenario hash and --reduce): not computed again (--force recomputes it)\n",
                  run_dir.c_str());
      print_table(scenario, run_dir);
      return 0;
    }
    if (spawn > 0) {
      training_device(scenario);  // a GPU this machine lacks: refused once, here, not by every rank
      if (spawn != scenario.world_size()) {
        throw std::invalid_argument("--spawn " + std::to_string(spawn) + ": the scenario's platform has " +
                                    std::to_string(scenario.world_size()) + " worker hosts");
      }
      std::vector<std::string> args = {file, "--policy", policy.label, "--output", options.output_root,
                                       "--reduce", reduce, "--timeout", std::to_string(options.timeout_s)};
      // The user's secret when one is given (a relay of theirs elsewhere needs it), else a fresh one.
      const JobSecret secret = std::getenv(kJobSecretVariable) || std::getenv(kJobSecretFileVariable)
                                   ? JobSecret::from_environment()
                                   : JobSecret::generate();
      std::optional<RelayThread> relay;  // the scenario's relay, unless --relay names one
      if (options.relay.empty() && scenario.network.all_gather == AllGatherAlgorithm::relay) {
        relay.emplace(spawn, secret, relay_max_frame_bytes(scenario), std::chrono::seconds(options.timeout_s));
        options.relay = "127.0.0.1:" + std::to_string(relay->port());
      }
      if (!options.relay.empty()) args.insert(args.end(), {"--relay", options.relay});
      int code = spawn_local_ranks(spawn, "/proc/self/exe", args, options.timeout_s + 5, secret);
      if (relay) relay->finish(code == 0);
      if (code == 0) {
        print_table(scenario, run_dir);
        std::printf("\nrun folder: %s\n", run_dir.c_str());
      }
      return code;
    }
    RankEnv env = RankEnv::from_environment();
    if (env.world_size != scenario.world_size()) {
      throw std::invalid_argument(std::string(env.launcher == "slurm" ? "SLURM_NTASKS" : "WORLD_SIZE") + " is " +
                                  std::to_string(env.world_size) + " but the scenario's platform has " +
                                  std::to_string(scenario.world_size()) + " worker hosts");
    }
    options.secret = JobSecret::from_environment();
    run_rank(scenario, policy, env, options);
    if (env.rank == 0 && !std::getenv("LOCOSIM_SPAWNED")) print_table(scenario, run_dir);  // rank 0 wrote it
    return 0;
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "locosim-real: %s\n", e.what());
    return 128 + e.signal();
  } catch (const std::exception& e) {
    return report_failure(e, "locosim-real");
  }
}
