// parse_platform: reads platforms/*.yaml (or a scenario's inline `platform:`) into a PlatformSpec and
// checks that every pair of hosts (and the relay) has a route. Plain data only; sim/platform.cpp builds the SimGrid zone.
//
// Schema (platforms/README.md has the long version):
//
//   accelerators:                 # optional: name → dense bf16 peak of one device, and the MFU reached
//     rtx4090: {peak: 165 TFLOPS, efficiency: 0.35}
//     h100: {efficiency: 0.5}     # a built-in catalogue name: what is left out is the catalogue's
//   sites:                        # optional: islands of hosts on a fast LAN sharing one WAN access link
//     eu: {lan: {bandwidth: 100 Gbps, latency: 5 us},
//          uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 1 Gbps, latency: 5 ms}}
//   wan:                          # optional: measured site-to-site paths; replace the access links
//     - {from: eu, to: us, bandwidth: 935 Mbps, latency: 40 ms}    # both_ways: true (default) adds us→eu
//   hosts:
//     - {name: home, accelerator: rtx4090, gpus: 1, count: 2,
//        uplink: {bandwidth: 20 Mbps, latency: 10 ms}, downlink: {bandwidth: 200 Mbps, latency: 10 ms}}
//     - {name: dc, site: eu, accelerator: h100, gpus: 8}            # uses the site's lan/uplink/downlink
//     - {name: lab, site: eu, accelerator: l40s}   # not in accelerators: the catalogue's (config/accelerator_catalog.hpp)
//   relay: {uplink: {bandwidth: 10 Gbps, latency: 5 ms}, downlink: {...}}   # optional; or relay: {site: eu}
//
// Also here: the scenario's `network:` choice of collective algorithms, resolved against the platform.
// Site, host and relay names use letters, digits, '_' and '-' only, and no site shares a host's name: link
// names ("home-0.up", "eu.lan.dc-0.up", "wan.eu->us") are built from them and must stay unique.
#include "config/platform.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "config/accelerator_catalog.hpp"
#include "config/nearest.hpp"
#include "config/section.hpp"

namespace locosim {

const SiteSpec* PlatformSpec::site(const std::string& name) const {
  for (const auto& s : sites) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const AcceleratorSpec* PlatformSpec::accelerator(const std::string& name) const {
  for (const auto& a : accelerators) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

namespace {

// Every link's bandwidth and latency (hosts, sites, wan, relay): from a modem (1 kbps) to far beyond any
// network (10 Pbps); a latency of zero up to an hour (a satellite hop is 0.6 s). Values past these only
// make SimGrid's clock meaningless.
const Range kBandwidthRange = Range::closed(1e3, 1e16);  // bit/s
const Range kLatencyRange = Range::closed(0, 3600);      // s

// A link's one-way latency: `latency: 20 ms`, or `rtt: 40 ms` (what ping prints: there and back, so
// half of it each way), not both.
double one_way_latency(Section& s) {
  if (!s.has("rtt")) return s.quantity("latency", Quantity::duration_s, std::nullopt, kLatencyRange);
  if (s.has("latency")) {
    s.fail("rtt", "give latency (one way) or rtt (the round trip ping prints, twice the one-way latency), not both");
  }
  return s.quantity("rtt", Quantity::duration_s, std::nullopt, Range::closed(0, 2 * kLatencyRange.hi)) / 2;
}

// One direction of a link: {bandwidth: 20 Mbps, latency: 10 ms}. A zero latency is allowed.
LinkSpec parse_link(Section& parent, const std::string& key) {
  Section s = parent.child(key);
  LinkSpec link;
  link.bandwidth_bps = s.quantity("bandwidth", Quantity::bandwidth_bps, std::nullopt, kBandwidthRange);
  link.latency_s = one_way_latency(s);
  s.finish();
  return link;
}

bool is_plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

// The builder's routes grow linearly with hosts (a star zone per island), so the bound is what a run
// can hold: about 2 KiB of platform and per-worker state a host, before any model.
constexpr int64_t kMaxHosts = 100000;
const char* kMaxHostsWhy = "the largest swarm locosim is built and tested for";

const char* kPlainNameRule = "use only letters, digits, '_' and '-' (link names are built from it)";

std::string joined_names(const std::vector<std::string>& names) {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (const auto& n : sorted) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none defined" : out;
}

// One device: from 1 GFLOPS (a CPU core) to 1e19 FLOPS (10,000 times an H100), so that every step's
// simulated time stays finite and meaningful.
const Range kPeakRange = Range::closed(1e9, 1e19);
// MFU: below 0.1% of peak no run trains; 1 is the peak itself.
const Range kEfficiencyRange = Range::closed(1e-3, 1);

// Reads an accelerator entry's peak and efficiency; a missing one is the catalogue entry's (`known`)
// when there is one, else required.
AcceleratorSpec read_accelerator(Section& s, const std::string& name, const CatalogAccelerator* known) {
  AcceleratorSpec a;
  a.name = name;
  a.peak_flops = s.quantity("peak", Quantity::flops, known ? std::optional<std::string>(known->peak) : std::nullopt,
                            kPeakRange);
  a.efficiency = s.number("efficiency", known ? std::optional<double>(known->efficiency) : std::nullopt,
                          kEfficiencyRange);
  s.finish();
  return a;
}

// The platform's own accelerators (optional: hosts may name catalogue entries directly). An entry with
// a catalogue name overrides that entry, whole or in part. `entries` gets each entry's section.
std::vector<AcceleratorSpec> parse_accelerators(Section& section, std::vector<std::pair<std::string, Section>>* entries) {
  std::vector<AcceleratorSpec> out;
  *entries = section.named("accelerators", /*optional=*/true);
  for (auto& [name, s] : *entries) out.push_back(read_accelerator(s, name, catalog_accelerator(name)));
  return out;
}

// The accelerator a host names: the platform's own, else the catalogue's (added to spec.accelerators
// and to `from_catalogue`). Throws ConfigError at the host's `accelerator` for a name in neither.
const AcceleratorSpec& host_accelerator(Section& s, const std::string& name, PlatformSpec& spec,
                                        std::vector<std::string>* from_catalogue) {
  if (const AcceleratorSpec* own = spec.accelerator(name)) return *own;
  if (const CatalogAccelerator* known = catalog_accelerator(name)) {
    AcceleratorSpec a;
    a.name = name;
    a.peak_flops = parse_quantity(known->peak, Quantity::flops).value();
    a.efficiency = known->efficiency;
    spec.accelerators.push_back(a);
    from_catalogue->push_back(name);
    return spec.accelerators.back();
  }
  std::vector<std::string> own_names;
  for (const auto& a : spec.accelerators) {
    if (std::find(from_catalogue->begin(), from_catalogue->end(), a.name) == from_catalogue->end()) {
      own_names.push_back(a.name);
    }
  }
  std::vector<std::string> all = own_names;  // the file's own names first: they win a tie
  for (const auto& n : catalog_accelerator_names()) all.push_back(n);
  const std::string closest = nearest_name(name, all);
  s.fail("accelerator", "accelerator '" + name + "' is not in accelerators (known: " + joined_names(own_names) +
                            ") nor in the catalogue (" + joined_names(catalog_accelerator_names()) +
                            "; `locosim accelerators` lists them)" +
                            (closest.empty() ? "" : "; did you mean '" + closest + "'?"));
}

// The catalogue entries hosts named go into the resolved platform as if the file had defined them, so that
// resolved.yaml shows the peak and efficiency the run used. (Reading `accelerators` again starts its resolved
// mapping afresh: the file's own entries are put back first, in their order.)
void resolve_catalogue_entries(Section& section, const std::vector<std::pair<std::string, Section>>& own,
                               const std::vector<std::string>& from_catalogue) {
  if (from_catalogue.empty()) return;  // the resolved tree as it always was
  Section accelerators = section.child("accelerators", /*optional=*/true);
  for (const auto& [name, entry] : own) accelerators.adopt_resolved(name, entry);
  for (const auto& name : from_catalogue) {
    Section entry = accelerators.child(name, /*optional=*/true);  // absent from the file: the catalogue's values
    read_accelerator(entry, name, catalog_accelerator(name));
  }
}

// Sites and their sections (kept to point errors found later, such as a missing route, at the site).
std::vector<SiteSpec> parse_sites(Section& section, std::vector<Section>* site_sections) {
  std::vector<SiteSpec> out;
  for (auto& [name, s] : section.named("sites", /*optional=*/true)) {
    if (!is_plain_name(name)) s.fail("", "site name '" + name + "' must " + kPlainNameRule);
    SiteSpec site;
    site.name = name;
    site.lan = parse_link(s, "lan");
    if (s.has("uplink") != s.has("downlink")) {
      s.fail(s.has("uplink") ? "downlink" : "uplink",
             "site '" + name + "' has " + (s.has("uplink") ? "an uplink but no downlink" : "a downlink but no uplink") +
                 ": give both, or neither (then only wan entries connect it)");
    }
    if (s.has("uplink")) {
      site.uplink = parse_link(s, "uplink");
      site.downlink = parse_link(s, "downlink");
    }
    s.finish();
    out.push_back(site);
    site_sections->push_back(s);
  }
  return out;
}

std::vector<WanSpec> parse_wan(Section& section, const std::vector<SiteSpec>& sites) {
  std::vector<std::string> site_names;
  for (const auto& s : sites) site_names.push_back(s.name);
  auto is_site = [&](const std::string& n) {
    return std::find(site_names.begin(), site_names.end(), n) != site_names.end();
  };

  std::vector<WanSpec> out;
  std::map<std::pair<std::string, std::string>, std::string> given_by;  // (from, to) → "wan[i]"
  for (Section& s : section.list("wan", "", /*optional=*/true)) {
    WanSpec w;
    w.from = s.text("from");
    w.to = s.text("to");
    for (const char* key : {"from", "to"}) {
      const std::string& name = std::string(key) == "from" ? w.from : w.to;
      if (!is_site(name)) {
        s.fail(key, "site '" + name + "' is not in sites (known: " + joined_names(site_names) + ")");
      }
    }
    if (w.from == w.to) s.fail("to", "a wan entry joins two different sites, got '" + w.from + "' twice");
    w.link.bandwidth_bps = s.quantity("bandwidth", Quantity::bandwidth_bps, std::nullopt, kBandwidthRange);
    w.link.latency_s = one_way_latency(s);
    bool both_ways = s.flag("both_ways", true);
    s.finish();

    std::vector<WanSpec> directions = {w};
    if (both_ways) directions.push_back(WanSpec{w.to, w.from, w.link});
    for (const auto& d : directions) {
      auto [it, fresh] = given_by.emplace(std::make_pair(d.from, d.to), s.path());
      if (!fresh) {
        s.fail("to", "the path from " + d.from + " to " + d.to + " is already given by " + it->second +
                         (both_ways ? " (both_ways is true by default: one entry covers both directions)" : ""));
      }
      out.push_back(d);
    }
  }
  return out;
}

// Where a machine (`what` 'a' named `name`) joins the network: `site:` (then the site's links), or its
// own `uplink:` and `downlink:`.
void parse_attachment(Section& s, const std::string& name, const PlatformSpec& spec, HostSpec& h,
                      const std::string& what = "host") {
  h.site = s.text("site", "");
  if (!h.site.empty()) {
    if (!spec.site(h.site)) {
      std::vector<std::string> site_names;
      for (const auto& site : spec.sites) site_names.push_back(site.name);
      s.fail("site", "site '" + h.site + "' is not in sites (known: " + joined_names(site_names) + ")");
    }
    for (const char* key : {"uplink", "downlink"}) {
      if (s.has(key)) {
        s.fail(key, what + " '" + name + "' is in site '" + h.site + "' and uses the site's links: remove " + key +
                        " here, or remove site");
      }
    }
  } else {
    if (!s.has("uplink") && !s.has("downlink")) {
      s.fail("", what + " '" + name + "' has no site and no uplink/downlink: give it a site, or an uplink and a downlink");
    }
    h.uplink = parse_link(s, "uplink");
    h.downlink = parse_link(s, "downlink");
  }
}

// Reads the hosts list, expanding `count:` ("home" × 2 → "home-0", "home-1").
// Catalogue accelerators the hosts name are added to spec.accelerators and to `from_catalogue`.
std::vector<HostSpec> parse_hosts(Section& section, PlatformSpec& spec, std::vector<std::string>* from_catalogue) {
  std::vector<HostSpec> out;
  std::map<std::string, std::string> defined_by;  // expanded host name → "hosts[i]"
  std::vector<Section> items = section.list("hosts");
  if (items.empty()) section.fail("hosts", "must list at least one host");
  for (Section& s : items) {
    HostSpec h;
    std::string name = s.text("name");
    if (!is_plain_name(name)) s.fail("name", "host name '" + name + "' must " + kPlainNameRule);
    h.accelerator = s.text("accelerator");
    const AcceleratorSpec accelerator = host_accelerator(s, h.accelerator, spec, from_catalogue);
    h.gpus = static_cast<int>(s.integer("gpus", 1, Range::closed(1, 1e6)));  // a million devices: the largest cluster × 10
    int64_t count = s.integer("count", 1, Range::at_least(1));
    if (count > kMaxHosts) s.fail("count", "must be <= " + std::to_string(kMaxHosts) + " (" + kMaxHostsWhy + "), got " + std::to_string(count));
    parse_attachment(s, name, spec, h);
    h.speed_flops = h.gpus * accelerator.peak_flops * accelerator.efficiency;
    s.finish();

    for (int64_t i = 0; i < count; ++i) {
      h.name = count == 1 ? name : name + "-" + std::to_string(i);
      if (spec.site(h.name)) {
        s.fail("name", "'" + h.name + "' names both a site and a host: rename one (their links would share names)");
      }
      auto [it, fresh] = defined_by.emplace(h.name, s.path());
      if (!fresh) {
        s.fail("name", "host name '" + h.name + "' is already used by " + it->second +
                           (count > 1 ? " (count: " + std::to_string(count) + " names hosts " + name + "-0.." + name +
                                            "-" + std::to_string(count - 1) + ")"
                                      : ""));
      }
      out.push_back(h);
    }
    if (out.size() > static_cast<size_t>(kMaxHosts)) {
      s.fail("count", "the platform has " + std::to_string(out.size()) + " hosts, more than " +
                          std::to_string(kMaxHosts) + " (" + kMaxHostsWhy + ")");
    }
  }
  return out;
}

// The optional relay: `relay: {uplink: ..., downlink: ...}` (a server with its own links) or
// `relay: {site: eu}` (a machine on that site's LAN). Named "relay" unless `name:` says otherwise.
std::optional<HostSpec> parse_relay(Section& section, const PlatformSpec& spec) {
  if (!section.has("relay")) return std::nullopt;
  Section s = section.child("relay");
  HostSpec relay;
  relay.gpus = 0;
  relay.name = s.text("name", "relay");
  if (!is_plain_name(relay.name)) s.fail("name", "relay name '" + relay.name + "' must " + kPlainNameRule);
  bool taken = spec.site(relay.name) != nullptr;
  for (const auto& h : spec.hosts) taken = taken || h.name == relay.name;
  if (taken) {
    s.fail("name", "'" + relay.name + "' already names a host or a site: give the relay another name (relay: {name: ...})");
  }
  parse_attachment(s, relay.name, spec, relay, "relay");
  s.finish();
  return relay;
}

bool has_access_links(const SiteSpec& s) { return s.uplink.has_value() && s.downlink.has_value(); }

bool has_wan(const PlatformSpec& spec, const std::string& from, const std::string& to) {
  return std::any_of(spec.wan.begin(), spec.wan.end(),
                     [&](const WanSpec& w) { return w.from == from && w.to == to; });
}

// Every ordered pair of endpoints (hosts and relay) needs a route (see route_link_names). Hosts with
// their own links always reach each other; the rest depends on the sites that hold hosts.
void check_routes(const PlatformSpec& spec, const std::vector<Section>& site_sections) {
  std::vector<size_t> used;  // indices into spec.sites of sites that hold endpoints, in spec order
  bool any_siteless = false;
  for (size_t i = 0; i < spec.sites.size(); ++i) {
    bool holds = false;
    for (size_t e = 0; e < spec.endpoint_count(); ++e) holds = holds || spec.endpoint(e).site == spec.sites[i].name;
    if (holds) used.push_back(i);
  }
  for (size_t e = 0; e < spec.endpoint_count(); ++e) any_siteless = any_siteless || spec.endpoint(e).site.empty();

  auto site_missing_links = [&](size_t a, size_t b) -> size_t {
    return has_access_links(spec.sites[a]) ? b : a;
  };
  for (size_t a : used) {
    for (size_t b : used) {
      if (a == b) continue;
      const SiteSpec& s = spec.sites[a];
      const SiteSpec& t = spec.sites[b];
      if (has_wan(spec, s.name, t.name) || (has_access_links(s) && has_access_links(t))) continue;
      site_sections[site_missing_links(a, b)].fail(
          "", "no route from site " + s.name + " to site " + t.name +
                  ": give both sites an uplink and downlink, or a wan entry");
    }
    if (any_siteless && !has_access_links(spec.sites[a])) {
      const std::string& name = spec.sites[a].name;
      site_sections[a].fail("", "no route between site " + name +
                                    " and the hosts (or relay) that have their own links: give site " + name +
                                    " an uplink and downlink");
    }
  }
}

}  // namespace

PlatformSpec parse_platform(Section& section) {
  PlatformSpec spec;
  spec.file = section.file();
  std::vector<std::pair<std::string, Section>> own_accelerators;
  spec.accelerators = parse_accelerators(section, &own_accelerators);
  std::vector<Section> site_sections;
  spec.sites = parse_sites(section, &site_sections);
  spec.wan = parse_wan(section, spec.sites);
  std::vector<std::string> from_catalogue;
  spec.hosts = parse_hosts(section, spec, &from_catalogue);
  resolve_catalogue_entries(section, own_accelerators, from_catalogue);
  spec.relay = parse_relay(section, spec);
  section.finish();
  check_routes(spec, site_sections);
  return spec;
}

namespace {
std::string host_link(const HostSpec& h, const char* direction) { return h.name + "." + direction; }
std::string lan_link(const HostSpec& h, const char* direction) {
  return h.site + ".lan." + h.name + "." + direction;
}
std::string site_link(const std::string& site, const char* direction) { return site + "." + direction; }
std::string wan_link(const std::string& from, const std::string& to) { return "wan." + from + "->" + to; }
}  // namespace

std::vector<std::pair<std::string, LinkSpec>> platform_links(const PlatformSpec& spec) {
  std::vector<std::pair<std::string, LinkSpec>> links;
  for (size_t i = 0; i < spec.endpoint_count(); ++i) {
    const HostSpec& h = spec.endpoint(i);
    if (h.site.empty()) {
      links.emplace_back(host_link(h, "up"), h.uplink);
      links.emplace_back(host_link(h, "down"), h.downlink);
    } else {
      const SiteSpec* site = spec.site(h.site);
      links.emplace_back(lan_link(h, "up"), site->lan);
      links.emplace_back(lan_link(h, "down"), site->lan);
    }
  }
  for (const auto& s : spec.sites) {
    if (s.uplink) links.emplace_back(site_link(s.name, "up"), *s.uplink);
    if (s.downlink) links.emplace_back(site_link(s.name, "down"), *s.downlink);
  }
  for (const auto& w : spec.wan) links.emplace_back(wan_link(w.from, w.to), w.link);
  return links;
}

std::vector<std::string> link_names(const PlatformSpec& spec) {
  std::vector<std::string> names;
  for (auto& [name, link] : platform_links(spec)) names.push_back(std::move(name));
  return names;
}

std::string own_link(const PlatformSpec& spec, size_t endpoint, const char* direction) {
  const HostSpec& h = spec.endpoint(endpoint);
  return h.site.empty() ? host_link(h, direction) : lan_link(h, direction);
}

std::vector<std::string> route_link_names(const PlatformSpec& spec, size_t src, size_t dst) {
  const HostSpec& a = spec.endpoint(src);
  const HostSpec& b = spec.endpoint(dst);
  if (a.site.empty() && b.site.empty()) return {host_link(a, "up"), host_link(b, "down")};
  if (a.site == b.site) return {lan_link(a, "up"), lan_link(b, "down")};
  std::vector<std::string> route;
  route.push_back(a.site.empty() ? host_link(a, "up") : lan_link(a, "up"));
  if (!a.site.empty() && !b.site.empty() && has_wan(spec, a.site, b.site)) {
    route.push_back(wan_link(a.site, b.site));
  } else {
    if (!a.site.empty()) route.push_back(site_link(a.site, "up"));
    if (!b.site.empty()) route.push_back(site_link(b.site, "down"));
  }
  route.push_back(b.site.empty() ? host_link(b, "down") : lan_link(b, "down"));
  return route;
}

std::vector<std::vector<int>> site_groups(const PlatformSpec& spec) {
  std::vector<std::vector<int>> groups;
  std::map<std::string, size_t> group_of_site;
  for (int rank = 0; rank < static_cast<int>(spec.hosts.size()); ++rank) {
    const std::string& site = spec.hosts[rank].site;
    auto it = site.empty() ? group_of_site.end() : group_of_site.find(site);
    if (it == group_of_site.end()) {
      if (!site.empty()) group_of_site.emplace(site, groups.size());
      groups.push_back({rank});
    } else {
      groups[it->second].push_back(rank);
    }
  }
  return groups;
}

namespace {
// Names by enum value (AllReduceAlgorithm, AllGatherAlgorithm), as the scenario spells them.
const std::vector<std::string> kAllReduceNames = {"ring", "relay", "hierarchical"};
const std::vector<std::string> kAllGatherNames = {"mesh", "ring", "relay"};

size_t index_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
}
}  // namespace

const char* algorithm_name(AllReduceAlgorithm a) { return kAllReduceNames.at(static_cast<size_t>(a)).c_str(); }
const char* algorithm_name(AllGatherAlgorithm a) { return kAllGatherNames.at(static_cast<size_t>(a)).c_str(); }

CollectiveChoice parse_network(Section& network, const PlatformSpec& platform) {
  bool shared_site = false;
  for (const auto& group : site_groups(platform)) shared_site = shared_site || group.size() > 1;
  std::string all_reduce = network.choice("all_reduce", {"auto", "ring", "relay", "hierarchical"}, "auto");
  if (all_reduce == "auto") all_reduce = shared_site ? "hierarchical" : "ring";
  std::string all_gather = network.choice("all_gather", {"auto", "mesh", "ring", "relay"}, "auto");
  if (all_gather == "auto") all_gather = platform.relay ? "relay" : "mesh";
  const bool aggregated = network.choice("flows", {"exact", "aggregated"}, "exact") == "aggregated";
  network.finish();
  for (const auto& [key, value] : {std::pair{"all_reduce", all_reduce}, std::pair{"all_gather", all_gather}}) {
    if (value == "relay" && !platform.relay) {
      network.fail(key, "relay needs a relay host, and platform '" + platform.file +
                            "' has none: add `relay: {uplink: {...}, downlink: {...}}` (or `relay: {site: ...}`) "
                            "to the platform, or choose another algorithm (auto picks one that fits)");
    }
  }
  return {static_cast<AllReduceAlgorithm>(index_of(kAllReduceNames, all_reduce)),
          static_cast<AllGatherAlgorithm>(index_of(kAllGatherNames, all_gather)), aggregated};
}

}  // namespace locosim
