#!/usr/bin/env python3
"""Hostile peers against a real job's store, parameter server and relay, on loopback only.

Runs small jobs of locosim-real (ranks started by hand, as on a cluster, with the job's secret in
their environment) while strangers and a peer holding the secret attack them, and checks that:
- strangers change nothing: the run completes with the unattacked run's final parameters, rank 0
  grows no more than 2x the unattacked run's peak memory, and no process dies of a signal;
- an insider's forged messages (a parameter-server push from rank -7, one out of sequence whose
  header says dtype 250, a rank claimed twice at the relay) end in a refusal or in exit 1 naming what
  was forged, never a signal.
Every loop is bounded in count and time; nothing leaves 127.0.0.1.

    real/hostile_peers_test.py --bin build [--keep]
"""
import argparse
import hashlib
import hmac
import os
import re
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAGIC = b"LOCOSIM1"
HOST = "127.0.0.1"
RUN_TIMEOUT_S = 240

SCENARIO = """name: hostile
seed: 3
platform:
  accelerators: {gpu: {peak: 100 TFLOPS, efficiency: 0.4}}
  hosts:
    - {name: a, accelerator: gpu, uplink: {bandwidth: 50 Mbps, latency: 10 ms}, downlink: {bandwidth: 500 Mbps, latency: 10 ms}}
    - {name: b, accelerator: gpu, uplink: {bandwidth: 10 Mbps, latency: 20 ms}, downlink: {bandwidth: 100 Mbps, latency: 20 ms}}
    - {name: c, accelerator: gpu, uplink: {bandwidth: 20 Mbps, latency: 10 ms}, downlink: {bandwidth: 200 Mbps, latency: 10 ms}}
%(relay)s
data: {path: corpus.txt, eval_fraction: 0.1}
model: {preset: tiny, seq_len: 16}
train: {steps: 6, batch_size: 4, eval_every: 3, eval_batches: 2, optimizer: {lr: 3.0e-3}}
policies:
  - {name: async_diloco, label: async, inner_steps: 3, dylu: false, grace_s: 1000}
  - {name: demo, label: demo, lr: 1.0e-3, topk: 8, chunk: 16}
"""
RELAY = ("  relay: {uplink: {bandwidth: 1 Gbps, latency: 5 ms}, downlink: {bandwidth: 1 Gbps, latency: 5 ms}}\n"
         "network: {all_gather: relay}")
WORLD = 3


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def mac(key, side, service, server_nonce, client_nonce, rank, world):
    message = side.encode() + b"\0" + service.encode() + b"\0" + server_nonce + client_nonce + struct.pack(
        "<qq", rank, world)
    return hmac.new(key, message, hashlib.sha256).digest()


def read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def connect(port, wait_s=60.0):
    """A connection to HOST:port, retried for wait_s: a rank's servers start once LibTorch has loaded,
    which takes seconds on a loaded machine."""
    deadline = time.time() + wait_s
    while True:
        try:
            return socket.create_connection((HOST, port), timeout=5)
        except OSError:
            if time.time() > deadline:
                raise RuntimeError("nothing listens on %s:%d after %.0f s" % (HOST, port, wait_s))
            time.sleep(0.05)


def handshake(sock, key, service, rank, world=WORLD):
    """The client side of real/auth.hpp's handshake: True when the server proved the same key."""
    hello = read_exactly(sock, 40)
    assert hello[:8] == MAGIC, hello[:8]
    nonce = secrets.token_bytes(32)
    proof = mac(key, "client", service, hello[8:], nonce, rank, world)
    sock.sendall(MAGIC + nonce + struct.pack("<q", rank) + proof)
    reply = read_exactly(sock, 32)
    return hmac.compare_digest(reply, mac(key, "server", service, hello[8:], nonce, rank, world))


def store_call(sock, op, fields):
    body = bytes([op]) + struct.pack("<I", len(fields)) + b"".join(struct.pack("<I", len(f)) + f for f in fields)
    sock.sendall(struct.pack("<I", len(body)) + body)
    n = struct.unpack("<I", read_exactly(sock, 4))[0]
    reply = read_exactly(sock, n)
    return reply[0], reply


def int64(v):
    return struct.pack("<q", v)


class Job:
    """WORLD ranks of one policy (and the relay when the scenario has one), started as on a cluster."""

    def __init__(self, bin_dir, work, label, secret_hex, relay, timeout_s=60, before_ranks=None):
        self.store_port, self.relay_port = free_port(), free_port()
        self.env = dict(os.environ, LOCOSIM_JOB_SECRET=secret_hex, MASTER_ADDR=HOST,
                        MASTER_PORT=str(self.store_port), WORLD_SIZE=str(WORLD))
        self.env.pop("LOCOSIM_JOB_SECRET_FILE", None)
        self.procs, self.logs = [], []
        exe = os.path.join(bin_dir, "locosim-real")
        out = os.path.join(work, "runs-" + secrets.token_hex(4))
        self.folder = os.path.join(out, "hostile", label)
        relay_args = []
        if relay:
            relay_at = "%s:%d" % (HOST, self.relay_port)
            self.start([exe, "s.yaml", "--serve-relay", relay_at, "--timeout", str(timeout_s)], work, self.env, "relay")
            relay_args = ["--relay", relay_at]
        if before_ranks:
            before_ranks(self)
        for r in range(WORLD):
            env = dict(self.env, RANK=str(r), LOCAL_RANK=str(r))
            self.start([exe, "s.yaml", "--policy", label, "-o", out, "--timeout", str(timeout_s)] + relay_args, work, env,
                       "rank%d" % r)
        # The servers: rank 0 (the store, the parameter server) and the relay, if any.
        self.servers = self.procs[:-WORLD + 1]
        self.peak_kb = [0] * len(self.servers)  # their peak memory, the relay's first
        self.stop = False
        self.watcher = threading.Thread(target=self.watch_memory)
        self.watcher.start()

    def start(self, cmd, cwd, env, name):
        log = open(os.path.join(cwd, "%s-%s.err" % (name, secrets.token_hex(3))), "w+")
        self.logs.append(log)
        self.procs.append(subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log))

    def watch_memory(self):
        while not self.stop and any(p.poll() is None for p in self.servers):
            for i, p in enumerate(self.servers):
                try:
                    with open("/proc/%d/status" % p.pid) as f:
                        m = re.search(r"VmHWM:\s+(\d+)", f.read())
                    if m:
                        self.peak_kb[i] = max(self.peak_kb[i], int(m.group(1)))
                except OSError:
                    pass  # it has ended
            time.sleep(0.05)

    def wait(self):
        deadline = time.time() + RUN_TIMEOUT_S
        codes = []
        for p in self.procs:
            try:
                codes.append(p.wait(timeout=max(1, deadline - time.time())))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append("hung")
        self.stop = True
        self.watcher.join()
        errs = []
        for log in self.logs:
            log.seek(0)
            errs.append(log.read())
            log.close()
        return codes, errs

    def fingerprint(self):
        with open(os.path.join(self.folder, "summary.json")) as f:
            return re.search(r'"params_fingerprint":\s*"([^"]*)"', f.read()).group(1)


def strangers(port, stop, count=40):
    """Outsiders without the secret: garbage, huge lengths, c10d's own protocol, a forged handshake,
    idle and slow connections. Bounded: `count` connections, each closed within seconds."""
    held = []
    wrong = secrets.token_bytes(32)
    for i in range(count):
        if stop.is_set():
            break
        try:
            s = connect(port, wait_s=2)
        except RuntimeError:
            time.sleep(0.1)
            continue
        kind = i % 6
        try:
            if kind == 0:
                s.sendall(secrets.token_bytes(4096))
            elif kind == 1:
                s.sendall(struct.pack("<q", 1 << 62) + struct.pack("<q", 1 << 40) + b"x" * 10)
            elif kind == 2:  # c10d TCPStore's SET "ps/order/1"
                s.sendall(bytes([0]) + struct.pack("<Q", 10) + b"ps/order/1" + struct.pack("<Q", 16) + b"\xff" * 16)
            elif kind == 3:
                handshake(s, wrong, "store", 0)
            elif kind == 4:
                s.sendall(struct.pack("<q", 0))  # the relay's old opening: "I am rank 0"
                held.append(s)
                continue
            else:
                held.append(s)  # idle: never greets back
                continue
        except (OSError, ConnectionError, AssertionError):
            pass
        s.close()
        time.sleep(0.05)
    slow = None
    try:
        slow = connect(port, wait_s=2)
        for _ in range(30):  # a byte every 100 ms, as a slowloris would
            if stop.is_set():
                break
            slow.sendall(b"L")
            time.sleep(0.1)
    except (OSError, ConnectionError, RuntimeError):
        pass
    for s in held + ([slow] if slow else []):
        s.close()


CHECKED = []  # every check's description, passed or not


def check(condition, what, failures):
    CHECKED.append(what)
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the build folder holding locosim-real")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    work = tempfile.mkdtemp(prefix="locosim-hostile-")
    with open(os.path.join(work, "corpus.txt"), "w") as f:
        words = ["the cat", "a dog", "the bird", "my friend", "sees", "likes", "the house.", "a tree."]
        state = 42
        while f.tell() < 20000:
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            f.write("%s %s %s\n" % (words[(state >> 33) % 4], words[4 + (state >> 40) % 2], words[6 + (state >> 50) % 2]))
    failures = []
    secret = secrets.token_hex(32)
    key = bytes.fromhex(secret)

    # 1. The store and the parameter server (async DiLoCo), with and without strangers.
    with open(os.path.join(work, "s.yaml"), "w") as f:
        f.write(SCENARIO % {"relay": ""})
    clean = Job(bin_dir, work, "async", secret, relay=False)
    codes, errs = clean.wait()
    check(codes == [0] * WORLD, "an unattacked async run completes (%s)" % codes, failures)
    if codes != [0] * WORLD:
        print("\n".join(errs))
        return 1
    baseline, baseline_kb = clean.fingerprint(), clean.peak_kb

    attacked = Job(bin_dir, work, "async", secret, relay=False)
    stop = threading.Event()
    attackers = [threading.Thread(target=strangers, args=(attacked.store_port, stop)) for _ in range(2)]
    for t in attackers:
        t.start()
    codes, errs = attacked.wait()
    stop.set()
    for t in attackers:
        t.join()
    check(codes == [0] * WORLD, "with strangers at the store the run completes (%s)" % codes, failures)
    check(codes == [0] * WORLD and attacked.fingerprint() == baseline,
          "with strangers at the store the final parameters are the unattacked run's", failures)
    check(attacked.peak_kb[0] <= 2 * baseline_kb[0],
          "rank 0's peak memory %d kB is within 2x the unattacked %d kB" % (attacked.peak_kb[0], baseline_kb[0]),
          failures)
    check("signal" not in "".join(errs), "no process died of a signal", failures)

    # An insider (it holds the secret) forges parameter-server pushes: from rank -7, then rank 1's push
    # number 999 (out of sequence: the real rank 1 is still at 0) whose header says dtype 250. The
    # dtypes and dims of in-sequence pushes are checked by relay_test's parameter-server cases.
    # The two jobs run at once, each forged by a thread of its own as soon as it starts: most of their
    # time is the wait for the server's reply timing out.
    def forge(forged, what, result):
        # A short timeout: the workers learn of the server's failure when their wait for its reply times out
        # (5 s: twice a loaded machine's start of these ranks, and every second of it is this check's time).
        job = Job(bin_dir, work, "async", secret, relay=False, timeout_s=5)
        s = connect(job.store_port)
        result["ok"] = handshake(s, key, "store", 1)
        if what.startswith("push 999"):  # a push whose header says dtype 250, one dim of 4
            store_call(s, 1, [b"ps/push/1/999", int64(250) + int64(1) + int64(4) + b"\0" * 16])
        status, reply = store_call(s, 3, [b"ps/arrivals", int64(1)])
        n = struct.unpack("<q", reply[9:17])[0]
        store_call(s, 1, [b"ps/order/%d" % n, forged])
        result["codes"], result["errs"] = job.wait()
        s.close()

    forgeries = [(int64(-7) + int64(1), "rank -7"), (int64(1) + int64(999), "push 999, dtype 250")]
    results = [{} for _ in forgeries]
    forgers = [threading.Thread(target=forge, args=(forged, what, result))
               for (forged, what), result in zip(forgeries, results)]
    for t in forgers:
        t.start()
    for t in forgers:
        t.join()
    for (forged, what), result in zip(forgeries, results):
        ok, codes, errs = result.get("ok", False), result.get("codes", ["no result"]), result.get("errs", [""])
        rank0 = errs[0]
        check(ok and codes[0] == 1 and all(c in (0, 1) for c in codes),
              "a forged push (%s) fails the run with exit 1, no signal (%s)" % (what, codes), failures)
        check(re.search(r"push|order", rank0) is not None and "signal" not in "".join(errs),
              "rank 0 names the forged push (%s): %s" % (what, rank0.strip().splitlines()[-1:] if rank0 else ""),
              failures)

    # 2. The relay (DeMo's all-gathers), with strangers and with a rank claimed twice.
    with open(os.path.join(work, "s.yaml"), "w") as f:
        f.write(SCENARIO % {"relay": RELAY})
    clean = Job(bin_dir, work, "demo", secret, relay=True)
    codes, errs = clean.wait()
    check(codes == [0] * (WORLD + 1), "an unattacked relay run completes (%s)" % codes, failures)
    if codes == [0] * (WORLD + 1):
        baseline = clean.fingerprint()
        # Strangers from the start, racing the ranks for their slots: they hold none without the secret.
        stop = threading.Event()
        holder = {}

        def strangers_from_the_start(job):
            holder["thread"] = threading.Thread(target=strangers, args=(job.relay_port, stop))
            holder["thread"].start()

        attacked = Job(bin_dir, work, "demo", secret, relay=True, before_ranks=strangers_from_the_start)
        codes, errs = attacked.wait()
        stop.set()
        holder["thread"].join()
        check(codes == [0] * (WORLD + 1), "with strangers at the relay the run completes (%s)" % codes, failures)
        check(codes == [0] * (WORLD + 1) and attacked.fingerprint() == baseline,
              "with strangers at the relay the final parameters are the unattacked run's", failures)
        check(attacked.peak_kb[0] <= 2 * clean.peak_kb[0],
              "the relay's peak memory %d kB is within 2x the unattacked %d kB" % (attacked.peak_kb[0], clean.peak_kb[0]),
              failures)
        check("signal" not in "".join(errs), "no process died of a signal", failures)

        # An insider proves rank 1 before the real one comes: the first prover keeps the slot, the real
        # rank 1 is refused, never swapped in, and the run fails cleanly instead of mixing their bytes.
        insider = {}

        def claim_rank_1(job):
            s = connect(job.relay_port)
            insider["proved"] = handshake(s, key, "relay", 1)
            insider["socket"] = s

        job = Job(bin_dir, work, "demo", secret, relay=True, timeout_s=5, before_ranks=claim_rank_1)
        deadline = time.time() + RUN_TIMEOUT_S  # the relay serves until every connection it holds closes
        while any(p.poll() is None for p in job.procs[1:]) and time.time() < deadline:
            time.sleep(0.1)
        insider["socket"].close()
        codes, errs = job.wait()
        relay_err, rank1_err = errs[0], errs[2]
        check(insider["proved"] and all(c in (0, 1) for c in codes) and codes[2] == 1,
              "a second claim of rank 1 at the relay fails the real rank 1 with exit 1, no signal (%s)" % codes,
              failures)
        # Which of the two, depends on whether the real rank 1 came before the other two were in (the
        # relay stops listening once every slot is proved).
        # (No longer listening: a connection still in the backlog is reset, "closed ... while greeting".)
        check("proved rank 1, which another connection holds: refused" in relay_err or
              "relay: cannot connect" in rank1_err or "closed the connection while greeting" in rank1_err,
              "the relay refuses the real rank 1 by name, or no longer listens once every slot was proved",
              failures)
        check("signal" not in "".join(errs), "no process died of a signal", failures)

    if failures or args.keep:
        print("scratch folder kept: " + work)
    else:
        shutil.rmtree(work)
    print("%d passed, %d failed" % (len(CHECKED) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
