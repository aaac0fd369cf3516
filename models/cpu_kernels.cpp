// pin_cpu_kernels: set the kernel-choice variables of LibTorch, OpenBLAS and oneDNN, re-execute once.
#include "models/cpu_kernels.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace locosim {
namespace {

struct Pin {
  const char* name;
  const char* value;
};

bool has_avx2_fma() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// ATen's dispatch (ATEN_CPU_CAPABILITY), OpenBLAS's core type and oneDNN's highest ISA.
const Pin* pins() {
  static const Pin avx2[] = {{"ATEN_CPU_CAPABILITY", "avx2"}, {"OPENBLAS_CORETYPE", "Haswell"},
                             {"DNNL_MAX_CPU_ISA", "AVX2"}, {nullptr, nullptr}};
  static const Pin generic[] = {{"ATEN_CPU_CAPABILITY", "default"}, {"OPENBLAS_CORETYPE", "Prescott"},
                                {"DNNL_MAX_CPU_ISA", "SSE41"}, {nullptr, nullptr}};
  return has_avx2_fma() ? avx2 : generic;
}

bool opted_out() {
  const char* v = std::getenv("LOCOSIM_NATIVE_KERNELS");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

const char* pinned_cpu_kernels() { return opted_out() ? "native" : pins()[0].value; }

bool set_cpu_kernel_variables() {
  if (opted_out()) return false;
  bool changed = false;
  for (const Pin* p = pins(); p->name; ++p) {
    const char* now = std::getenv(p->name);
    if (!now || std::strcmp(now, p->value) != 0) {
      setenv(p->name, p->value, 1);
      changed = true;
    }
  }
  return changed;
}

void pin_cpu_kernels(char** argv) {
  if (!set_cpu_kernel_variables()) return;
  execv("/proc/self/exe", argv);  // the same program and arguments, now with the variables set
  std::fprintf(stderr, "%s: warning: cannot re-execute to pin the CPU kernels (%s); results may differ between "
               "machines\n", argv[0], std::strerror(errno));
}

}  // namespace locosim
