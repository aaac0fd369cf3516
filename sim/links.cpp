// LinkMeter: integrates each link's usage over simulated time; links.csv.
#include "sim/links.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

namespace sg4 = simgrid::s4u;

namespace locosim {

// The meter's links and the stretches of time each carried traffic. Segment and MeteredLink are
// State's own, not in an anonymous namespace: State is declared in links.hpp, and a class that other
// files can name should not hold members of a type that only this file can (-Wsubobject-linkage).
struct LinkMeter::State {
  // A stretch of time over which a link carried a constant bytes_per_s (> 0).
  struct Segment {
    double start_s = 0;
    double end_s = 0;
    double bytes_per_s = 0;
  };

  struct MeteredLink {
    const sg4::Link* link = nullptr;
    LinkTraffic info;                // bytes left empty until report()
    std::vector<Segment> segments;
    std::vector<std::pair<double, double>> capacity;  // (from time, bytes/s it could carry; 0 while off)
  };

  // Appends [start, end) at `rate` to `segments`, extending the last one when it continues it.
  static void extend(std::vector<Segment>& segments, double start, double end, double rate) {
    if (!segments.empty() && segments.back().end_s == start && segments.back().bytes_per_s == rate) {
      segments.back().end_s = end;
    } else {
      segments.push_back({start, end, rate});
    }
  }

  // Integrates `segments` over the report's buckets.
  static std::vector<double> bucketed(const std::vector<Segment>& segments, const LinkReport& r, size_t buckets) {
    std::vector<double> out(buckets, 0.0);
    for (const Segment& s : segments) {
      const double end = std::min(s.end_s, r.end_s);
      if (!(end > s.start_s)) continue;
      size_t first = static_cast<size_t>(s.start_s / r.bucket_s);
      for (size_t b = std::min(first, buckets - 1); b < buckets; ++b) {
        const double lo = std::max(s.start_s, r.bucket_start_s(b));
        const double hi = std::min(end, r.bucket_end_s(b));
        if (r.bucket_start_s(b) >= end) break;
        if (hi > lo) out[b] += (hi - lo) * s.bytes_per_s;
      }
    }
    return out;
  }

  std::vector<MeteredLink> links;
  std::map<const sg4::Link*, size_t> index;
  double last_clock_s = 0;

  // Link::on_bandwidth_change and on_state_change: the world (a profile) changed the link now.
  void on_link_change(const sg4::Link& link) {
    auto it = index.find(&link);
    if (it == index.end()) return;
    auto& capacity = links[it->second].capacity;
    const double now = sg4::Engine::get_clock();
    const double rate = link.is_on() ? link.get_bandwidth() : 0;
    if (!capacity.empty() && capacity.back().first == now) capacity.pop_back();
    if (capacity.empty() || capacity.back().second != rate) capacity.emplace_back(now, rate);
  }

  void on_time_advance() {
    const double now = sg4::Engine::get_clock();
    const double start = last_clock_s;
    last_clock_s = now;
    if (!(now > start)) return;
    for (auto& m : links) {
      const double rate = m.link->get_usage();
      if (rate > 0) extend(m.segments, start, now, rate);
    }
  }
};

namespace {

std::string direction_from_name(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".up")) return "up";
  if (ends_with(".down")) return "down";
  return "wan";
}

}  // namespace

LinkMeter::LinkMeter(const std::vector<sg4::Host*>& workers) : state_(std::make_shared<State>()) {
  // Endpoints: the workers by rank, then every other host (a relay) in the Engine's order.
  std::vector<sg4::Host*> endpoints = workers;
  for (sg4::Host* h : sg4::Engine::get_instance()->get_all_hosts()) {
    if (std::find(endpoints.begin(), endpoints.end(), h) == endpoints.end()) endpoints.push_back(h);
  }
  // A host's own links are the first link of its routes out and the last of its routes in.
  std::map<const sg4::Link*, std::pair<int, std::string>> owner;  // link -> (endpoint, direction)
  for (size_t i = 0; i < endpoints.size() && endpoints.size() > 1; ++i) {
    sg4::Host* other = endpoints[i == 0 ? 1 : 0];
    std::vector<sg4::Link*> out, in;
    double latency_s = 0;
    endpoints[i]->route_to(other, out, &latency_s);
    other->route_to(endpoints[i], in, &latency_s);
    if (out.size() >= 2) owner[out.front()] = {static_cast<int>(i), "up"};
    if (in.size() >= 2) owner[in.back()] = {static_cast<int>(i), "down"};
  }

  using MeteredLink = State::MeteredLink;
  std::vector<MeteredLink> own, shared;
  for (const sg4::Link* link : sg4::Engine::get_instance()->get_all_links()) {
    if (link->get_name().rfind("__", 0) == 0) continue;  // SimGrid's own (a full zone's __loopback__)
    MeteredLink m;
    m.link = link;
    m.info.link = link->get_name();
    m.info.bandwidth_bps = link->get_bandwidth() * 8;  // SimGrid counts bytes per second
    auto it = owner.find(link);
    if (it != owner.end()) {
      m.info.worker = it->second.first;
      m.info.direction = it->second.second;
      m.info.host = endpoints[it->second.first]->get_name();
      own.push_back(std::move(m));
    } else {
      m.info.direction = direction_from_name(m.info.link);
      shared.push_back(std::move(m));
    }
  }
  std::sort(own.begin(), own.end(), [](const MeteredLink& a, const MeteredLink& b) {
    return std::make_pair(a.info.worker, a.info.direction != "up") < std::make_pair(b.info.worker, b.info.direction != "up");
  });
  std::sort(shared.begin(), shared.end(), [](const MeteredLink& a, const MeteredLink& b) { return a.info.link < b.info.link; });
  state_->links = std::move(own);
  for (auto& m : shared) state_->links.push_back(std::move(m));
  state_->last_clock_s = sg4::Engine::get_clock();
  for (size_t i = 0; i < state_->links.size(); ++i) {
    MeteredLink& m = state_->links[i];
    state_->index[m.link] = i;
    m.capacity.emplace_back(state_->last_clock_s, m.info.bandwidth_bps / 8);
  }

  std::shared_ptr<State> state = state_;
  sg4::Engine::on_time_advance_cb([state](double /*delta_s*/) { state->on_time_advance(); });
  sg4::Link::on_bandwidth_change_cb([state](const sg4::Link& link) { state->on_link_change(link); });
  sg4::Link::on_state_change_cb([state](const sg4::Link& link) { state->on_link_change(link); });
}

LinkReport LinkMeter::report(double bucket_s, double end_s) const {
  if (bucket_s < 0 || !std::isfinite(bucket_s)) throw std::invalid_argument("link bucket must be >= 0 s");
  LinkReport r;
  r.end_s = std::max(end_s, 0.0);
  r.bucket_s = bucket_width_s(bucket_s, r.end_s);
  const auto buckets = static_cast<size_t>(std::max(1.0, std::ceil(r.end_s / r.bucket_s)));
  for (const auto& m : state_->links) {
    LinkTraffic t = m.info;
    t.bytes = State::bucketed(m.segments, r, buckets);
    std::vector<State::Segment> capacity;  // the change points as segments, the last one to the end
    for (size_t i = 0; i < m.capacity.size(); ++i) {
      const double until = i + 1 < m.capacity.size() ? m.capacity[i + 1].first : std::max(r.end_s, m.capacity[i].first);
      capacity.push_back({m.capacity[i].first, until, m.capacity[i].second});
    }
    if (m.capacity.size() > 1) t.capacity_bytes = State::bucketed(capacity, r, buckets);
    for (const State::Segment& c : capacity) {
      if (c.bytes_per_s > 0 || c.start_s >= r.end_s) continue;
      if (!t.off.empty() && t.off.back().second == c.start_s) {
        t.off.back().second = std::min(c.end_s, r.end_s);
      } else {
        t.off.emplace_back(c.start_s, std::min(c.end_s, r.end_s));
      }
    }
    r.links.push_back(std::move(t));
  }
  return r;
}

}  // namespace locosim
