// run_local_workers: threads + a mutex-protected table of collectives in flight.
#include "algorithms/local_transport.hpp"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace locosim {
namespace {

struct Collective {
  std::vector<std::vector<torch::Tensor>> contributions;  // as sent (rounded or encoded)
  int arrived = 0;
  int readers_left = 0;
  std::vector<torch::Tensor> result;
};

struct Group {
  int world_size;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<uint64_t, Collective> in_flight;  // by sequence number: every rank calls in the same order
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

  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override {
    std::vector<torch::Tensor> mine;
    for (const auto& x : xs) mine.push_back(through_wire(x.detach(), w.format));
    uint64_t seq = contribute(std::move(mine));
    return Pending([this, seq, &xs, format = w.format] {
      collect(seq, [&](Collective& c) {
        if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
        for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
      });
      return true;  // threads in one process: no member is ever lost
    });
  }

  Pending all_gather(const std::vector<torch::Tensor>& mine, double,
                     std::vector<std::vector<torch::Tensor>>& out) override {
    std::vector<torch::Tensor> copy;
    for (const auto& x : mine) copy.push_back(x.detach().clone());
    uint64_t seq = contribute(std::move(copy));
    return Pending([this, seq, &out] {
      collect(seq, [&](Collective& c) {
        out = gathered_copy(c.contributions);
      });
      return true;
    });
  }

  bool push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                 const ServerExchange& exchange) override {
    std::vector<torch::Tensor> copy;
    for (const auto& x : up) copy.push_back(x.detach().clone());
    std::unique_lock<std::mutex> lock(group_.mutex);
    if (!group_.server) group_.server = exchange.make_server();
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
  // Deposits this rank's part of the next collective; returns its sequence number.
  uint64_t contribute(std::vector<torch::Tensor> mine) {
    uint64_t seq = next_seq_++;
    {
      std::lock_guard<std::mutex> lock(group_.mutex);
      Collective& c = group_.in_flight[seq];
      if (c.contributions.empty()) {
        c.contributions.resize(group_.world_size);
        c.readers_left = group_.world_size;
      }
      c.contributions[rank_] = std::move(mine);
      ++c.arrived;
    }
    group_.changed.notify_all();
    return seq;
  }

  // Waits until every rank contributed to `seq`, then lets `read` take its result, under the lock.
  void collect(uint64_t seq, const std::function<void(Collective&)>& read) {
    std::unique_lock<std::mutex> lock(group_.mutex);
    Collective& c = group_.in_flight[seq];
    group_.changed.wait(lock, [&] { return c.arrived == group_.world_size; });
    read(c);
    if (--c.readers_left == 0) group_.in_flight.erase(seq);
  }

  Group& group_;
  int rank_;
  uint64_t next_seq_ = 0;
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
