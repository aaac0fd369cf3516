#include "sim/flows.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/simix.hpp>

#include <algorithm>
#include <cmath>

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

// SimGrid refuses null payloads: every message carries this token; receives land it in `sink`
// (actors run one at a time, so sharing one landing place is safe).
int token = 0;
int* sink = nullptr;

// The mailbox of the messages from `from` to `to` in one phase of one collective, remembered in
// `known` if given, for the rank the flows are for: `from` if it `sends`, else `to`. Messages on one
// mailbox match in order, so a sequence of rounds between the same pair needs no round number.
sg4::Mailbox* box(KnownMailboxes* known, const std::string& tag, int from, int to, bool sends) {
  auto by_name = [&] { return sg4::Mailbox::by_name(tag + "/" + std::to_string(from) + "-to-" + std::to_string(to)); };
  if (!known) return by_name();
  const int self = sends ? from : to, peer = sends ? to : from;
  if (sg4::Mailbox* kept = known->at(tag, self, peer, sends)) return kept;
  // by_name is a simcall: the actors sharing `known` (a relay's lanes) may look up others meanwhile.
  sg4::Mailbox* found = by_name();
  known->at(tag, self, peer, sends) = found;
  return found;
}

// Peer `peer`'s place in a table by rank, which grows to hold it.
sg4::Mailbox*& slot(std::vector<sg4::Mailbox*>& table, int peer) {
  const auto at = static_cast<size_t>(peer);
  if (table.size() <= at) table.resize(at + 1, nullptr);
  return table[at];
}

}  // namespace

simgrid::xbt::Extension<sg4::Actor, KnownMailboxes> KnownMailboxes::EXTENSION_ID =
    sg4::Actor::extension_create<KnownMailboxes>();

sg4::Mailbox*& KnownMailboxes::at(const std::string& tag, int self, int peer, bool sends) {
  if (!recent_[0] || recent_[0]->first != tag) {
    if (recent_[1] && recent_[1]->first == tag) {
      std::swap(recent_[0], recent_[1]);
    } else {
      recent_[1] = recent_[0];
      recent_[0] = &*by_tag_.try_emplace(tag, Tag{self, {}, {}, {}}).first;
    }
  }
  Tag& known = recent_[0]->second;
  if (self != known.self) {  // not one of this tag's (no collective does it): by the pair
    const int from = sends ? self : peer, to = sends ? peer : self;
    return known.others[static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32 | static_cast<uint32_t>(to)];
  }
  if (known.by_peer[0].empty() && known.by_peer[1].empty()) {
    for (Known& k : known.few) {
      if (k.peer == peer && k.sends == sends) return k.box;
    }
    if (known.few.size() < kFew) return known.few.emplace_back(Known{peer, sends, nullptr}).box;
    for (const Known& k : known.few) slot(known.by_peer[k.sends], k.peer) = k.box;  // past a few: into the tables
    known.few.clear();
  }
  return slot(known.by_peer[sends], peer);
}

KnownMailboxes& known_mailboxes() {
  sg4::Actor* self = sg4::Actor::self();
  KnownMailboxes* known = self->extension<KnownMailboxes>();
  if (!known) self->extension_set(known = new KnownMailboxes);
  return *known;
}

uint64_t message_bytes(double bytes) { return static_cast<uint64_t>(std::ceil(bytes)); }

Flows::Flows(int worker, Recorder& recorder, KnownMailboxes* known)
    : worker_(worker), recorder_(recorder), known_(known), start_s_(sg4::Engine::get_clock()) {
  comms_.reserve(kFew);
}

void Flows::send(const std::string& tag, int to, uint64_t bytes) {
  add(box(known_, tag, worker_, to, true)->put_init(&token, bytes), EventKind::send, to, bytes);
}

void Flows::recv(const std::string& tag, int from, uint64_t bytes) {
  add(box(known_, tag, from, worker_, false)->get_init()->set_dst_data(reinterpret_cast<void**>(&sink), sizeof sink),
      EventKind::recv, from, bytes);
}

std::pair<EventKind, int> Flows::wait_any() {
  start();
  const auto i = static_cast<size_t>(sg4::Comm::wait_any(comms_));
  const Meta done = meta_[i];
  record(done, sg4::Engine::get_clock());
  comms_.erase(comms_.begin() + static_cast<std::ptrdiff_t>(i));
  meta_.erase(meta_.begin() + static_cast<std::ptrdiff_t>(i));
  return {done.kind, done.peer};
}

void Flows::wait_each(std::vector<std::pair<double, int>>* finished) {
  start();
  for (const auto& comm : comms_) comm->wait();
  std::vector<size_t> order(comms_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return comms_[a]->get_finish_time() < comms_[b]->get_finish_time();
  });
  for (size_t i : order) {
    const Meta& done = meta_[i];
    record(done, comms_[i]->get_finish_time());
    if (finished) finished->emplace_back(comms_[i]->get_finish_time(), done.peer);
  }
  comms_.clear();
  meta_.clear();
}

Flows::Few<double> Flows::wait_in_order() {
  // A lone transfer not started yet starts in its wait, as a blocking put or get does: one scheduling
  // round where a start and a wait take two.
  if (comms_.size() == 1 && unstarted_.size() == 1) {
    unstarted_.clear();
  } else {
    start();
  }
  Few<double> ends;
  ends.reserve(comms_.size());
  for (size_t i = 0; i < comms_.size(); ++i) {
    comms_[i]->wait();
    const Meta& done = meta_[i];
    ends.push_back(sg4::Engine::get_clock());
    record(done, ends.back());
  }
  comms_.clear();
  meta_.clear();
  return ends;
}

void Flows::wait_last_first() {
  start();
  if (comms_.empty()) return;
  comms_.back()->wait();
  for (size_t i = 0; i + 1 < comms_.size(); ++i) comms_[i]->wait();  // ended: answered at once
  for (size_t i = 0; i < comms_.size(); ++i) record(meta_[i], comms_[i]->get_finish_time());
  comms_.clear();
  meta_.clear();
}

void Flows::start() {
  if (unstarted_.empty()) return;
  simgrid::kernel::actor::simcall_answered([this] {
    for (const sg4::CommPtr& comm : unstarted_) comm->vetoable_start();
  });
  unstarted_.clear();
}

void Flows::record(const Meta& done, double end_s) {
  recorder_.event({worker_, done.kind, start_s_, end_s, static_cast<double>(done.bytes), done.peer});
}

void Flows::add(sg4::CommPtr comm, EventKind kind, int peer, uint64_t bytes) {
  unstarted_.push_back(comm);
  comms_.push_back(std::move(comm));
  meta_.push_back({kind, peer, bytes});
}

}  // namespace locosim
