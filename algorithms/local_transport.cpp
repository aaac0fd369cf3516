// run_local_workers: threads + a mutex-protected table of collectives in flight.
#include "algorithms/local_transport.hpp"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <utility>
#include <thread>

namespace locosim {
namespace {

struct Collective {
  std::vector<std::vector<torch::Tensor>> contributions;  // as sent (rounded or encoded)
  int members = 0;
  int arrived = 0;
  int readers_left = 0;
  std::vector<torch::Tensor> result;
};

struct Group {
  int world_size;
  std::mutex mutex;
  std::condition_variable changed;
  // By (group, call number): the whole group's (an empty group) by sequence number, a subgroup's by
  // its members' count of calls among it (they call its collectives in the same order).
  std::map<std::pair<std::vector<int>, uint64_t>, Collective> in_flight;
  // The parameter server: with no clock, a window holds a push from every worker still training.
  std::unique_ptr<ParameterServer> server;
  ServerWindow window;
};

class LocalTransport : public Transport {
 public:
  LocalTransport(Group& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return group_.world_size; }
  double now_s() const override { return 0; }
  void compute(double, const std::function<void()>& work) override { work(); }

  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override { return reduce({}, xs, w); }
  Pending all_reduce_mean_among(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) override {
    check_group(group, rank_, group_.world_size);
    return reduce(group, xs, w);
  }
  Pending all_gather(const std::vector<torch::Tensor>& mine, double,
                     std::vector<std::vector<torch::Tensor>>& out) override {
    return gather({}, mine, out);
  }
  Pending all_gather_among(const std::vector<int>& group, const std::vector<torch::Tensor>& mine, double,
                           std::vector<std::vector<torch::Tensor>>& out) override {
    check_group(group, rank_, group_.world_size);
    return gather(group, mine, out);
  }

  bool push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                 const ServerExchange& exchange) override {
    std::vector<torch::Tensor> copy;
    for (const auto& x : up) copy.push_back(x.detach().clone());
    std::unique_lock<std::mutex> lock(group_.mutex);
    if (!group_.server) group_.server = exchange.make_server();
    if (exchange.own_windows) {  // the server's windows, at time 0, every rank a member
      std::vector<int> ranks(static_cast<size_t>(group_.world_size));
      for (int r = 0; r < group_.world_size; ++r) ranks[static_cast<size_t>(r)] = r;
      group_.server->arrive(rank_, copy, 0, ranks);
      group_.changed.notify_all();
      if (!exchange.reply_at_once) group_.changed.wait(lock, [&] { return group_.server->merged(rank_); });
      down = group_.server->reply(rank_);
      return true;
    }
    const uint64_t mine = group_.window.closed();
    group_.window.add(rank_, std::move(copy));
    if (static_cast<int>(group_.window.size()) == group_.world_size - group_.window.stopped_count()) {
      group_.window.close(*group_.server, 0);
      group_.changed.notify_all();
    }
    group_.changed.wait(lock, [&] { return group_.window.closed() > mine; });
    down = group_.window.take_reply(rank_);
    return true;
  }

 private:
  using Key = std::pair<std::vector<int>, uint64_t>;

  Pending reduce(const std::vector<int>& group, std::vector<torch::Tensor>& xs, Wire w) {
    std::vector<torch::Tensor> mine;
    for (const auto& x : xs) mine.push_back(through_wire(x.detach(), w.format));
    const Key key = contribute(group, std::move(mine));
    return Pending([this, key, &xs, format = w.format] {
      collect(key, [&](Collective& c) {
        if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
        for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
      });
      return true;  // threads in one process: no member is ever lost
    });
  }

  Pending gather(const std::vector<int>& group, const std::vector<torch::Tensor>& mine,
                 std::vector<std::vector<torch::Tensor>>& out) {
    std::vector<torch::Tensor> copy;
    for (const auto& x : mine) copy.push_back(x.detach().clone());
    const Key key = contribute(group, std::move(copy));
    return Pending([this, key, &out] {
      collect(key, [&](Collective& c) { out = gathered_copy(c.contributions); });
      return true;
    });
  }

  // Deposits this rank's part of its next collective, among `group` (empty: every rank); returns its key.
  Key contribute(const std::vector<int>& group, std::vector<torch::Tensor> mine) {
    const Key key{group, calls_[group]++};
    {
      std::lock_guard<std::mutex> lock(group_.mutex);
      Collective& c = group_.in_flight[key];
      if (c.contributions.empty()) {
        c.contributions.resize(group_.world_size);
        c.members = group.empty() ? group_.world_size : static_cast<int>(group.size());
        c.readers_left = c.members;
      }
      c.contributions[rank_] = std::move(mine);
      ++c.arrived;
    }
    group_.changed.notify_all();
    return key;
  }

  // Waits until every member contributed to `key`, then lets `read` take its result, under the lock.
  void collect(const Key& key, const std::function<void(Collective&)>& read) {
    std::unique_lock<std::mutex> lock(group_.mutex);
    Collective& c = group_.in_flight[key];
    group_.changed.wait(lock, [&] { return c.arrived == c.members; });
    read(c);
    if (--c.readers_left == 0) group_.in_flight.erase(key);
  }

  Group& group_;
  int rank_;
  std::map<std::vector<int>, uint64_t> calls_;  // by group (empty: the whole group): calls made
};

}  // namespace

void run_local_workers(int world_size, const std::function<void(Transport&)>& body) {
  Group group;
  group.world_size = world_size;
  std::vector<std::exception_ptr> errors(world_size);
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      LocalTransport transport(group, r);
      try {
        body(transport);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace locosim
