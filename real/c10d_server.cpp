// The parameter server of asynchronous policies on a real cluster, through the job's store.
//
// A push: rank r writes "ps/push/<r>/<n>" (its tensors' bytes), takes an arrival number c from the
// counter "ps/arrivals" and writes "ps/order/<c>" = [r, n]; then it waits for "ps/reply/<r>/<n>".
// Rank 0's server thread, on a store connection of its own, reads the orders in sequence and runs
// the windows of ServerWindow (transport.hpp): a window opens at the first push it reads and holds
// those read within grace_s of it, or every push of the ranks still training; it then applies them
// in rank order and writes each one's reply. A server with windows of its own (the quorum syncer)
// gets each push as it is read and decides when to merge; its replies are written at once or once
// the push is merged (ServerExchange::reply_at_once). The thread starts with rank 0's first push (earlier
// pushes of other ranks wait in the store) and ends once every rank was told to stop. Whatever it reads
// is checked first (server_messages.hpp): the order's rank and number, and each push laid out as the
// server's own rank's; a bad one fails the run with an error naming its rank and key.
#include <torch/utils.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "real/c10d_transport.hpp"
#include "real/server_messages.hpp"
#include "real/store_client.hpp"
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

// The dtypes a message may hold: those of `xs`, and `also`.
std::map<int64_t, Dtype> dtypes_of(const std::vector<torch::Tensor>& xs, std::vector<torch::ScalarType> also = {}) {
  for (const auto& x : xs) also.push_back(x.scalar_type());
  std::map<int64_t, Dtype> out;
  for (torch::ScalarType t : also) out[static_cast<int64_t>(t)] = {c10::elementSize(t), c10::toString(t)};
  return out;
}

// Every rank pushes the same tensors (the same model, the same wire): a push is laid out as the
// server's own rank's, `up`.
MessageBounds push_bounds(const std::vector<torch::Tensor>& up) {
  std::vector<TensorShape> layout;
  for (const auto& x : up) layout.push_back({static_cast<int64_t>(x.scalar_type()), x.sizes().vec()});
  return MessageBounds::exactly(layout, dtypes_of(up));
}

// A reply to `up` (the server's model and its counts): as many tensors, of the push's dtypes or fp32 or
// fp64, at most 8 bytes an element of the push's.
MessageBounds reply_bounds(const std::vector<torch::Tensor>& up) {
  MessageBounds b;
  b.dtypes = dtypes_of(up, {torch::kFloat32, torch::kFloat64});
  b.max_tensors = up.size();
  b.max_total_bytes = 64 * 8;  // the counts
  for (const auto& x : up) {
    b.max_dims = std::max(b.max_dims, static_cast<size_t>(x.dim()));
    b.max_total_bytes += 8 * static_cast<uint64_t>(x.numel());
  }
  return b;
}

// The tensors of a message, once parse_tensor_heads has checked it against `bounds`; `what` names the
// message in an error.
std::vector<torch::Tensor> tensors_from(const std::vector<uint8_t>& bytes, const MessageBounds& bounds,
                                        const std::string& what) {
  std::vector<TensorHead> heads;
  try {
    heads = parse_tensor_heads(bytes.data(), bytes.size(), bounds);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
  std::vector<torch::Tensor> out;
  for (const auto& head : heads) {
    torch::Tensor t = torch::empty(head.shape.sizes, torch::dtype(static_cast<torch::ScalarType>(head.shape.dtype)));
    if (head.bytes > 0) std::memcpy(t.data_ptr(), bytes.data() + head.offset, head.bytes);
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

  void run(c10::intrusive_ptr<c10d::Store> store, int world_size, const MessageBounds& push, const ServerExchange& rule,
           std::chrono::milliseconds timeout, const Clock::time_point start) {
    auto now_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const double grace_s = rule.grace_s;
    ServerWindow window;
    std::map<int, int64_t> push_of;  // the pushes without a reply yet: rank -> its push number
    std::vector<int> ranks;          // the server's own windows: every rank is a member
    for (int r = 0; r < world_size; ++r) ranks.push_back(r);
    std::vector<int64_t> pushes_read(static_cast<size_t>(world_size), 0);  // by rank
    int64_t next = 1;
    // Reads the order numbered `next` if it is there; false if not (yet). Whatever it names is checked
    // first: anything in the store may have been written by any of the job's processes.
    auto read_next = [&]() {
      const std::string key = "ps/order/" + std::to_string(next);
      if (!store->check({key})) return false;
      PushOrder order;
      try {
        order = parse_push_order(store->get(key), world_size);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error("the order " + key + ": " + e.what());
      }
      // A rank pushes again only once its reply came: its pushes arrive one at a time, numbered from 0.
      if (order.push != pushes_read[order.rank] || push_of.count(order.rank)) {
        throw std::runtime_error("the order " + key + " names rank " + std::to_string(order.rank) + "'s push " +
                                 std::to_string(order.push) + ", where its next is " +
                                 std::to_string(pushes_read[order.rank]) +
                                 (push_of.count(order.rank) ? " (its push in this window has no reply yet)" : ""));
      }
      const std::string push_at = push_key(order.rank, order.push);
      std::vector<torch::Tensor> up =
          tensors_from(store->get(push_at), push, "rank " + std::to_string(order.rank) + "'s push (" + push_at + ")");
      if (rule.own_windows) {
        server->arrive(order.rank, up, now_s(), ranks);
      } else {
        window.add(order.rank, std::move(up));
      }
      push_of[order.rank] = order.push;
      ++pushes_read[order.rank];
      store->deleteKey(push_at);  // the store keeps only what is in flight
      store->deleteKey(key);
      ++next;
      return true;
    };
    // The server's own windows: each push is answered at once (reply_at_once) or once it is merged;
    // between pushes the server's rule is checked every millisecond (its grace window may end).
    auto answer = [&] {
      for (auto it = push_of.begin(); it != push_of.end();) {
        if (!rule.reply_at_once && !server->merged(it->first)) {
          ++it;
          continue;
        }
        store->set(reply_key(it->first, it->second), tensor_bytes(server->reply(it->first)));
        it = push_of.erase(it);
      }
    };
    auto stopped = [&] {
      int n = 0;
      for (int r : ranks) n += server->stopped(r) ? 1 : 0;
      return n;
    };
    try {
      while (rule.own_windows && stopped() < world_size) {
        const auto waited_since = Clock::now();
        while (!read_next()) {
          if (Clock::now() - waited_since > timeout * 10) throw std::runtime_error("no push arrived for 10 timeouts");
          server->tick(now_s(), ranks);
          answer();
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        answer();
      }
      while (!rule.own_windows && window.stopped_count() < world_size) {
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
    ServerExchange rule = exchange;  // its window rule (the server it makes is made here)
    rule.make_server = nullptr;
    server_->thread = std::thread([self = server_, store = job_.connect(), k = world_size(), push = push_bounds(up),
                                   rule = std::move(rule), timeout = job_.timeout,
                                   start = start_] { self->run(store, k, push, rule, timeout, start); });
  }
  const double start = now_s();
  job_.store->set(push_key(rank(), n), tensor_bytes(up));
  const int64_t arrival = job_.store->add("ps/arrivals", 1);
  job_.store->set("ps/order/" + std::to_string(arrival), to_bytes<int64_t>({rank(), n}));
  const double sent = now_s();
  recorder_.event({rank(), EventKind::send, start, sent, exchange.up_bytes, 0});
  const std::string key = reply_key(rank(), n);
  // A window may last a slow worker's whole round: wait in store timeouts. Any other failure is the
  // store gone (rank 0, its host, failed): this rank fails too, rather than ask again forever.
  while (true) {
    try {
      job_.store->wait({key});
      break;
    } catch (const StoreTimeout&) {
      if (server_ && server_->failed.load(std::memory_order_acquire)) {
        throw std::runtime_error("parameter server: " + server_->error);
      }
    }
  }
  const double replied = now_s();
  if (replied > sent) recorder_.event({rank(), EventKind::wait, sent, replied, 0, -1});
  down = tensors_from(job_.store->get(key), reply_bounds(up), "parameter server: the reply " + key);
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
