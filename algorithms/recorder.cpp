// Recorder: the names of event kinds (the rows themselves are plain data; report/recorder_csv.cpp
// writes them).
#include "algorithms/recorder.hpp"

namespace locosim {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::compute: return "compute";
    case EventKind::send: return "send";
    case EventKind::recv: return "recv";
    case EventKind::wait: return "wait";
    case EventKind::away: return "away";
    case EventKind::join: return "join";
    case EventKind::discard: return "discard";
    case EventKind::link_off: return "link_off";
  }
  return "?";
}

}  // namespace locosim
