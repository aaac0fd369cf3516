// Collectives as the point-to-point flows of their algorithm, in simulated time. Only the timing
// lives here: the numbers themselves are reduced by the Transport (mean_in_rank_order), the same for
// every algorithm, so the choice of algorithm changes time and bytes, never results.
//
// Each function runs one side of one collective whose payload is `bytes` per rank among `members`
// (the ranks taking part, in rank order: all of them, or those in the group when it started): call it
// from an actor on that side's host (a worker's helper actor; the *_serve functions from an actor on
// the relay host). `tag` must be the same on every side of one collective and unique among the
// collectives in flight (SimTransport reuses a finished one's: its mailboxes are empty then). Each side
// records its send and recv events (bytes, peer); the relay records as worker `relay` (the world size)
// and is that peer of the workers' events.
//
// Closed forms (tested in sim/collectives_test.cpp) on K identical workers whose own links carry U
// bytes/s up and D down; λ is a route's latency (the sum of its links'), S = bytes:
//   ring all-reduce          2(K−1)/K · S/min(U,D) + 2(K−1) · λ_worker→worker
//   relay all-reduce         S/U + λ_worker→relay + S/D + λ_relay→worker
//   hierarchical all-reduce  (m−1)·S/B_lan + λ_lan  +  2(L−1)/L · S/B_wan + 2(L−1) · λ_leader→leader
//                            + (m−1)·S/B_lan + λ_lan        (L sites of m hosts; direct gather/broadcast)
//   mesh all-gather          (K−1) · S/min(U,D) + λ_worker→worker
//   ring all-gather          (K−1) · (S/min(U,D) + λ_worker→worker)
//   relay all-gather         S/U + λ_worker→relay + (K−1)·S/D + λ_relay→worker
// The relay forms assume a well-connected relay: its downlink carries K uploads at once (needs ≥ K·U)
// and its uplink K(K−1) forwards (needs ≥ K·D); otherwise the relay's links are the bottleneck.
#pragma once
#include <simgrid/forward.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/recorder.hpp"

namespace locosim {

// 0, 1, ..., world_size - 1: every rank a member.
std::vector<int> all_ranks(int world_size);

// One message of `bytes` from `from` to `to` (ranks; the relay is the world size): the sending side,
// from an actor on `from`'s host, and the receiving side, from one on `to`'s host.
void send_flow(int from, int to, const std::string& tag, double bytes, Recorder& recorder);
void recv_flow(int from, int to, const std::string& tag, double bytes, Recorder& recorder);

// Ring all-reduce (reduce-scatter then all-gather): in each of 2(K-1) rounds every rank sends one
// chunk of bytes/K to its right neighbour and receives one from its left.
void ring_all_reduce_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder);

// Relay (parameter-server) all-reduce, a worker's side: uploads its S bytes to the relay, then
// downloads the S-byte mean. The relay's side is relay_all_reduce_serve.
void relay_all_reduce_flows(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                            double bytes, Recorder& recorder);
// The relay waits for all K uploads (it cannot reduce before), reduces (not charged: the relay's
// compute is taken as free), then sends the mean to every worker at once. With `lanes` > 1 the relay's
// flows are shared out among that many actors on its host (members lane, lane + lanes, ...), which meet
// at a barrier between the uploads and the downloads: the same flows at the same times. SimGrid 3.32
// keeps an actor's comms in a list that each finished wait scans whole, and runs one actor's simcalls
// one after another, so K flows in one actor cost O(K²) and K scheduling rounds; in `lanes` actors,
// O(K²/lanes) and K/lanes rounds. A lane's failed flow is not handed to the others: lanes only where no
// flow fails (a world that never fails).
void relay_all_reduce_serve(const std::vector<int>& members, int relay, const std::string& tag, double bytes,
                            Recorder& recorder, size_t lanes = 1);

// Hierarchical all-reduce over `sites` (ranks grouped by site, each group in rank order; a host outside
// any site is a group of one; see site_groups in config/platform.hpp). Inside each site the members send
// their S bytes over the LAN to the site's first host (its leader), all at once; the L leaders run a
// ring all-reduce among themselves over the WAN; each leader then sends the S-byte result to its
// members over the LAN, all at once. Only the leaders' ring crosses the WAN.
void hierarchical_all_reduce_flows(int rank, const std::vector<std::vector<int>>& sites, const std::string& tag,
                                   double bytes, Recorder& recorder);

// Direct (full mesh) all-gather: every rank sends its `bytes` to each other rank at once and receives
// theirs: (K-1)·bytes up and down per rank, all flows concurrent.
void mesh_all_gather_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder);

// Ring all-gather: in each of K-1 rounds every rank forwards one payload (its own first, then the one
// it received last) to its right neighbour. REQUIRES: every rank passes the same `bytes`.
void ring_all_gather_flows(int rank, const std::vector<int>& members, const std::string& tag, double bytes,
                           Recorder& recorder);

// Relay all-gather (the DisTrO report's relay server), a worker's side: uploads its payload once to
// the relay and downloads the other K-1 payloads from it. REQUIRES: every rank passes the same `bytes`.
void relay_all_gather_flows(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                            double bytes, Recorder& recorder);
// The relay stores and forwards: as soon as a worker's whole payload has arrived, it sends it to the
// other K-1 workers at once (no waiting for the other uploads; no pipelining inside one payload).
void relay_all_gather_serve(const std::vector<int>& members, int relay, const std::string& tag, double bytes,
                            Recorder& recorder);

// Aggregated flows (network: {flows: aggregated}): the same bytes on the same links, O(K) flows per
// collective instead of O(K²) messages, for swarms of thousands. `hosts` are the ranks' hosts.
//   ring all-reduce   one flow of 2(K−1)·⌈S/K⌉ bytes to the right neighbour (and one from the left);
//                     the ring ends at the latest, over its edges, of (the edge's flow end +
//                     (2(K−1) − 1) · the edge's latency): the exact ring's rounds, each as slow as its
//                     slowest edge, and never before every flow has ended
//   ring all-gather   the same with (K−1)·S bytes and K − 2 latencies
//   mesh all-gather   one flow of (K−1)·S bytes to the right neighbour, then the whole ring: each own
//                     link carries what the mesh puts on it; links between sites see only ring traffic
//   relay all-gather  every worker uploads S; from the first whole payload on the relay sends each
//                     worker (K−1)·S in one flow, and a worker whose flow ends before the last payloads
//                     could have come down (for each of the last 64 upload ends t: t + the payloads it
//                     needs that arrived since t · S / its route's narrowest link + latency) waits until
//                     then (the exact relay forwards each payload as soon as it is whole)
// The relay and hierarchical all-reduce are O(K) already and have no aggregated form. On K identical
// workers the ring and relay forms equal the closed forms above; docs/aggregated-collectives.md
// measures the difference from the exact flows on the shipped platforms (scripts/aggregate_error.py).
void ring_all_reduce_aggregated(int rank, const std::vector<int>& members,
                                const std::vector<simgrid::s4u::Host*>& hosts, const std::string& tag, double bytes,
                                Recorder& recorder);
void ring_all_gather_aggregated(int rank, const std::vector<int>& members,
                                const std::vector<simgrid::s4u::Host*>& hosts, const std::string& tag, double bytes,
                                Recorder& recorder);
void mesh_all_gather_aggregated(int rank, const std::vector<int>& members,
                                const std::vector<simgrid::s4u::Host*>& hosts, const std::string& tag, double bytes,
                                Recorder& recorder);
void relay_all_gather_aggregated(int rank, const std::vector<int>& members, int relay, const std::string& tag,
                                 double bytes, Recorder& recorder);
void relay_all_gather_aggregated_serve(const std::vector<int>& members, int relay, const std::string& tag,
                                       double bytes, Recorder& recorder);

}  // namespace locosim
