// Policies on the in-process transport: identities that pin the update rules.
#include "algorithms/policies.hpp"

#include <fstream>
#include <iterator>
#include <set>

#include "algorithms/ddp.hpp"
#include "algorithms/diloco.hpp"
#include "algorithms/policy_registry.hpp"
#include "algorithms/policy_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using namespace locosim::policy_test;

TEST_CASE("policy entries parse with defaults and reject bad values") {
  PolicySpec d = spec_from("name: diloco\n");
  auto& c = std::any_cast<const DiLoCoConfig&>(d.config);
  CHECK(c.inner_steps == 500);
  CHECK(c.outer.lr == doctest::Approx(0.7));
  CHECK(c.outer.momentum == doctest::Approx(0.9));
  CHECK(d.label == "diloco");
  CHECK_THROWS_WITH(spec_from("name: diloco\ninner_steps: 0\n"), doctest::Contains("inner_steps: must be in [1, 10000000], got 0"));
  CHECK_THROWS_WITH(spec_from("name: diloco\nwire: fp8\n"), doctest::Contains("wire: must be one of"));
  CHECK_THROWS_WITH(spec_from("name: no_such_policy\n"), doctest::Contains("name: must be one of: ddp, diloco"));
  CHECK_THROWS_WITH(spec_from("name: ddp\ninner_steps: 3\n"), doctest::Contains("unknown key"));
}

TEST_CASE("ddp: buckets as PyTorch's reducer makes them, reverse order, first cap 1 MiB then 25 MiB") {
  constexpr double kMiB = 1024.0 * 1024.0;
  const DdpConfig defaults = std::any_cast<const DdpConfig&>(spec_from("name: ddp\n").config);
  CHECK(defaults.overlap);
  CHECK(defaults.bucket_mb == 25);
  CHECK(defaults.first_bucket_mb == 1);
  // Parameters 0..5 of 10, 20, 0.5, 0.7, 30 and 2 MiB: from the last one, 2 MiB closes the first
  // bucket; 30 the second; 0.7 + 0.5 + 20 (21.2 < 25) + 10 the third.
  const std::vector<double> mib = {10, 20, 0.5, 0.7, 30, 2};
  std::vector<double> bytes;
  for (double m : mib) bytes.push_back(m * kMiB);
  CHECK(ddp_buckets(bytes, defaults) == std::vector<std::vector<size_t>>{{5}, {4}, {3, 2, 1, 0}});
  DdpConfig small = defaults;
  small.first_bucket_mb = 3;
  small.bucket_mb = 15;
  CHECK(ddp_buckets(bytes, small) == std::vector<std::vector<size_t>>{{5, 4}, {3, 2, 1}, {0}});
  CHECK(ddp_buckets({}, defaults).empty());
  CHECK_THROWS_WITH(spec_from("name: ddp\nbucket_mb: 0\n"), doctest::Contains("bucket_mb"));
  CHECK_THROWS_WITH(spec_from("name: ddp\noverlap: sometimes\n"), doctest::Contains("overlap"));
}

TEST_CASE("DiLoCo with H=1, outer SGD lr 1, momentum 0 gives DDP's parameters under plain SGD") {
  const int world = 2, steps = 6;
  Outcome ddp = train(spec_from("name: ddp\n"), world, steps, plain_sgd(0.05));
  Outcome diloco = train(spec_from("name: diloco\ninner_steps: 1\nouter_lr: 1.0\nouter_momentum: 0.0\n"), world,
                         steps, plain_sgd(0.05));
  Outcome alone = train(spec_from("name: ddp\n"), 1, steps, plain_sgd(0.05));
  // θ − (θ − lr·g) is lr·g up to float rounding: equal within a few ulps of the parameters' size.
  CHECK(max_abs_diff(ddp.params, diloco.params) < 1e-6);
  // And the test can fail: the parameters did move, and differently from a single worker's.
  CHECK(max_abs_diff(ddp.params, alone.params) > 1e-4);
}

TEST_CASE("DiLoCo with momentum differs from DiLoCo without it") {
  Outcome a = train(spec_from("name: diloco\ninner_steps: 2\nouter_momentum: 0.0\n"), 2, 6, plain_sgd(0.05));
  Outcome b = train(spec_from("name: diloco\ninner_steps: 2\n"), 2, 6, plain_sgd(0.05));
  CHECK(max_abs_diff(a.params, b.params) > 1e-5);
}

TEST_CASE("the fp16 wire really rounds the pseudo-gradient") {
  Outcome f32 = train(spec_from("name: diloco\ninner_steps: 2\n"), 2, 4, plain_sgd(0.05));
  Outcome f16 = train(spec_from("name: diloco\ninner_steps: 2\nwire: fp16\n"), 2, 4, plain_sgd(0.05));
  double diff = max_abs_diff(f32.params, f16.params);
  CHECK(diff > 0);
  CHECK(diff < 1e-3);
}

TEST_CASE("each policy's loss falls on the test corpus") {
  OptimizerConfig adamw;
  adamw.lr = 3e-3;
  adamw.warmup_steps = 5;
  for (const char* yaml : {"name: ddp\n", "name: diloco\ninner_steps: 10\n"}) {
    CAPTURE(yaml);
    Outcome o = train(spec_from(yaml), 2, 60, adamw);
    CHECK(o.eval_loss_end < o.eval_loss_start - 1.5);
  }
}

TEST_CASE("registry: every entry's example parses into its policy, names are unique, and the fuzzer's dictionary has them") {
  std::ifstream in("fuzz/yaml.dict");
  const std::string dict((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!dict.empty());
  std::set<std::string> names;
  for (const PolicyEntry& e : policy_registry()) {
    CAPTURE(e.name);
    CHECK(names.insert(e.name).second);
    CHECK(find_policy(e.name) == &e);
    const PolicySpec spec = spec_from(e.example);
    CHECK(spec.name == e.name);
    CHECK(spec.config.has_value());
    // The traits the docs print are stated.
    for (const std::string* text : {&e.paper, &e.handover, &e.on_failed_collective, &e.bytes_per_round}) {
      CHECK(!text->empty());
    }
    // The example communicates within 12 steps (what the cross-policy tests run it for).
    if (const auto period = sync_period(spec)) CHECK(period->second <= 12);
    CHECK(dict.find("\"" + e.name + "\"") != std::string::npos);
  }
  CHECK(policy_names().size() == policy_registry().size());
  CHECK(find_policy("no_such_policy") == nullptr);
}

TEST_CASE("registry: the README's policy and failure tables and locosim policies name every registered policy") {
  std::ifstream in("README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!readme.empty());
  const std::string policies = readme.substr(readme.find("\n## Policies\n"));
  const std::string failures = readme.substr(readme.find("| policy | when a collective fails |"));
  const std::string table = policy_table();
  for (const PolicyEntry& e : policy_registry()) {
    CAPTURE(e.name);
    CHECK(policies.find("| `" + e.name + "` |") != std::string::npos);  // its row in the policy table
    const std::string failure_rows = failures.substr(0, failures.find("\n\n"));
    CHECK(failure_rows.find("`" + e.name + "`") != std::string::npos);
    CHECK(table.find("| `" + e.name + "` | " + e.paper + " | " + e.bytes_per_round) != std::string::npos);
  }
}

TEST_CASE("registry: the collective trait names what the policy calls, pruned DiLoCo's all-gather included") {
  const auto collective = [](const std::string& yaml) {
    const PolicySpec p = spec_from(yaml);
    return p.entry().collective(p.config);
  };
  CHECK(collective("name: ddp\n") == RoundCollective::all_reduce);
  CHECK(collective("name: diloco\n") == RoundCollective::all_reduce);
  CHECK(collective("name: diloco\nprune: 0.5\n") == RoundCollective::all_gather);
  CHECK(collective("name: demo\n") == RoundCollective::all_gather);
  CHECK(collective("name: sparseloco\n") == RoundCollective::all_gather);
  CHECK(collective("name: noloco\n") == RoundCollective::subgroup_all_reduce);
  CHECK(collective("name: async_diloco\n") == RoundCollective::server);
}
