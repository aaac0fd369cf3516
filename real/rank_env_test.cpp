// RankEnv: a rank's identity from torchrun's variables, or from SLURM's under srun.
#include "real/rank_env.hpp"

#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/doctest_torch.hpp"

using namespace locosim;

namespace {

const char* kVariables[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_PROCID",
                            "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                            "SLURM_JOB_ID", "SLURM_STEP_ID"};

// Sets exactly `vars` among the launcher variables for its lifetime, then puts back what was there.
class Environment {
 public:
  explicit Environment(const std::map<std::string, std::string>& vars) {
    for (const char* name : kVariables) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
    for (const auto& [name, value] : vars) setenv(name.c_str(), value.c_str(), 1);
  }
  ~Environment() {
    for (const char* name : kVariables) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

std::string error_of(const std::map<std::string, std::string>& vars) {
  Environment env(vars);
  try {
    RankEnv::from_environment();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const std::map<std::string, std::string> kSrunTask1 = {
    {"SLURM_PROCID", "1"},          {"SLURM_NTASKS", "4"},  {"SLURM_LOCALID", "0"},
    {"SLURM_STEP_NODELIST", "gpu[07-08],cpu3"}, {"SLURM_JOB_NODELIST", "gpu[01-09]"}, {"SLURM_JOB_ID", "4242"},
    {"SLURM_STEP_ID", "0"}};

}  // namespace

TEST_CASE("rank env: the first host of a SLURM node list") {
  CHECK(first_slurm_host("vm") == "vm");
  CHECK(first_slurm_host("node[07-09,12],gpu1") == "node07");
  CHECK(first_slurm_host("node[12,07-09]") == "node12");
  CHECK(first_slurm_host("rack[1-2]-n[3-4]") == "rack1-n3");
  CHECK(first_slurm_host("a,b") == "a");
  CHECK_THROWS_AS(first_slurm_host(""), std::invalid_argument);
  CHECK_THROWS_AS(first_slurm_host("node[07"), std::invalid_argument);
  CHECK_THROWS_AS(first_slurm_host("node[]"), std::invalid_argument);
}

TEST_CASE("rank env: under srun, SLURM's variables name the rank, the group and where it meets") {
  {
    Environment env(kSrunTask1);
    const RankEnv r = RankEnv::from_environment();
    CHECK(r.launcher == "slurm");
    CHECK(r.rank == 1);
    CHECK(r.world_size == 4);
    CHECK(r.local_rank == 0);
    CHECK(r.master_addr == "gpu07");  // the step's first node, not the job's
    CHECK(r.master_port >= 20000);
    CHECK(r.master_port < 32000);
  }
  auto port_of = [](std::map<std::string, std::string> vars) {
    Environment env(vars);
    return RankEnv::from_environment().master_port;
  };
  auto with = [](std::map<std::string, std::string> vars, const std::string& name, const std::string& value) {
    vars[name] = value;
    return vars;
  };
  CHECK(port_of(kSrunTask1) == port_of(with(kSrunTask1, "SLURM_PROCID", "3")));  // every task of the step agrees
  CHECK(port_of(kSrunTask1) != port_of(with(kSrunTask1, "SLURM_STEP_ID", "1")));  // another step: another port
  CHECK(port_of(kSrunTask1) != port_of(with(kSrunTask1, "SLURM_JOB_ID", "4243")));
  CHECK(port_of(with(kSrunTask1, "MASTER_PORT", "29555")) == 29555);
  {
    Environment env(with(with(kSrunTask1, "MASTER_ADDR", "10.0.0.9"), "SLURM_STEP_NODELIST", "x"));
    CHECK(RankEnv::from_environment().master_addr == "10.0.0.9");
  }
  {
    std::map<std::string, std::string> job_only = kSrunTask1;
    job_only.erase("SLURM_STEP_NODELIST");
    Environment env(job_only);
    CHECK(RankEnv::from_environment().master_addr == "gpu01");
  }
  {  // torchrun's variables win where both are set (torchrun started inside a SLURM job)
    Environment env(with(with(kSrunTask1, "RANK", "2"), "WORLD_SIZE", "3"));
    const RankEnv r = RankEnv::from_environment();
    CHECK(r.launcher == "torchrun");
    CHECK(r.rank == 2);
    CHECK(r.world_size == 3);
    CHECK(r.master_addr == "127.0.0.1");
    CHECK(r.master_port == 29500);
  }
}

TEST_CASE("rank env: a missing or malformed variable is named") {
  std::map<std::string, std::string> no_tasks = kSrunTask1;
  no_tasks.erase("SLURM_NTASKS");
  CHECK(error_of(no_tasks).find("SLURM_NTASKS is not set") != std::string::npos);
  std::map<std::string, std::string> no_nodes = kSrunTask1;
  no_nodes.erase("SLURM_STEP_NODELIST");
  no_nodes.erase("SLURM_JOB_NODELIST");
  CHECK(error_of(no_nodes).find("SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set") != std::string::npos);
  std::map<std::string, std::string> bad_list = kSrunTask1;
  bad_list["SLURM_STEP_NODELIST"] = "gpu[07";
  CHECK(error_of(bad_list).find("SLURM's node list 'gpu[07'") != std::string::npos);
  std::map<std::string, std::string> beyond = kSrunTask1;
  beyond["SLURM_PROCID"] = "4";
  CHECK(error_of(beyond) == "SLURM_PROCID (4) must be below SLURM_NTASKS (4)");
  CHECK(error_of({{"RANK", "0"}}).find("WORLD_SIZE is not set (torchrun's RANK") != std::string::npos);
  CHECK(error_of({}).find("RANK is not set") != std::string::npos);
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}) ==
        "MASTER_PORT must be an integer in [1, 65535], got '70000'");
}
