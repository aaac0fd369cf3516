// trace.json: one run's activity in the Chrome trace-event format (JSON; Perfetto opens it): a process
// per worker whose tracks hold its compute, wait, send and recv spans (bytes and peer as arguments),
// and a "links" process with one bandwidth counter per link. Built from the Recorder and a LinkReport.
#pragma once
#include <string>
#include <vector>

#include "algorithms/recorder.hpp"
#include "report/link_report.hpp"

namespace locosim {

// names[w] labels worker w's process ("worker 0 (home-0)"); events of a worker beyond names (a relay
// recorded as worker world_size) get a process too. `links` may be null (no counters).
// Spans on one track never overlap unless nested (what trace viewers require): concurrent spans of
// one kind go to extra tracks ("send 2", ...). Times are microseconds of simulated time, to the ns.
// detail (report: {trace: ...}): messages, every span (a ring all-reduce at K workers is 2(K−1) sends
// and receives per worker); collectives, no send or receive spans (compute, waits, joins and the link
// counters remain); none, no trace.json at all. The file is streamed, never held whole in memory.
enum class TraceDetail { messages, collectives, none };
// The scenario's report.trace ("messages", "collectives", "none"), as both backends write it.
TraceDetail trace_detail(const std::string& report_trace);
void write_trace_json(const Recorder& recorder, const std::vector<std::string>& names, const LinkReport* links,
                      const std::string& path, TraceDetail detail = TraceDetail::messages);

}  // namespace locosim
