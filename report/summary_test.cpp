// RunSummary: derived from recorded rows; the table ranks by time to target, compares traffic and
// shows utilization per accelerator type; summary.json and summary.csv carry it.
#include "report/summary.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/doctest_torch.hpp"

namespace fs = std::filesystem;
using namespace locosim;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("locosim-summary-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Three workers on two accelerator types (a100, rtx3090, a100 by rank) and a relay, recorded as worker 3,
// whose compute is not a worker's. Wall-clock 4 s; computing 3, 2 and 4 s: utilization 0.75, 0.5, 1.
Recorder uneven_recorder() {
  Recorder rec;
  rec.event({0, EventKind::compute, 0, 3, 0, -1});
  rec.event({1, EventKind::compute, 0, 1, 0, -1});
  rec.event({1, EventKind::compute, 2, 3, 0, -1});
  rec.event({2, EventKind::compute, 0, 4, 0, -1});
  rec.event({3, EventKind::compute, 0, 4, 0, -1});
  for (int w = 0; w < 3; ++w) rec.metric({4.0, w, 1, 10, 3.0, 2.9, Sync::none, /*last=*/true});
  return rec;
}

const std::vector<std::string> kUneven = {"a100", "rtx3090", "a100"};

}  // namespace

TEST_CASE("summary: utilization, bytes per worker (the relay's flows excluded), time to target") {
  Recorder rec;
  rec.event({0, EventKind::compute, 0, 3, 0, -1});
  rec.event({1, EventKind::compute, 0, 1, 0, -1});
  rec.event({0, EventKind::send, 3, 4, 100, 1});
  rec.event({1, EventKind::recv, 3, 4, 100, 0});
  rec.event({2, EventKind::send, 3, 4, 999, 0});  // the relay, recorded as worker K = 2
  rec.metric({2.0, 0, 1, 10, 3.0, 2.9});
  rec.metric({2.5, 1, 1, 10, 3.0, 2.7});
  rec.metric({4.0, 0, 2, 20, 2.0, 2.4, Sync::none, /*last=*/true});
  rec.metric({4.0, 1, 2, 20, 2.0, 2.2, Sync::none, /*last=*/true});
  RunSummary s = summarize(rec, {"h100", "h100"}, 2.5);
  CHECK(s.wall_clock_s == 4.0);
  CHECK(s.compute_utilization == doctest::Approx((3.0 / 4 + 1.0 / 4) / 2));
  CHECK(s.sent_bytes_per_worker == doctest::Approx(50));
  CHECK(s.recv_bytes_per_worker == doctest::Approx(50));
  CHECK(s.final_eval_loss == doctest::Approx(2.3));
  REQUIRE(s.time_to_target_s.has_value());
  CHECK(*s.time_to_target_s == 4.0);  // step 1's mean eval (2.8) misses 2.5, step 2's (2.3) reaches it
}

TEST_CASE("summary: the table ranks by time to target and shows traffic relative to DDP") {
  RunSummary ddp, fast, never;
  ddp.label = ddp.policy = "ddp";
  fast.label = fast.policy = "diloco";
  never.label = never.policy = "co2";
  for (RunSummary* r : {&ddp, &fast, &never}) r->target_loss = 2.0;
  ddp.time_to_target_s = 100;
  fast.time_to_target_s = 10;
  ddp.sent_bytes_per_worker = 5000;
  fast.sent_bytes_per_worker = 50;
  never.sent_bytes_per_worker = 2500;
  std::string table = format_table({ddp, never, fast});
  // Rows start a line; the header mentions "vs ddp" too.
  CHECK(table.find("\ndiloco") < table.find("\nddp "));
  CHECK(table.find("\nddp ") < table.find("\nco2"));
  CHECK(table.find("\nco2") != std::string::npos);
  CHECK(table.find("1/100") != std::string::npos);
  CHECK(table.find("0.50x") != std::string::npos);
  CHECK(table.find("not reached") != std::string::npos);
}

TEST_CASE("summary: utilization min, max and per accelerator type, in order of first rank") {
  RunSummary s = summarize(uneven_recorder(), kUneven, std::nullopt);
  CHECK(s.wall_clock_s == 4.0);
  CHECK(s.compute_utilization == doctest::Approx((0.75 + 0.5 + 1.0) / 3));
  CHECK(s.utilization_min == doctest::Approx(0.5));
  CHECK(s.utilization_max == doctest::Approx(1.0));  // the relay's 4 s are not worker 2's, nor a fourth worker's
  REQUIRE(s.utilization_by_accelerator.size() == 2);
  const AcceleratorUtilization& a100 = s.utilization_by_accelerator[0];
  CHECK(a100.accelerator == "a100");
  CHECK(a100.workers == 2);
  CHECK(a100.min == doctest::Approx(0.75));
  CHECK(a100.mean == doctest::Approx(0.875));
  CHECK(a100.max == doctest::Approx(1.0));
  const AcceleratorUtilization& rtx = s.utilization_by_accelerator[1];
  CHECK(rtx.accelerator == "rtx3090");
  CHECK(rtx.workers == 1);
  CHECK(rtx.min == doctest::Approx(0.5));
  CHECK(rtx.mean == doctest::Approx(0.5));
  CHECK(rtx.max == doctest::Approx(0.5));
}

TEST_CASE("summary: a worker that recorded nothing counts as idle, 0, in the mean and the min") {
  Recorder rec;
  rec.event({0, EventKind::compute, 0, 2, 0, -1});
  rec.metric({4.0, 0, 1, 10, 3.0, 2.9, Sync::none, /*last=*/true});  // worker 1 never came up
  RunSummary s = summarize(rec, {"h100", "h100"}, std::nullopt);
  CHECK(s.compute_utilization == doctest::Approx(0.25));
  CHECK(s.utilization_min == 0);
  CHECK(s.utilization_max == doctest::Approx(0.5));
  REQUIRE(s.utilization_by_accelerator.size() == 1);
  CHECK(s.utilization_by_accelerator[0].workers == 2);
}

TEST_CASE("summary: equal workers' mean utilization is theirs exactly, not a rounding error outside [min, max]") {
  // 100 workers computing 0.3 s of 7 s: summed in floating point, the mean lands 3e-17 above each one's
  // utilization (and the sum divided by the count below it); plotted as whiskers from the mean to the
  // least and the most, one would be negative.
  Recorder rec;
  const int workers = 100;
  for (int w = 0; w < workers; ++w) {
    rec.event({w, EventKind::compute, 0, 0.3, 0, -1});
    rec.metric({7.0, w, 1, 10, 3.0, 2.9, Sync::none, /*last=*/true});
  }
  RunSummary s = summarize(rec, std::vector<std::string>(workers, "h100"), std::nullopt);
  CHECK(s.utilization_min == 0.3 / 7.0);
  CHECK(s.utilization_max == 0.3 / 7.0);
  CHECK(s.compute_utilization == 0.3 / 7.0);
  REQUIRE(s.utilization_by_accelerator.size() == 1);
  const AcceleratorUtilization& h100 = s.utilization_by_accelerator[0];
  CHECK(h100.mean == h100.min);
  CHECK(h100.mean == h100.max);
}

TEST_CASE("summary: summary.json carries the utilization spread back, and summary.csv its min and max") {
  const fs::path dir = scratch("json");
  RunSummary s = summarize(uneven_recorder(), kUneven, std::nullopt);
  s.label = s.policy = "diloco";
  write_summary_json(s, (dir / "summary.json").string());
  RunSummary back = read_summary_json((dir / "summary.json").string());
  CHECK(back.compute_utilization == s.compute_utilization);
  CHECK(back.utilization_min == s.utilization_min);
  CHECK(back.utilization_max == s.utilization_max);
  REQUIRE(back.utilization_by_accelerator.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    const AcceleratorUtilization &a = s.utilization_by_accelerator[i], &b = back.utilization_by_accelerator[i];
    CHECK(b.accelerator == a.accelerator);
    CHECK(b.workers == a.workers);
    CHECK(b.min == a.min);
    CHECK(b.mean == a.mean);
    CHECK(b.max == a.max);
  }
  write_summary_csv({back}, (dir / "summary.csv").string());
  const std::string csv = read_text(dir / "summary.csv");
  CHECK(csv.rfind("label,policy,workers,steps,tokens,wall_clock_s,compute_utilization,utilization_min,"
                  "utilization_max,sent_bytes_per_worker,", 0) == 0);
  CHECK(csv.find("\ndiloco,diloco,3,1,30,4,0.750000,0.500000,1.000000,0,") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("summary: a summary.json from before the utilization spread reads with it unknown") {
  const fs::path dir = scratch("old-json");
  std::ofstream((dir / "summary.json").string())
      << R"({"label": "ddp", "policy": "ddp", "workers": 2, "steps": 12, "tokens": 100, "wall_clock_s": 10.0,
             "compute_utilization": 0.5, "sent_bytes_per_worker": 1.0, "recv_bytes_per_worker": 1.0,
             "final_train_loss": 3.0, "final_eval_loss": 3.1, "target_loss": null, "time_to_target_s": null})";
  RunSummary s = read_summary_json((dir / "summary.json").string());
  CHECK(s.compute_utilization == 0.5);
  CHECK_FALSE(s.utilization_spread_known());
  CHECK(s.utilization_min == 0);
  CHECK(s.utilization_max == 0);
  // Unknown: empty in summary.csv, and the table shows the mean alone.
  write_summary_csv({s}, (dir / "summary.csv").string());
  CHECK(read_text(dir / "summary.csv").find("\nddp,ddp,2,12,100,10,0.500000,,,1,") != std::string::npos);
  const std::string table = format_table({s});
  CHECK(table.find(" 50.0%  ") != std::string::npos);
  CHECK(table.find("50.0% (") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("summary: the table shows min-max, and a block per accelerator type only when there are several") {
  RunSummary uneven = summarize(uneven_recorder(), kUneven, std::nullopt);
  uneven.label = uneven.policy = "ddp";
  const std::string table = format_table({uneven});
  CHECK(table.find("mean (min-max)") != std::string::npos);
  CHECK(table.find("75.0% (50-100)") != std::string::npos);
  // The block: a column per type in rank order, its worker count, and the range only where it has one.
  const size_t block = table.find("\npolicy", 1);
  REQUIRE(block != std::string::npos);
  CHECK(table.find("a100 util", block) < table.find("rtx3090 util", block));
  CHECK(table.find("(2 workers)", block) < table.find("(1 worker)", block));
  CHECK(table.find("87.5% (75-100)", block) != std::string::npos);
  CHECK(table.find("50.0%\n", block) != std::string::npos);

  RunSummary same = summarize(uneven_recorder(), {"h100", "h100", "h100"}, std::nullopt);
  same.label = same.policy = "ddp";
  const std::string one_type = format_table({same});
  CHECK(one_type.find("75.0% (50-100)") != std::string::npos);
  CHECK(one_type.find("h100 util") == std::string::npos);
  CHECK(one_type.find("\npolicy") == std::string::npos);
}

TEST_CASE("summary: the eval curve averages each worker's latest evaluation, and the table reads it at the first finish") {
  Recorder rec;
  rec.event({0, EventKind::compute, 0, 1, 0, -1});
  rec.metric({1.0, 0, 5, 50, 3.0, 3.0});                             // worker 1 has not evaluated: no point
  rec.metric({2.0, 1, 2, 20, 3.0, 4.0});                             // both have: (3 + 4) / 2
  rec.metric({3.0, 0, 10, 100, 2.0, 2.0, Sync::none, /*last=*/true});  // (2 + 4) / 2
  rec.metric({6.0, 1, 4, 40, 2.0, 1.0, Sync::none, /*last=*/true});    // (2 + 1) / 2
  RunSummary s = summarize(rec, {"a", "b"}, std::nullopt);
  REQUIRE(s.eval_curve.size() == 3);
  CHECK(s.eval_curve[0] == std::pair<double, double>{2.0, 3.5});
  CHECK(s.eval_curve[1] == std::pair<double, double>{3.0, 3.0});
  CHECK(s.eval_curve[2] == std::pair<double, double>{6.0, 1.5});
  CHECK_FALSE(s.eval_loss_at(1.5).has_value());
  CHECK(*s.eval_loss_at(3.0) == 3.0);
  CHECK(*s.eval_loss_at(5.9) == 3.0);
  // A third worker lost before its first evaluation is left out of the curve, not waited for.
  RunSummary with_lost = summarize(rec, {"a", "b", "c"}, std::nullopt);
  CHECK(with_lost.eval_curve == s.eval_curve);
  const fs::path dir = scratch("curve");
  write_summary_json(s, (dir / "summary.json").string());
  CHECK(read_summary_json((dir / "summary.json").string()).eval_curve == s.eval_curve);

  RunSummary quick = s;
  quick.label = "quick";
  quick.wall_clock_s = 3.0;
  s.label = "slow";
  s.wall_clock_s = 6.0;
  const std::string table = format_table({quick, s});
  CHECK(table.find("at 3.0 s") != std::string::npos);
  CHECK(std::count(table.begin(), table.end(), '\n') >= 4);
  // Both rows read at 3 s: 3.000, where "slow" ends at 1.5.
  CHECK(std::regex_search(table, std::regex("slow .* 1\\.500 +3\\.000\n")));
  CHECK(std::regex_search(table, std::regex("quick .* 1\\.500 +3\\.000\n")));
}

TEST_CASE("summary: a parameter server's pushes give the staleness fields, without one they stay null") {
  RunSummary s = summarize(uneven_recorder(), kUneven, std::nullopt);
  set_staleness(s, {});
  CHECK_FALSE(s.pushes_applied.has_value());
  CHECK_FALSE(s.staleness_mean.has_value());
  set_staleness(s, {{1.0, 0, 1, 0, 10}, {2.0, 1, 2, 1, 10}, {2.5, 2, 3, 2, 5}, {3.0, 0, 4, 2, 10}});
  CHECK(*s.pushes_applied == 4);
  CHECK(*s.staleness_mean == doctest::Approx(5.0 / 4));
  CHECK(*s.staleness_max == 2);
  const fs::path dir = scratch("staleness");
  write_summary_json(s, (dir / "summary.json").string());
  const RunSummary back = read_summary_json((dir / "summary.json").string());
  CHECK(back.pushes_applied == s.pushes_applied);
  CHECK(back.staleness_mean == s.staleness_mean);
  CHECK(back.staleness_max == s.staleness_max);
  RunSummary none = summarize(uneven_recorder(), kUneven, std::nullopt);
  write_summary_json(none, (dir / "none.json").string());
  CHECK_FALSE(read_summary_json((dir / "none.json").string()).staleness_max.has_value());
}
