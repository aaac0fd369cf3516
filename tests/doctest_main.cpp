// The doctest runner shared by every test binary (compiled once, without LibTorch: cmake/locosim.cmake).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
