// StepPool: threads that run the workers' real LibTorch steps while the simulation goes on.
//
// SimGrid runs every actor in one thread. A worker's real step (forward, backward, its policy's own
// work) takes no simulated time and touches only that worker's state, so SimTransport::compute hands
// it to the pool, lets the simulated compute run, and waits for the step when the compute ends:
// workers that compute at the same simulated moment train at once, one per thread. Results do not
// change (tests/pool_test.cpp compares every file of pooled and sequential runs): each step reads and
// writes only its worker's tensors, which no other actor touches while it computes.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace locosim {

class StepPool {
 public:
  // REQUIRES: threads >= 1. Runs nothing until run() is called.
  explicit StepPool(int threads);
  ~StepPool();  // finishes what was handed over, then joins the threads
  StepPool(const StepPool&) = delete;
  StepPool& operator=(const StepPool&) = delete;

  // One step handed to the pool. wait() returns once it has run, rethrowing what it threw; the
  // destructor waits too (an actor killed in the middle of its compute must not leave its step
  // running on state that a rejoin will overwrite).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&&) = default;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();
    void wait();

   private:
    friend class StepPool;
    struct State;
    std::shared_ptr<State> state_;
  };

  // Queues `work` (which must stay valid until the ticket is waited on).
  Ticket run(const std::function<void()>& work);

 private:
  void serve();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Ticket::State>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace locosim
