// Collectives as the point-to-point flows of their algorithm, in simulated time. Only the timing
// lives here: the numbers themselves are reduced by the Transport (mean_in_rank_order).
#pragma once
#include <cstdint>
#include <string>

#include "algorithms/recorder.hpp"

namespace locosim {

// Ring all-reduce (reduce-scatter then all-gather): in each of 2(K-1) rounds every rank sends one
// chunk of bytes/K to its right neighbour and receives one from its left. On K identical hosts it
// takes 2(K-1)/K · S/B + 2(K-1)·latency. Runs rank `rank`'s side; call it from an actor on that rank's
// host. `tag` must be the same on every rank for one collective and unique across collectives.
void ring_all_reduce_flows(int rank, int world_size, const std::string& tag, double bytes, Recorder& recorder);

// Direct (full mesh) all-gather: every rank sends its `bytes` to each other rank at once and receives
// theirs: (K-1)·bytes up and down per rank, all flows concurrent.
void mesh_all_gather_flows(int rank, int world_size, const std::string& tag, double bytes, Recorder& recorder);

}  // namespace locosim
