// A run folder's files, the same for both backends (see run_files.hpp).
#include "report/run_files.hpp"

#include <future>

#include "algorithms/policies.hpp"
#include "scenario/scenario.hpp"
#include "report/link_report.hpp"
#include "report/output_file.hpp"
#include "report/recorder_csv.hpp"
#include "report/resume.hpp"
#include "report/trace.hpp"

namespace locosim {

std::string run_identity_header(const std::string& program, const std::string& label) {
  return "# " + program + " run of policy '" + label + "'";
}

std::string resolved_file_text(const std::string& header, const Scenario& scenario) {
  const CollectiveChoice& used = scenario.network;
  return header + "\n# collectives used: all_reduce " + algorithm_name(used.all_reduce) + ", all_gather " +
         algorithm_name(used.all_gather) + ", flows " + (used.aggregated ? "aggregated" : "exact") +
         " (network: auto chooses on the platform)\n" + scenario.resolved_yaml;
}

void write_run_identity(const std::string& dir, const Scenario& scenario, const PolicySpec& policy,
                        const std::string& program, const std::string& hash) {
  write_text_file(dir + "/resolved.yaml", resolved_file_text(run_identity_header(program, policy.label), scenario));
  write_text_file(dir + "/" + kScenarioHashFile, hash + "\n");
}

RunSummary summarize_run(const Scenario& scenario, const PolicySpec& policy, const Recorder& recorder,
                         const RunTally& tally, const std::vector<ServerUpdate>* updates) {
  std::vector<std::string> accelerators;  // by rank
  for (const HostSpec& host : scenario.platform.hosts) accelerators.push_back(host.accelerator);
  RunSummary summary = summarize(recorder, accelerators, scenario.train.target_loss);
  summary.label = policy.label;
  summary.policy = policy.name;
  summary.timing_only = scenario.timing_only;
  summary.workers_lost = tally.workers_lost;
  summary.workers_joined = tally.workers_joined;
  summary.useful_tokens = tally.useful_tokens;
  summary.compute_wasted_s = tally.compute_wasted_s;
  set_goodput(summary);
  if (updates) set_staleness(summary, *updates);
  return summary;
}

void write_run_results(const std::string& dir, const Scenario& scenario, const Recorder& recorder,
                       const LinkReport& links, const std::vector<std::string>& track_names,
                       const std::vector<ServerUpdate>* updates, const RunSummary& summary) {
  // Each file is its own: the large ones (rows of every worker's every step and transfer, sorted
  // first) are written side by side, on threads that only read. get() hands on a writer's error. A
  // process that may start no more threads writes them one after the other (deferred, in get()).
  constexpr auto side_by_side = std::launch::async | std::launch::deferred;
  std::future<void> metrics = std::async(side_by_side, [&] {
    write_metrics_csv(recorder, dir + "/metrics.csv");
    if (!scenario.timing_only) write_exact_losses_csv(recorder, dir + "/" + kExactLossesFile);
  });
  std::future<void> events = std::async(side_by_side, [&] { write_events_csv(recorder, dir + "/events.csv"); });
  std::future<void> trace = std::async(side_by_side, [&] {
    write_trace_json(recorder, track_names, &links, dir + "/trace.json", trace_detail(scenario.trace));
  });
  if (updates) write_updates_csv(*updates, dir + "/updates.csv");
  write_links_csv(links, dir + "/links.csv");
  write_summary_json(summary, dir + "/summary.json");
  metrics.get();
  events.get();
  trace.get();
}

}  // namespace locosim
