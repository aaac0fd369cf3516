// Section: every bad value names file, line, column, dotted key and the constraint.
#include "config/section.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/error.hpp"
#include "config/platform_test_util.hpp"
#include <doctest/doctest.h>

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

TEST_CASE("section: an optional key read only when present is still known, and a misspelt choice gets a hint") {
  // target_loss is read only if has() finds it: it is listed, and suggested, all the same.
  Section s = Section::load_string("steps: 3\ntarget_los: 2.5\n", "s.yaml");
  s.integer("steps", 1);
  CHECK_FALSE(s.has("target_loss"));
  const std::string message = error_of([&] { s.finish(); }).what();
  CHECK(message.find("known here: steps, target_loss)") != std::string::npos);
  CHECK(message.find("did you mean 'target_loss'?") != std::string::npos);
  Section c = Section::load_string("name: dilocoo\n", "c.yaml");
  const std::string choice = error_of([&] { c.choice("name", {"ddp", "diloco", "demo"}); }).what();
  CHECK(choice.find("got 'dilocoo'; did you mean 'diloco'?") != std::string::npos);
  Section far = Section::load_string("name: sparta\n", "f.yaml");
  CHECK(std::string(error_of([&] { far.choice("name", {"ddp", "diloco"}); }).what()).find("did you mean") == std::string::npos);
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

TEST_CASE("section: a quantity too large for a double is a ConfigError naming the key, not std::stod's exception") {
  std::string why;
  CHECK_FALSE(parse_quantity("1e400 Mbps", Quantity::bandwidth_bps, &why));
  CHECK(why.find("out of range") != std::string::npos);
  CHECK_FALSE(parse_quantity("-1e999 s", Quantity::duration_s, &why));
  CHECK_FALSE(parse_quantity("1e308 TFLOPS", Quantity::flops, &why));  // finite mantissa, infinite product
  Section s = Section::load_string("link:\n  bandwidth: 1e400 Mbps\n", "p.yaml");
  Section link = s.child("link");
  ConfigError e = error_of([&] { link.quantity("bandwidth", Quantity::bandwidth_bps); });
  CHECK(e.key() == "link.bandwidth");
  CHECK(e.line() == 2);
  CHECK(std::string(e.what()).find("got '1e400 Mbps', which is out of range") != std::string::npos);
}

TEST_CASE("section: a second YAML document is an error at its '---', not silently ignored") {
  ConfigError e = error_of([] { Section::load_string("a: 1\nb: 2\n---\nc: 3\n", "two.yaml"); });
  CHECK(e.file() == "two.yaml");
  CHECK(e.line() == 3);
  CHECK(std::string(e.what()).find("a second YAML document starts here") != std::string::npos);
  CHECK(error_of([] { Section::load_string("a: 1\n---\n", "empty-second.yaml"); }).line() == 2);
  // A leading '---' opens the first (and only) document.
  Section one = Section::load_string("---\na: 1\n", "one.yaml");
  CHECK(one.integer("a") == 1);
}

TEST_CASE("section: a lone ',' is not a mapping, and reading it ends (regression: endless empty documents)") {
  // Found by the fuzzer: yaml-cpp's parser reports empty documents at ',' without moving on, so
  // counting documents with YAML::LoadAll never returned and filled memory.
  ConfigError e = error_of([] { Section::load_string(",", "comma.yaml"); });
  CHECK(std::string(e.what()).find("expected a mapping of keys at the top level") != std::string::npos);
  CHECK_THROWS_AS(Section::load_string(",\n,\n", "commas.yaml"), ConfigError);
}

TEST_CASE("section: identifiers name folders: a letter or digit first, then [A-Za-z0-9._-], at most 64") {
  for (const char* good : {"a", "9", "diloco-h50", "run_1.b", "A.b-c_d"}) {
    CAPTURE(good);
    CHECK(is_identifier(good));
  }
  for (std::string bad : {"", ".", "..", ".hidden", "-x", "_x", "/abs/path", "a/b", "a b", "x\n", "é"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_identifier(bad));
  }
  CHECK(is_identifier(std::string(64, 'a')));
  CHECK_FALSE(is_identifier(std::string(65, 'a')));

  Section s = Section::load_string("label: '..'\nname: ok-1\n", "s.yaml");
  CHECK(s.identifier("name") == "ok-1");
  ConfigError e = error_of([&] { s.identifier("label"); });
  CHECK(e.key() == "label");
  CHECK(e.line() == 1);
  CHECK(std::string(e.what()).find("must be an identifier (a letter or digit, then letters, digits, '.', '_' or '-'; "
                                   "at most 64 characters): it names a folder; got '..'") != std::string::npos);
  // A default that is no identifier (a file's stem, say) is refused too, and says so.
  ConfigError defaulted = error_of([&] { s.identifier("title", std::string(".x")); });
  CHECK(std::string(defaulted.what()).find("got '.x' (the default: set title)") != std::string::npos);
}

TEST_CASE("section: load_file refuses a FIFO, a device and an oversized file without reading them") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("locosim-section-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string fifo = (dir / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // opening it would block until a writer comes
  ConfigError e = error_of([&] { Section::load_file(fifo); });
  CHECK(e.file() == fifo);
  CHECK(std::string(e.what()).find("is a FIFO (named pipe), not a regular file") != std::string::npos);
  CHECK(std::string(error_of([] { Section::load_file("/dev/zero"); }).what()).find("is a device") != std::string::npos);
  CHECK(std::string(error_of([&] { Section::load_file(dir.string()); }).what()).find("is a directory") !=
        std::string::npos);

  const fs::path big = dir / "big.yaml";
  std::ofstream(big) << "a: 1\n";
  fs::resize_file(big, kMaxYamlFileBytes + 1);  // sparse: nothing is written
  CHECK(std::string(error_of([&] { Section::load_file(big.string()); }).what())
            .find("is 16777217 bytes, more than the 16 MiB allowed") != std::string::npos);
  CHECK(regular_file_problem(big.string(), kMaxYamlFileBytes + 1) == "");
  fs::remove_all(dir);
}

TEST_CASE("section: a seed takes the whole uint64 range, and an integer past 64 bits is told its bounds") {
  // Regression: a seed of 2^64 - 1 (Scenario::seed is a uint64) "must be an integer".
  Section s = Section::load_string("seed: 18446744073709551615\nover: 18446744073709551616\nneg: -1\n"
                                   "steps: 99999999999999999999\n", "s.yaml");
  CHECK(s.unsigned_integer("seed") == 18446744073709551615ull);
  CHECK(s.unsigned_integer("absent", 1) == 1);
  for (const char* key : {"over", "neg"}) {
    CAPTURE(key);
    ConfigError e = error_of([&] { s.unsigned_integer(key); });
    CHECK(e.key() == key);
    CHECK(std::string(e.what()).find(": must be an integer in [0, 18446744073709551615], got '") != std::string::npos);
  }
  CHECK(s.resolved_yaml().find("seed: 18446744073709551615\n") != std::string::npos);
  ConfigError steps = error_of([&] { s.integer("steps", 1, Range::positive()); });
  CHECK(std::string(steps.what()) ==
        "s.yaml:4:8: steps: must be an integer in [1, 9223372036854775807], got '99999999999999999999'");
}

TEST_CASE("section: integer options of a command line get a file's words and plain bounds") {
  // Regression: CLI11's PositiveNumber printed its bounds as doubles, 150 digits long.
  CHECK(integer_option_problem("4", 1, 1024) == "");
  CHECK(integer_option_problem("1024", 1, 1024) == "");
  CHECK(integer_option_problem("-3", -5, 0) == "");
  for (const char* bad : {"0", "-1", "1025", "", "4x", "1e3", " 4", "99999999999999999999", "-"}) {
    CAPTURE(bad);
    CHECK(integer_option_problem(bad, 1, 1024) == std::string("must be an integer in [1, 1024], got '") + bad + "'");
  }
}

TEST_CASE("section: an override is read as the file's value, and an error at it names the option, not a line") {
  const std::string yaml = "train:\n  steps: 10\nhosts:\n  - {name: a, bw: 1}\n  - {name: b, bw: 2}\n";
  const auto loaded = [&](const std::vector<Override>& overrides) {
    Section top = Section::load_string(yaml, "a.yaml");
    top.apply_overrides(overrides);
    return top;
  };
  Section top = loaded({parse_override("train.steps = 20"), parse_override("hosts[b].bw=[3, 4]")});
  Section train = top.child("train");
  CHECK(train.integer("steps") == 20);
  std::vector<Section> hosts = top.list("hosts");
  CHECK(hosts[0].integer("bw") == 1);
  CHECK(hosts[1].is_list("bw"));
  CHECK(top.resolved_yaml().find("steps: 20") != std::string::npos);

  // A bad value: the option where the file's position would be, the dotted key, the constraint.
  Section bad = loaded({parse_override("train.steps=ten")});
  Section bad_train = bad.child("train");
  const ConfigError type = error_of([&] { bad_train.integer("steps"); });
  CHECK(std::string(type.what()) == "--set train.steps=ten: train.steps: must be an integer, got 'ten'");
  // A key of its own: unknown, strictly, with the hint.
  Section unknown = loaded({parse_override("train.stepz=3")});
  Section unknown_train = unknown.child("train");
  unknown_train.integer("steps");
  const ConfigError key = error_of([&] { unknown_train.finish(); });
  CHECK(key.file() == "--set train.stepz=3");
  CHECK(std::string(key.what()).find("train.stepz: unknown key (known here: steps); did you mean 'steps'?") != std::string::npos);
  // The file's own values keep their lines.
  const ConfigError file = error_of([&] { unknown.list("hosts")[0].integer("bw", std::nullopt, Range::at_least(5)); });
  CHECK(file.file() == "a.yaml");
  CHECK(file.line() == 4);
  CHECK(std::string(file.what()).find(": hosts[0].bw: must be >= 5, got 1") != std::string::npos);
  // A key that reaches nothing, a value that is no YAML, no '='.
  CHECK(std::string(error_of([&] { loaded({parse_override("hosts[2].bw=1")}); }).what()) ==
        "--set hosts[2].bw=1: 'hosts' has 2 items, no [2]");
  CHECK(std::string(error_of([&] { loaded({parse_override("train.steps={")}); }).what()).find("--set train.steps={: train.steps: invalid YAML value") == 0);
  CHECK_THROWS_AS(parse_override("train.steps"), std::invalid_argument);
  CHECK_THROWS_AS(parse_override("=3"), std::invalid_argument);
}
