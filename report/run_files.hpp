// The files of a run folder, written by one path for both backends (cli/run_planned.cpp and sim/simulate.cpp,
// real/rank.cpp), so the two cannot drift: what identifies the run when it starts, the summary's
// common fields, and every result file when it ends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/summary.hpp"

namespace locosim {

struct Scenario;
struct PolicySpec;
struct LinkReport;
class Recorder;

// resolved.yaml's first line, naming the program that wrote the run and its policy label:
// "# locosim run of policy 'diloco'".
std::string run_identity_header(const std::string& program, const std::string& label);

// resolved.yaml's text: `header` (run_identity_header), a comment naming the collective algorithms the
// run used (what network: auto chose on its platform), then the resolved scenario.
std::string resolved_file_text(const std::string& header, const Scenario& scenario);

// resolved.yaml (resolved_file_text under "# <program> run of policy '<label>'") and scenario.sha256
// (`hash`, the run's identity: report/resume.hpp).
void write_run_identity(const std::string& dir, const Scenario& scenario, const PolicySpec& policy,
                        const std::string& program, const std::string& hash);

// What became of the group, as the backend counted it.
struct RunTally {
  int workers_lost = 0;
  int workers_joined = 0;
  int64_t useful_tokens = 0;
  double compute_wasted_s = 0;
};

// The table row from the recorder, with the policy's names, the tally, goodput and, with a parameter
// server (`updates` not null), staleness. The caller adds what only it knows (the parameters'
// fingerprint, the validation loss).
RunSummary summarize_run(const Scenario& scenario, const PolicySpec& policy, const Recorder& recorder,
                         const RunTally& tally, const std::vector<ServerUpdate>* updates);

// metrics.csv, exact_losses.csv (not timing-only), events.csv, updates.csv (with a parameter server),
// links.csv, trace.json (at report.trace's detail; none: no file) and summary.json. `track_names`: the
// trace's name for each rank.
void write_run_results(const std::string& dir, const Scenario& scenario, const Recorder& recorder,
                       const LinkReport& links, const std::vector<std::string>& track_names,
                       const std::vector<ServerUpdate>* updates, const RunSummary& summary);

}  // namespace locosim
