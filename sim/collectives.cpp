// The collectives' flows over SimGrid mailboxes (sim/flows.hpp): ring, relay and hierarchical
// all-reduce; mesh, ring and relay all-gather.
#include "sim/collectives.hpp"

#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "sim/flows.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

// `rounds` rounds of a ring over `ring` (ranks in ring order; this rank at ring[position]): each round
// sends `chunk_bytes` to the next member and receives as much from the previous one.
void ring_rounds(const std::vector<int>& ring, size_t position, const std::string& tag, int rounds,
                 uint64_t chunk_bytes, Recorder& recorder) {
  const size_t n = ring.size();
  const int right = ring[(position + 1) % n];
  const int left = ring[(position + n - 1) % n];
  for (int round = 0; round < rounds; ++round) {
    Flows flows(ring[position], recorder);
    flows.send(tag, right, chunk_bytes);
    flows.recv(tag, left, chunk_bytes);
    flows.wait_all();
  }
}

// A member's side of a gather and broadcast through `hub` (a relay, a site's leader): its upload,
// then the result. The hub sends the result only once it has every upload, so the download starts
// when the hub sends it, whenever it was asked for: both are started at once, and the member is woken
// by the result alone (its upload has ended by then).
void upload_then_result(int rank, int hub, const std::string& up, const std::string& down, uint64_t bytes,
                        Recorder& recorder) {
  Flows flows(rank, recorder);
  flows.send(up, hub, bytes);
  flows.recv(down, hub, bytes);
  flows.wait_last_first();
}

// Where the sides of one aggregated collective meet once their flows are done, by collective tag.
// A ring ends at the latest, over its edges, of (the edge's flow end + (R − 1) · its latency): the
// exact ring's R rounds each wait for their slowest edge, a chunk's transfer plus that edge's latency,
// and an edge's one aggregated flow takes R transfers and one latency. A relay all-gather's workers
// wait there for every upload, then for what the last arrivals still need to bring down.
struct CollectiveEnd {
  size_t sides = 0;      // the actors that meet there
  size_t left = 0;       // sides that have not passed the end yet
  size_t arrived = 0;    // sides that have reached it
  std::vector<sg4::ActorPtr> waiting;  // those of them suspended until the last one arrives
  double finish_s = 0;   // ring: the latest edge's flow end + its remaining latencies
  sg4::Host* relay = nullptr;                    // relay all-gather: the relay's host,
  std::vector<std::pair<double, int>> arrivals;  // each upload's (end time, worker), in time order,
  std::vector<double> arrived_s;                 // and by worker rank
};
std::map<std::string, CollectiveEnd> collective_ends;

// The end of collective `tag`, which `sides` actors pass (created by the first of them to ask).
CollectiveEnd& end_of(const std::string& tag, size_t sides) {
  CollectiveEnd& end = collective_ends[tag];
  if (end.sides == 0) {
    end.sides = end.left = sides;
    if (sides > 1) end.waiting.reserve(sides - 1);  // one allocation, not a vector's doublings
  }
  return end;
}

// Arrives at the end and waits until every side has, as at a barrier; the last one to arrive first
// runs `last`, then lets the others go in the order they arrived, as a barrier does. One simcall per
// side, where a barrier takes two. The waiting sides are suspended, and SimGrid suspends an actor's
// activities with it: a side with transfers still in flight arrives with `wait` false, and goes on.
template <class Last>
void meet(CollectiveEnd& end, bool wait, Last last) {
  if (++end.arrived < end.sides) {
    if (!wait) return;
    end.waiting.push_back(sg4::Actor::self());
    sg4::this_actor::suspend();
    return;
  }
  last();
  simgrid::kernel::actor::simcall_answered([&end] {
    for (const sg4::ActorPtr& side : end.waiting) side->resume();
  });
}

// Passes the end (`end` stays valid until then: a std::map keeps its values in place as it grows).
void leave(CollectiveEnd& end, const std::string& tag) {
  if (--end.left == 0) collective_ends.erase(tag);
}

// The latest arrivals whose downloads a relay all-gather's tail bound checks: the download flow,
// started with the first payload, already bounds the rest. O(this) per worker and collective.
constexpr size_t kTailArrivals = 64;

size_t position_of(const std::vector<int>& members, int rank) {
  auto it = std::lower_bound(members.begin(), members.end(), rank);  // members are in rank order: O(log K)
  if (it == members.end() || *it != rank) it = std::find(members.begin(), members.end(), rank);
  if (it == members.end()) throw std::logic_error("collective: rank " + std::to_string(rank) + " is not a member");
  return static_cast<size_t>(it - members.begin());
}

void aggregated_ring(int rank, const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                     const std::string& tag, uint64_t bytes_each_way, int latency_rounds, Recorder& recorder) {
  const size_t n = members.size(), position = position_of(members, rank);
  const int right = members[(position + 1) % n], left = members[(position + n - 1) % n];
  CollectiveEnd& end = end_of(tag, n);
  std::vector<sg4::Link*> route;
  double latency_s = 0;  // this rank's edge: to its right neighbour
  hosts[static_cast<size_t>(rank)]->route_to(hosts[static_cast<size_t>(right)], route, &latency_s);

  Flows flows(rank, recorder);
  flows.send(tag, right, bytes_each_way);
  flows.recv(tag, left, bytes_each_way);
  const double sent_s = flows.wait_in_order().front();  // the send first: the ring's end counts from its end
  end.finish_s = std::max(end.finish_s, sent_s + latency_rounds * latency_s);
  // The last side to get here knows the ring's end: it waits for it, then lets the others go (one
  // sleep per collective, not one per side).
  meet(end, true, [&end] {
    if (end.finish_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(end.finish_s);
  });
  leave(end, tag);
}

}  // namespace

std::vector<int> all_ranks(int world_size) {
  std::vector<int> ranks(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

// One message's tag is its own (a parameter server's push): nothing to remember.
void send_flow(int from, int to, const std::string& tag, double bytes, Recorder& recorder) {
  Flows flows(from, recorder, nullptr);
  flows.send(tag, to, message_bytes(bytes));
  flows.wait_in_order();
}

void recv_flow(int from, int to, const std::string& tag, double bytes, Recorder& recorder) {
  Flows flows(to, recorder, nullptr);
  flows.recv(tag, from, message_bytes(bytes));
  flows.wait_in_order();
}

void ring_all_reduce_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || bytes <= 0) return;
  ring_rounds(members, position_of(members, rank), tag, 2 * (k - 1), message_bytes(bytes / k), recorder);
}

void relay_all_reduce_flows(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                            double bytes, Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  upload_then_result(rank, relay, tag + "/up", tag + "/down", message_bytes(bytes), recorder);
}

void relay_all_reduce_serve(const std::vector<int>& members, int relay, const std::string& tag, double bytes,
                            Recorder& recorder, size_t lanes) {
  if (members.size() < 2 || bytes <= 0) return;
  lanes = std::max<size_t>(1, std::min(lanes, members.size()));
  const sg4::BarrierPtr all_uploaded = lanes > 1 ? sg4::Barrier::create(static_cast<unsigned>(lanes)) : nullptr;
  KnownMailboxes& known = known_mailboxes();  // this actor's, for every lane: it outlives them
  const std::string up = tag + "/up", down = tag + "/down";
  const uint64_t size = message_bytes(bytes);
  auto serve_lane = [&members, relay, &up, &down, size, &recorder, lanes, all_uploaded, &known](size_t lane) {
    Flows uploads(relay, recorder, &known);
    for (size_t i = lane; i < members.size(); i += lanes) uploads.recv(up, members[i], size);
    uploads.wait_each();  // the mean needs every contribution
    if (all_uploaded) all_uploaded->wait();
    Flows downloads(relay, recorder, &known);
    for (size_t i = lane; i < members.size(); i += lanes) downloads.send(down, members[i], size);
    downloads.wait_each();
  };
  std::vector<sg4::ActorPtr> others;
  for (size_t lane = 1; lane < lanes; ++lane) {
    others.push_back(sg4::Actor::create(tag + "-lane-" + std::to_string(lane), sg4::this_actor::get_host(),
                                        [serve_lane, lane] { serve_lane(lane); }));
  }
  serve_lane(0);
  for (const sg4::ActorPtr& other : others) other->join();  // what the lanes share by reference outlives them
}

void hierarchical_all_reduce_flows(int rank, const std::vector<std::vector<int>>& sites, const std::string& tag,
                                   double bytes, Recorder& recorder) {
  if (bytes <= 0) return;
  std::vector<int> leaders;
  const std::vector<int>* mine = nullptr;
  for (const auto& site : sites) {
    leaders.push_back(site.front());
    if (std::find(site.begin(), site.end(), rank) != site.end()) mine = &site;
  }
  if (!mine) throw std::logic_error("hierarchical_all_reduce_flows: rank " + std::to_string(rank) + " is in no site");
  const int leader = mine->front();
  const uint64_t size = message_bytes(bytes);

  if (rank != leader) {  // send to the leader over the LAN, then wait for the result from it
    upload_then_result(rank, leader, tag + "/site-up", tag + "/site-down", size, recorder);
    return;
  }
  Flows gather(rank, recorder);
  for (size_t i = 1; i < mine->size(); ++i) gather.recv(tag + "/site-up", (*mine)[i], size);
  gather.wait_all();
  if (leaders.size() > 1) {
    const auto position = static_cast<size_t>(std::find(leaders.begin(), leaders.end(), rank) - leaders.begin());
    const auto count = static_cast<int>(leaders.size());
    ring_rounds(leaders, position, tag + "/leaders", 2 * (count - 1), message_bytes(bytes / count), recorder);
  }
  Flows broadcast(rank, recorder);
  for (size_t i = 1; i < mine->size(); ++i) broadcast.send(tag + "/site-down", (*mine)[i], size);
  broadcast.wait_all();
}

void mesh_all_gather_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  Flows flows(rank, recorder);
  for (int peer : members) {
    if (peer == rank) continue;
    flows.send(tag, peer, message_bytes(bytes));
    flows.recv(tag, peer, message_bytes(bytes));
  }
  flows.wait_all();
}

void ring_all_gather_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || bytes <= 0) return;
  ring_rounds(members, position_of(members, rank), tag, k - 1, message_bytes(bytes), recorder);
}

void relay_all_gather_flows(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                            double bytes, Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  Flows flows(rank, recorder);
  flows.send(tag + "/up", relay, message_bytes(bytes));
  // One mailbox per origin: the relay forwards origin q's payload on tag/from-q.
  for (int origin : members) {
    if (origin != rank) flows.recv(tag + "/from-" + std::to_string(origin), relay, message_bytes(bytes));
  }
  flows.wait_all();
}

void relay_all_gather_serve(const std::vector<int>& members, int relay, const std::string& tag, double bytes,
                            Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  Flows flows(relay, recorder);
  for (int r : members) flows.recv(tag + "/up", r, message_bytes(bytes));
  while (!flows.empty()) {
    auto [kind, peer] = flows.wait_any();
    if (kind != EventKind::recv) continue;
    for (int r : members) {  // store and forward: peer's payload, now whole, to the others
      if (r != peer) flows.send(tag + "/from-" + std::to_string(peer), r, message_bytes(bytes));
    }
  }
}

void ring_all_reduce_aggregated(int rank, const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                                const std::string& tag, double bytes, Recorder& recorder) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || bytes <= 0) return;
  const uint64_t chunks = static_cast<uint64_t>(2 * (k - 1));
  aggregated_ring(rank, members, hosts, tag, chunks * message_bytes(bytes / k), 2 * (k - 1) - 1, recorder);
}

void ring_all_gather_aggregated(int rank, const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                                const std::string& tag, double bytes, Recorder& recorder) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || bytes <= 0) return;
  aggregated_ring(rank, members, hosts, tag, static_cast<uint64_t>(k - 1) * message_bytes(bytes), k - 2, recorder);
}

void mesh_all_gather_aggregated(int rank, const std::vector<int>& members, const std::vector<sg4::Host*>& hosts,
                                const std::string& tag, double bytes, Recorder& recorder) {
  const int k = static_cast<int>(members.size());
  if (k < 2 || bytes <= 0) return;
  aggregated_ring(rank, members, hosts, tag, static_cast<uint64_t>(k - 1) * message_bytes(bytes), 0, recorder);
}

void relay_all_gather_aggregated(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                                 double bytes, Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  CollectiveEnd& end = end_of(tag, members.size() + 1);  // the workers and the relay
  Flows flows(rank, recorder);
  flows.send(tag + "/up", relay, message_bytes(bytes));
  flows.recv(tag + "/down", relay, (members.size() - 1) * message_bytes(bytes));
  flows.wait_all();
  meet(end, true, [] {});  // every upload is in: the last payloads may still have to come down
  std::vector<sg4::Link*> route;
  double latency_s = 0;
  end.relay->route_to(sg4::this_actor::get_host(), route, &latency_s);
  double bandwidth = 0;  // bytes/s of the route's narrowest link
  for (const sg4::Link* l : route) {
    bandwidth = bandwidth == 0 ? l->get_bandwidth() : std::min(bandwidth, l->get_bandwidth());
  }
  // The payloads that arrived at or after t cannot all be down before t + their bytes / bandwidth.
  const auto& arrivals = end.arrivals;
  const double payload_s = bandwidth > 0 ? static_cast<double>(message_bytes(bytes)) / bandwidth : 0;
  const double mine_s = end.arrived_s.at(static_cast<size_t>(rank));
  double last_down_s = 0;
  for (size_t i = arrivals.size() > kTailArrivals ? arrivals.size() - kTailArrivals : 0; i < arrivals.size(); ++i) {
    const double t = arrivals[i].first;
    const auto first_at_t = std::lower_bound(arrivals.begin(), arrivals.end(), std::pair<double, int>(t, -1));
    const auto later = static_cast<double>(arrivals.end() - first_at_t) - (mine_s >= t ? 1 : 0);
    last_down_s = std::max(last_down_s, t + later * payload_s + latency_s);
  }
  leave(end, tag);
  if (last_down_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(last_down_s);
}

void relay_all_gather_aggregated_serve(const std::vector<int>& members, int relay, const std::string& tag,
                                       double bytes, Recorder& recorder) {
  if (members.size() < 2 || bytes <= 0) return;
  CollectiveEnd& end = end_of(tag, members.size() + 1);  // the workers and the relay
  end.relay = sg4::this_actor::get_host();
  const uint64_t down_bytes = (members.size() - 1) * message_bytes(bytes);
  Flows uploads(relay, recorder);
  for (int r : members) uploads.recv(tag + "/up", r, message_bytes(bytes));
  // The downloads start with the first payload whole (the first uploader's with the second): what
  // the exact relay forwards from then on, in one flow per worker.
  const int first = uploads.wait_any().second;
  end.arrivals.emplace_back(sg4::Engine::get_clock(), first);
  Flows downloads(relay, recorder);
  for (int r : members) {
    if (r != first) downloads.send(tag + "/down", r, down_bytes);
  }
  downloads.start();
  end.arrivals.emplace_back(sg4::Engine::get_clock(), uploads.wait_any().second);
  Flows to_first(relay, recorder);
  to_first.send(tag + "/down", first, down_bytes);
  to_first.start();
  uploads.wait_each(&end.arrivals);
  std::sort(end.arrivals.begin(), end.arrivals.end());
  end.arrived_s.assign(static_cast<size_t>(members.back()) + 1, 0.0);  // members are in rank order
  for (const auto& [t, r] : end.arrivals) end.arrived_s[static_cast<size_t>(r)] = t;
  meet(end, false, [] {});  // its downloads are in flight: it lets the workers go, and waits for them
  leave(end, tag);
  downloads.wait_each();
  to_first.wait_each();
}

}  // namespace locosim
