// pin_cpu_kernels: the same CPU kernels on every x86-64 machine, so that the same scenario and seed
// give the same numbers everywhere, not only on the machine that ran them first.
//
// LibTorch, OpenBLAS and oneDNN each pick their kernels by the CPU's instruction sets (AVX2 here,
// AVX-512 there), and kernels of different vector widths sum in different orders. This pins all
// three to their AVX2+FMA kernels (x86-64 since 2013-2015) through their environment variables.
// OpenBLAS reads its variable when the library is loaded, before main(): so the process re-executes
// itself once with the variables set. On a CPU without AVX2 and FMA the generic kernels are pinned
// instead (results then match other such machines, not AVX2 ones). LOCOSIM_NATIVE_KERNELS=1 opts
// out: faster on some machines, but results depend on the machine.
#pragma once

namespace locosim {

// Call first in main(), before any LibTorch call. Returns only when the kernels are pinned (or the
// user opted out, or re-executing failed: then it warns on stderr).
void pin_cpu_kernels(char** argv);

// Sets the three variables in this process's environment (nothing if the user opted out); returns
// whether any changed. A program that starts another (cli/launcher.cpp) passes them on without
// loading LibTorch itself; one that has loaded it must re-execute (pin_cpu_kernels).
bool set_cpu_kernel_variables();

// What is pinned, for resolved files and messages: "avx2", "default" or "native".
const char* pinned_cpu_kernels();

}  // namespace locosim
