// What a training step did with the group (Policy::step returns it; metrics.csv records it).
#pragma once

namespace locosim {

// Nothing (a local step), or the synchronization it ended either committed (its collective completed
// and its update is applied) or aborted (its collective failed and was given up: the update is not
// applied and the work it carried is thrown away).
enum class Sync { none, committed, aborted };

inline const char* sync_name(Sync s) {
  switch (s) {
    case Sync::none: return "";
    case Sync::committed: return "committed";
    case Sync::aborted: return "aborted";
  }
  return "?";
}

}  // namespace locosim
