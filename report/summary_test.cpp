// RunSummary: derived from recorded rows; the table ranks by time to target and compares traffic.
#include "report/summary.hpp"

#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("summary: utilization, bytes per worker (the relay's flows excluded), time to target") {
  Recorder rec;
  rec.event({0, EventKind::compute, 0, 3, 0, -1});
  rec.event({1, EventKind::compute, 0, 1, 0, -1});
  rec.event({0, EventKind::send, 3, 4, 100, 1});
  rec.event({1, EventKind::recv, 3, 4, 100, 0});
  rec.event({2, EventKind::send, 3, 4, 999, 0});  // the relay, recorded as worker K = 2
  rec.metric({2.0, 0, 1, 10, 3.0, 2.9});
  rec.metric({2.5, 1, 1, 10, 3.0, 2.7});
  rec.metric({4.0, 0, 2, 20, 2.0, 2.4});
  rec.metric({4.0, 1, 2, 20, 2.0, 2.2});
  RunSummary s = summarize(rec, 2, 2.5);
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
