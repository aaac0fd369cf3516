// The parameter server of asynchronous policies on a real cluster, through the job's store.
//
// A push: rank r writes "ps/push/<r>/<n>" (its tensors' bytes), takes an arrival number c from the
// counter "ps/arrivals" and writes "ps/order/<c>" = [r, n]; then it waits for "ps/reply/<r>/<n>".
// Rank 0's server thread, on a store connection of its own, reads the orders in sequence and runs
// the windows of ServerWindow (transport.hpp): a window opens at the first push it reads and holds
// those read within grace_s of it, or every push of the ranks still training; it then applies them
// in rank order and writes each one's reply. The thread starts with rank 0's first push (earlier
// pushes of other ranks wait in the store) and ends once every rank was told to stop.
#include <torch/utils.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "real/c10d_transport.hpp"
#include "real/store_format.hpp"

namespace locosim {
namespace {

using Clock = std::chrono::steady_clock;

// Tensors as bytes: for each, its dtype, rank and sizes (int64), then its contiguous data.
std::vector<uint8_t> tensor_bytes(const std::vector<torch::Tensor>& xs) {
  std::vector<uint8_t> out;
  auto put = [&out](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  for (const auto& x : xs) {
    const torch::Tensor c = x.detach().to(torch::kCPU).contiguous();  // a GPU tensor: staged in host memory
    std::vector<int64_t> head = {static_cast<int64_t>(c.scalar_type()), c.dim()};
    for (int64_t d : c.sizes()) head.push_back(d);
    put(head.data(), head.size() * sizeof(int64_t));
    put(c.data_ptr(), c.nbytes());
  }
  return out;
}

std::vector<torch::Tensor> tensors_from(const std::vector<uint8_t>& bytes) {
  std::vector<torch::Tensor> out;
  size_t offset = 0;
  auto take = [&](void* p, size_t n) {
    if (offset + n > bytes.size()) throw std::runtime_error("parameter server: a message is truncated");
    std::memcpy(p, bytes.data() + offset, n);
    offset += n;
  };
  while (offset < bytes.size()) {
    int64_t type = 0, dims = 0;
    take(&type, sizeof type);
    take(&dims, sizeof dims);
    std::vector<int64_t> sizes(static_cast<size_t>(dims));
    if (!sizes.empty()) take(sizes.data(), sizes.size() * sizeof(int64_t));
    torch::Tensor t = torch::empty(sizes, torch::TensorOptions().dtype(static_cast<torch::ScalarType>(type)));
    take(t.data_ptr(), t.nbytes());
    out.push_back(t);
  }
  return out;
}

std::string push_key(int rank, int64_t n) { return "ps/push/" + std::to_string(rank) + "/" + std::to_string(n); }
std::string reply_key(int rank, int64_t n) { return "ps/reply/" + std::to_string(rank) + "/" + std::to_string(n); }

}  // namespace

struct C10dTransport::ServerThread {
  std::unique_ptr<ParameterServer> server;
  std::thread thread;
  std::string error;                // what stopped the thread: written before `failed` is set
  std::atomic<bool> failed{false};  // read by rank 0's worker while the thread runs

  void run(c10::intrusive_ptr<c10d::Store> store, int world_size, double grace_s, std::chrono::milliseconds timeout,
           const Clock::time_point start) {
    auto now_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    ServerWindow window;
    std::map<int, int64_t> push_of;  // the window's pushes: rank -> its push number
    int64_t next = 1;
    // Reads the order numbered `next` if it is there; false if not (yet).
    auto read_next = [&]() {
      const std::string key = "ps/order/" + std::to_string(next);
      if (!store->check({key})) return false;
      const auto order = from_bytes<int64_t>(store->get(key));
      const int rank = static_cast<int>(order.at(0));
      push_of[rank] = order.at(1);
      window.add(rank, tensors_from(store->get(push_key(rank, order.at(1)))));
      store->deleteKey(push_key(rank, order.at(1)));  // the store keeps only what is in flight
      store->deleteKey(key);
      ++next;
      return true;
    };
    try {
      while (window.stopped_count() < world_size) {
        const auto waited_since = Clock::now();
        while (!read_next()) {
          if (Clock::now() - waited_since > timeout * 10) throw std::runtime_error("no push arrived for 10 timeouts");
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const double window_end = now_s() + grace_s;
        while (static_cast<int>(window.size()) < world_size - window.stopped_count() && now_s() < window_end) {
          if (!read_next()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const std::vector<int> ranks = window.close(*server, now_s());
        for (int rank : ranks) store->set(reply_key(rank, push_of.at(rank)), tensor_bytes(window.take_reply(rank)));
        push_of.clear();
      }
    } catch (const std::exception& e) {
      error = e.what();
      failed.store(true, std::memory_order_release);
    }
  }
};

bool C10dTransport::push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                              const ServerExchange& exchange) {
  const int64_t n = pushes_++;
  if (rank() == 0 && !server_) {
    if (!job_.connect) throw std::logic_error("C10dTransport: no way to open the server's store connection");
    server_ = std::make_shared<ServerThread>();
    server_->server = exchange.make_server();
    // The thread holds the server too: a transport destroyed early (a failed run) detaches it.
    server_->thread = std::thread([self = server_, store = job_.connect(), k = world_size(), grace = exchange.grace_s,
                                   timeout = job_.timeout, start = start_] { self->run(store, k, grace, timeout, start); });
  }
  const double start = now_s();
  job_.store->set(push_key(rank(), n), tensor_bytes(up));
  const int64_t arrival = job_.store->add("ps/arrivals", 1);
  job_.store->set("ps/order/" + std::to_string(arrival), to_bytes<int64_t>({rank(), n}));
  const double sent = now_s();
  recorder_.event({rank(), EventKind::send, start, sent, exchange.up_bytes, 0});
  const std::string key = reply_key(rank(), n);
  while (true) {  // a window may last a slow worker's whole round: wait in store timeouts
    try {
      job_.store->wait({key});
      break;
    } catch (const std::exception&) {
      if (server_ && server_->failed.load(std::memory_order_acquire)) {
        throw std::runtime_error("parameter server: " + server_->error);
      }
    }
  }
  const double replied = now_s();
  if (replied > sent) recorder_.event({rank(), EventKind::wait, sent, replied, 0, -1});
  down = tensors_from(job_.store->get(key));
  job_.store->deleteKey(key);
  recorder_.event({rank(), EventKind::recv, replied, now_s(), exchange.down_bytes, 0});
  return true;
}

void C10dTransport::release_server() {
  if (server_ && server_->thread.joinable()) server_->thread.detach();
}

std::vector<ServerUpdate> C10dTransport::stop_server() {
  if (!server_) return {};
  server_->thread.join();
  if (server_->failed) throw std::runtime_error("parameter server: " + server_->error);
  return server_->server->updates();
}

}  // namespace locosim
