// Section: every bad value names file, line, column, dotted key and the constraint.
#include "config/section.hpp"

#include "config/error.hpp"
#include "config/platform_test_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim;
using platform_test::error_of;


TEST_CASE("section reads typed values and records them in the resolved tree") {
  Section s = Section::load_string("steps: 10\nlr: 0.5\nname: x\non: true\n", "a.yaml");
  CHECK(s.integer("steps") == 10);
  CHECK(s.number("lr") == 0.5);
  CHECK(s.text("name") == "x");
  CHECK(s.flag("on") == true);
  CHECK(s.integer("batch", 8) == 8);
  s.finish();
  std::string resolved = s.resolved_yaml();
  CHECK(resolved.find("batch: 8") != std::string::npos);
  CHECK(resolved.find("steps: 10") != std::string::npos);
}

TEST_CASE("section errors carry file, line, column, dotted key and constraint") {
  Section s = Section::load_string("train:\n  steps: 0\n  lr: abc\n", "s.yaml");
  Section train = s.child("train");
  ConfigError e = error_of([&] { train.integer("steps", 1, Range::positive()); });
  CHECK(e.file() == "s.yaml");
  CHECK(e.line() == 2);
  CHECK(e.column() == 10);
  CHECK(e.key() == "train.steps");
  CHECK(std::string(e.what()) == "s.yaml:2:10: train.steps: must be > 0, got 0");
  ConfigError e2 = error_of([&] { train.number("lr"); });
  CHECK(std::string(e2.what()).find("must be a number, got 'abc'") != std::string::npos);
}

TEST_CASE("section rejects unknown keys with a near-miss hint") {
  Section s = Section::load_string("stpes: 3\n", "s.yaml");
  s.integer("steps", 1);
  ConfigError e = error_of([&] { s.finish(); });
  CHECK(e.key() == "stpes");
  CHECK(e.line() == 1);
  CHECK(std::string(e.what()).find("did you mean 'steps'") != std::string::npos);
}

TEST_CASE("section rejects duplicate keys, bad YAML and non-mapping files") {
  CHECK(std::string(error_of([] { Section::load_string("a: 1\na: 2\n", "d.yaml"); }).what()).find("duplicate key") !=
        std::string::npos);
  ConfigError syntax = error_of([] { Section::load_string("a: [1, 2\n", "y.yaml"); });
  CHECK(syntax.line() >= 1);
  CHECK(std::string(syntax.what()).find("invalid YAML") != std::string::npos);
  CHECK(std::string(error_of([] { Section::load_string("- 1\n", "l.yaml"); }).what()).find("expected a mapping") !=
        std::string::npos);
  CHECK(std::string(error_of([] { Section::load_file("/nonexistent/x.yaml"); }).what()).find("cannot be read") !=
        std::string::npos);
}

TEST_CASE("quantities parse with their units and reject bad ones") {
  CHECK(*parse_quantity("100 Mbps", Quantity::bandwidth_bps) == doctest::Approx(100e6));
  CHECK(*parse_quantity("12.5MBps", Quantity::bandwidth_bps) == doctest::Approx(100e6));
  CHECK(*parse_quantity("20 ms", Quantity::duration_s) == doctest::Approx(0.02));
  CHECK(*parse_quantity("5us", Quantity::duration_s) == doctest::Approx(5e-6));
  CHECK(*parse_quantity("989 TFLOPS", Quantity::flops) == doctest::Approx(989e12));
  CHECK(*parse_quantity("4 GiB", Quantity::bytes) == doctest::Approx(4294967296.0));
  std::string why;
  CHECK_FALSE(parse_quantity("100 Mbs", Quantity::bandwidth_bps, &why));
  CHECK(why.find("unit 'Mbs'") != std::string::npos);
  CHECK_FALSE(parse_quantity("100", Quantity::bandwidth_bps, &why));
  CHECK(why.find("no unit") != std::string::npos);
  CHECK_FALSE(parse_quantity("fast", Quantity::duration_s, &why));

  Section s = Section::load_string("link:\n  bandwidth: 10 Mbs\n", "p.yaml");
  Section link = s.child("link");
  ConfigError e = error_of([&] { link.quantity("bandwidth", Quantity::bandwidth_bps); });
  CHECK(e.key() == "link.bandwidth");
  CHECK(e.line() == 2);
}

TEST_CASE("lists accept bare scalars as the named key and name their items") {
  Section s = Section::load_string("policies:\n  - ddp\n  - name: diloco\n    inner_steps: -1\n", "s.yaml");
  auto items = s.list("policies", "name");
  REQUIRE(items.size() == 2);
  CHECK(items[0].text("name") == "ddp");
  CHECK(items[1].text("name") == "diloco");
  ConfigError e = error_of([&] { items[1].integer("inner_steps", 500, Range::positive()); });
  CHECK(e.key() == "policies[1].inner_steps");
  CHECK(e.line() == 4);
}

TEST_CASE("choices, number lists and relative paths") {
  Section s = Section::load_string("mode: sideways\nbetas: [0.9]\ndata: ../corpus.txt\n", "dir/s.yaml");
  CHECK(std::string(error_of([&] { s.choice("mode", {"iid", "non_iid"}); }).what()).find("one of: iid, non_iid") !=
        std::string::npos);
  CHECK(std::string(error_of([&] { s.numbers("betas", 2, std::nullopt); }).what()).find("list of 2 numbers") !=
        std::string::npos);
  CHECK(s.file_path("data") == "corpus.txt");
}
