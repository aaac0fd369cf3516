#!/usr/bin/env bash
# Layering: config/ (strict YAML, units, platform and world schemas) includes nothing of the project
# outside config/, and its library links yaml-cpp only; algorithms/ and models/ include no SimGrid or
# c10d header; cli/ (planning, the process pool, the command line) includes no SimGrid header: only
# sim/ touches SimGrid. What the real backend alone builds from (-DLOCOSIM_SIMULATOR=OFF: config/,
# models/, algorithms/, scenario/, report/, real/, test files aside) includes nothing of SimGrid, sim/
# or cli/. Prints each offending include; exit 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r line; do
  echo "layering: config/ must include only config/ of the project: $line"
  bad=1
done < <(grep -HnE '#include "[a-z_]+/' config/*.cpp config/*.hpp | grep -vE '#include "config/' || true)
while IFS= read -r line; do
  echo "layering: algorithms/ and models/ must not include SimGrid or c10d: $line"
  bad=1
done < <(grep -HnE '#include [<"](simgrid/|torch/csrc/distributed/)' algorithms/*.cpp algorithms/*.hpp models/*.cpp models/*.hpp || true)
while IFS= read -r line; do
  echo "layering: cli/ must not include SimGrid (only sim/ does): $line"
  bad=1
done < <(grep -HnE '#include [<"]simgrid/' cli/*.cpp cli/*.hpp || true)
while IFS= read -r line; do
  echo "layering: the real backend's sources build without the simulator (-DLOCOSIM_SIMULATOR=OFF): $line"
  bad=1
done < <(for d in config models algorithms scenario report real; do
           grep -HnE '#include [<"](simgrid/|sim/|cli/)' "$d"/*.cpp "$d"/*.hpp | grep -v '_test\.cpp:' || true
         done)
if ! grep -q 'target_link_libraries(locosim_config PUBLIC yaml-cpp)' config/CMakeLists.txt; then
  echo "layering: locosim_config must link yaml-cpp only (config/CMakeLists.txt)"
  bad=1
fi
[ "$bad" = 0 ] && echo "layering: ok"
exit "$bad"
