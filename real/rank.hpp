// One rank of a real training job: reads its identity from torchrun's or SLURM's variables
// (real/rank_env.hpp), joins the group, runs the same TrainLoop and policy code as the simulator, and
// (rank 0) writes the run folder.
#pragma once
#include <string>

#include "scenario/scenario.hpp"
#include "real/auth.hpp"
#include "real/c10d_transport.hpp"
#include "real/rank_env.hpp"
#include "real/store_protocol.hpp"

namespace locosim {

struct RealOptions {
  std::string output_root = "runs-real";
  ReduceMode reduce = ReduceMode::exact;
  int timeout_s = 60;   // a collective or rendezvous that takes longer fails (the group re-forms without the lost)
  std::string relay;    // host:port of a relay (real/relay.hpp) for the all-gathers; empty: Gloo's
  JobSecret secret;     // what the job's store and relay ask of every connection (real/auth.hpp)
};

// What a real run's resolved.yaml names as its writer: "locosim-real --reduce exact" (the reduce mode
// changes the numbers but not the scenario's hash, so a finished run is recognized by both).
std::string real_program(ReduceMode reduce);

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

// What the job's servers accept at most, from the model's size: nothing a peer sends is allocated
// past these. The store's messages fit the largest value the run sends through it (a
// parameter-server push, a handover's policy state: a few copies of the model, at most 8 here) and
// all it holds at once fits those of every rank plus the metric rows; a relay frame is at most 16
// times the model's fp32 bytes (a sparse payload of every coefficient, padded chunks, int64 indices
// and fp32 values, is at most about 12).
uint64_t model_bytes(const Scenario& scenario);  // fp32 parameters of the scenario's model
StoreLimits store_limits(const Scenario& scenario, int world_size);
uint64_t relay_max_frame_bytes(const Scenario& scenario);

}  // namespace locosim
