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
  std::vector<std::vector<torch::Tensor>> contributions;
  int arrived = 0;
  int readers_left = 0;
  std::vector<torch::Tensor> result;
};

struct Group {
  int world_size;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<uint64_t, Collective> in_flight;  // by sequence number: every rank calls in the same order
};

class LocalTransport : public Transport {
 public:
  LocalTransport(Group& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return group_.world_size; }
  double now_s() const override { return 0; }
  void compute(double, const std::function<void()>& work) override { work(); }

  Pending all_reduce_mean(std::vector<torch::Tensor>& xs, Wire w) override {
    uint64_t seq = next_seq_++;
    std::vector<torch::Tensor> mine;
    for (const auto& x : xs) mine.push_back(through_wire(x.detach(), w.format));
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
    return Pending([this, seq, &xs, format = w.format] {
      std::unique_lock<std::mutex> lock(group_.mutex);
      Collective& c = group_.in_flight[seq];
      group_.changed.wait(lock, [&] { return c.arrived == group_.world_size; });
      if (c.result.empty()) c.result = mean_in_rank_order(c.contributions, format);
      for (size_t i = 0; i < xs.size(); ++i) xs[i].detach().copy_(c.result[i]);
      if (--c.readers_left == 0) group_.in_flight.erase(seq);
    });
  }

 private:
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
