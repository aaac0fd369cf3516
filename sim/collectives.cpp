// Ring all-reduce flows over SimGrid mailboxes.
#include "sim/collectives.hpp"

#include <simgrid/s4u.hpp>

#include <cmath>

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

// Mailboxes carry no data here, only the simulated size; SimGrid refuses null payloads.
int token = 0;

sg4::Mailbox* inbox(const std::string& tag, int rank) {
  return sg4::Mailbox::by_name(tag + "/to-" + std::to_string(rank));
}

}  // namespace

void ring_all_reduce_flows(int rank, int world_size, const std::string& tag, double bytes, Recorder& recorder) {
  if (world_size < 2 || bytes <= 0) return;
  const int right = (rank + 1) % world_size;
  const int left = (rank + world_size - 1) % world_size;
  const auto chunk_bytes = static_cast<uint64_t>(std::ceil(bytes / world_size));
  sg4::Mailbox* to_right = inbox(tag, right);
  sg4::Mailbox* from_left = inbox(tag, rank);
  for (int round = 0; round < 2 * (world_size - 1); ++round) {
    const double start = sg4::Engine::get_clock();
    sg4::CommPtr send = to_right->put_async(&token, chunk_bytes);
    from_left->get<int>();
    recorder.event({rank, EventKind::recv, start, sg4::Engine::get_clock(), static_cast<double>(chunk_bytes), left});
    send->wait();
    recorder.event({rank, EventKind::send, start, sg4::Engine::get_clock(), static_cast<double>(chunk_bytes), right});
  }
}

}  // namespace locosim
