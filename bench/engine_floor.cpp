// The simulation engine's own floor under bench/scale.py's relay: what SimGrid alone costs per
// worker-round, with none of locosim's code. Each of WORKERS workers is an actor on its own host
// behind its own uplink and downlink (10 Mbps up, 100 Mbps down, 15 ms, as in bench/scale.py); a
// round is its steps (one wake by the clock, as a timing-only worker's step marks are), an upload of its
// pseudo-gradient to the relay, and the mean's download. The relay serves its members in ⌈√WORKERS⌉
// lanes, as sim/collectives.cpp does, each lane an actor kept for the whole run, the lanes meeting at
// a barrier between uploads and downloads. Same network model and allocator as locosim-sim.
//
// So a relay round here is the least any simulator built on SimGrid's actors and transfers must do:
// three resumptions of each worker and two transfers. bench/scale.py --engine-floor times it as it
// times locosim; how the cost per worker-round grows with WORKERS here is the engine's, not locosim's.
//   build/bench/engine_floor WORKERS ROUNDS
// prints `simulated_s=...`, the simulated time at the end.
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

constexpr double kStepsS = 5.0;            // a round's inner steps: 5 of about a second
constexpr double kPayloadBytes = 300e6;    // 150 M parameters in fp16, as bench/scale.py's timing
constexpr double kUpBytesPerS = 10e6 / 8, kDownBytesPerS = 100e6 / 8, kHomeLatencyS = 0.015;
constexpr double kRelayBytesPerS = 100e9 / 8, kRelayLatencyS = 0.005;

struct Floor {
  int rounds = 0;
  std::vector<sg4::Mailbox*> up, down;  // a worker's upload to the relay, and its download
  int payload = 0;                      // what every transfer carries: its size is what counts
};
Floor floor_;

// A worker's steps as sim/step_marks.cpp runs them: no activity; the worker suspends itself and the
// clock's callback resumes it when its steps are due, with one timer at the earliest due date so the
// clock stops there.
struct Wakes {
  double precision = 0;  // SimGrid's surf/precision, set once the engine is made: as the CPU model ends actions
  std::map<double, std::vector<sg4::Actor*>> due;
  simgrid::kernel::timer::Timer* stop = nullptr;
  double stop_date = 0;

  void sleep_for(double seconds) {
    const double now = sg4::Engine::get_clock();
    due[now + seconds].push_back(sg4::Actor::self());
    keep_stop(now);
    sg4::this_actor::suspend();
  }
  void on_time_advance() {
    const double now = sg4::Engine::get_clock();
    while (!due.empty() && due.begin()->first - now < precision) {
      for (sg4::Actor* actor : due.begin()->second) actor->resume();
      due.erase(due.begin());
    }
    keep_stop(now);
  }
  // The timer at the earliest due date; a timer that is due runs and goes by itself.
  void keep_stop(double now) {
    if (stop && !due.empty() && stop_date == due.begin()->first) return;
    if (stop && stop_date > now) stop->remove();
    stop = nullptr;
    if (due.empty()) return;
    stop_date = due.begin()->first;
    stop = simgrid::kernel::timer::Timer::set(stop_date, [] {});
  }
};
Wakes wakes;

void worker(int i) {
  for (int round = 0; round < floor_.rounds; ++round) {
    wakes.sleep_for(kStepsS);
    sg4::CommPtr upload = floor_.up[i]->put_async(&floor_.payload, kPayloadBytes);
    floor_.down[i]->get<int>();
    upload->wait();
  }
}

// Serves workers first, first + stride, ...: every upload, then (once every lane has all of its own)
// every download.
void lane(int first, int stride, sg4::BarrierPtr all_uploaded) {
  std::vector<int> members;
  for (int i = first; i < static_cast<int>(floor_.up.size()); i += stride) members.push_back(i);
  std::vector<sg4::CommPtr> comms(members.size());
  std::vector<int*> received(members.size());
  for (int round = 0; round < floor_.rounds; ++round) {
    for (size_t m = 0; m < members.size(); ++m) comms[m] = floor_.up[members[m]]->get_async<int>(&received[m]);
    for (const sg4::CommPtr& comm : comms) comm->wait();
    all_uploaded->wait();
    for (size_t m = 0; m < members.size(); ++m) comms[m] = floor_.down[members[m]]->put_async(&floor_.payload, kPayloadBytes);
    for (const sg4::CommPtr& comm : comms) comm->wait();
  }
}

sg4::Link* link(sg4::NetZone* zone, const std::string& name, double bytes_per_s, double latency_s) {
  sg4::Link* made = zone->create_link(name, bytes_per_s)->set_latency(latency_s);
  made->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
  return made->seal();
}

}  // namespace

int main(int argc, char** argv) {
  sg4::Engine engine(&argc, argv);
  const int workers = argc == 3 ? std::atoi(argv[1]) : 0;
  floor_.rounds = argc == 3 ? std::atoi(argv[2]) : 0;
  if (workers < 1 || floor_.rounds < 1) {
    std::fprintf(stderr, "usage: engine_floor WORKERS ROUNDS (both at least 1)\n");
    return 2;
  }
  xbt_log_control_set("xbt_cfg.thres:warning");  // no "Configuration change" lines
  engine.set_config("network/model:CM02");  // as sim/platform.cpp configures locosim's
  engine.set_config("network/optim:Full");

  sg4::NetZone* zone = sg4::create_full_zone("floor");
  sg4::Host* relay = zone->create_host("relay", 1.0)->seal();
  sg4::Link* relay_up = link(zone, "relay-up", kRelayBytesPerS, kRelayLatencyS);
  sg4::Link* relay_down = link(zone, "relay-down", kRelayBytesPerS, kRelayLatencyS);
  std::vector<sg4::Host*> hosts;
  for (int i = 0; i < workers; ++i) {
    const std::string name = "peer-" + std::to_string(i);
    sg4::Host* host = zone->create_host(name, 1.0)->seal();
    sg4::Link* up = link(zone, name + "-up", kUpBytesPerS, kHomeLatencyS);
    sg4::Link* down = link(zone, name + "-down", kDownBytesPerS, kHomeLatencyS);
    zone->add_route(host->get_netpoint(), relay->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(up), sg4::LinkInRoute(relay_down)}, false);
    zone->add_route(relay->get_netpoint(), host->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(relay_up), sg4::LinkInRoute(down)}, false);
    hosts.push_back(host);
    floor_.up.push_back(sg4::Mailbox::by_name(name + "-up"));
    floor_.down.push_back(sg4::Mailbox::by_name(name + "-down"));
  }
  zone->seal();

  int lanes = 1;
  while (lanes * lanes < workers) ++lanes;
  sg4::BarrierPtr all_uploaded = sg4::Barrier::create(static_cast<unsigned>(lanes));
  for (int first = 0; first < lanes; ++first) sg4::Actor::create("lane", relay, lane, first, lanes, all_uploaded);
  for (int i = 0; i < workers; ++i) sg4::Actor::create("worker", hosts[i], worker, i);
  wakes.precision = simgrid::config::get_value<double>("surf/precision");
  sg4::Engine::on_time_advance_cb([](double /*delta_s*/) { wakes.on_time_advance(); });
  engine.run();
  std::printf("simulated_s=%.1f\n", sg4::Engine::get_clock());
  return 0;
}
