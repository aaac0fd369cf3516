// Precompiled header shared by every target that uses LibTorch (see CMakeLists.txt).
#pragma once
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
