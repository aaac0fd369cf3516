// `locosim compare RUN_A RUN_B`: two finished runs' tables side by side, per policy label, with the
// change from A to B (B/A for times and bytes, B - A for losses and utilization). What a `--set`
// what-if changed, read back from the run folders; nothing is simulated.
#pragma once
#include <string>

namespace locosim {

// RUN_A and RUN_B are each a scenario folder (runs/<scenario>), a sweep point's folder, or a policy's
// folder. Throws std::invalid_argument naming the folder when it is no such run folder (a missing path,
// a sweep's or seeds' root, a folder without summary.json in it or its policy folders).
std::string compare_run_folders(const std::string& run_a, const std::string& run_b);

}  // namespace locosim
