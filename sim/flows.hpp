// The transfers under the collectives (sim/collectives.cpp): one side's messages over SimGrid
// mailboxes, started together and recorded as events, and the mailboxes each actor has looked up.
// Mailboxes carry no data, only each message's simulated size. Internal to sim/.
//
//   Flows flows(rank, recorder);
//   flows.send(tag, right, bytes);
//   flows.recv(tag, left, bytes);
//   flows.wait_all();  // both started in one simcall, each recorded when it ends
#pragma once

#include <boost/container/small_vector.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "algorithms/recorder.hpp"

namespace locosim {

// The mailboxes an actor has looked up. `Mailbox::by_name` is a simcall, a scheduling round for the
// actor that makes it, and a collective's sides look up the same mailboxes collective after collective
// (SimTransport reuses a finished collective's tag). Kept with the actor, so it never outlives the
// engine its mailboxes belong to; an actor's helpers that end before it (the relay's lanes) may use
// its own. Each transfer has the rank the actor moves messages for (Flows' worker) at one end, so a
// tag's mailboxes are known by the other end: the first few in the order asked for (a member's one or
// two), then in a table by rank (a relay's lanes ask for every member's, in rank order, every
// collective). The last two tags asked for are at hand (a member asks for its upload's, then its
// result's): a hit builds and hashes no name, and a swarm's member, whose state is cold each time it
// runs, fetches a few cache lines where a hash table's buckets and nodes took twice as many.
class KnownMailboxes {
 public:
  static simgrid::xbt::Extension<simgrid::s4u::Actor, KnownMailboxes> EXTENSION_ID;

  // Where the mailbox of `tag`'s messages between `self` and `peer` (sent by `self` if `sends`) is
  // kept: null until the caller sets it. Valid until the next call: not across a simcall, where the
  // actors sharing it (a relay's lanes) may call it.
  simgrid::s4u::Mailbox*& at(const std::string& tag, int self, int peer, bool sends);

 private:
  static constexpr size_t kFew = 4;
  struct Known {
    int peer;
    bool sends;
    simgrid::s4u::Mailbox* box;
  };
  struct Tag {
    int self;
    boost::container::small_vector<Known, kFew> few;       // until there are more than kFew
    std::vector<simgrid::s4u::Mailbox*> by_peer[2];         // then: [sends][peer]
    std::unordered_map<uint64_t, simgrid::s4u::Mailbox*> others;  // (from << 32 | to), another self's
  };
  using Entry = std::pair<const std::string, Tag>;
  std::unordered_map<std::string, Tag> by_tag_;
  Entry* recent_[2] = {nullptr, nullptr};  // the tags asked for last (a map's entries never move)
};

// The calling actor's.
KnownMailboxes& known_mailboxes();

// A message's whole bytes.
uint64_t message_bytes(double bytes);

// Transfers in flight on one side, each recorded as an event from `start_s` to its own end. The
// transfers added since the last wait start together, in one simcall, at the next wait or start() (no
// simulated time passes in between): a side that posts k transfers costs one scheduling round, not k.
// Their mailboxes are remembered in `known` (null: looked up each time, for tags never used again).
class Flows {
 public:
  // Most sides move one or two messages a collective (a send and a receive): room for them without
  // growing, where each of a vector's first doublings is an allocation.
  static constexpr size_t kFew = 2;
  template <class T>
  using Few = boost::container::small_vector<T, kFew>;

  Flows(int worker, Recorder& recorder, KnownMailboxes* known = &known_mailboxes());

  void send(const std::string& tag, int to, uint64_t bytes);
  void recv(const std::string& tag, int from, uint64_t bytes);
  // Waits for the next transfer to finish, records it and returns it as (kind, peer).
  std::pair<EventKind, int> wait_any();
  void wait_all() {
    while (!comms_.empty()) wait_any();
  }
  // The same records as wait_all, in O(n) instead of O(n²) (each wait_any looks at every transfer
  // left): waits for the transfers in the order they were added, then records them in the order they
  // finished (ties in the order added). A failure is seen only when its transfer's turn comes: for a
  // relay's many transfers, whose peers (one or two transfers each) see it at once.
  // `finished`, if given, gets each transfer's (end time, peer).
  void wait_each(std::vector<std::pair<double, int>>* finished = nullptr);
  // Waits for the transfers one after the other in the order they were added, and records each when
  // its wait returns: one that finished before the one ahead of it is recorded as ending with it.
  // Returns the recorded ends, in that order.
  Few<double> wait_in_order();
  // Starts the transfers added since the last wait and waits for the last one added, then for the
  // others, which have ended by then where the last can only end after them (a relay member's upload,
  // its result's); records each in the order added, with its own end. The actor is woken once in
  // simulated time, where waiting in order woke it at each transfer's end (each wake a scheduling round
  // on cold state); the others' waits, answered at once, are still a scheduling round each.
  void wait_last_first();
  bool empty() const { return comms_.empty(); }
  // Starts the transfers added since the last wait, in the order they were added: for transfers that
  // must run while the actor waits on others.
  void start();

 private:
  struct Meta {
    EventKind kind;
    int peer;
    uint64_t bytes;
  };
  void add(simgrid::s4u::CommPtr comm, EventKind kind, int peer, uint64_t bytes);
  // Records transfer `done` as an event from the side's start to `end_s`.
  void record(const Meta& done, double end_s);

  int worker_;
  Recorder& recorder_;
  KnownMailboxes* known_;
  double start_s_;
  std::vector<simgrid::s4u::CommPtr> comms_;  // a std::vector: Comm::wait_any takes one
  Few<Meta> meta_;
  Few<simgrid::s4u::CommPtr> unstarted_;
};

}  // namespace locosim
