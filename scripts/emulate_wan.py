#!/usr/bin/env python3
"""Emulated wide-area validation: runs a scenario's policies for real (locosim-real, Gloo over TCP)
inside Linux network namespaces whose links are shaped like the scenario's platform, and compares
the measured round times with the simulator's prediction for the same platform.

  sudo scripts/emulate_wan.py scenarios/tests/wan-2.yaml [--build build] [--policy ddp ...]

One namespace per worker, a veth pair into a bridge; each worker's uplink is shaped with `tc tbf` on
its namespace side, its downlink on the bridge side. netem is not available on these machines, so
only bandwidth is emulated: latencies are not, and the prediction is made with the platform's
latencies set to 50 us (a veth hop). Compute speed is calibrated from the real run: each host's
accelerator is replaced by one whose speed makes a simulated step take the measured mean step.
The namespaces' TCP runs CUBIC (Linux's default), not whatever this machine's default is
(--congestion picks another).
A relay with links of its own (`relay: {uplink, downlink}`) gets a namespace of its own, where
`locosim-real --serve-relay` runs; the ranks' all-gathers go through it (--relay).
Sites are emulated as a bridge per site behind one shaped veth pair: traffic leaving site s is
shaped to its WAN entry's bandwidth (or its uplink), traffic entering it to its downlink; so a WAN
matrix is supported between two sites (more would need per-destination classes).
Exit codes: 0 done, 2 bad input, 3 cannot run here (not root, no ip/tc), 1 a run failed.
"""
import argparse
import csv
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

PREFIX = "lsw"           # namespace and interface names: lsw0, lsw0h, lsw0n, lswbr
SUBNET = "10.213.7."     # addresses exist only inside this script's own namespaces


def sh(*cmd, check=True, ns=None):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def parse_bps(text):
    units = {"bps": 1, "kbps": 1e3, "Kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Mbit/s": 1e6, "Gbit/s": 1e9,
             "Bps": 8, "kBps": 8e3, "MBps": 8e6, "GBps": 8e9}
    number, unit = str(text).split()
    return float(number) * units[unit]


def expand_hosts(platform):
    """The worker hosts in rank order: name, the bandwidths of their own links (a site's LAN for a
    host in a site) and their site."""
    sites = platform.get("sites") or {}
    hosts = []
    for h in platform["hosts"]:
        count = int(h.get("count", 1))
        for i in range(count):
            host = {"name": h["name"] if count == 1 else "%s-%d" % (h["name"], i), "site": h.get("site")}
            if host["site"]:
                host["up_bps"] = host["down_bps"] = parse_bps(sites[host["site"]]["lan"]["bandwidth"])
            else:
                host["up_bps"] = parse_bps(h["uplink"]["bandwidth"])
                host["down_bps"] = parse_bps(h["downlink"]["bandwidth"])
            hosts.append(host)
    return hosts


def relay_host(platform):
    """The relay as an emulated host (its own links), or None: a relay in a site is not emulated."""
    relay = platform.get("relay")
    if not relay:
        return None
    if "uplink" not in relay:
        sys.exit("emulate_wan: a relay in a site is not emulated; give it uplink and downlink")
    return {"name": relay.get("name", "relay"), "site": None, "up_bps": parse_bps(relay["uplink"]["bandwidth"]),
            "down_bps": parse_bps(relay["downlink"]["bandwidth"])}


def site_links(platform):
    """Per site in use: (bps leaving it, bps entering it or None when unshaped), in order of first use."""
    sites = platform.get("sites") or {}
    used = []
    for h in platform["hosts"]:
        if h.get("site") and h["site"] not in used:
            used.append(h["site"])
    wan_entries = platform.get("wan") or []
    if wan_entries and len(used) > 2:
        sys.exit("emulate_wan: a WAN matrix is emulated between two sites at most (this platform uses %d)" % len(used))
    links = []
    for name in used:
        site = sites[name]
        out = [w for w in wan_entries if w["from"] == name or (w.get("both_ways", True) and w["to"] == name)]
        if out:
            links.append((parse_bps(out[0]["bandwidth"]), None))
        elif "uplink" in site:
            links.append((parse_bps(site["uplink"]["bandwidth"]), parse_bps(site["downlink"]["bandwidth"])))
        else:
            sys.exit("emulate_wan: site %s has no uplink and no WAN entry" % name)
    return used, links


QUEUE_MS = 50  # how long a packet may wait in a shaped link's queue (--queue-ms)


# The emulated hosts' TCP congestion control (--congestion): Linux's default, whatever this host
# runs. It matters: with BBR over tc tbf, Gloo's ring all-reduce on equal links took 10-17% longer
# than with CUBIC (docs/validation.md).
CONGESTION = "cubic"
ALLOWED_BEFORE = None  # the host's allowed algorithms, while build_network has added CONGESTION


def shape(dev, bps, ns=None):
    burst = max(int(bps / 8 / 250), 16 * 1024)  # at least one timer tick's worth of bytes
    sh("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "%dbit" % bps, "burst", str(burst),
       "latency", "%gms" % QUEUE_MS, ns=ns)


def congestion_problem():
    """Why this kernel cannot give the namespaces CONGESTION, or None."""
    path = "/proc/sys/net/ipv4/tcp_available_congestion_control"
    with open(path) as f:
        available = f.read().split()
    if CONGESTION not in available and shutil.which("modprobe"):
        sh("modprobe", "tcp_" + CONGESTION, check=False)
        with open(path) as f:
            available = f.read().split()
    if CONGESTION not in available:
        return "this kernel has no TCP congestion control %r (it has: %s)" % (CONGESTION, " ".join(available))
    return None


def allow_congestion():
    """A namespace may only choose an algorithm the host allows (tcp_allowed_congestion_control):
    CONGESTION is added there until teardown."""
    global ALLOWED_BEFORE
    with open("/proc/sys/net/ipv4/tcp_allowed_congestion_control") as f:
        allowed = f.read().split()
    if CONGESTION not in allowed:
        ALLOWED_BEFORE = " ".join(allowed)
        sh("sysctl", "-q", "-w", "net.ipv4.tcp_allowed_congestion_control=" + " ".join(allowed + [CONGESTION]))


def build_network(hosts, platform=None):
    teardown(len(hosts))
    allow_congestion()
    sh("ip", "link", "add", PREFIX + "br", "type", "bridge")
    sh("ip", "link", "set", PREFIX + "br", "up")
    sites, links = site_links(platform) if platform else ([], [])
    for i, (leaving, entering) in enumerate(links):
        bridge, inner, outer = "%ss%d" % (PREFIX, i), "%ss%da" % (PREFIX, i), "%ss%db" % (PREFIX, i)
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "link", "set", bridge, "up")
        sh("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
        sh("ip", "link", "set", inner, "master", bridge)
        sh("ip", "link", "set", outer, "master", PREFIX + "br")
        sh("ip", "link", "set", inner, "up")
        sh("ip", "link", "set", outer, "up")
        shape(inner, leaving)               # out of the site's bridge: leaving the site
        if entering:
            shape(outer, entering)          # out of the core bridge into the site
    for r, h in enumerate(hosts):
        ns, host_side, ns_side = "%s%d" % (PREFIX, r), "%s%dh" % (PREFIX, r), "%s%dn" % (PREFIX, r)
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", host_side, "type", "veth", "peer", "name", ns_side)
        sh("ip", "link", "set", ns_side, "netns", ns)
        sh("ip", "link", "set", host_side, "master",
           "%ss%d" % (PREFIX, sites.index(h["site"])) if h.get("site") else PREFIX + "br")
        sh("ip", "link", "set", host_side, "up")
        sh("ip", "addr", "add", "%s%d/24" % (SUBNET, r + 1), "dev", ns_side, ns=ns)
        sh("ip", "link", "set", ns_side, "up", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        # Gloo keeps its connections open: a long-lived WAN flow does not restart from slow start.
        sh("sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0", ns=ns, check=False)
        sh("sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=" + CONGESTION, ns=ns)
        shape(ns_side, h["up_bps"], ns=ns)      # leaving the worker: its uplink
        shape(host_side, h["down_bps"])         # entering the worker: its downlink


def teardown(n):
    global ALLOWED_BEFORE
    for r in range(max(n, 64)):
        sh("ip", "netns", "del", "%s%d" % (PREFIX, r), check=False)
        sh("ip", "link", "del", "%s%dh" % (PREFIX, r), check=False)
    for i in range(8):
        sh("ip", "link", "del", "%ss%da" % (PREFIX, i), check=False)
        sh("ip", "link", "del", "%ss%d" % (PREFIX, i), check=False)
    sh("ip", "link", "del", PREFIX + "br", check=False)
    if ALLOWED_BEFORE is not None:
        sh("sysctl", "-q", "-w", "net.ipv4.tcp_allowed_congestion_control=" + ALLOWED_BEFORE, check=False)
        ALLOWED_BEFORE = None


RELAY_PORT = 29613


def run_real(build, scenario_path, label, hosts, out, timeout_s, relay=False):
    """Runs the policy for real, a rank per namespace; with relay, the relay in namespace K (the
    namespace after the workers')."""
    procs, server = [], None
    extra = []
    # The job's secret, in the processes' environment only (README "Security").
    secret = dict(os.environ, LOCOSIM_JOB_SECRET=secrets.token_hex(32))
    if relay:
        k = len(hosts)
        relay_at = "%s%d:%d" % (SUBNET, k + 1, RELAY_PORT)
        server = subprocess.Popen(["ip", "netns", "exec", "%s%d" % (PREFIX, k), os.path.join(build, "locosim-real"),
                                   scenario_path, "--serve-relay", relay_at, "--timeout", str(timeout_s)], env=secret)
        extra = ["--relay", relay_at]
    for r in range(len(hosts)):
        env = dict(secret, RANK=str(r), LOCAL_RANK="0", WORLD_SIZE=str(len(hosts)),
                   MASTER_ADDR=SUBNET + "1", MASTER_PORT="29611", LOCOSIM_GLOO_IFNAME="%s%dn" % (PREFIX, r))
        cmd = ["ip", "netns", "exec", "%s%d" % (PREFIX, r), os.path.join(build, "locosim-real"), scenario_path,
               "--policy", label, "--output", out, "--reduce", "native", "--timeout", str(timeout_s)] + extra
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    if server:
        try:
            codes.append(server.wait(timeout=30))  # it ends once every rank has disconnected
        except subprocess.TimeoutExpired:
            server.kill()
            codes.append("relay did not stop")
    if any(codes):
        sys.exit("emulate_wan: the real run of %s failed (exit codes %s)" % (label, codes))


def read_metrics(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f)]


def mean_step_s(events_path, rank):
    """The rank's time per compute event while not blocked on the network: its compute spans and the
    host's own work between them (packing and unpacking payloads, drawing batches, writing metrics),
    which the simulator does not charge; from the end of its first compute span (caches warm up) to
    the end of its last (the final evaluation left out)."""
    with open(events_path) as f:
        events = [(float(e["start_s"]), float(e["end_s"]), e["kind"]) for e in csv.DictReader(f)
                  if int(e["worker"]) == rank]
    computes = sorted(end for start, end, kind in events if kind == "compute")
    if len(computes) < 2:
        sys.exit("emulate_wan: rank %d of %s computed fewer than twice" % (rank, events_path))
    first, last = computes[0], computes[-1]
    blocked, reach = 0.0, first  # the union of the waits inside [first, last]
    for start, end in sorted((max(s, first), min(e, last)) for s, e, k in events if k == "wait"):
        if end > max(start, reach):
            blocked += end - max(start, reach)
            reach = end
    return (last - first - blocked) / (len(computes) - 1)


def round_time_s(metrics_path, steps_per_round):
    times = {int(r["step"]): float(r["time_s"]) for r in read_metrics(metrics_path) if r["worker"] == "0"}
    ends = [times[s] for s in sorted(times) if s % steps_per_round == 0]
    if len(ends) < 3:
        sys.exit("emulate_wan: %s has fewer than 3 rounds: give the scenario more steps" % metrics_path)
    return (ends[-1] - ends[0]) / (len(ends) - 1)  # the first round includes start-up


def veth_latency(link):
    return dict(link, latency="50 us")


def veth_links(h):
    """An emulated host's uplink and downlink for the simulator, with a veth hop's latency."""
    return {"uplink": {"bandwidth": "%.9g bps" % h["up_bps"], "latency": "50 us"},
            "downlink": {"bandwidth": "%.9g bps" % h["down_bps"], "latency": "50 us"}}


def simulate(build, scenario, scenario_path, policy, hosts, speeds_flops, work, name, network_model=None,
             platform=None):
    """Runs the simulator on the scenario with the emulated links and the given host speeds;
    network_model: the scenario's `network:` keys model and calibration (None: the scenario's own);
    platform: the scenario's platform, for its sites and WAN (every latency becomes a veth hop's)."""
    sim = dict(scenario)
    if network_model:
        sim["network"] = dict(sim.get("network") or {}, **network_model)
    sim.pop("timing", None)  # the real run moved the real model's bytes
    # Times only (README "Timing-only runs"): the same events and times to the last byte as a run that
    # trains, without the LibTorch steps (a DeMo prediction: 1.5 s instead of 9 s).
    sim["numerics"] = "none"
    sim["name"] = name
    sim["policies"] = [policy]
    sim["platform"] = {"accelerators": {}, "hosts": []}
    if platform and platform.get("sites"):
        sim["platform"]["sites"] = {name: {key: veth_latency(link) for key, link in site.items()}
                                    for name, site in platform["sites"].items()}
        sim["platform"]["wan"] = [veth_latency(w) for w in platform.get("wan") or []]
    if platform and platform.get("relay"):
        relay = relay_host(platform)
        sim["platform"]["relay"] = dict(name=relay["name"], **veth_links(relay))
    for r, (h, speed) in enumerate(zip(hosts, speeds_flops)):
        sim["platform"]["accelerators"]["speed-%d" % r] = {"peak": "%.9g FLOPS" % speed, "efficiency": 1.0}
        host = {"name": "w%d" % r, "accelerator": "speed-%d" % r}
        if h.get("site"):
            host["site"] = h["site"]
        else:
            host.update(veth_links(h))
        sim["platform"]["hosts"].append(host)
    data = dict(sim.get("data") or {})
    if data.get("path", "kjv") != "kjv":
        data["path"] = os.path.join(os.path.dirname(scenario_path), data["path"])
    sim["data"] = data
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(sim, f)
    subprocess.run([os.path.join(build, "locosim"), "run", path, "-o", os.path.join(work, "sim")],
                   check=True, stdout=subprocess.DEVNULL)


def emulation_problem():
    """Why links cannot be emulated here, or None."""
    if os.geteuid() != 0 or not shutil.which("tc") or not shutil.which("ip"):
        return "needs root and the ip and tc commands (network namespaces, tc tbf)"
    probe = sh("ip", "netns", "add", PREFIX + "probe", check=False)
    sh("ip", "netns", "del", PREFIX + "probe", check=False)
    if probe.returncode != 0:
        return "cannot make a network namespace here: " + probe.stderr.strip()
    return congestion_problem()


def main():
    global QUEUE_MS, CONGESTION
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--build", default="build")
    ap.add_argument("--policy", action="append", help="labels to run (default: all)")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--models", default="ideal,tcp", help="network models to predict with (default: ideal,tcp)")
    ap.add_argument("--calibration", help="calibration file for the tcp model (default: the built-in values)")
    ap.add_argument("--keep", help="keep the real and simulated run folders under this folder")
    ap.add_argument("--queue-ms", type=float, default=50,
                    help="how long a packet may wait in a shaped link's queue (default %(default)s ms)")
    ap.add_argument("--congestion", default=CONGESTION,
                    help="the emulated hosts' TCP congestion control (default %(default)s, Linux's default)")
    args = ap.parse_args()
    QUEUE_MS = args.queue_ms
    CONGESTION = args.congestion
    problem = emulation_problem()
    if problem:
        print("emulate_wan: skipped: " + problem)
        return 3

    scenario_path = os.path.abspath(args.scenario)
    with open(scenario_path) as f:
        scenario = yaml.safe_load(f)
    platform = scenario["platform"]
    if isinstance(platform, str):
        with open(os.path.join(os.path.dirname(scenario_path), platform)) as f:
            platform = yaml.safe_load(f)
    hosts = expand_hosts(platform)
    relay = relay_host(platform)
    policies = [p if isinstance(p, dict) else {"name": p} for p in scenario["policies"]]
    for p in policies:
        p.setdefault("label", p["name"])
    if args.policy:
        policies = [p for p in policies if p["label"] in args.policy]
    build = os.path.abspath(args.build)
    models = args.models.split(",")
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="locosim-wan-")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        build_network(hosts + ([relay] if relay else []), platform)
        for p in policies:
            run_real(build, scenario_path, p["label"], hosts, os.path.join(work, "real"), args.timeout,
                     relay=relay is not None)
            real_dir = os.path.join(work, "real", scenario.get("name", "scenario"), p["label"])
            per_round = int(p.get("inner_steps", 1)) if p["name"] != "ddp" else 1
            measured = round_time_s(os.path.join(real_dir, "metrics.csv"), per_round)
            # Compute as measured: each host computes at the speed measured for its rank.
            simulate(build, scenario, scenario_path, p, hosts, [1e12] * len(hosts), work, "unit", None, platform)
            flops = mean_step_s(os.path.join(work, "sim", "unit", p["label"], "events.csv"), 0) * 1e12
            speeds = [flops / mean_step_s(os.path.join(real_dir, "events.csv"), r) for r in range(len(hosts))]
            predicted = []
            for model in models:
                network = {"model": model}
                if model == "tcp" and args.calibration:
                    network["calibration"] = os.path.abspath(args.calibration)
                simulate(build, scenario, scenario_path, p, hosts, speeds, work, "predicted-" + model, network,
                         platform)
                predicted.append(round_time_s(os.path.join(work, "sim", "predicted-" + model, p["label"],
                                                           "metrics.csv"), per_round))
            rows.append((p["label"], measured, predicted))
    finally:
        teardown(len(hosts))
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    name = scenario.get("name", os.path.basename(scenario_path))
    print("| scenario | policy | measured s/round | " +
          " | ".join("%s s/round | %s error" % (m, m) for m in models) + " |")
    print("|---|---|---:|" + "---:|---:|" * len(models))
    for label, measured, predicted in rows:
        cells = " | ".join("%.3f | %+.1f%%" % (t, 100 * (t - measured) / measured) for t in predicted)
        print("| %s | %s | %.3f | %s |" % (name, label, measured, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
