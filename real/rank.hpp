// One rank of a real training job: reads its identity from torchrun's or SLURM's variables
// (real/rank_env.hpp), joins the group, runs the same TrainLoop and policy code as the simulator, and
// (rank 0) writes the run folder.
#pragma once
#include <string>

#include "config/scenario.hpp"
#include "real/c10d_transport.hpp"
#include "real/rank_env.hpp"

namespace locosim {

struct RealOptions {
  std::string output_root = "runs-real";
  ReduceMode reduce = ReduceMode::exact;
  int timeout_s = 60;   // a collective or rendezvous that takes longer fails (the group re-forms without the lost)
  std::string relay;    // host:port of a relay (real/relay.hpp) for the all-gathers; empty: Gloo's
};

// Runs `policy` as this rank. Returns normally when the job completed (rank 0 has written
// <output_root>/<scenario>/<label>/). A rank other than 0 that is lost mid-run is left behind: the
// others re-form the group without it (C10dTransport) and finish; rank 0's run folder has its rows
// up to where it died, an `away` event from when the others noticed, and summary.workers_lost.
// A rank other than 0 started again (same RANK and MASTER_*) while the job runs rejoins: it waits
// until the others let it go, asks to come back, and at the group's next handover point loads rank
// 0's policy state and goes on from the group's step in a new epoch (C10dTransport); its rows carry
// an `away` (from its loss to its admission) and a `join` event (the state's download), and
// summary.workers_joined counts it. With a policy that never hands over it exits at once (0).
// Throws std::runtime_error "rank R: step S: ..." on failure (rank 0 lost: it hosts the store; or
// this rank left out of the re-formed group).
void run_rank(const Scenario& scenario, const PolicySpec& policy, const RankEnv& env, const RealOptions& options);

}  // namespace locosim
