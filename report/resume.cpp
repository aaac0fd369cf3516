// run_hash and is_finished_run (see resume.hpp).
#include "report/resume.hpp"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>

#include "report/run_folder.hpp"

namespace locosim {
namespace fs = std::filesystem;
namespace {

// Bumped when what a run folder holds changes meaning, so older folders are not taken as done.
constexpr const char* kHashFormat = "locosim run hash v1\n";

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
  }
  void add(const std::string& bytes) { add(bytes.data(), bytes.size()); }
  void add(const char* bytes, size_t n) {
    if (EVP_DigestUpdate(ctx_.get(), bytes, n) != 1) throw std::runtime_error("SHA-256 failed");
  }
  // Each part is preceded by its length, so "ab"+"c" and "a"+"bc" hash differently.
  void add_part(const std::string& bytes) {
    add(std::to_string(bytes.size()) + ":");
    add(bytes);
  }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &n) != 1) throw std::runtime_error("SHA-256 failed");
    static const char* kDigits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) out += {kDigits[digest[i] >> 4], kDigits[digest[i] & 15]};
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// A corpus is hashed once per process while its size and modification time stay (a sweep's runs share one).
std::string file_hash(const std::string& path) {
  static std::map<std::string, std::string> known;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  const std::string key = path + "\n" + std::to_string(size) + "\n" + std::to_string(mtime);
  if (auto it = known.find(key); it != known.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  Sha256 sha;
  std::array<char, 1 << 16> buf;
  while (in.read(buf.data(), buf.size()) || in.gcount() > 0) sha.add(buf.data(), static_cast<size_t>(in.gcount()));
  if (in.bad()) throw std::runtime_error(path + ": cannot be read");
  return known[key] = sha.hex();
}

// The resolved scenario with `policy` its only policy.
YAML::Node resolved_tree(const Scenario& scenario, const PolicySpec& policy) {
  YAML::Node root = YAML::Load(scenario.resolved_yaml);
  const YAML::Node all = root["policies"];
  YAML::Node mine(YAML::NodeType::Sequence);
  for (size_t i = 0; i < scenario.policies.size() && i < all.size(); ++i) {
    if (scenario.policies[i].label == policy.label) mine.push_back(all[i]);
  }
  root["policies"] = mine;
  return root;
}

std::string text_of(const YAML::Node& root) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return out.c_str();
}

std::string hash_of(const Scenario& scenario, const PolicySpec& policy, const char* format, const YAML::Node& tree) {
  Sha256 sha;
  sha.add(format);
  sha.add_part(policy.label);
  sha.add_part(text_of(tree));
  sha.add_part(file_hash(scenario.data.path));
  char bucket[64];
  std::snprintf(bucket, sizeof bucket, "%.17g", scenario.link_bucket_s);
  sha.add_part(bucket);
  return sha.hex();
}

}  // namespace

std::string run_hash(const Scenario& scenario, const PolicySpec& policy) {
  YAML::Node tree = resolved_tree(scenario, policy);
  // Only the report reads it (time to target): a finished run's summary is re-derived (cli/run.cpp).
  if (tree["train"].IsMap()) tree["train"].remove("target_loss");
  return hash_of(scenario, policy, kHashFormat, tree);
}

std::string numerics_hash(const Scenario& scenario, const PolicySpec& policy) {
  YAML::Node tree = resolved_tree(scenario, policy);
  for (const char* timing : {"platform", "network", "world", "timing", "report"}) tree.remove(timing);
  tree["workers"] = scenario.world_size();
  if (tree["train"].IsMap()) tree["train"].remove("target_loss");
  return hash_of(scenario, policy, "locosim numerics hash v1\n", tree);
}

namespace {

// Whether `dir` is a locosim folder that says it holds the run of `hash`.
bool holds_run_of(const fs::path& dir, const std::string& hash) {
  if (!is_locosim_folder(dir)) return false;
  std::ifstream in(dir / kScenarioHashFile);
  std::string written;
  return static_cast<bool>(std::getline(in, written)) && written == hash;
}

std::string problem_of(const fs::path& dir) {
  if (!fs::is_regular_file(dir / "summary.json")) return "summary.json is missing";
  return committed_files_problem(dir);
}

}  // namespace

bool is_finished_run(const fs::path& dir, const std::string& hash) {
  return holds_run_of(dir, hash) && problem_of(dir).empty();
}

std::string damaged_run_problem(const fs::path& dir, const std::string& hash) {
  return holds_run_of(dir, hash) ? problem_of(dir) : "";
}

}  // namespace locosim
