// SimTransport's parameter-server exchange (asynchronous DiLoCo, the quorum syncer): a push to the
// server's host and its reply, each one flow, with the server's window in between; and when a worker
// that cannot reach the server leaves the run.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives.hpp"
#include "sim/sim_transport.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

// One message of `bytes` from rank `from` to rank `to`, sent or received by `self` (one of the two)
// in its own actor; the other side runs in an actor on `other_host`. False if the flow failed (a cut
// link, a host gone): the side that waits reports it.
bool transfer(int self, int from, int to, sg4::Host* other_host, const std::string& tag, double bytes,
              Recorder& recorder) {
  auto side = [from, to, tag, bytes, &recorder](bool sends) {
    if (sends) {
      send_flow(from, to, tag, bytes, recorder);
    } else {
      recv_flow(from, to, tag, bytes, recorder);
    }
  };
  const bool other_sends = self != from;
  if (!other_host->is_on()) return false;  // nothing listens there (SimGrid refuses an actor on it)
  sg4::Actor::create(tag, other_host, [side, other_sends] {
    try {
      side(other_sends);
    } catch (const simgrid::Exception&) {
    }
  });
  try {
    side(!other_sends);
  } catch (const simgrid::Exception&) {
    return false;
  }
  return true;
}

}  // namespace

bool stays_off(const WorldSpec& world, const std::string& target, WorldResource what, int rank, double now_s) {
  for (const ChurnSpec& churn : world.churn) {
    if (std::find(churn.hosts.begin(), churn.hosts.end(), rank) != churn.hosts.end()) return false;
  }
  for (const WorldProfile& p : world.profiles) {
    if (p.target != target || p.what != what) continue;
    for (const auto& [at_s, on] : p.points) {
      if (on != 0 && (p.period_s >= 0 || at_s >= now_s)) return false;
    }
  }
  return true;
}

std::string SimTransport::cut_for_good() const {
  if (!world_.platform || !world_.changes) return "";
  const double now = now_s();
  const size_t server = world_.relay ? world_.hosts.size() : 0;
  if (!world_.relay && !world_.hosts[0]->is_on() &&
      stays_off(*world_.changes, world_.platform->hosts[0].name, WorldResource::host_state, 0, now)) {
    return "the server's host " + world_.platform->hosts[0].name +
           " (rank 0's: the platform has no relay) is off for good";
  }
  const size_t self = static_cast<size_t>(rank_);
  for (const auto& [from, to] : {std::pair{self, server}, std::pair{server, self}}) {
    for (const std::string& name : route_link_names(*world_.platform, from, to)) {
      if (!sg4::Link::by_name(name)->is_on() && stays_off(*world_.changes, name, WorldResource::link_state, -1, now)) {
        return "link " + name + " on its route to the server is off for good";
      }
    }
  }
  return "";
}

bool SimTransport::exchange_failed() {
  doing_ = nullptr;
  char at[32];
  std::snprintf(at, sizeof at, "%.6g", now_s());
  const std::string who = "worker " + std::to_string(rank_) + " left the run at " + at + " s: ";
  if (world_.server && world_.server->done()) throw CutOff(who + "the server, which holds the run's work, is out of reach");
  if (const std::string why = cut_for_good(); !why.empty()) throw CutOff(who + why);
  return false;
}

// The push travels to the server's host and the reply back, each as one flow; in between the
// worker waits for its window to close: when every worker still training has pushed into it, or
// grace_s after its first push, whichever comes first (a server with windows of its own decides
// itself, and may reply at once: exchange_own_window). An exchange that fails (a cut link, the
// server's host off) is not retried: the worker's next round pushes again (exchange_failed).
bool SimTransport::push_pull(const std::vector<torch::Tensor>& up, std::vector<torch::Tensor>& down,
                             const ServerExchange& exchange) {
  start_deferred();
  const int server = world_.relay ? world_size() : 0;
  sg4::Host* server_host = world_.relay ? world_.relay : world_.hosts[0];
  Recorder* recorder = world_.recorder;
  const std::string tag = "push-" + std::to_string(rank_) + "-" + std::to_string(pushes_++);
  doing_ = "pushing to the server";
  if (server != rank_ && !transfer(rank_, rank_, server, server_host, tag + "/up", exchange.up_bytes, *recorder)) {
    return exchange_failed();
  }

  const double at = now_s();
  if (!world_.server) {
    world_.server = exchange.make_server();
    world_.window_mutex = sg4::Mutex::create();
    world_.window_closed = sg4::ConditionVariable::create();
  }
  std::vector<torch::Tensor> copy;
  for (const auto& x : up) copy.push_back(x.detach().clone());
  std::vector<torch::Tensor> reply =
      exchange.own_windows ? exchange_own_window(copy, at, exchange.reply_at_once) : exchange_window(copy, at, exchange);

  doing_ = "receiving the server's reply";
  if (server != rank_ && !transfer(rank_, server, rank_, server_host, tag + "/down", exchange.down_bytes, *recorder)) {
    return exchange_failed();
  }
  doing_ = nullptr;
  down = std::move(reply);
  return true;
}

// The transport's windows (ServerWindow): the worker waits for its window to close.
std::vector<torch::Tensor> SimTransport::exchange_window(std::vector<torch::Tensor> copy, double at,
                                                         const ServerExchange& exchange) {
  Recorder* recorder = world_.recorder;
  if (!world_.window.open()) world_.window_end_s = at + exchange.grace_s;
  const uint64_t mine = world_.window.closed();
  world_.window.add(rank_, std::move(copy));
  size_t training = 0;
  for (int r : world_.members()) training += world_.window.stopped(r) ? 0 : 1;
  doing_ = "waiting for the server's window to close";
  if (world_.window.size() >= training) {
    close_window();
  } else {
    std::unique_lock<sg4::Mutex> lock(*world_.window_mutex);
    while (world_.window.closed() == mine) {
      if (world_.window_closed->wait_until(lock, world_.window_end_s) == std::cv_status::timeout &&
          world_.window.closed() == mine) {
        close_window();
      }
    }
  }
  if (now_s() > at) recorder->event({rank_, EventKind::wait, at, now_s(), 0, -1});
  return world_.window.take_reply(rank_);
}

// The server's own windows (ParameterServer::arrive): the reply leaves at once, or once the push is
// merged. A waiting worker checks the server's rule again at its deadline, and every
// failure_timeout_s (a member lost meanwhile is noticed then, as in a collective).
std::vector<torch::Tensor> SimTransport::exchange_own_window(std::vector<torch::Tensor> copy, double at,
                                                             bool reply_at_once) {
  ParameterServer& server = *world_.server;
  if (reply_at_once) {  // nobody waits on the server's windows
    server.arrive(rank_, copy, at, world_.members());
  } else {
    doing_ = "waiting for the server to merge its push";
    std::unique_lock<sg4::Mutex> lock(*world_.window_mutex);
    server.arrive(rank_, copy, at, world_.members());
    world_.window_closed->notify_all();
    while (!server.merged(rank_)) {
      const double until = std::min(server.deadline_s(), now_s() + world_.failure_timeout_s);
      if (world_.window_closed->wait_until(lock, until) == std::cv_status::timeout && !server.merged(rank_)) {
        server.tick(now_s(), world_.members());
        world_.window_closed->notify_all();
      }
    }
    if (now_s() > at) world_.recorder->event({rank_, EventKind::wait, at, now_s(), 0, -1});
  }
  return server.reply(rank_);
}

void SimTransport::close_window() {
  (void)world_.window.close(*world_.server, now_s());
  world_.window_closed->notify_all();
}

}  // namespace locosim
