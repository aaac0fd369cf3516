// The locosim CLI end to end: bad input gets a precise message and exit code 2 with nothing written;
// a run writes a complete folder; the same scenario twice gives identical files.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include <torch/cuda.h>

#include "config/error.hpp"
#include "cli/sweep.hpp"
#include "tests/cli_util.hpp"
#include "tests/doctest_torch.hpp"

using namespace locosim::testing;
namespace fs = std::filesystem;

namespace {

struct BadCase {
  const char* what;
  std::string from;      // text of the good scenario to replace ...
  std::string to;        // ... by this
  std::string message;   // what the error must say (after "file:line:column: ")
};

// What loading `dir`/`file` (scenario and sweep) refuses it with, the folder left out of the file's
// name as the commands print it when run in `dir`; "accepted" if nothing is wrong.
std::string load_error(const std::string& dir, const std::string& file) {
  try {
    locosim::load_sweep(dir + "/" + file);
  } catch (const locosim::ConfigError& e) {
    const std::string what = e.what();
    return what.rfind(dir + "/", 0) == 0 ? what.substr(dir.size() + 1) : what;
  } catch (const std::exception& e) {
    return std::string("not a ConfigError: ") + e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("cli: malformed scenarios each give their specific message, exit 2, and write nothing") {
  const std::string good = small_scenario_yaml();
  const std::vector<BadCase> cases = {
      {"unknown key", "train:\n", "trian:\n", "trian: unknown key (known here:"},
      {"misspelled nested key", "  steps: 12\n", "  stpes: 12\n", "train.stpes: unknown key"},
      {"wrong type", "steps: 12", "steps: twelve", "train.steps: must be an integer, got 'twelve'"},
      {"impossible value", "steps: 12", "steps: 0", "train.steps: must be in [1, 10000000], got 0"},
      {"bad unit", "bandwidth: 10 Mbps", "bandwidth: 10 Mbs", "uplink.bandwidth: expected a bandwidth such as '100 Mbps'"},
      {"missing unit", "latency: 20 ms", "latency: 20", "with no unit"},
      {"missing platform file", "platform:\n  accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}\n  hosts:\n",
       "platform: nowhere.yaml\nplatform_hosts:\n", "platform: file '"},
      {"missing corpus", "path: corpus.txt", "path: missing.txt", "data.path: '"},
      {"unknown policy", "  - ddp\n", "  - no_such_policy\n", "policies[0].name: must be one of:"},
      {"duplicate label", "  - ddp\n", "  - diloco\n", "label 'diloco' is used twice"},
      {"bad policy value", "inner_steps: 4", "inner_steps: -4", "policies[1].inner_steps: must be in [1, 10000000], got -4"},
      {"heads do not divide width", "seq_len: 16}", "seq_len: 16, n_heads: 5}", "model: "},
      {"undefined accelerator", "{name: slow, accelerator: gpu", "{name: slow, accelerator: tpu",
       "accelerator 'tpu' is not in accelerators"},
      {"eval fraction out of range", "eval_fraction: 0.1", "eval_fraction: 0.9", "data.eval_fraction: must be in (0, 0.5]"},
      {"no policies", "policies:\n  - ddp\n  - {name: diloco, inner_steps: 4}\n", "policies: []\n",
       "policies: must list at least one policy"},
      {"invalid YAML", "steps: 12", "steps: [12", "invalid YAML"},
      {"efficiency above one", "efficiency: 0.4", "efficiency: 1.4", "efficiency: must be"},
      // names and labels become folders
      {"name '..'", "name: small", "name: '..'",
       "name: must be an identifier (a letter or digit, then letters, digits, '.', '_' or '-'; at most 64 characters): "
       "it names a folder; got '..'"},
      {"name too long", "name: small", "name: " + std::string(65, 'n'), "name: must be an identifier"},
      {"label '..'", "{name: diloco, inner_steps: 4}", "{name: diloco, label: '..', inner_steps: 4}",
       "policies[1].label: must be an identifier"},
      {"empty label", "{name: diloco, inner_steps: 4}", "{name: diloco, label: '', inner_steps: 4}",
       "policies[1].label: must be an identifier"},
      {"label as a path", "{name: diloco, inner_steps: 4}", "{name: diloco, label: /abs/path, inner_steps: 4}",
       "policies[1].label: must be an identifier"},
      // numbers past any sane run
      {"bandwidth overflows a double", "bandwidth: 10 Mbps", "bandwidth: 1e400 Mbps",
       "uplink.bandwidth: expected a bandwidth such as '100 Mbps'"},
      {"too many steps", "steps: 12", "steps: 1000000000000", "train.steps: must be in [1, 10000000], got 1000000000000"},
      {"huge batch", "batch_size: 4", "batch_size: 1000000000", "train.batch_size: must be in [1, 65536]"},
      {"huge eval", "eval_batches: 2", "eval_batches: 1000000", "train.eval_batches: must be in [1, 10000]"},
      {"huge width", "seq_len: 16}", "seq_len: 16, d_model: 1000000}", "model.d_model: must be in [1, 16384]"},
      {"too many parameters", "seq_len: 16}", "seq_len: 16, d_model: 16384, n_layers: 512, n_heads: 128}",
       "model: the model would have 1.65e+12 parameters, more than 1e9"},
      {"attention does not fit", "seq_len: 16}", "seq_len: 131072}", "train.batch_size: batch_size (4) × model n_layers"},
      {"huge lr", "optimizer: {lr: 3.0e-3}", "optimizer: {lr: 1e308}", "train.optimizer.lr: must be in (0, 10]"},
      {"huge timing.params", "policies:\n", "timing: {params: 1e300}\npolicies:\n", "timing.params: must be in (0, 1e+14]"},
      {"latency of 1e308 s", "latency: 20 ms", "latency: 1e308 s", "uplink.latency: must be in [0, 3600] s"},
      {"peak of 1e-10 FLOPS", "peak: 100 TFLOPS", "peak: 1e-10 FLOPS",
       "accelerators.gpu.peak: must be in [1000000000, 1e+19] FLOP/s, got '1e-10 FLOPS'"},
      {"efficiency near zero", "efficiency: 0.4", "efficiency: 1e-300", "efficiency: must be in [0.001, 1]"},
      // the choices of timing-only and swarm-scale runs
      {"unknown numerics", "policies:\n", "numerics: some\npolicies:\n", "numerics: must be one of: full, none; got 'some'"},
      {"unknown flows", "policies:\n", "network: {flows: approximate}\npolicies:\n",
       "network.flows: must be one of: exact, aggregated; got 'approximate'"},
      {"unknown device", "policies:\n", "runtime: {device: gpu}\npolicies:\n",
       "runtime.device: must be cpu, cuda or cuda:N (N a GPU index from 0 to 63), got 'gpu'"},
      {"device index out of range", "policies:\n", "runtime: {device: 'cuda:64'}\npolicies:\n",
       "runtime.device: must be cpu, cuda or cuda:N"},
      {"unknown trace detail", "policies:\n", "report: {trace: all}\npolicies:\n",
       "report.trace: must be one of: messages, collectives, none; got 'all'"},
      {"link bucket of 1 ns", "policies:\n", "report: {link_bucket: 1 ns}\npolicies:\n",
       "report.link_bucket: must be in [0.001, 1000000000] s"},
      {"co2 penalty near zero", "{name: diloco, inner_steps: 4}", "{name: co2, inner_steps: 4, gap_penalty: 1e-300}",
       "policies[1].gap_penalty: must be in [0.001, 1000]"},
      {"demo keeps more than a chunk", "{name: diloco, inner_steps: 4}", "{name: demo, chunk: 4, topk: 17}",
       "policies[1].topk: must be <= chunk² = 16"},
      // contradictions
      {"never synchronizes", "inner_steps: 4", "inner_steps: 500",
       "policies[1].inner_steps: must be <= train.steps (12), got 500: the run would never synchronize"},
      {"default period too long", "  - {name: diloco, inner_steps: 4}\n", "  - fedavg\n",
       "policies[1].inner_steps: must be <= train.steps (12), got 500 (the default): the run would never synchronize"},
      {"streaming H too long", "{name: diloco, inner_steps: 4}", "{name: streaming_diloco, inner_steps: 20, sync_delay: 1}",
       "policies[1].inner_steps: must be <= train.steps (12), got 20"},
      {"co2 period too long", "{name: diloco, inner_steps: 4}", "{name: co2, inner_steps: 13}",
       "policies[1].inner_steps: must be <= train.steps (12), got 13"},
      {"warmup as long as the run", "optimizer: {lr: 3.0e-3}", "optimizer: {lr: 3.0e-3, warmup_steps: 12}",
       "train.optimizer.warmup_steps: must be < train.steps (12), got 12: the learning rate would never reach its peak"},
      {"second YAML document", "seed: 3\n", "seed: 3\n---\n", "s.yaml:3:1: a second YAML document starts here"},
      {"seed past 64 bits", "seed: 3", "seed: 18446744073709551616",
       "seed: must be an integer in [0, 18446744073709551615], got '18446744073709551616'"},
      {"negative seed", "seed: 3", "seed: -1", "seed: must be an integer in [0, 18446744073709551615], got '-1'"},
      {"no seeds", "seed: 3", "seed: 3\nseeds: 0", "seeds: must be in [1, 100], got 0"},
      {"a seed listed twice", "seed: 3", "seed: 3\nseeds: [4, 4]", "seeds[1]: value 4 is listed twice"},
  };
  CHECK(cases.size() >= 10);
  for (size_t i = 0; i < cases.size(); ++i) {
    const BadCase& c = cases[i];
    CAPTURE(c.what);
    const std::string dir = scratch_dir("bad");
    write_corpus(dir + "/corpus.txt", 20000);
    write_file(dir + "/s.yaml", replaced(good, c.from, c.to));
    // The loader's message, read in this process (a command costs a second of loading LibTorch); every
    // fourth case also through both commands, which print exactly it.
    const std::string message = load_error(dir, "s.yaml");
    CAPTURE(message);
    CHECK(message.find(c.message) != std::string::npos);
    CHECK(std::regex_search(message, std::regex("^s\\.yaml(:[0-9]+:[0-9]+)?: ")));
    if (i % 4 == 0) {
      CliResult r = run_locosim("run s.yaml -o out", dir);
      CHECK(r.exit_code == 2);
      CHECK(r.err == "error: " + message + "\n");
      CHECK_FALSE(fs::exists(dir + "/out"));
      CliResult checked = run_locosim("check s.yaml", dir);
      CHECK(checked.exit_code == 2);
      CHECK(checked.err == r.err);
    }
    fs::remove_all(dir);
  }
}

TEST_CASE("cli: a FIFO or a device as corpus, platform or scenario is refused at once, naming the key") {
  const std::string dir = scratch_dir("fifo");
  write_corpus(dir + "/corpus.txt", 20000);
  REQUIRE(::mkfifo((dir + "/pipe").c_str(), 0600) == 0);  // opening it would block until a writer comes
  const std::string good = small_scenario_yaml();
  struct FileCase {
    const char* what;
    std::string scenario;
    std::string message;
  };
  const std::vector<FileCase> cases = {
      {"FIFO corpus", replaced(good, "path: corpus.txt", "path: pipe"), "is not a regular file"},
      {"device corpus", replaced(good, "path: corpus.txt", "path: /dev/zero"), "data.path: '/dev/zero' is not a regular file"},
      {"FIFO platform", replaced(good, "platform:\n  accelerators", "platform: pipe\nplatform_hosts:\n  accelerators"),
       "is a FIFO (named pipe), not a regular file"},
      {"device platform", replaced(good, "platform:\n  accelerators", "platform: /dev/zero\nplatform_hosts:\n  accelerators"),
       "platform: file '/dev/zero' is a device, not a regular file"},
  };
  for (const FileCase& c : cases) {
    CAPTURE(c.what);
    write_file(dir + "/s.yaml", c.scenario);
    CliResult r = run_locosim("check s.yaml", dir);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::regex_search(r.err, std::regex("error: s\\.yaml:[0-9]+:[0-9]+: (data\\.path|platform): ")));
  }
  CliResult fifo = run_locosim("check pipe", dir);
  CHECK(fifo.exit_code == 2);
  CHECK(fifo.err.find("pipe: is a FIFO (named pipe), not a regular file") != std::string::npos);
  CliResult device = run_locosim("run /dev/zero -o out", dir);
  CHECK(device.exit_code == 2);
  CHECK(device.err.find("/dev/zero: is a device, not a regular file") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli: runtime.device: cuda without a usable GPU is refused at its line by both backends, nothing written") {
  if (torch::cuda::is_available()) {
    MESSAGE("skipped: this LibTorch can use a GPU, so cuda is not refused here");
    return;
  }
  const std::string dir = scratch_dir("device");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", replaced(small_scenario_yaml(), "policies:\n", "runtime:\n  device: cuda\npolicies:\n"));
  CliResult checked = run_locosim("check s.yaml", dir);  // a scenario for GPU nodes, checked on a login node
  CHECK(checked.exit_code == 0);
  const std::string message = "runtime.device: cuda: this LibTorch (";
  CliResult r = run_locosim("run s.yaml -o out", dir);
  CAPTURE(r.err);
  CHECK(r.exit_code == 2);
  CHECK(std::regex_search(r.err, std::regex("error: s\\.yaml:[0-9]+:[0-9]+: runtime\\.device: cuda: this LibTorch")));
  CHECK(r.err.find("can use no GPU: it was built without CUDA") != std::string::npos);
  CHECK(r.err.find("-DTorch_DIR=") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out"));
  CliResult real = run_locosim("s.yaml -p ddp --spawn 2 -o real", dir, "locosim-real");
  CAPTURE(real.err);
  CHECK(real.exit_code == 2);
  CHECK(real.err.find(message) != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/real/small/ddp"));
  fs::remove_all(dir);
}

TEST_CASE("cli: locosim-real refuses rank variables out of range (MASTER_PORT=70000 is not another port)") {
  const std::string dir = scratch_dir("rank-env");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  struct EnvCase {
    const char* name;
    const char* value;
    const char* message;
  };
  const EnvCase cases[] = {
      {"MASTER_PORT", "70000", "MASTER_PORT must be an integer in [1, 65535], got '70000'"},
      {"MASTER_PORT", "0", "MASTER_PORT must be an integer in [1, 65535], got '0'"},
      {"WORLD_SIZE", "99999999999999999999", "WORLD_SIZE must be an integer in [1, 100000], got '99999999999999999999'"},
      {"WORLD_SIZE", "4294967298", "WORLD_SIZE must be an integer in [1, 100000]"},  // 2 after a cast to int
      {"RANK", "-1", "RANK must be an integer in [0, 99999], got '-1'"},
      {"LOCAL_RANK", "100000", "LOCAL_RANK must be an integer in [0, 99999], got '100000'"},
  };
  for (const EnvCase& c : cases) {
    CAPTURE(c.name);
    CAPTURE(c.value);
    ::setenv("RANK", "1", 1);  // a client: with a good port it would wait for rank 0, up to --timeout
    ::setenv("WORLD_SIZE", "2", 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", "29500", 1);
    ::unsetenv("LOCAL_RANK");
    ::setenv(c.name, c.value, 1);
    CliResult r = run_locosim("s.yaml -p ddp --timeout 5 -o real", dir, "locosim-real");
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(std::string("error: ") + c.message) != std::string::npos);
  }
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"}) ::unsetenv(name);
  fs::remove_all(dir);
}

TEST_CASE("cli: a corpus that is not UTF-8 or too small is refused before anything runs") {
  const std::string dir = scratch_dir("corpus");
  write_file(dir + "/corpus.txt", std::string("abc\xff\xfe def", 9));
  write_file(dir + "/s.yaml", small_scenario_yaml());
  CliResult r = run_locosim("run s.yaml -o out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is not valid UTF-8") != std::string::npos);
  write_corpus(dir + "/corpus.txt", 100);
  r = run_locosim("run s.yaml -o out", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is too small for 2 workers") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out"));
  fs::remove_all(dir);
}

TEST_CASE("cli: locosim accelerators lists the catalogue, a host names an entry (in resolved.yaml, with the collectives used), and a misspelt one exits 2") {
  const std::string dir = scratch_dir("accelerators");
  CliResult listed = run_locosim("accelerators", dir);
  CAPTURE(listed.err);
  CHECK(listed.exit_code == 0);
  CHECK(listed.out.rfind("name ", 0) == 0);
  CHECK(std::regex_search(listed.out, std::regex("\nh100 +989 TFLOPS +0\\.4 +80 GB HBM3 +NVIDIA H100 SXM5 80GB\n")));
  CHECK(listed.out.find("\nSources:\n") != std::string::npos);
  CHECK(listed.out.find("  rtx4090: NVIDIA Ada GPU architecture whitepaper") != std::string::npos);

  // The slow host names the catalogue's RTX 4090: checked, run, and its entry in resolved.yaml.
  write_corpus(dir + "/corpus.txt", 20000);
  const std::string scenario = replaced(small_scenario_yaml(), "{name: slow, accelerator: gpu", "{name: slow, accelerator: rtx4090");
  write_file(dir + "/s.yaml", scenario);
  CliResult checked = run_locosim("check s.yaml", dir);
  CAPTURE(checked.err);
  CHECK(checked.exit_code == 0);
  CliResult ran = run_locosim("run s.yaml -o out -p ddp", dir);
  REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);
  const std::string resolved = read_file(dir + "/out/small/ddp/resolved.yaml");
  CAPTURE(resolved);
  CHECK(resolved.find("  rtx4090:\n      peak: 165.2 TFLOPS\n      efficiency: 0.3") != std::string::npos);
  // What network: auto chose on two hosts without sites or relay, under the writer's line.
  CHECK(resolved.rfind("# locosim run of policy 'ddp'\n# collectives used: all_reduce ring, all_gather mesh, flows exact ", 0) == 0);
  // Off a terminal the machine's estimate goes to stderr: stdout is the same on every machine.
  CHECK(ran.err.find("estimate: ") != std::string::npos);
  CHECK(ran.out.find("estimate") == std::string::npos);

  write_file(dir + "/s.yaml", replaced(scenario, "accelerator: rtx4090", "accelerator: rtx409"));
  CliResult misspelt = run_locosim("check s.yaml", dir);
  CAPTURE(misspelt.err);
  CHECK(misspelt.exit_code == 2);
  CHECK(std::regex_search(misspelt.err, std::regex("error: s\\.yaml:7:[0-9]+: platform\\.hosts\\[1\\]\\.accelerator: "
                                                   "accelerator 'rtx409' is not in accelerators \\(known: gpu\\) nor in the catalogue \\(a100, ")));
  CHECK(misspelt.err.find("did you mean 'rtx4090'?") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli: a run writes a complete folder per policy and the same scenario twice gives identical files") {
  const std::string dir = scratch_dir("run");
  write_corpus(dir + "/corpus.txt", 20000);
  // The policies whose workers train different numbers of steps, on the clock, too.
  write_file(dir + "/s.yaml", small_scenario_yaml() +
                                  "  - {name: diloco, label: timed, inner_steps: 4, round: fastest}\n"
                                  "  - {name: async_diloco, inner_steps: 4}\n");
  CliResult first = run_locosim("run s.yaml -o a", dir);
  REQUIRE_MESSAGE(first.exit_code == 0, first.err);
  CHECK(first.out.rfind("small: 2 workers, 4 policies, 12 steps each", 0) == 0);
  CHECK(first.out.find("diloco") != std::string::npos);
  CHECK(first.out.find("wall-clock") != std::string::npos);
  for (const char* policy : {"ddp", "diloco"}) {
    for (const char* file : {"resolved.yaml", "metrics.csv", "exact_losses.csv", "events.csv", "summary.json"}) {
      CHECK(fs::exists(dir + "/a/small/" + policy + "/" + file));
    }
  }
  CHECK(fs::exists(dir + "/a/small/summary.csv"));
  for (const auto& entry : fs::directory_iterator(dir + "/a/small")) {
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);  // no temporary folder left
  }
  // metrics.csv: header, one row per worker and step, eval losses where due
  std::string metrics = read_file(dir + "/a/small/ddp/metrics.csv");
  CHECK(metrics.rfind("time_s,worker,step,tokens,train_loss,eval_loss,sync\n", 0) == 0);
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 1 + 2 * 12);

  CHECK(fs::exists(dir + "/a/small/async_diloco/updates.csv"));
  CliResult second = run_locosim("run s.yaml -o b -j 1", dir);
  REQUIRE(second.exit_code == 0);
  // The header counts what the command runs, in words for one.
  CliResult one = run_locosim("run s.yaml -o a -p ddp", dir);
  CHECK(one.out.rfind("small: 2 workers, 1 policy, 12 steps each", 0) == 0);
  for (const char* policy : {"ddp", "diloco", "timed", "async_diloco"}) {
    for (const char* file : {"metrics.csv", "exact_losses.csv", "events.csv", "summary.json", "resolved.yaml"}) {
      CAPTURE(file);
      CHECK(read_file(dir + "/a/small/" + policy + "/" + file) == read_file(dir + "/b/small/" + policy + "/" + file));
    }
  }
  CHECK(read_file(dir + "/a/small/async_diloco/updates.csv") == read_file(dir + "/b/small/async_diloco/updates.csv"));
  fs::remove_all(dir);
}

TEST_CASE("cli: DiLoCo sends far less than DDP and the seeds matter") {
  const std::string dir = scratch_dir("traffic");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  REQUIRE(run_locosim("run s.yaml -o a", dir).exit_code == 0);
  write_file(dir + "/t.yaml", replaced(replaced(small_scenario_yaml(), "seed: 3", "seed: 4"), "name: small", "name: t"));
  REQUIRE(run_locosim("run t.yaml -o a", dir).exit_code == 0);
  auto field = [](const std::string& json, const std::string& key) {
    std::smatch m;
    REQUIRE(std::regex_search(json, m, std::regex("\"" + key + "\": ([0-9.e+-]+)")));
    return std::stod(m[1]);
  };
  std::string ddp = read_file(dir + "/a/small/ddp/summary.json");
  std::string diloco = read_file(dir + "/a/small/diloco/summary.json");
  // 12 steps: DDP all-reduces 12 times, DiLoCo (H=4) 3 times, the same tensors.
  CHECK(field(ddp, "sent_bytes_per_worker") == doctest::Approx(4 * field(diloco, "sent_bytes_per_worker")));
  CHECK(field(diloco, "compute_utilization") > field(ddp, "compute_utilization"));
  CHECK(read_file(dir + "/a/t/ddp/metrics.csv") != read_file(dir + "/a/small/ddp/metrics.csv"));
  fs::remove_all(dir);
}

TEST_CASE("cli: check accepts every scenario under scenarios/") {
  // One `locosim check` of them all (as the README's `locosim check scenarios/*.yaml`): it checks every
  // file, saying "ok: FILE" for each, and exits 2 naming the file if any is refused. A file at a time,
  // this test was the program's start-up (a second each) 21 times over.
  std::vector<std::string> paths;
  std::string args;
  for (const auto& entry : fs::recursive_directory_iterator("scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    paths.push_back(fs::absolute(entry.path()).string());
    args += " '" + paths.back() + "'";
  }
  REQUIRE(paths.size() >= 1);
  CliResult r = run_locosim("check" + args, fs::current_path().string());
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  for (const std::string& path : paths) {
    CAPTURE(path);
    CHECK(r.out.find("ok: " + path + " (") != std::string::npos);
  }
}

TEST_CASE("cli: usage errors exit 2") {
  const std::string dir = scratch_dir("usage");
  const CliResult version = run_locosim("--version", dir);
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("locosim 0.", 0) == 0);
  const CliResult real_version = run_locosim("--version", dir, "locosim-real");
  CHECK(real_version.exit_code == 0);
  CHECK(real_version.out.rfind("locosim-real 0.", 0) == 0);
  CHECK(run_locosim("frobnicate", dir).exit_code == 2);
  CHECK(run_locosim("run", dir).exit_code == 2);
  CliResult r = run_locosim("run nothing.yaml", dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("nothing.yaml: cannot be read") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("cli: numbers on the command line get the file's bounds and plain words, exit 2, nothing written") {
  // Regressions: -j 0 and -j -1 were accepted, --link-bucket 1e300 s too (report.link_bucket stops at
  // 1e9 s), and --max-tasks 0 printed its bounds 150 digits long.
  const std::string dir = scratch_dir("options");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  struct OptionCase {
    std::string args;
    std::string message;
  };
  const std::vector<OptionCase> cases = {
      {"run s.yaml -o out -j 0", "error: --jobs: must be an integer in [1, 1024], got '0'"},
      {"run s.yaml -o out -j -1", "error: --jobs: must be an integer in [1, 1024], got '-1'"},
      {"run s.yaml -o out --jobs many", "error: --jobs: must be an integer in [1, 1024], got 'many'"},
      {"run s.yaml -o out --step-threads 0", "error: --step-threads: must be an integer in [1, 1024], got '0'"},
      {"run s.yaml -o out --link-bucket '1e300 s'", "error: --link-bucket 1e300 s: must be in [0.001, 1000000000] s"},
      {"run s.yaml -o out --link-bucket '1 ns'", "error: --link-bucket 1 ns: must be in [0.001, 1000000000] s"},
      {"run s.yaml -o out --link-bucket 10", "error: --link-bucket 10: "},
      {"submit s.yaml -o out --no-submit --max-tasks 0", "error: --max-tasks: must be an integer in [1, 4000000], got '0'"},
  };
  for (const OptionCase& c : cases) {
    CAPTURE(c.args);
    CliResult r = run_locosim(c.args, dir);
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK_FALSE(std::regex_search(r.err, std::regex("[0-9]{20}")));
    CHECK_FALSE(fs::exists(dir + "/out"));
  }
  // The whole range of a seed: 2^64 - 1 is one.
  write_file(dir + "/s.yaml", replaced(small_scenario_yaml(), "seed: 3", "seed: 18446744073709551615"));
  CliResult seed = run_locosim("check s.yaml", dir);
  CAPTURE(seed.err);
  CHECK(seed.exit_code == 0);
  fs::remove_all(dir);
}

TEST_CASE("cli: -o naming a file, nothing or a control character is refused with exit 2 before anything is written") {
  // Regression: a raw filesystem error with exit 1 (or, for '', run folders in the current folder).
  const std::string dir = scratch_dir("output-root");
  write_corpus(dir + "/corpus.txt", 20000);
  write_file(dir + "/s.yaml", small_scenario_yaml());
  write_file(dir + "/afile", "not a folder\n");
  struct RootCase {
    std::string option;
    std::string message;
  };
  const std::vector<RootCase> cases = {
      {"-o afile", "error: -o/--output: 'afile' is a file, not a folder"},
      {"-o afile/runs", "error: -o/--output: 'afile' is a file, not a folder"},
      {"-o ''", "error: -o/--output: '' names no folder"},
      {"-o 'out\nnext'", "error: -o/--output: 'out\\nnext' holds a control character"},
  };
  for (const char* command : {"run", "merge", "submit"}) {
    for (const RootCase& c : cases) {
      CAPTURE(command);
      CAPTURE(c.option);
      CliResult r = run_locosim(std::string(command) + " s.yaml " + c.option, dir);
      CAPTURE(r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(c.message) != std::string::npos);
      CHECK(read_file(dir + "/afile") == "not a folder\n");
      for (const auto& entry : fs::directory_iterator(dir)) {  // nothing new: no small/, no out.../
        const std::string name = entry.path().filename().string();
        CHECK_MESSAGE((name == "corpus.txt" || name == "s.yaml" || name == "afile"), name);
      }
    }
  }
  fs::remove_all(dir);
}
