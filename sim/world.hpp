// The world's changes (config/world.hpp) on SimGrid's own machinery: speed, state, bandwidth and
// latency profiles on hosts and links, and seeded churn as state profiles generated on demand.
// SimGrid then does the rest: a host that goes off kills its actors, a link that goes off fails the
// comms crossing it, and a slower host or link stretches what runs on it.
#pragma once
#include "config/platform.hpp"
#include "config/world.hpp"

namespace locosim {

// Attaches every profile of `world` to the hosts and links of `platform` (by name).
// REQUIRES: the platform's hosts and links exist and its zone is not sealed yet (SimGrid refuses
// profiles on sealed resources): build_platform calls it.
void attach_world(const WorldSpec& world, const PlatformSpec& platform);

// Whether anything in `world` can fail a collective (a host or a link that goes off, or churn): then
// members agree on each commit (SimWorld::agree_on_commit).
bool world_can_fail(const WorldSpec& world);

}  // namespace locosim
