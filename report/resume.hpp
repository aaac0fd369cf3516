// What makes a sweep resumable: every finished run folder (of either backend) holds the content hash of what it ran, so a
// later run of the same sweep (on this machine or another) recognizes it and does not compute it again.
//
// The hash covers everything that determines a run's files: the resolved scenario (every setting with
// its default filled in, after the sweep point's values) with only this policy in its policy list (so
// adding a policy to a scenario keeps the others' runs), the corpus's bytes, and the links.csv bucket;
// not train.target_loss, which only the summary reads (a finished run's is re-derived: cli/run.cpp).
// It does not cover the locosim build: a run folder from an older build counts as done (--force), if
// it lists its files. A folder counts as finished only while every file it held when it was committed
// is there with its size (report/run_folder.hpp): one with a file deleted or truncated is computed again.
#pragma once
#include <filesystem>
#include <string>

#include "scenario/scenario.hpp"

namespace locosim {

// The file in a run folder that holds its hash (64 hex digits and a newline).
inline constexpr const char* kScenarioHashFile = "scenario.sha256";

// The SHA-256, in hex, of what the run of `policy` in `scenario` depends on. Throws std::runtime_error
// if the corpus cannot be read.
std::string run_hash(const Scenario& scenario, const PolicySpec& policy);

// The SHA-256, in hex, of what the numbers of the run of `policy` in `scenario` depend on (its losses
// and final parameters): run_hash's inputs without what only times the run: the platform but for its
// number of workers, `network`, `world`, `timing`, `report` and train.target_loss. Two runs with equal
// numerics hashes train the same values, one of them may be re-timed from the other, PROVIDED the
// policy does not read the clock (reads_clock) and the world cannot fail (a lost worker's place in the
// schedule depends on time): the caller checks both.
std::string numerics_hash(const Scenario& scenario, const PolicySpec& policy);

// Whether `dir` is a finished run folder (written by locosim, complete) of the run whose hash is `hash`.
bool is_finished_run(const std::filesystem::path& dir, const std::string& hash);

// Why `dir`, a run folder of the run whose hash is `hash`, is not finished although it says so
// ("metrics.csv is missing"): "" when it is finished, or holds no run of `hash` at all.
std::string damaged_run_problem(const std::filesystem::path& dir, const std::string& hash);

}  // namespace locosim
