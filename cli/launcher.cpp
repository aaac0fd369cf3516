// `locosim`: sets the CPU-kernel variables (models/cpu_kernels.hpp), then runs the simulator,
// locosim-sim, from the same folder. A program linked with LibTorch has loaded OpenBLAS, which reads
// its variable, before main(): pinned from there, every command would load LibTorch twice (about
// 0.4 s each time). This front end loads none of it.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "models/cpu_kernels.hpp"

int main(int, char** argv) {
  locosim::set_cpu_kernel_variables();
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::string simulator = ((ec ? fs::path(argv[0]) : self).parent_path() / "locosim-sim").string();
  execv(simulator.c_str(), argv);  // the same arguments; argv[0] stays what the user typed
  std::fprintf(stderr, "locosim: cannot run %s: %s\n", simulator.c_str(), std::strerror(errno));
  return 127;
}
