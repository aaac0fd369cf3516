// simulate_policy: main() of one simulated run, in the SimGrid shape: load the platform, add the
// actors, run, write results.
#include "sim/simulate.hpp"

#include <simgrid/s4u.hpp>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "algorithms/optim.hpp"
#include "scenario/device.hpp"
#include "scenario/worker.hpp"
#include "report/recorder_csv.hpp"
#include "report/run_files.hpp"
#include "report/summary.hpp"
#include "sim/links.hpp"
#include "sim/membership.hpp"
#include "sim/platform.hpp"
#include "sim/side_pool.hpp"
#include "sim/sim_transport.hpp"
#include "sim/step_marks.hpp"
#include "sim/step_pool.hpp"
#include "sim/world.hpp"

namespace sg4 = simgrid::s4u;

namespace locosim {
namespace {

std::string fmt_s(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

TinyLlama copy_of(const TinyLlama& reference, const LlamaConfig& cfg) {
  TinyLlama model(cfg);
  model->to(reference->parameters().at(0).device());
  torch::NoGradGuard no_grad;
  auto mine = model->parameters();
  auto theirs = reference->parameters();
  for (size_t i = 0; i < mine.size(); ++i) mine[i].copy_(theirs[i]);
  return model;
}

// A re-timed run's rows take the losses of the run it re-times.
void put_losses(const ReusedNumerics& reused, std::vector<MetricRow>& rows) {
  for (MetricRow& row : rows) {
    const auto it = reused.losses.find({row.worker, row.step});
    if (it == reused.losses.end()) {
      throw std::runtime_error("re-timing: the run it re-times has no step " + std::to_string(row.step) + " of worker " +
                               std::to_string(row.worker));
    }
    std::tie(row.train_loss, row.eval_loss) = it->second;
  }
}

// Whether a worker that has not trained every step is away on a host that the world brings back.
bool may_come_back(const Scenario& scenario, const std::vector<SimWorker>& workers, double now_s) {
  for (size_t rank = 0; rank < workers.size(); ++rank) {
    const std::string& host = scenario.platform.hosts[rank].name;
    if (!workers[rank].done && !sg4::Host::by_name(host)->is_on() &&
        !stays_off(scenario.world, host, WorldResource::host_state, static_cast<int>(rank), now_s)) {
      return true;
    }
  }
  return false;
}

// Runs the engine to the end of the run. SimGrid stops as soon as no actor is left, also when every
// worker is away and a host's return would restart its worker (Membership::join, which restarts
// the group from its last handover point): then the clock is moved on, in steps that double from
// 1 s (a host comes back at a finite time: a later point of its profile, a period, a churn session),
// until a worker is running again, and the run goes on.
void run_to_the_end(const sg4::Engine& engine, const Scenario& scenario, const std::vector<SimWorker>& workers,
                    const Membership& membership, const std::string& failure) {
  engine.run();
  const auto all_away = [&] {
    return failure.empty() && membership.can_restart() && engine.get_actor_count() == 0 &&
           std::none_of(workers.begin(), workers.end(), [](const SimWorker& w) { return w.done; }) &&
           may_come_back(scenario, workers, sg4::Engine::get_clock());
  };
  for (double step_s = 1; all_away(); step_s *= 2) {
    engine.run_until(sg4::Engine::get_clock() + step_s);
    if (engine.get_actor_count() == 0) continue;
    engine.run();
    step_s = 0.5;  // the next absence of every worker starts again from 1 s
  }
}

}  // namespace

ReusedNumerics read_reused_numerics(const std::string& run_dir) {
  const RunSummary summary = read_summary_json(run_dir + "/summary.json");
  return {read_exact_losses_csv(run_dir + "/" + kExactLossesFile), summary.params_fingerprint,
          summary.final_validation_loss};
}

void simulate_policy(const Scenario& scenario, const PolicySpec& policy, const std::string& dir, int step_threads,
                     const ProgressFn& progress, const ReusedNumerics* reused) {
  const bool timing_only = scenario.timing_only || reused;
  int argc = 1;
  char program[] = "locosim";
  char* argv[] = {program, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_network_model(engine, scenario.network_model);
  BuiltPlatform platform = build_platform(scenario.platform, scenario.world);

  RunStart start = start_run(scenario);
  TinyLlama& reference = start.initial;  // every policy and worker starts from these weights
  if (!timing_only) reference->to(training_device(scenario));  // initialized on the CPU: the same weights
  Recorder recorder;
  if (progress) {
    recorder.on_metric = [&progress](const MetricRow& row) {
      if (row.worker == 0) progress(row.step, row.time_s);
    };
  }
  LinkMeter link_meter(platform.hosts);
  SimWorld world;
  world.hosts = platform.hosts;
  world.recorder = &recorder;
  world.collectives = scenario.network;
  world.relay = platform.relay;
  world.sites = site_groups(scenario.platform);
  world.failure_timeout_s = scenario.world.failure_timeout_s;
  const bool can_fail = world_can_fail(scenario.world);
  if (can_fail) {
    world.platform = &scenario.platform;
    world.changes = &scenario.world;
  }
  world.timing_only = timing_only;
  std::unique_ptr<StepPool> pool;  // finishes every step handed to it before it goes
  if (step_threads > 1 && !timing_only) pool = std::make_unique<StepPool>(step_threads);
  world.pool = pool.get();
  SidePool sides;  // ends with the engine's run; only a world that never fails keeps its sides' actors
  if (!can_fail) world.sides = &sides;
  std::unique_ptr<StepMarks> marks;  // steps as marks on the clock: timing only, speeds and hosts that never change
  const auto& profiles = scenario.world.profiles;
  if (timing_only && !can_fail &&
      std::none_of(profiles.begin(), profiles.end(), [](const WorldProfile& p) { return p.what == WorldResource::host_speed; })) {
    marks = std::make_unique<StepMarks>();
    world.marks = marks.get();
  }
  // Timing only on a world that never changes: no worker joins, so no one reads the optimizers' state.
  std::optional<MetaStateUnread> unread;
  if (timing_only && !can_fail) unread.emplace();
  const int world_size = scenario.world_size();
  const auto worker_steps = static_cast<size_t>(world_size) * static_cast<size_t>(std::max<int64_t>(scenario.train.steps, 0));
  recorder.reserve(worker_steps, 2 * worker_steps);
  std::vector<SimWorker> workers(world_size);
  for (int rank = 0; rank < world_size; ++rank) {
    SimWorker& w = workers[rank];
    // Timing only: every worker holds the reference model, untouched, and the policy updates
    // parameters of its shapes on the meta device (no memory, no values).
    w.model = timing_only ? reference : copy_of(reference, scenario.model);
    w.transport = std::make_unique<SimTransport>(world, rank);
    std::vector<torch::Tensor> params = w.model->parameters();
    if (timing_only) {
      for (auto& p : params) p = torch::empty(p.sizes(), p.options().device(torch::kMeta)).requires_grad_();
    }
    Worker built = build_worker(scenario, policy, rank, start, w.model, params, *w.transport, recorder);
    w.policy = std::move(built.policy);
    w.loop = std::move(built.loop);
    if (timing_only) w.loop->timing_params = params;
  }

  Membership membership(world, workers, start.wire_scale, can_fail);
  for (int rank = 0; rank < world_size; ++rank) {
    workers[rank].loop->on_handover_point = [&membership, rank](int64_t steps_done) {
      membership.handover_point(rank, steps_done);
    };
  }
  sg4::Host::on_state_change_cb([&membership](const sg4::Host& host) { membership.host_changed(host); });

  std::string failure;
  int workers_returned = 0;
  for (int rank = 0; rank < world_size; ++rank) {
    sg4::ActorPtr actor = sg4::Actor::create("worker-" + std::to_string(rank), platform.hosts[rank], [&, rank] {
      try {
        membership.run_worker(rank);
        workers[rank].transport->start_deferred();  // a side it never waited on still runs
      } catch (const std::exception& e) {
        failure = "worker " + std::to_string(rank) + ": " + e.what();
        sg4::Actor::kill_all();  // the others would wait for this one's collectives forever
      }
      if (++workers_returned == world_size) sides.close();  // the kept side actors may end now
    });
    actor->set_auto_restart(true);  // SimGrid starts it again when its host comes back on
  }
  run_to_the_end(engine, scenario, workers, membership, failure);
  if (!failure.empty()) throw std::runtime_error(failure);
  const double end_s = sg4::Engine::get_clock();
  membership.close(end_s);
  // SimGrid ends the run when no actor can progress: a deadlock or a simulated time that never
  // advances leaves workers unfinished, and that run is a failure, never a result. A worker that is
  // away at the end (its host off, or waiting for a group that finished) has left the run.
  std::string unfinished;
  int finished = 0;
  for (int rank = 0; rank < world_size; ++rank) {
    const SimWorker& w = workers[rank];
    if (w.loop->finished()) ++finished;
    if (w.loop->finished() || w.away_since_s >= 0) continue;
    const std::string activity = w.transport->activity();
    unfinished += "\n  worker " + std::to_string(rank) + " (" + scenario.platform.hosts[rank].name + ") stopped after " +
                  std::to_string(w.loop->steps_done()) + " of " + std::to_string(scenario.train.steps) + " steps, " +
                  (activity.empty() ? "between steps" : activity);
  }
  if (!unfinished.empty()) {
    throw std::runtime_error("the simulation stopped at " + fmt_s(end_s) +
                             " s with workers unfinished (a deadlock, or times too large to advance):" + unfinished);
  }
  if (finished == 0) {
    std::string why;
    for (const std::string& cut : membership.cut_off()) why += "\n  " + cut;
    if (why.empty()) {
      why = may_come_back(scenario, workers, end_s)
                ? ": policy " + policy.name + " has no handover point, so a group that every worker has left "
                                              "cannot restart (README: When the world changes)"
                : ": their hosts are off, and the world brings none of them back";
    }
    throw std::runtime_error("the simulation stopped at " + fmt_s(end_s) + " s with every worker away" + why);
  }

  if (reused) put_losses(*reused, recorder.mutable_metrics());

  RunTally tally;
  tally.workers_lost = membership.lost();
  tally.workers_joined = membership.joined();
  for (const SimWorker& w : workers) {
    const WorkTally& t = w.loop->tally();
    tally.compute_wasted_s += t.compute_wasted_s;
    tally.useful_tokens += t.tokens_committed;
  }
  const std::vector<ServerUpdate>* updates = world.server ? &world.server->updates() : nullptr;
  RunSummary summary = summarize_run(scenario, policy, recorder, tally, updates);
  int fingerprinted = 0;  // the first worker that finished
  while (!workers[fingerprinted].loop->finished()) ++fingerprinted;
  if (reused) {
    summary.params_fingerprint = reused->params_fingerprint;
    summary.final_validation_loss = reused->final_validation_loss;
  } else if (!timing_only) {
    summary.params_fingerprint = params_fingerprint(workers[fingerprinted].model->parameters());
    // With a validation split, every finished worker's final model scored on it (outside the clock).
    std::vector<double> losses;
    if (scenario.data.validation_fraction > 0) {
      for (const SimWorker& w : workers) {
        if (w.loop->finished()) losses.push_back(w.loop->evaluate_on(Split::validation));
      }
    }
    summary.final_validation_loss = final_validation_loss(scenario, losses);
  }
  const LinkReport links = link_meter.report(scenario.link_bucket_s, end_s);
  for (const LinkTraffic& l : links.links) {  // a worker's own link cut: on that worker's record
    if (l.worker < 0) continue;
    for (const auto& [start_s, stop_s] : l.off) recorder.event({l.worker, EventKind::link_off, start_s, stop_s, 0, -1});
  }
  std::vector<std::string> names;
  for (int rank = 0; rank < world_size; ++rank) {
    names.push_back("worker " + std::to_string(rank) + " (" + scenario.platform.hosts[rank].name + ")");
  }
  write_run_results(dir, scenario, recorder, links, names, updates, summary);
}

}  // namespace locosim
