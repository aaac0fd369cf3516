// Replays files through a libFuzzer target without libFuzzer: each argument is a file or a folder
// (every regular file under it, in name order), passed once to LLVMFuzzerTestOneInput. Built by the
// main build with the loader harness (loader_fuzz.cpp), it is the test suite's check that the shipped
// scenarios, platforms and every past finding in fuzz/regressions/ still end in a clean error: an
// escaped exception or a crash fails it. The sanitized, mutating run is `make fuzz`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

static std::vector<fs::path> inputs_of(const fs::path& where) {
  std::vector<fs::path> files;
  if (fs::is_regular_file(where)) return {where};
  for (const auto& entry : fs::recursive_directory_iterator(where)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!fs::exists(argv[i])) {
      std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 2;
    }
    for (const fs::path& file : inputs_of(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay: %s\n", file.c_str());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replay: %zu inputs, every one ended in a clean error or a valid load\n", replayed);
  return replayed > 0 ? 0 : 1;
}
