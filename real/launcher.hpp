// A local launcher: starts N ranks of `locosim-real` on this machine (torchrun's environment
// variables, a free port on 127.0.0.1) and reports which rank failed, if any.
#pragma once
#include <string>
#include <vector>

#include "real/auth.hpp"

namespace locosim {

// Runs `program args...` N times with RANK=0..N-1, WORLD_SIZE=N, LOCAL_RANK, MASTER_ADDR=127.0.0.1
// and a free MASTER_PORT, and waits for all of them. A rank other than 0 that fails (killed, or a
// non-zero exit) is lost: the others go on without it (they re-form the group) and one line on stderr
// names it. When rank 0 fails (it hosts the store and writes the run folder), the others get
// `grace_s` to fail on their own (they name the lost rank), then are killed. Returns 0 when rank 0
// succeeded, else 1. On SIGINT, SIGTERM or SIGHUP the ranks get SIGTERM (then SIGKILL after 5 s) and
// it throws Interrupted once they are gone; a rank also gets SIGTERM if the launcher dies. Each rank
// gets the job's secret in LOCOSIM_JOB_SECRET (its environment only: never an argument, which any user
// of the machine can read).
int spawn_local_ranks(int n, const std::string& program, const std::vector<std::string>& args, int grace_s,
                      const JobSecret& secret);

}  // namespace locosim
