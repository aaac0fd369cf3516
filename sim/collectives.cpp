// The collectives' flows over SimGrid mailboxes: ring, relay and hierarchical all-reduce; mesh, ring
// and relay all-gather. Mailboxes carry no data here, only each message's simulated size.
#include "sim/collectives.hpp"

#include <boost/container/small_vector.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/simix.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

// SimGrid refuses null payloads: every message carries this token; receives land it in `sink`
// (actors run one at a time, so sharing one landing place is safe).
int token = 0;
int* sink = nullptr;

// The mailboxes an actor has looked up, by tag, then by (from, to). `Mailbox::by_name` is a simcall, a
// scheduling round for the actor that makes it, and a collective's sides look up the same mailboxes
// collective after collective (SimTransport reuses a finished collective's tag). Kept with the actor,
// so it never outlives the engine its mailboxes belong to; an actor's helpers that end before it (the
// relay's lanes) may use its own. A side asks for one tag many times in a row (a relay's lane, for
// each of its members), so the last tag's pairs are kept at hand: a hit builds and hashes no name.
struct KnownMailboxes {
  static simgrid::xbt::Extension<sg4::Actor, KnownMailboxes> EXTENSION_ID;
  using Pairs = std::unordered_map<uint64_t, sg4::Mailbox*>;  // by (from << 32 | to)
  std::unordered_map<std::string, Pairs> by_tag;
  std::pair<const std::string, Pairs>* last = nullptr;  // the entry asked for last (entries never move)

  Pairs& of(const std::string& tag) {
    if (!last || last->first != tag) last = &*by_tag.try_emplace(tag).first;
    return last->second;
  }
};
simgrid::xbt::Extension<sg4::Actor, KnownMailboxes> KnownMailboxes::EXTENSION_ID =
    sg4::Actor::extension_create<KnownMailboxes>();

// The calling actor's.
KnownMailboxes& known_mailboxes() {
  sg4::Actor* self = sg4::Actor::self();
  KnownMailboxes* known = self->extension<KnownMailboxes>();
  if (!known) self->extension_set(known = new KnownMailboxes);
  return *known;
}

// The mailbox of the messages from `from` to `to` in one phase of one collective, remembered in
// `known` if given. Messages on one mailbox match in order, so a sequence of rounds between the same
// pair needs no round number.
sg4::Mailbox* box(KnownMailboxes* known, const std::string& tag, int from, int to) {
  auto by_name = [&] { return sg4::Mailbox::by_name(tag + "/" + std::to_string(from) + "-to-" + std::to_string(to)); };
  if (!known) return by_name();
  const uint64_t pair = static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32 | static_cast<uint32_t>(to);
  auto [it, added] = known->of(tag).try_emplace(pair, nullptr);
  if (added) it->second = by_name();
  return it->second;
}

uint64_t message_bytes(double bytes) { return static_cast<uint64_t>(std::ceil(bytes)); }

// Transfers in flight on one side, each recorded as an event from `start_s` to its own end. The
// transfers added since the last wait start together, in one simcall, at the next wait or start() (no
// simulated time passes in between): a side that posts k transfers costs one scheduling round, not k.
// Their mailboxes are remembered in `known` (null: looked up each time, for tags never used again).
class Flows {
 public:
  Flows(int worker, Recorder& recorder, KnownMailboxes* known = &known_mailboxes())
      : worker_(worker), recorder_(recorder), known_(known), start_s_(sg4::Engine::get_clock()) {
    comms_.reserve(kFew);
  }

  void send(const std::string& tag, int to, uint64_t bytes) {
    add(box(known_, tag, worker_, to)->put_init(&token, bytes), EventKind::send, to, bytes);
  }
  void recv(const std::string& tag, int from, uint64_t bytes) {
    add(box(known_, tag, from, worker_)->get_init()->set_dst_data(reinterpret_cast<void**>(&sink), sizeof sink),
        EventKind::recv, from, bytes);
  }
  // Waits for the next transfer to finish, records it and returns it as (kind, peer).
  std::pair<EventKind, int> wait_any() {
    start();
    const auto i = static_cast<size_t>(sg4::Comm::wait_any(comms_));
    const Meta done = meta_[i];
    recorder_.event({worker_, done.kind, start_s_, sg4::Engine::get_clock(), static_cast<double>(done.bytes), done.peer});
    comms_.erase(comms_.begin() + static_cast<std::ptrdiff_t>(i));
    meta_.erase(meta_.begin() + static_cast<std::ptrdiff_t>(i));
    return {done.kind, done.peer};
  }
  void wait_all() {
    while (!comms_.empty()) wait_any();
  }
  // The same records as wait_all, in O(n) instead of O(n²) (each wait_any looks at every transfer
  // left): waits for the transfers in the order they were added, then records them in the order they
  // finished (ties in the order added). A failure is seen only when its transfer's turn comes: for a
  // relay's many transfers, whose peers (one or two transfers each) see it at once.
  // `finished`, if given, gets each transfer's (end time, peer).
  void wait_each(std::vector<std::pair<double, int>>* finished = nullptr) {
    start();
    for (const auto& comm : comms_) comm->wait();
    std::vector<size_t> order(comms_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return comms_[a]->get_finish_time() < comms_[b]->get_finish_time();
    });
    for (size_t i : order) {
      const Meta& done = meta_[i];
      recorder_.event({worker_, done.kind, start_s_, comms_[i]->get_finish_time(), static_cast<double>(done.bytes),
                       done.peer});
      if (finished) finished->emplace_back(comms_[i]->get_finish_time(), done.peer);
    }
    comms_.clear();
    meta_.clear();
  }
  // Waits for the transfers one after the other in the order they were added, and records each when
  // its wait returns: one that finished before the one ahead of it is recorded as ending with it.
  // Returns the recorded ends, in that order.
  std::vector<double> wait_in_order() {
    start();
    std::vector<double> ends;
    ends.reserve(comms_.size());
    for (size_t i = 0; i < comms_.size(); ++i) {
      comms_[i]->wait();
      const Meta& done = meta_[i];
      ends.push_back(sg4::Engine::get_clock());
      recorder_.event({worker_, done.kind, start_s_, ends.back(), static_cast<double>(done.bytes), done.peer});
    }
    comms_.clear();
    meta_.clear();
    return ends;
  }
  bool empty() const { return comms_.empty(); }
  // Starts the transfers added since the last wait, in the order they were added: for transfers that
  // must run while the actor waits on others.
  void start() {
    if (unstarted_.empty()) return;
    simgrid::kernel::actor::simcall_answered([this] {
      for (const sg4::CommPtr& comm : unstarted_) comm->vetoable_start();
    });
    unstarted_.clear();
  }

 private:
  struct Meta {
    EventKind kind;
    int peer;
    uint64_t bytes;
  };
  void add(sg4::CommPtr comm, EventKind kind, int peer, uint64_t bytes) {
    unstarted_.push_back(comm);
    comms_.push_back(std::move(comm));
    meta_.push_back({kind, peer, bytes});
  }

  // Most sides move one or two messages a collective (a send and a receive): room for them without
  // growing, where each of a vector's first doublings is an allocation.
  static constexpr size_t kFew = 2;
  template <class T>
  using Few = boost::container::small_vector<T, kFew>;

  int worker_;
  Recorder& recorder_;
  KnownMailboxes* known_;
  double start_s_;
  std::vector<sg4::CommPtr> comms_;  // a std::vector: Comm::wait_any takes one
  Few<Meta> meta_;
  Few<sg4::CommPtr> unstarted_;
};

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
  Flows flows(rank, recorder);
  flows.send(tag + "/up", relay, message_bytes(bytes));
  flows.recv(tag + "/down", relay, message_bytes(bytes));
  flows.wait_in_order();  // the mean comes down only once every upload is in
}

void relay_all_reduce_serve(const std::vector<int>& members, int relay, const std::string& tag, double bytes,
                            Recorder& recorder, size_t lanes) {
  if (members.size() < 2 || bytes <= 0) return;
  lanes = std::max<size_t>(1, std::min(lanes, members.size()));
  const sg4::BarrierPtr all_uploaded = lanes > 1 ? sg4::Barrier::create(static_cast<unsigned>(lanes)) : nullptr;
  KnownMailboxes& known = known_mailboxes();  // this actor's, for every lane: it outlives them
  const std::string up = tag + "/up", down = tag + "/down";
  auto serve_lane = [&members, relay, &up, &down, bytes, &recorder, lanes, all_uploaded, &known](size_t lane) {
    Flows uploads(relay, recorder, &known);
    for (size_t i = lane; i < members.size(); i += lanes) uploads.recv(up, members[i], message_bytes(bytes));
    uploads.wait_each();  // the mean needs every contribution
    if (all_uploaded) all_uploaded->wait();
    Flows downloads(relay, recorder, &known);
    for (size_t i = lane; i < members.size(); i += lanes) downloads.send(down, members[i], message_bytes(bytes));
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
    Flows flows(rank, recorder);
    flows.send(tag + "/site-up", leader, size);
    flows.recv(tag + "/site-down", leader, size);
    flows.wait_in_order();  // the result comes down only once the leader has every upload
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
