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

sg4::Mailbox* pair_box(const std::string& tag, int from, int to) {
  return sg4::Mailbox::by_name(tag + "/" + std::to_string(from) + "-to-" + std::to_string(to));
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

namespace locosim {

void mesh_all_gather_flows(int rank, int world_size, const std::string& tag, double bytes, Recorder& recorder) {
  if (world_size < 2 || bytes <= 0) return;
  const auto size = static_cast<uint64_t>(std::ceil(bytes));
  const double start = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> comms;
  std::vector<std::pair<EventKind, int>> what;  // per comm: send or recv, and the peer
  std::vector<int*> received(world_size);       // where each get_async lands the token
  for (int peer = 0; peer < world_size; ++peer) {
    if (peer == rank) continue;
    comms.push_back(pair_box(tag, rank, peer)->put_async(&token, size));
    what.emplace_back(EventKind::send, peer);
    comms.push_back(pair_box(tag, peer, rank)->get_async<int>(&received[peer]));
    what.emplace_back(EventKind::recv, peer);
  }
  while (!comms.empty()) {
    ssize_t i = sg4::Comm::wait_any(comms);
    recorder.event({rank, what[i].first, start, sg4::Engine::get_clock(), static_cast<double>(size), what[i].second});
    comms.erase(comms.begin() + i);
    what.erase(what.begin() + i);
  }
}

}  // namespace locosim
