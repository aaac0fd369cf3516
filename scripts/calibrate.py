#!/usr/bin/env python3
"""Calibration: measures this machine's network stack and compute, and writes what a platform names.

  sudo scripts/calibrate.py network [-o platforms/calibration/tcp-emulated.yaml] [--build build]
  scripts/calibrate.py compute scenarios/quickstart.yaml [--name cpu-host] [--device cuda] [--build build]

network: runs the real backend (locosim-real, Gloo over TCP) inside network namespaces shaped like a
set of small platforms (scripts/emulate_wan.py builds them: message sizes from two model sizes, 2 and
4 workers at once, asymmetric and symmetric links, two homes of different speeds, three homes
around a relay; the hosts run CUBIC unless --congestion names another), measures its step times,
and fits the tcp
model's bandwidth factor (and whether acknowledgements' cross-traffic is on) so that the simulator
predicts them: a scenario names the file as `network: {model: tcp, calibration: <file>}`. The TCP
window is read from this kernel (tcp_rmem's maximum, halved by tcp_adv_win_scale). Latency cannot be
emulated here (no netem): the factors are fitted at veth latencies, and latency_factor stays 1.

compute: runs the scenario's model for real on one worker (no root needed), on its runtime.device
or --device (a GPU: a locosim built against a LibTorch with CUDA), measures its mean step, and prints
the accelerator entry (peak x efficiency) that makes the simulator's step take as long. In a build of
the real backend alone (-DLOCOSIM_SIMULATOR=OFF, as on a GPU node without SimGrid) it prints the
measured step and the command that prices it where the simulator is: the same command with
--step-seconds, which runs no model.

Exit codes: 0 done, 2 bad input, 3 cannot run here (not root, no ip/tc), 1 a run failed.
"""
import argparse
import datetime
import os
import platform as pyplatform
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulate_wan as wan  # noqa: E402

# The calibration cases: (label, each worker's (uplink bps, downlink bps), model preset, the relay's
# (uplink bps, downlink bps) or None). Two message sizes (the tiny and small models' gradients: 0.3
# and 3.2 MB), one and two flows per link direction, asymmetric and symmetric links, two homes whose
# uploads differ 4x, and three homes around a relay. Ring cases run DDP; the relay case runs DeMo
# with the reference wire (346 kB per rank), whose all-gather has each home upload once while it
# downloads the others' at its downlink's speed: there a slow uplink also carries the
# acknowledgements of a fast download, which tells whether the acknowledgements' cross-traffic
# predicts better on or off (on symmetric rings the two fit equally well).
HOME_20_100 = (20e6, 100e6)
CASES = [
    ("2 x 20/100 Mbps, small", [HOME_20_100] * 2, "small", None),
    ("2 x 20/100 Mbps, tiny", [HOME_20_100] * 2, "tiny", None),
    ("2 x 50/50 Mbps, small", [(50e6, 50e6)] * 2, "small", None),
    ("4 x 20/100 Mbps, small", [HOME_20_100] * 4, "small", None),
    ("10/50 + 40/40 Mbps, small", [(10e6, 50e6), (40e6, 40e6)], "small", None),
    ("3 homes + relay, DeMo", [(10e6, 50e6), HOME_20_100, (20e6, 40e6)], "small", (100e6, 100e6)),
]
STEPS = 10
DEMO_WIRE = {"name": "demo", "lr": 3.0e-3, "topk": 128, "values": "fp32", "indices": "int64"}


def case_scenario(name, hosts, preset, relay):
    """The case's scenario for emulated `hosts` (emulate_wan's: name, up_bps, down_bps)."""
    platform = {"accelerators": {"cpu": {"peak": "1 TFLOPS", "efficiency": 1.0}},
                "hosts": [dict(name=h["name"], accelerator="cpu", **wan.veth_links(h)) for h in hosts]}
    scenario = {
        "name": name, "seed": 1, "platform": platform,
        "data": {"path": "kjv"},
        "model": {"preset": preset, "seq_len": 64},
        "train": {"steps": STEPS, "batch_size": 4, "eval_every": STEPS, "eval_batches": 1},
        "policies": ["ddp"],
    }
    if relay:
        platform["relay"] = wan.veth_links({"up_bps": relay[0], "down_bps": relay[1]})
        scenario["network"] = {"all_gather": "relay"}
        scenario["policies"] = [DEMO_WIRE]
    return scenario


def tcp_window_bytes():
    with open("/proc/sys/net/ipv4/tcp_rmem") as f:
        rmem_max = int(f.read().split()[2])
    with open("/proc/sys/net/ipv4/tcp_adv_win_scale") as f:
        scale = int(f.read())
    return rmem_max - rmem_max // (2 ** scale) if scale > 0 else rmem_max // (2 ** -scale)


def write_calibration(path, factor, crosstraffic, window):
    with open(path, "w") as f:
        yaml.safe_dump({"tcp": {"bandwidth_factor": round(factor, 4), "latency_factor": 1.0,
                                "crosstraffic": crosstraffic, "window": "%d B" % window}}, f)


def measure_case(build, work, case):
    """Runs the case for real; returns (measured s per step, the hosts' measured speeds, scenario, its
    path, the emulated hosts, the policy)."""
    label, links, preset, relay = case
    workers = len(links)
    name = "calib-%s-%s%s" % ("-".join("%d-%d" % (up / 1e6, down / 1e6) for up, down in links), preset,
                              "-relay" if relay else "")
    hosts = [{"name": "w-%d" % i, "up_bps": up, "down_bps": down} for i, (up, down) in enumerate(links)]
    scenario = case_scenario(name, hosts, preset, relay)
    policy = DEMO_WIRE if relay else {"name": "ddp"}
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(scenario, f)
    emulated = hosts + ([wan.relay_host(scenario["platform"])] if relay else [])
    wan.build_network(emulated)
    try:
        wan.run_real(build, path, policy["name"], hosts, os.path.join(work, "real"), 120, relay=relay is not None)
    finally:
        wan.teardown(len(emulated))
    real_dir = os.path.join(work, "real", name, policy["name"])
    measured = wan.round_time_s(os.path.join(real_dir, "metrics.csv"), 1)
    wan.simulate(build, scenario, path, policy, hosts, [1e12] * workers, work, name + "-unit",
                 platform=scenario["platform"])
    flops = wan.mean_step_s(os.path.join(work, "sim", name + "-unit", policy["name"], "events.csv"), 0) * 1e12
    speeds = [flops / wan.mean_step_s(os.path.join(real_dir, "events.csv"), r) for r in range(workers)]
    return measured, speeds, scenario, path, hosts, policy


def predict(build, work, m, factor, crosstraffic, window, tag):
    measured, speeds, scenario, path, hosts, policy = m
    calibration = os.path.join(work, "calibration-%s.yaml" % tag)
    write_calibration(calibration, factor, crosstraffic, window)
    name = "%s-%s" % (scenario["name"], tag)
    wan.simulate(build, scenario, path, policy, hosts, speeds, work, name,
                 {"model": "tcp", "calibration": calibration}, scenario["platform"])
    return wan.round_time_s(os.path.join(work, "sim", name, policy["name"], "metrics.csv"), 1)


def network(args):
    wan.CONGESTION = args.congestion
    problem = wan.emulation_problem()
    if problem:
        print("calibrate: skipped: " + problem)
        return 3
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="locosim-calibrate-")
    window = tcp_window_bytes()
    try:
        measured = []
        for case in CASES:
            measured.append(measure_case(build, work, case))
            print("measured %-26s %.3f s per step" % (case[0], measured[-1][0]), flush=True)
        # Step time = C + X / factor (compute and latency C, transfers X at factor 1): two predictions
        # per case give C and X, and the factor minimizing the squared relative errors is closed-form.
        fits = []
        for crosstraffic in (True, False):
            parts = []
            for i, m in enumerate(measured):
                t1 = predict(build, work, m, 1.0, crosstraffic, window, "%d-%d-1" % (i, crosstraffic))
                t2 = predict(build, work, m, 0.5, crosstraffic, window, "%d-%d-2" % (i, crosstraffic))
                parts.append((t1 - (t2 - t1), t2 - t1, m[0]))
            u = sum(x * (t - c) / t ** 2 for c, x, t in parts) / sum(x * x / t ** 2 for c, x, t in parts)
            factor = min(1.0, 1.0 / u)
            errors = [(c + x / factor - t) / t for c, x, t in parts]
            rms = (sum(e * e for e in errors) / len(errors)) ** 0.5
            fits.append((rms, factor, crosstraffic, errors))
        fits.sort(key=lambda fit: fit[0])
        rms, factor, crosstraffic, errors = fits[0]
        write_calibration(args.output, factor, crosstraffic, window)
        header = ["# TCP calibration for `network: {model: tcp, calibration: <this file>}`.",
                  "# Written by scripts/calibrate.py network on %s (%s, Linux %s); rerun it to replace it." %
                  (datetime.date.today().isoformat(), pyplatform.node(), pyplatform.release()),
                  "# Fitted on the real backend's steps (DDP: Gloo's ring all-reduce; DeMo: a relay's all-gather) over",
                  "# links shaped with tc tbf, TCP congestion control %s; window: this kernel's largest TCP" %
                  wan.CONGESTION,
                  "# receive window.",
                  "# Fit (rms %.1f%%; with crosstraffic %s instead: bandwidth_factor %.4f, rms %.1f%%):" %
                  (100 * rms, str(fits[1][2]).lower(), fits[1][1], 100 * fits[1][0])]
        for case, m, e in zip(CASES, measured, errors):
            header.append("#   %-26s measured %.3f s/step, predicted %+.1f%%" % (case[0], m[0], 100 * e))
        with open(args.output) as f:
            body = f.read()
        with open(args.output, "w") as f:
            f.write("\n".join(header) + "\n" + body)
        print("wrote %s: bandwidth_factor %.4f, crosstraffic %s, window %d B (rms error %.1f%%)" %
              (args.output, factor, crosstraffic, window, 100 * rms))
    finally:
        wan.teardown(max(len(case[1]) + 1 for case in CASES))
        shutil.rmtree(work, ignore_errors=True)
    return 0


def probe_scenario(args):
    """The scenario's model and data as one DDP worker on a probe host: what the step is measured on."""
    scenario_path = os.path.abspath(args.scenario)
    with open(scenario_path) as f:
        scenario = yaml.safe_load(f)
    one = dict(scenario, name="calibrate-compute", policies=["ddp"])
    one.pop("sweep", None)
    one.pop("world", None)
    one.pop("timing", None)  # price the model that is measured, not the larger one a timing section names
    train = dict(scenario.get("train") or {}, steps=args.steps, eval_every=args.steps, eval_batches=1)
    optimizer = dict(train.get("optimizer") or {})
    if optimizer.get("warmup_steps", 0) >= args.steps:  # refused past the probe's steps; no change to a step's time
        optimizer["warmup_steps"] = args.steps - 1
        train["optimizer"] = optimizer
    one["train"] = train
    one["platform"] = {"accelerators": {"probe": {"peak": "1 TFLOPS", "efficiency": 1.0}},
                       "hosts": [{"name": "probe", "accelerator": "probe",
                                  "uplink": {"bandwidth": "1 Gbps", "latency": "1 ms"},
                                  "downlink": {"bandwidth": "1 Gbps", "latency": "1 ms"}}]}
    data = dict(one.get("data") or {})
    if data.get("path", "kjv") != "kjv":
        data["path"] = os.path.join(os.path.dirname(scenario_path), data["path"])
    one["data"] = data
    runtime = dict(one.get("runtime") or {})
    if args.device:
        runtime["device"] = args.device
    one["runtime"] = runtime
    return one


def measure_step_s(one, build, work):
    """The probe's mean step on its runtime.device, run for real (locosim-real, one rank), and the run's
    exit code (its reason is on stderr when not 0: 2, e.g., for a device this machine lacks)."""
    path = os.path.join(work, "one.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(one, f)
    real = subprocess.run([os.path.join(build, "locosim-real"), path, "--spawn", "1", "-o",
                           os.path.join(work, "real")], stdout=subprocess.DEVNULL)
    if real.returncode != 0:
        return None, real.returncode
    return wan.mean_step_s(os.path.join(work, "real", "calibrate-compute", "ddp", "events.csv"), 0), 0


def priced_step_s(one, build, work):
    """The probe's step in the simulator at 1 TFLOPS (priced on the CPU: no step is timed)."""
    path = os.path.join(work, "sim.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(dict(one, runtime=dict(one["runtime"], device="cpu")), f)
    subprocess.run([os.path.join(build, "locosim"), "run", path, "-o", os.path.join(work, "sim")],
                   check=True, stdout=subprocess.DEVNULL)
    return wan.mean_step_s(os.path.join(work, "sim", "calibrate-compute", "ddp", "events.csv"), 0)


def compute(args):
    build = os.path.abspath(args.build)
    one = probe_scenario(args)
    device = one["runtime"].get("device", "cpu")
    work = tempfile.mkdtemp(prefix="locosim-calibrate-")
    try:
        if args.step_seconds is not None:
            real_s, where = args.step_seconds, "measured elsewhere: --step-seconds"
        else:
            real_s, rc = measure_step_s(one, build, work)
            if rc != 0:
                print("calibrate: the step could not be measured on %s (above; the file named is the probe "
                      "scenario made from %s)" % (device, args.scenario), file=sys.stderr)
                return rc
            where = "%d steps on %s" % (args.steps, device)
            print("# measured: %.6g s a step (%s, %s)" % (real_s, where, pyplatform.node()))
        if not os.path.exists(os.path.join(build, "locosim")):
            # A real-backend-only build (-DLOCOSIM_SIMULATOR=OFF, e.g. on a GPU node): price it where
            # the simulator is built.
            print("# no simulator in %s: on a machine with one, run\n"
                  "scripts/calibrate.py compute %s --steps %d --name %s --step-seconds %.6g"
                  % (build, args.scenario, args.steps, args.name, real_s))
            return 0
        unit_s = priced_step_s(one, build, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    peak = unit_s * 1e12 / real_s
    print("# %s's measured speed for %s (%s), from scripts/calibrate.py compute:" %
          (pyplatform.node(), os.path.basename(args.scenario), where))
    print("accelerators:\n  %s: {peak: %.4g TFLOPS, efficiency: 1.0}" % (args.name, peak / 1e12))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    n = sub.add_parser("network", help="fit the tcp network model on emulated links (root)")
    n.add_argument("-o", "--output", default="platforms/calibration/tcp-emulated.yaml")
    n.add_argument("--build", default="build")
    n.add_argument("--congestion", default=wan.CONGESTION,
                   help="the emulated hosts' TCP congestion control (default %(default)s, Linux's default)")
    c = sub.add_parser("compute", help="measure this machine's step time and print its accelerator entry")
    c.add_argument("scenario")
    c.add_argument("--name", default="this-host", help="the accelerator's name in the entry")
    c.add_argument("--steps", type=int, default=20)
    c.add_argument("--device", help="cpu, cuda or cuda:N: where the step is measured (default: the scenario's "
                   "runtime.device)")
    c.add_argument("--build", default="build")
    c.add_argument("--step-seconds", type=float,
                   help="a mean step measured elsewhere (what a run of this command printed on the machine): "
                   "price it without running the model")
    args = ap.parse_args()
    if args.what == "compute" and args.steps < 2:
        ap.error("--steps: must be at least 2 (the mean step is taken between the first and the last), got %d"
                 % args.steps)
    if args.what == "compute" and args.step_seconds is not None and not args.step_seconds > 0:
        ap.error("--step-seconds: must be a positive number of seconds, got %s" % args.step_seconds)
    return network(args) if args.what == "network" else compute(args)


if __name__ == "__main__":
    sys.exit(main())
