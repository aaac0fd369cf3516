// libFuzzer target over the scenario and platform loader: each input is read as a scenario file
// (load_sweep, the entry of `locosim check` and `locosim run`) and as a platform file (parse_platform).
// Bad input must end in ConfigError or std::invalid_argument; anything else escapes and is a finding.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "config/error.hpp"
#include "config/platform.hpp"
#include "config/section.hpp"
#include "cli/sweep.hpp"

#ifndef LOCOSIM_SOURCE_DIR
#error "LOCOSIM_SOURCE_DIR must name the repository root (fuzz/CMakeLists.txt sets it)"
#endif

namespace fs = std::filesystem;

namespace {

// The default corpus stand-in: the loader only checks that it exists, is UTF-8 and is large enough
// for the platform's workers and seq_len (the shipped scenarios need a few KB). Every load reads and
// checks the whole file: at 256 KB that was three quarters of the time of an execution.
constexpr size_t kCorpusBytes = 32 * 1024;

// Everything the loader reads lives under here (made in LLVMFuzzerInitialize, removed at exit):
//   platforms/, scenarios/platforms/   copies of the repository's platforms/ ("../platforms/x.yaml"
//                                      from scenarios/ and "../../platforms/x.yaml" from scenarios/tests/)
//   scenarios/tests/input.yaml         the input being tried
//   cache/kjv.txt                      $LOCOSIM_CACHE: what `data: {path: kjv}` opens
fs::path g_root;
fs::path g_input;

std::string generated_text(size_t bytes) {
  static const char* const kLines[] = {
      "In the beginning was the word, and the word was sent over a slow link.\n",
      "And the workers said one to another: let us average our deltas every five hundred steps.\n",
      "The uplink was narrow — ten megabits — and the downlink was wide.\n",
      "Café, naïve, Ærø, Ελληνικά, 日本語: the tokenizer reads bytes, not letters.\n",
  };
  std::string text;
  text.reserve(bytes + 128);
  for (size_t verse = 1; text.size() < bytes; ++verse) {
    text += std::to_string(verse) + ":" + std::to_string(verse % 31 + 1) + " ";
    text += kLines[verse % (sizeof kLines / sizeof kLines[0])];
  }
  return text;
}

// Writes a new file: ext4 flushes a file truncated and rewritten at close, a tenth of an execution.
void write_file(const fs::path& path, const std::string& content) {
  std::error_code ignored;
  fs::remove(path, ignored);
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) {
    std::fprintf(stderr, "loader_fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void remove_root() {
  std::error_code ec;
  if (!g_root.empty()) fs::remove_all(g_root, ec);
}

}  // namespace

// Allocation stacks 10 frames deep instead of 30 (ASan spent a sixth of each execution recording them).
extern "C" const char* __asan_default_options() { return "malloc_context_size=10"; }
extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/locosim-fuzz.XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("loader_fuzz: mkdtemp");
    std::abort();
  }
  g_root = pattern;
  std::atexit(remove_root);

  const fs::path platforms = fs::path(LOCOSIM_SOURCE_DIR) / "platforms";
  for (const fs::path& copy : {g_root / "platforms", g_root / "scenarios" / "platforms"}) {
    fs::create_directories(copy);
    for (const auto& entry : fs::directory_iterator(platforms)) {
      if (entry.path().extension() == ".yaml") fs::copy_file(entry.path(), copy / entry.path().filename());
    }
  }
  fs::create_directories(g_root / "scenarios" / "tests");
  g_input = g_root / "scenarios" / "tests" / "input.yaml";
  fs::create_directories(g_root / "cache");
  write_file(g_root / "cache" / "kjv.txt", generated_text(kCorpusBytes));
  setenv("LOCOSIM_CACHE", (g_root / "cache").c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  write_file(g_input, text);
  try {
    locosim::load_sweep(g_input.string());
  } catch (const locosim::ConfigError&) {
  } catch (const std::invalid_argument&) {
  }

  // A scenario must have `policies` and a platform file has none; a scenario's inline platform went
  // through parse_platform above, so scenarios skip this second parse of the same text.
  if (text.find("policies") != std::string::npos) return 0;
  try {
    locosim::Section platform = locosim::Section::load_string(text, "platform.yaml");
    locosim::parse_platform(platform);
  } catch (const locosim::ConfigError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
