// C10dTransport: collectives on c10d, numerics shared with the simulator (mean_in_rank_order), and
// the group re-formed among the survivors when a member is lost (see the header for the protocol).
#include "real/c10d_transport.hpp"

#include "real/relay.hpp"
#include "real/store_format.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace locosim {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often a waiting member looks at the epoch's flag and the heartbeats.
constexpr milliseconds kPoll{50};

// One flat tensor of all xs (so one collective carries a policy's whole payload), in host memory:
// Gloo moves host buffers, and a GPU's tensors are staged there (scenario/device.hpp).
torch::Tensor flatten(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> flat;
  for (const auto& x : xs) flat.push_back(x.detach().reshape({-1}));
  return torch::cat(flat).to(torch::kCPU);
}

std::vector<torch::Tensor> unflatten(const torch::Tensor& flat, const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (const auto& x : like) {
    out.push_back(flat.slice(0, offset, offset + x.numel()).view(x.sizes()));
    offset += x.numel();
  }
  return out;
}

// The bytes of all xs, whatever their dtypes, in one uint8 tensor in host memory (one collective for
// a payload of mixed dtypes: DeMo's indices, values and scales), and back onto each x's device.
torch::Tensor pack_bytes(const std::vector<torch::Tensor>& xs) {
  std::vector<torch::Tensor> bytes;
  for (const auto& x : xs) bytes.push_back(x.detach().to(torch::kCPU).contiguous().reshape({-1}).view(torch::kUInt8));
  return bytes.empty() ? torch::empty({0}, torch::kUInt8) : torch::cat(bytes);
}

std::vector<torch::Tensor> unpack_bytes(const torch::Tensor& packed, const std::vector<torch::Tensor>& like) {
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (const auto& x : like) {
    const int64_t n = x.numel() * static_cast<int64_t>(x.element_size());
    out.push_back(packed.slice(0, offset, offset + n).clone().view(x.scalar_type()).view(x.sizes()).to(x.device()));
    offset += n;
  }
  return out;
}

torch::Dtype wire_dtype(WireFormat format) {
  switch (format) {
    case WireFormat::fp16: return torch::kFloat16;
    case WireFormat::bf16: return torch::kBFloat16;
    default: return torch::kFloat32;
  }
}

// An exception's message, without the backtrace c10 appends to its own.
std::string message(const std::exception& e, size_t limit) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return std::string(c10_error ? c10_error->what_without_backtrace() : e.what()).substr(0, limit);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

std::string ok_key(int epoch, int64_t seq, int rank) {
  return group_key(epoch, "ok/" + std::to_string(seq) + "/" + std::to_string(rank));
}

// The re-form failed for a reason of its own (not the store's): this rank was left out of the new
// group (rank 0 saw it silent, or it came too late), rank 0 did not decide in time, or the new
// group's rendezvous failed (a second loss during it).
struct GroupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

// A collective in flight: the epoch it started in and its number there.
struct C10dTransport::Flight {
  int epoch = 0;
  int64_t seq = 0;
  std::vector<int> members;                           // the epoch's members (index = rank in group)
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;   // kept alive while the works are
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
};

C10dTransport::C10dTransport(C10dJob job, ReduceMode mode, Recorder& recorder)
    : job_(std::move(job)), mode_(mode), recorder_(recorder), start_(Clock::now()) {
  std::vector<int> everyone(job_.world_size);
  for (int r = 0; r < job_.world_size; ++r) everyone[r] = r;
  if (!job_.joining) open_epoch(0, everyone);
}

C10dTransport::~C10dTransport() {
  // An earlier epoch's group may still hold works stuck on a lost peer until its timeout, and its
  // destructor would wait for them: those groups are left to the process's exit.
  for (auto& g : retired_) (void)g.release();
  release_server();
}

double C10dTransport::now_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void C10dTransport::compute(double, const std::function<void()>& work) {
  const double start = now_s();
  work();
  recorder_.event({rank(), EventKind::compute, start, now_s(), 0, -1});
}

void C10dTransport::open_epoch(int epoch, std::vector<int> members) {
  if (group_) retired_.push_back(group_);
  const auto me = std::find(members.begin(), members.end(), job_.rank);
  auto options = c10d::ProcessGroupGloo::Options::create(job_.timeout);
  options->devices.push_back(job_.device);
  auto store = c10::make_intrusive<c10d::PrefixStore>("epoch-" + std::to_string(epoch), job_.store);
  try {
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(me - members.begin()),
                                                         static_cast<int>(members.size()), options);
  } catch (const std::exception& e) {
    if (epoch == 0) {
      throw std::runtime_error("rank " + std::to_string(job_.rank) + ": the rendezvous of the " +
                               std::to_string(members.size()) + " ranks failed (one did not come within the timeout, " +
                               std::to_string(job_.timeout.count() / 1000) + " s): " + message(e, 300));
    }
    throw GroupError("re-forming the group (epoch " + std::to_string(epoch) + ") among ranks " +
                     rank_list(members) + " failed: " + message(e, 300));
  }
  epoch_ = epoch;
  members_ = std::move(members);
  next_seq_ = 0;
  if (job_.rank == 0) {
    std::vector<int64_t> current = {epoch_};
    current.insert(current.end(), members_.begin(), members_.end());
    job_.store->set("group/current", to_bytes<int64_t>(current));
    if (epoch_ == 0) job_.store->set("job/started", {1});
  }
}

std::shared_ptr<C10dTransport::Flight> C10dTransport::start(std::vector<c10::intrusive_ptr<c10d::Work>> works) {
  auto f = std::make_shared<Flight>();
  f->epoch = epoch_;
  f->seq = next_seq_++;
  f->members = members_;
  f->group = group_;
  f->works = std::move(works);
  return f;
}

// A call that other members made in the previous epoch before it was re-formed: it failed there.
std::shared_ptr<C10dTransport::Flight> C10dTransport::skipped() {
  --fail_next_;
  auto f = std::make_shared<Flight>();
  f->epoch = epoch_ - 1;
  f->members = members_;
  return f;
}

bool C10dTransport::epoch_flagged(int epoch) { return job_.store->check({group_key(epoch, "reform")}); }

bool C10dTransport::member_silent() const {
  if (!job_.heartbeat) return false;
  for (int r : members_) {
    if (job_.heartbeat->silent(r, job_.watch)) return true;
  }
  return false;
}

bool C10dTransport::settle(Flight& f, double sent_bytes, double recv_bytes) {
  const double start = now_s();
  bool committed = false;
  try {
    if (f.epoch != epoch_) {
      committed = false;  // started in an epoch since re-formed, which decided it failed
    } else if (!wait_works(f)) {
      committed = reform(f.seq);
    } else {
      committed = barrier(f) == Barrier::committed || reform(f.seq);
    }
  } catch (const GroupError&) {
    throw;
  } catch (const std::exception& e) {
    // The agreement and the re-form go through the store: without it (rank 0, its host, lost) the
    // run cannot go on.
    throw std::runtime_error("the job's store, hosted by rank 0, failed (a lost rank 0 ends the run): " +
                             message(e, 400));
  }
  const double end = now_s();
  recorder_.event({rank(), EventKind::wait, start, end, 0, -1});
  // The backend does not report per-peer flows: the traffic is recorded once, against no peer.
  recorder_.event({rank(), EventKind::send, start, end, sent_bytes, -1});
  recorder_.event({rank(), EventKind::recv, start, end, recv_bytes, -1});
  return committed;
}

// Whether every work completed here; false as soon as one failed (a lost peer, a timeout), the
// epoch was flagged by another member, or a member fell silent. Flags the epoch when it fails.
bool C10dTransport::wait_works(const Flight& f) {
  for (const auto& work : f.works) {
    while (true) {
      try {
        work->wait(kPoll);
        break;
      } catch (...) {
        if (work->isCompleted()) {  // not the poll's timeout: completed since, or Gloo's own failure
          if (work->isSuccess()) break;
          job_.store->set(group_key(f.epoch, "reform"), {1});
          return false;
        }
      }
      if (epoch_flagged(f.epoch) || member_silent()) {
        job_.store->set(group_key(f.epoch, "reform"), {1});
        return false;
      }
    }
  }
  return true;
}

// Reports the flight completed here and waits until every member of the epoch has (committed), or
// until the epoch is flagged or a member falls silent first (failed: the re-form decides).
C10dTransport::Barrier C10dTransport::barrier(const Flight& f) {
  job_.store->set(ok_key(f.epoch, f.seq, job_.rank), {1});
  std::vector<std::string> all;
  for (int r : f.members) all.push_back(ok_key(f.epoch, f.seq, r));
  auto pause = std::chrono::microseconds(100);
  auto next_look = Clock::now() + kPoll;
  // Every member reported `seq`, so every member is past its agreement on seq - 1: this rank's
  // report of seq - 1 is read by no one any more (the store holds K keys per epoch, not per collective).
  auto committed = [&] {
    if (f.seq > 0) job_.store->deleteKey(ok_key(f.epoch, f.seq - 1, job_.rank));
    return Barrier::committed;
  };
  while (true) {
    if (job_.store->check(all)) return committed();
    if (Clock::now() >= next_look) {
      if (epoch_flagged(f.epoch) || member_silent()) {
        if (job_.store->check(all)) return committed();  // complete before the flag: committed
        job_.store->set(group_key(f.epoch, "reform"), {1});
        return Barrier::failed;
      }
      next_look = Clock::now() + kPoll;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
}

// Re-forms the group after collective `seq` of this epoch failed here; returns whether `seq`
// committed after all (every member reported completing it). Rank 0 decides; the others read.
bool C10dTransport::reform(int64_t seq) {
  const int epoch = epoch_;
  const double noticed_s = now_s();
  auto& store = *job_.store;
  store.set(group_key(epoch, "reform"), {1});
  store.set(group_key(epoch, "ready/" + std::to_string(job_.rank)), to_bytes<int64_t>({seq, next_seq_}));
  std::vector<int64_t> next;
  if (job_.rank == 0) {
    // Wait until every member has entered the re-form or fallen silent: the silent are lost; a
    // member neither silent nor here after the timeout is left out too (it learns so if it comes).
    const auto deadline = Clock::now() + job_.timeout;
    std::vector<bool> ready(job_.world_size, false);
    ready[0] = true;
    while (true) {
      bool settled = true;
      for (int r : members_) {
        if (ready[r]) continue;
        if (store.check({group_key(epoch, "ready/" + std::to_string(r))})) {
          ready[r] = true;
        } else if (!job_.heartbeat || !job_.heartbeat->silent(r, job_.watch)) {
          settled = false;
        }
      }
      if (settled || Clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<int> survivors;
    int64_t low = seq, high = seq, started = next_seq_;
    for (int r : members_) {
      if (!ready[r]) continue;
      survivors.push_back(r);
      const auto at = from_bytes<int64_t>(store.get(group_key(epoch, "ready/" + std::to_string(r))));
      low = std::min(low, at.at(0));
      high = std::max(high, at.at(0));
      started = std::max(started, at.at(1));
    }
    // The survivors wait on collectives low..high (high = low + 1 at most: passing one's agreement
    // needs every member's report); each committed iff every member of the epoch reported it.
    next.push_back(static_cast<int64_t>(survivors.size()));
    for (int r : survivors) next.push_back(r);
    next.push_back(low);
    next.push_back(high);
    for (int64_t s = low; s <= high; ++s) {
      std::vector<std::string> all;
      for (int r : members_) all.push_back(ok_key(epoch, s, r));
      next.push_back(store.check(all) ? 1 : 0);
    }
    next.push_back(started);
    store.set(group_key(epoch, "next"), to_bytes<int64_t>(next));
  } else {
    const auto deadline = Clock::now() + 2 * job_.timeout + job_.watch;
    while (!store.check({group_key(epoch, "next")})) {
      if (Clock::now() > deadline) {
        throw GroupError("rank 0 did not re-form the group (epoch " + std::to_string(epoch + 1) + ") in time");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    next = from_bytes<int64_t>(store.get(group_key(epoch, "next")));
  }
  size_t i = 0;
  const int64_t n = next.at(i++);
  std::vector<int> survivors;
  for (int64_t k = 0; k < n; ++k) survivors.push_back(static_cast<int>(next.at(i++)));
  const int64_t low = next.at(i++), high = next.at(i++);
  bool committed = false;
  for (int64_t s = low; s <= high; ++s) {
    if (s == seq) committed = next.at(i) != 0;
    ++i;
  }
  const int64_t started = next.at(i++);
  if (std::find(survivors.begin(), survivors.end(), job_.rank) == survivors.end()) {
    throw GroupError("rank " + std::to_string(job_.rank) + " was left out of the re-formed group (epoch " +
                  std::to_string(epoch + 1) + ": ranks " + rank_list(survivors) +
                  "): rank 0 saw its heartbeat stop, or it came too late");
  }
  for (int r : members_) {
    if (std::find(survivors.begin(), survivors.end(), r) == survivors.end()) lost_.push_back({r, noticed_s});
  }
  // Calls this rank has not made yet but other survivors started in this epoch: they failed there.
  fail_next_ = started - next_seq_;
  open_epoch(epoch + 1, std::move(survivors));
  return committed;
}

Pending C10dTransport::all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) {
  if (fail_next_ > 0) {
    auto f = skipped();
    return Pending([this, f] { return settle(*f, 0, 0); });
  }
  const int n = static_cast<int>(members_.size());
  const double payload_bytes = wire_bytes(xs, w.format) * w.scale;
  if (mode_ == ReduceMode::native) {
    std::vector<at::Tensor> buffer = {flatten(xs).to(wire_dtype(w.format))};
    auto f = start({group_->allreduce(buffer)});
    const double ring_bytes = 2.0 * (n - 1) / n * payload_bytes;
    return Pending([this, f, buffer, &xs, ring_bytes] {
      if (!settle(*f, ring_bytes, ring_bytes)) return false;  // results untouched
      // The mean over the members of the epoch the collective ran in.
      torch::Tensor mean = buffer[0].to(torch::kFloat32).div_(static_cast<double>(f->members.size()));
      auto parts = unflatten(mean, xs);
      for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(parts[i]);
      return true;
    });
  }
  std::vector<torch::Tensor> rounded;
  for (const auto& x : xs) rounded.push_back(through_wire(x.detach(), w.format));
  std::vector<at::Tensor> mine = {flatten(rounded)};
  std::vector<std::vector<at::Tensor>> all(1);
  for (int i = 0; i < n; ++i) all[0].push_back(torch::empty_like(mine[0]));
  auto f = start({group_->allgather(all, mine)});
  const double gather_bytes = (n - 1) * payload_bytes;
  return Pending([this, f, all, &xs, format = w.format, gather_bytes] {
    if (!settle(*f, gather_bytes, gather_bytes)) return false;  // results untouched
    // Each member's contribution at its original rank; the lost ranks' stay empty (skipped), as on
    // the simulator for the same membership.
    std::vector<std::vector<torch::Tensor>> contributions(world_size());
    for (size_t i = 0; i < f->members.size(); ++i) contributions[f->members[i]] = unflatten(all[0][i], xs);
    auto mean = mean_in_rank_order(contributions, format);
    for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(mean[i]);
    return true;
  });
}

Pending C10dTransport::all_gather(const std::vector<torch::Tensor>& mine, double bytes,
                                  std::vector<std::vector<torch::Tensor>>& out) {
  return gather(mine, bytes, out, 2);
}

Pending C10dTransport::all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) {
  check_group(group, rank(), world_size());
  std::vector<torch::Tensor> rounded;
  for (const auto& x : xs) rounded.push_back(through_wire(x.detach(), w.format));
  auto all = std::make_shared<std::vector<std::vector<torch::Tensor>>>();
  auto gathered = std::make_shared<Pending>(gather(rounded, wire_bytes(xs, w.format) * w.scale, *all, 2));
  return Pending([gathered, all, group, &xs, format = w.format] {
    if (!gathered->wait()) return false;  // results untouched
    std::vector<std::vector<torch::Tensor>> contributions(all->size());
    for (int r : group) contributions[r] = std::move((*all)[r]);  // a lost member's stays empty
    auto mean = mean_in_rank_order(contributions, format);
    for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(mean[i]);
    return true;
  });
}

Pending C10dTransport::all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine,
                                        double bytes, std::vector<std::vector<torch::Tensor>>& out) {
  check_group(group, rank(), world_size());
  auto all = std::make_shared<std::vector<std::vector<torch::Tensor>>>();
  auto gathered = std::make_shared<Pending>(gather(mine, bytes, *all, 2));
  return Pending([gathered, all, group, &out] {
    const bool completed = gathered->wait();  // on failure, what arrived from the members alive
    out.assign(all->size(), {});
    for (int r : group) out[r] = std::move((*all)[r]);
    return completed;
  });
}

Pending C10dTransport::gather(const std::vector<torch::Tensor>& mine, double bytes,
                              std::vector<std::vector<torch::Tensor>>& out, int salvages_left) {
  std::vector<torch::Tensor> copy;  // taken now, for a salvage after a failure
  for (const auto& x : mine) copy.push_back(x.detach().clone());
  if (job_.relay) return relay_gather(copy, bytes, out);
  std::shared_ptr<Flight> f;
  // One c10d all-gather of the payload's bytes (as the simulator moves one collective of `bytes`).
  auto gathered = std::make_shared<std::vector<std::vector<at::Tensor>>>(1);
  if (fail_next_ > 0) {
    f = skipped();
  } else {
    const int n = static_cast<int>(members_.size());
    std::vector<at::Tensor> input = {pack_bytes(copy)};
    for (int i = 0; i < n; ++i) (*gathered)[0].push_back(torch::empty_like(input[0]));
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    // Gloo divides by the element count: an empty payload (the same on every rank) stays local.
    if (input[0].numel() > 0) works.push_back(group_->allgather(*gathered, input));
    f = start(std::move(works));
  }
  return Pending([this, f, gathered, copy, &out, bytes, salvages_left] {
    const double traffic = (static_cast<double>(f->members.size()) - 1) * bytes;
    if (settle(*f, f->works.empty() ? 0 : traffic, f->works.empty() ? 0 : traffic)) {
      out.assign(world_size(), {});
      for (size_t i = 0; i < f->members.size(); ++i) {
        out[f->members[i]] = f->works.empty() ? gathered_copy({copy})[0] : unpack_bytes((*gathered)[0][i], copy);
      }
      return true;
    }
    // Failed: what arrives is the contributions of the members still in the group, gathered again
    // among them (every survivor does the same, so the gathers line up).
    if (salvages_left > 0) {
      (void)gather(copy, bytes, out, salvages_left - 1).wait();
    } else {
      out.assign(world_size(), {});
      for (const auto& x : copy) out[rank()].push_back(x.clone());
    }
    return false;
  });
}

// Through the relay: this rank uploads its payload once and downloads the others' (as the simulator's
// relay all-gather). A failure (a rank or the relay gone) fails the run: the relay serves static groups.
Pending C10dTransport::relay_gather(const std::vector<torch::Tensor>& copy, double bytes,
                                    std::vector<std::vector<torch::Tensor>>& out) {
  const double start = now_s();
  const torch::Tensor packed = pack_bytes(copy);
  const auto* data = packed.data_ptr<uint8_t>();
  std::vector<std::vector<uint8_t>> others = job_.relay->all_gather(std::vector<uint8_t>(data, data + packed.numel()));
  const double end = now_s();
  out.assign(world_size(), {});
  for (int r = 0; r < world_size(); ++r) {
    if (r == rank()) {
      out[r] = copy;  // taken for this call: nothing else holds it
      continue;
    }
    if (static_cast<int64_t>(others[r].size()) != packed.numel()) {
      throw std::runtime_error("relay: rank " + std::to_string(r) + " sent " + std::to_string(others[r].size()) +
                               " bytes where this rank sent " + std::to_string(packed.numel()));
    }
    out[r] = unpack_bytes(torch::from_blob(others[r].data(), {packed.numel()}, torch::kUInt8), copy);
  }
  recorder_.event({rank(), EventKind::wait, start, end, 0, -1});
  recorder_.event({rank(), EventKind::send, start, end, bytes, world_size()});  // the relay is peer K
  recorder_.event({rank(), EventKind::recv, start, end, (world_size() - 1) * bytes, world_size()});
  return Pending();
}

}  // namespace locosim
