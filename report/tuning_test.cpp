// Tuned comparisons choose each entry's point on the validation split, never on the eval (test) split
// the tables report.
#include "report/tuning.hpp"

#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

RunSummary scored(const std::string& label, double validation, double test) {
  RunSummary r;
  r.label = label;
  r.policy = "diloco";
  r.final_validation_loss = validation;
  r.final_eval_loss = test;
  return r;
}

const std::vector<TunedLabel> kLabels = {
    {"ddp", "", {}},
    {"diloco.outer_lr-0.3", "diloco", {{"outer_lr", "0.3"}}},
    {"diloco.outer_lr-0.7", "diloco", {{"outer_lr", "0.7"}}},
    {"diloco.outer_lr-1.0", "diloco", {{"outer_lr", "1.0"}}},
};

}  // namespace

TEST_CASE("tuning: the point of lowest mean validation loss is chosen, whatever the test split says") {
  // On the test split 0.3 is best, on validation 0.7: a choice that read the test split would take 0.3.
  const std::vector<std::vector<RunSummary>> per_seed = {
      {scored("ddp", 2.0, 2.0), scored("diloco.outer_lr-0.3", 2.50, 1.00), scored("diloco.outer_lr-0.7", 2.10, 3.00),
       scored("diloco.outer_lr-1.0", 2.30, 2.00)},
      {scored("ddp", 2.1, 2.1), scored("diloco.outer_lr-0.3", 2.60, 1.10), scored("diloco.outer_lr-0.7", 2.20, 3.10),
       scored("diloco.outer_lr-1.0", 2.15, 2.10)},
  };
  // Means: 0.3 → 2.55, 0.7 → 2.15, 1.0 → 2.225 (1.0 wins the second seed alone: the mean decides).
  const std::vector<TuneChoice> choices = choose_tuned(kLabels, per_seed);
  REQUIRE(choices.size() == 2);
  CHECK(choices[0].entry == "ddp");
  CHECK(choices[0].chosen == "ddp");
  CHECK(choices[0].setting == "defaults");
  CHECK(choices[0].points == 1);
  CHECK(choices[1].entry == "diloco");
  CHECK(choices[1].chosen == "diloco.outer_lr-0.7");
  CHECK(choices[1].setting == "outer_lr=0.7");
  CHECK(choices[1].points == 3);
  CHECK(choices[1].validation.n == 2);
  CHECK(choices[1].validation.mean == doctest::Approx(2.15));

  // The comparison keeps the chosen runs under their entries' labels, with their test losses.
  const auto chosen = chosen_runs(choices, per_seed);
  REQUIRE(chosen.size() == 2);
  REQUIRE(chosen[0].size() == 2);
  CHECK(chosen[0][1].label == "diloco");
  CHECK(chosen[0][1].final_eval_loss == 3.00);
  const std::string block = format_tune_choices(choices);
  CAPTURE(block);
  CHECK(block.find("diloco  outer_lr=0.7") != std::string::npos);
  CHECK(block.find("2.150 ± ") != std::string::npos);
  CHECK(block.find("ddp     defaults") != std::string::npos);
}

TEST_CASE("tuning: a point without a validation loss is not chosen over one with it, and ties go to the earlier") {
  RunSummary missing = scored("diloco.outer_lr-0.3", 0, 0.5);
  missing.final_validation_loss.reset();
  const std::vector<TuneChoice> choices = choose_tuned(
      kLabels, {{scored("ddp", 2, 2), missing, scored("diloco.outer_lr-0.7", 2.2, 3), scored("diloco.outer_lr-1.0", 2.2, 1)}});
  REQUIRE(choices.size() == 2);
  CHECK(choices[1].chosen == "diloco.outer_lr-0.7");
  CHECK(choices[1].validation.n == 1);
}
