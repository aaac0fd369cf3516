// `locosim report`: a finished run folder's comparison table(s), read back from its summary files.
#pragma once
#include <string>

namespace locosim {

// `dir` is a policy folder (one row), a scenario folder (its policies in summary.csv's order) or a
// sweep's folder (a table per point, headed "point <name>"). Throws std::invalid_argument when `dir`
// holds no run.
std::string report_run_folder(const std::string& dir);

}  // namespace locosim
