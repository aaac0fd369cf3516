// check --explain's extrapolation: a probe's start-up is counted once, not once per probe's worth of steps.
#include "cli/explain.hpp"

#include "tests/doctest_torch.hpp"

using namespace locosim;

TEST_CASE("explain: two probes tell the start-up from the cost per step, and the start-up is counted once") {
  // 1 s of start-up and 0.1 s a step: 10 steps in 2 s, 20 in 3 s; 500 steps take 51 s, not 25 x 3 s.
  CHECK(extrapolated_seconds(10, 2.0, 20, 3.0, 500) == doctest::Approx(51.0));
  // A start-up that the noise makes negative is none.
  CHECK(extrapolated_seconds(10, 0.5, 20, 2.5, 100) == doctest::Approx(20.0));
  // Noise left the longer probe no slower: the longer one scaled whole, as without a second probe.
  CHECK(extrapolated_seconds(10, 3.0, 20, 3.0, 500) == doctest::Approx(75.0));
  CHECK(extrapolated_seconds(10, 3.5, 20, 3.0, 500) == doctest::Approx(75.0));
}
