// Include this, not <doctest/doctest.h>, in every test that sees LibTorch: LibTorch pulls in glog, whose CHECK macros
// would silently replace doctest's (a failing CHECK would then abort instead of reporting).
#pragma once
#include <torch/types.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#undef CHECK_NOTNULL
#include <doctest/doctest.h>
