// Means over seeds with their 95% confidence half-width, checked against hand computations; the seed
// table and seeds.csv carry them, and say which policies the seeds cannot tell apart.
#include "report/seed_table.hpp"

#include <cmath>

#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("confidence: Student t quantiles and the half-width of 3 and 5 values, by hand") {
  CHECK(student_t975(1) == doctest::Approx(12.7062047).epsilon(1e-9));
  CHECK(student_t975(2) == doctest::Approx(4.3026527).epsilon(1e-9));
  CHECK(student_t975(4) == doctest::Approx(2.7764451).epsilon(1e-9));
  // Past the table, the expansion: t(0.975, 31) = 2.0395134, t(0.975, 99) = 1.9842169.
  CHECK(student_t975(31) == doctest::Approx(2.0395134).epsilon(1e-7));
  CHECK(student_t975(99) == doctest::Approx(1.9842169).epsilon(1e-7));
  CHECK(student_t975(30) > student_t975(31));

  // 1, 2, 3: mean 2, s = 1, half-width 4.3026527 · 1 / √3 = 2.4841377.
  const Interval three = interval95({1.0, 2.0, 3.0});
  CHECK(three.n == 3);
  CHECK(three.mean == doctest::Approx(2.0));
  CHECK(three.half_width == doctest::Approx(2.4841377).epsilon(1e-7));
  // 2, 4, 4, 4, 5: mean 3.8, s² = (1.8² + 3 · 0.2² + 1.2²) / 4 = 1.2, half-width 2.7764451 · √1.2 / √5 = 1.3601748.
  const Interval five = interval95({2.0, 4.0, 4.0, 4.0, 5.0});
  CHECK(five.n == 5);
  CHECK(five.mean == doctest::Approx(3.8));
  CHECK(five.half_width == doctest::Approx(1.3601748).epsilon(1e-7));
  // A run without a loss (NaN) is left out; one value has no spread.
  const Interval with_nan = interval95({1.0, std::nan(""), 3.0});
  CHECK(with_nan.n == 2);
  CHECK(with_nan.half_width == doctest::Approx(12.7062047 * std::sqrt(2.0) / std::sqrt(2.0)));
  CHECK(std::isnan(interval95({4.0}).half_width));
  CHECK(interval95({4.0}).mean == 4.0);
  CHECK(std::isnan(interval95({}).mean));

  CHECK(overlap(three, five));                            // [-0.48, 4.48] and [2.44, 5.16]
  CHECK_FALSE(overlap(Interval{1, 0.1, 3}, Interval{2, 0.5, 3}));
  CHECK(overlap(Interval{1, 0.5, 3}, Interval{2, 0.5, 3}));  // touching: not apart
}

namespace {

RunSummary run(const std::string& label, double eval, double wall_s, std::optional<double> to_target = std::nullopt) {
  RunSummary r;
  r.label = label;
  r.policy = label;
  r.workers = 2;
  r.wall_clock_s = wall_s;
  r.sent_bytes_per_worker = label == "ddp" ? 4e6 : 1e5;
  r.final_train_loss = eval - 0.1;
  r.final_eval_loss = eval;
  r.target_loss = 3.0;
  r.time_to_target_s = to_target;
  r.eval_curve = {{wall_s / 2, eval + 1}, {wall_s, eval}};
  return r;
}

}  // namespace

TEST_CASE("seed table: mean ± half-width per policy, seeds that reach the target, and pairs it cannot tell apart") {
  // ddp's eval losses 1, 2, 3 (the hand case above); diloco's 2.9, 3.0, 3.1; demo's 9, 9, 9.
  const std::vector<std::vector<RunSummary>> per_seed = {
      {run("ddp", 1.0, 100, 50.0), run("diloco", 2.9, 40, 30.0), run("demo", 9.0, 30)},
      {run("ddp", 2.0, 100, 60.0), run("diloco", 3.0, 40), run("demo", 9.0, 30)},
      {run("ddp", 3.0, 100, 70.0), run("diloco", 3.1, 40, 35.0), run("demo", 9.0, 30)},
  };
  const std::vector<SeedSummary> rows = summarize_seeds({1, 2, 3}, per_seed);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].label == "ddp");
  CHECK(rows[0].seeds == std::vector<uint64_t>{1, 2, 3});
  CHECK(rows[0].final_eval_loss.mean == doctest::Approx(2.0));
  CHECK(rows[0].final_eval_loss.half_width == doctest::Approx(2.4841377).epsilon(1e-7));
  CHECK(rows[0].reached_target == 3);
  CHECK(rows[1].reached_target == 2);
  CHECK(rows[1].time_to_target_s.mean == doctest::Approx(32.5));
  CHECK(rows[2].reached_target == 0);
  CHECK(rows[2].final_eval_loss.half_width == 0);
  // At equal wall-clock (demo finishes first, at 30 s): ddp's curve then reads its first point, eval + 1.
  CHECK(rows[0].eval_loss_at_equal_time.n == 0);  // ddp's first evaluation is at 50 s: none by 30 s
  CHECK(rows[2].eval_loss_at_equal_time.mean == doctest::Approx(9.0));

  const auto pairs = indistinguishable(rows, &SeedSummary::final_eval_loss);
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0] == std::pair<std::string, std::string>("ddp", "diloco"));

  const std::string table = format_seed_table(rows);
  CAPTURE(table);
  CHECK(table.find("3 seeds (1, 2, 3): mean ± half-width of its 95% confidence interval (Student t, 2 degrees") !=
        std::string::npos);
  CHECK(table.find("2.000 ± 2.484") != std::string::npos);
  CHECK(table.find("3.000 ± 0.248") != std::string::npos);  // 4.3026527 · 0.1 / √3
  CHECK(table.find("9.000 ± 0.000") != std::string::npos);
  CHECK(table.find("(3/3)") != std::string::npos);
  CHECK(table.find("(2/3)") != std::string::npos);
  CHECK(table.find("not reached") != std::string::npos);
  CHECK(table.find("eval loss: not distinguishable at 3 seeds (intervals overlap): ddp ~ diloco\n") != std::string::npos);

  const std::string header = seeds_csv_header();
  CHECK(header.rfind("label,policy,seeds,wall_clock_s_mean,wall_clock_s_ci95,", 0) == 0);
  const std::string row = seeds_csv_row(rows[0]);
  CHECK(row.rfind("ddp,ddp,3,100,0,", 0) == 0);
  CHECK(row.find(",2,2.48413769,") != std::string::npos);  // final_eval_loss mean and half-width
}

TEST_CASE("seed table: utilization per accelerator type and what a changing world cost, as means over seeds") {
  auto on = [](const std::string& label, int lost, double wasted_s, double a100) {
    RunSummary r;
    r.label = label;
    r.policy = label;
    r.final_eval_loss = 3;
    r.workers_lost = lost;
    r.compute_wasted_s = wasted_s;
    r.utilization_by_accelerator = {{"a100", 2, a100 - 0.1, a100, a100 + 0.1}, {"rtx3090", 1, 0.5, 0.5, 0.5}};
    return r;
  };
  const auto rows = summarize_seeds({1, 2}, {{on("ddp", 1, 10, 0.2)}, {on("ddp", 2, 30, 0.4)}});
  const std::string table = format_seed_table(rows);
  CAPTURE(table);
  CHECK(table.find("a100 util") != std::string::npos);
  CHECK(table.find("30.0% (20-40)") != std::string::npos);  // means of the workers' mean, least and most
  CHECK(table.find("   1.5  ") != std::string::npos);         // workers lost: 1 and 2
  CHECK(table.find("20.0 s") != std::string::npos);           // compute wasted: 10 s and 30 s
}
