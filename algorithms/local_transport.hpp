// An in-process Transport for tests: K workers on K threads, collectives meet in shared memory.
// Numerics are those of every transport (mean_in_rank_order); there is no clock (now_s() is 0) and
// compute() only runs the work.
#pragma once
#include <functional>
#include <memory>

#include "algorithms/transport.hpp"

namespace locosim {

// Runs body(transport) on `world_size` threads, one per rank, and joins them. An exception thrown
// on any rank is rethrown here (the first one, by rank).
void run_local_workers(int world_size, const std::function<void(Transport&)>& body);

}  // namespace locosim
