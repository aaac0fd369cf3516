// Who this rank is and where the group meets, from the environment a launcher gives it: torchrun's
// variables, or SLURM's when `srun` started it.
#pragma once
#include <string>

namespace locosim {

// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (torchrun's conventions). Without RANK, under
// srun: SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID give the rank, the world size and the local rank;
// MASTER_ADDR defaults to the first node of the step (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST),
// where task 0 runs, and MASTER_PORT to a port derived from SLURM_JOB_ID and SLURM_STEP_ID, so two
// steps sharing a node do not meet on one port. MASTER_ADDR and MASTER_PORT, if set, win.
struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher = "torchrun";  // where the identity came from: "torchrun" or "slurm"

  // Throws std::invalid_argument naming the variable that is missing or malformed.
  static RankEnv from_environment();
};

// The first host of a SLURM host list: "node[07-09,12],gpu1" -> "node07", "rack[1-2]-n[3-4]" -> "rack1-n3".
// Throws std::invalid_argument for an empty or malformed list.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace locosim
