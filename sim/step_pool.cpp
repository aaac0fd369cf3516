#include "sim/step_pool.hpp"

namespace locosim {

struct StepPool::Ticket::State {
  const std::function<void()>* work = nullptr;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;
};

StepPool::StepPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { serve(); });
}

StepPool::~StepPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

StepPool::Ticket StepPool::run(const std::function<void()>& work) {
  Ticket ticket;
  ticket.state_ = std::make_shared<Ticket::State>();
  ticket.state_->work = &work;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(ticket.state_);
  }
  ready_.notify_one();
  return ticket;
}

void StepPool::serve() {
  for (;;) {
    std::shared_ptr<Ticket::State> state;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      state = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      (*state->work)();
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->error = error;
      state->done = true;
    }
    state->done_cv.notify_all();
  }
}

void StepPool::Ticket::wait() {
  if (!state_) return;
  std::shared_ptr<State> state = std::move(state_);
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done_cv.wait(lock, [&] { return state->done; });
  if (state->error) std::rethrow_exception(state->error);
}

StepPool::Ticket::~Ticket() {
  if (!state_) return;
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });  // its error, if any, has nobody to go to
}

}  // namespace locosim
