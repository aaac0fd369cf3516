// Every registered policy, in registry order: its header and one line in LOCOSIM_POLICIES.
// X(name) stands for the policy's entry `<name>_policy()` (its config and traits, in its header, which
// includes no LibTorch) and its factory `make_<name>` (in its .cpp). policy_registry.cpp expands the
// list into the registry, policies.cpp into the factories, so a policy listed here without either
// does not compile.
#pragma once
#include "algorithms/async_diloco.hpp"
#include "algorithms/co2.hpp"
#include "algorithms/ddp.hpp"
#include "algorithms/demo.hpp"
#include "algorithms/diloco.hpp"
#include "algorithms/eager_diloco.hpp"
#include "algorithms/fedavg.hpp"
#include "algorithms/moshpit.hpp"
#include "algorithms/noloco.hpp"
#include "algorithms/quorum_syncer.hpp"
#include "algorithms/sparseloco.hpp"
#include "algorithms/sparta.hpp"
#include "algorithms/streaming_diloco.hpp"

#define LOCOSIM_POLICIES(X) \
  X(ddp)                    \
  X(diloco)                 \
  X(demo)                   \
  X(eager_diloco)           \
  X(streaming_diloco)       \
  X(co2)                    \
  X(fedavg)                 \
  X(async_diloco)           \
  X(quorum_syncer)          \
  X(noloco)                 \
  X(sparta)                 \
  X(sparta_diloco)          \
  X(sparseloco)             \
  X(moshpit)
