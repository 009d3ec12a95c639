#!/usr/bin/python3
"""eos_run.py — the transaction fault tests of a three-node ringtail cluster (issue 25 item 4,
docs/cluster.md §9.2): starts the cluster (harness.py) and, per client library (a lane: python
= confluent_kafka, rdkafka = librdkafka's C API, kafkajs), an input and an output topic (RF 3,
min.insync.replicas=2) and a group of its own (the libraries' consumer group protocols do not
mix: kafkajs names its assignor RoundRobinAssigner, librdkafka range/roundrobin), writes each
input with an idempotent producer and runs that library's exactly-once pipeline (eos.py,
rdk_eos.c, eos_kafkajs.js) over it, while it breaks the cluster by role: the transaction
coordinator's node (leader of `__transaction_state`-0), the first lane's group coordinator
(leader of its `__consumer_offsets` partition), an output partition's leader and the
controller are killed, paused past the session timeout, or cut off by iptables. Then it waits
for every group to catch up, reads the topics back and checks (eos.py EW3), lane by lane, that
every input is in the read_committed output exactly once, nothing else is, no LSO stays pinned,
and (`ringtail cluster check`) every replica is identical up to its high watermark.

usage: eos_run.py RINGTAIL [--scenarios a,b,..] [--duration SECONDS] [--pipelines N]
                  [--clients python,rdkafka,kafkajs] [--keep]
  --scenarios  ROLE-ACTION for ROLE in coord (leader of __transaction_state-0), group (the
               first lane's group coordinator), leader (of the first lane's output partition 0),
               controller, and ACTION in kill, pause (SIGSTOP past the session timeout),
               partition (iptables, root); or none (default: all twelve)
  --clients    the lanes: python (confluent_kafka threads, --pipelines of them), rdkafka
               (tests/kafka/rdk_eos.c, built next to RINGTAIL as rdk_eos) and kafkajs
               (eos_kafkajs.js on tests/kafka/node's kafkajs 2.2.4), one process each
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic

import eos
import harness
import workload

PARTS = 3
TXN_TOPIC, OFFSETS_TOPIC = "__transaction_state", "__consumer_offsets"
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:7.2f}] {msg}", flush=True)


class SkipScenario(Exception):
    pass


def lane(k):
    """(input topic, output topic, group) of lane k."""
    return f"eos-in-{k}", f"eos-out-{k}", f"eos-{k}"


def create_topics(c, lanes):
    a = AdminClient({"bootstrap.servers": c.bootstrap})
    for name in [t for k in lanes for t in lane(k)[:2]]:
        for attempt in range(20):
            try:
                a.create_topics([NewTopic(name, num_partitions=PARTS, replication_factor=3,
                                          config={"min.insync.replicas": "2"})],
                                request_timeout=15)[name].result()
                break
            except Exception as e:
                n = e.args[0].name() if e.args and hasattr(e.args[0], "name") else str(e)
                if n not in ("NOT_CONTROLLER", "REQUEST_TIMED_OUT") or attempt == 19:
                    raise
                time.sleep(1)


LANES = []


def healthy(st):
    """Every node listed; every partition of the lanes' topics and of the internal topics led
    with its ISR whole (the internal ones only once they exist)."""
    if st["nodes"] != set(harness.NODES):
        return False
    for (t, p), e in st["parts"].items():
        if e["leader"] < 0 or sorted(e["isr"]) != sorted(e["replicas"]):
            return False
    return all((t, p) in st["parts"] for k in LANES for t in lane(k)[:2] for p in range(PARTS))


def progress(c):
    """Every lane's group offsets summed (-1 when one cannot be read now)."""
    ps = [eos.progress(c.bootstrap, lane(k)[0], PARTS, lane(k)[2]) for k in LANES]
    return -1 if min(ps) < 0 else sum(ps)


def role(c, which):
    st = c.wait("a cluster view", lambda s: True, 30)
    if which == "coord":
        key = (TXN_TOPIC, 0)
    elif which == "group":
        key = (OFFSETS_TOPIC, eos.group_partition(lane(LANES[0])[2]))
    else:
        key = (lane(LANES[0])[1], 0)
    e = st["parts"].get(key)
    if e is None or e["leader"] < 0:
        raise TimeoutError(f"no leader of {key[0]}-{key[1]} to break: {st}")
    return e["leader"], f"{key[0]}-{key[1]}"


def moved(c, n, what):
    t, p = what.rsplit("-", 1)
    c.wait(f"{what} led by another node", lambda s: s["parts"].get((t, int(p)), {}).get(
        "leader", -1) not in (n, -1), 30)


def kill_role(which):
    def run(c, rnd):
        n, what = role(c, which)
        c.kill(n)
        moved(c, n, what)
        time.sleep(3)
        c.start(n)
        return f"SIGKILL of node {n}, leader of {what}; restarted once it moved"
    return run


def controller_kill(c, rnd):
    n = c.wait("a cluster view", lambda s: True, 30)["controller"]
    c.kill(n)
    c.wait("a new controller", lambda s: s["controller"] not in (n, -1), 30)
    time.sleep(2)
    c.start(n)
    return f"SIGKILL of node {n}, the controller; restarted after a new one was elected"


def node_of(c, which):
    """(node, what it is) for a role: coord, group, leader or controller."""
    if which == "controller":
        n = c.wait("a cluster view", lambda s: True, 30)["controller"]
        return n, "the controller"
    n, what = role(c, which)
    return n, f"leader of {what}"


def pause_role(which):
    def run(c, rnd):
        n, what = node_of(c, which)
        c.pause(n)
        hold = (max(c.session_ms, c.lag_ms) + 1500) / 1000
        time.sleep(hold)
        c.resume(n)
        return f"SIGSTOP of node {n}, {what}, for {hold:.1f} s; SIGCONT"
    return run


def partition_role(which):
    def run(c, rnd):
        ok, why = c.iptables_works()
        if not ok:
            raise SkipScenario(why)
        n, what = node_of(c, which)
        c.isolate(n)
        try:
            if which == "controller":
                c.wait("a new controller", lambda s: s["controller"] not in (n, -1), 30)
            else:
                moved(c, n, what.split()[-1])
            time.sleep(2)
        finally:
            c.heal()
        return f"node {n}, {what}, cut off from the other nodes until that moved; healed"
    return run


SCENARIOS = {
    "coord-kill": kill_role("coord"),
    "group-kill": kill_role("group"),
    "leader-kill": kill_role("leader"),
    "controller-kill": controller_kill,
    "coord-pause": pause_role("coord"),
    "group-pause": pause_role("group"),
    "leader-pause": pause_role("leader"),
    "controller-pause": pause_role("controller"),
    "coord-partition": partition_role("coord"),
    "group-partition": partition_role("group"),
    "leader-partition": partition_role("leader"),
    "controller-partition": partition_role("controller"),
    "none": lambda c, rnd: (time.sleep(3), "no fault for 3 s")[1],
}


def start_others(args, c):
    """The rdkafka and kafkajs pipelines (--clients): {name: Popen}."""
    here = os.path.dirname(os.path.abspath(__file__))
    kinds = [k for k in LANES if k != "python"]
    procs = {}
    for k in kinds:
        if k == "rdkafka":
            cmd = [os.path.join(os.path.dirname(os.path.abspath(args.ringtail)), "rdk_eos")]
        elif k == "kafkajs":
            cmd = [shutil.which("node") or "node", os.path.join(here, "eos_kafkajs.js")]
        src, dst, group = lane(k)
        cmd += [c.bootstrap, src, dst, group, f"{group}-0"]
        out = open(os.path.join(c.dir, f"eos-{k}.out"), "w")
        env = dict(os.environ)
        if k == "rdkafka":  # under ASan: librdkafka's own leak after a fatal error is not ours
            supp = os.path.join(here, "..", "kafka", "lsan-librdkafka.supp")
            env["LSAN_OPTIONS"] = ":".join(
                x for x in (env.get("LSAN_OPTIONS", ""), f"suppressions={os.path.abspath(supp)}") if x)
        procs[k] = (subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env), out)
        log(f"pipeline {k}: {' '.join(cmd)}")
    return procs


def stop_others(procs):
    bad = []
    for k, (p, out) in procs.items():
        if p.poll() is not None:
            bad.append(f"pipeline {k} exited early ({p.returncode}); see eos-{k}.out")
            continue
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            bad.append(f"pipeline {k} did not stop on SIGTERM within 60 s")
        out.close()
        with open(out.name) as f:
            last = [ln for ln in f.read().splitlines() if ln.startswith("committed ")]
        log(f"pipeline {k}: {last[-1] if last else 'no summary (see ' + out.name + ')'}")
        if p.returncode != 0:
            bad.append(f"pipeline {k}: exit {p.returncode}; see {out.name}")
            with open(out.name) as f:  # the client's own last words, for CI's log
                tail = [ln for ln in f.read().splitlines() if not ln.startswith("%7|")][-15:]
            for ln in tail:
                log(f"  {k}| {ln[:300]}")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ringtail")
    ap.add_argument("--scenarios", default=",".join(s for s in SCENARIOS if s != "none"))
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--pipelines", type=int, default=1)
    ap.add_argument("--clients", default="python,rdkafka,kafkajs")
    ap.add_argument("--rate", type=int, default=100, help="input records a second")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    names = [s for s in args.scenarios.split(",") if s]
    LANES[:] = [k for k in args.clients.split(",") if k]
    for k in LANES:
        if k not in ("python", "rdkafka", "kafkajs"):
            sys.exit(f"unknown client {k}; known: python, rdkafka, kafkajs")
    for s in names:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s}; known: {', '.join(SCENARIOS)}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rnd = random.Random(seed)
    log(f"seed {seed}, scenarios {names}, duration {args.duration} s, {args.pipelines} pipelines")
    c = harness.Cluster(args.ringtail, keep=args.keep, log=log)
    failures = []
    procs = {}
    try:
        for i in harness.NODES:
            c.start(i)
        c.wait("three nodes and a controller", lambda s: s["nodes"] == set(harness.NODES), 60)
        create_topics(c, LANES)
        c.wait("topics led", healthy, 60)
        stats = eos.Stats()
        inputs = [eos.Input(c.bootstrap, lane(k)[0], PARTS, args.rate, log) for k in LANES]
        for inp in inputs:
            inp.start()
        pipes = []
        if "python" in LANES:
            src, dst, group = lane("python")
            pipes = [eos.Pipeline(k, c.bootstrap, src, dst, group, stats, log)
                     for k in range(args.pipelines)]
        for pl in pipes:
            pl.start()
        procs = start_others(args, c)
        # the internal topics appear with the first transaction and group request
        c.wait("the coordinators' topics led", lambda s: healthy(s) and (TXN_TOPIC, 0) in s[
            "parts"] and (OFFSETS_TOPIC, 0) in s["parts"], 60)
        c.wait("a first transaction committed in every lane", lambda s: all(
            eos.progress(c.bootstrap, lane(k)[0], PARTS, lane(k)[2]) > 0 for k in LANES), 60)
        end = time.monotonic() + args.duration
        ran, skipped, rounds = [], set(), 0
        while True:
            for s in names:
                log(f"--- scenario {s} (round {rounds})")
                before = progress(c)
                try:
                    log("    " + SCENARIOS[s](c, rnd))
                    c.wait("healed", healthy, 60)
                    c.wait("a transaction committed after healing",
                           lambda st: progress(c) > before, 60)
                    log(f"    healed; transactions commit again (group offsets "
                        f"{before} -> {progress(c)})")
                    ran.append(s)
                except SkipScenario as e:
                    log(f"    skipped: {e}")
                    skipped.add(s)
                except TimeoutError as e:
                    failures.append(f"scenario {s}: {e}")
                    log(f"    FAILED: {e}")
                    for i in harness.NODES:
                        if i not in c.proc:
                            c.start(i)
                        elif i in c.paused:
                            c.resume(i)
                    c.heal()
                dead = c.exited()
                if dead:
                    failures.append(f"scenario {s}: node(s) exited on their own: {dead}")
                    for i in dead:
                        c.proc.pop(i)
                        c.start(i)
            rounds += 1
            if time.monotonic() >= end:
                break
        for inp in inputs:
            inp.stop()
        log(f"input stopped: {sum(i.sent for i in inputs)} sent; waiting for the pipelines")
        # 90 s to catch up, renewed while the lag still falls (a long run on a loaded machine
        # ends with a backlog the pipelines are still working through), 30 minutes at most
        started = time.monotonic()
        deadline = started + 90
        left = best = None
        while time.monotonic() < deadline:
            lags = [eos.lag(c.bootstrap, lane(k)[0], PARTS, lane(k)[2]) for k in LANES]
            left = None if None in lags else sum(lags)
            if left == 0:
                break
            if left is not None and (best is None or left < best):
                best = left
                deadline = min(started + 1800, max(deadline, time.monotonic() + 90))
            time.sleep(1)
        for pl in pipes:
            pl.stop()
        failures += stop_others(procs)
        if left != 0:
            failures.append(f"the pipelines did not catch up (lag {left}: none gained for 90 s, or 30 min passed)")
        if pipes:
            log(f"pipeline python: {stats.committed} committed, {stats.aborted} aborted, "
                f"{stats.records} records, {stats.incarnations} new incarnations, "
                f"errors {stats.errors}")
        c.wait("healed", healthy, 60)
        read = {}
        for k in LANES:
            src, dst, _ = lane(k)
            ins, _, ishort = workload.read_all(c.bootstrap, src, PARTS, "read_uncommitted")
            if ishort:
                failures.append(f"lane {k}: input not read to its end: partitions {ishort}")
            outs, oends, oshort = workload.read_all(c.bootstrap, dst, PARTS, "read_committed")
            read[k] = (ins, outs, oshort)
        for i in harness.NODES:
            rc = c.terminate(i)
            if rc != 0:
                failures.append(f"node {i}: exit {rc} at SIGTERM")
        for k in LANES:  # judged once the nodes stopped: the input's batch headers are read
            ins, outs, oshort = read[k]  # from node 1's files (cluster check: all identical)
            spans = {}

            def producer_of(q, off, src=lane(k)[0]):
                if q not in spans:
                    spans[q] = eos.batch_producers(args.ringtail,
                                                   os.path.join(c.ndir(1), f"{src}-{q}"))
                return next((pe for (a, b), pe in spans[q].items() if a <= off <= b), None)

            bad, notes, fig = eos.check(ins, outs, oshort, producer_of)
            log(f"lane {k}: {fig}")
            if fig["inputs"] == 0:
                bad.append("no input at all")
            for n in notes:
                log(f"note lane {k}: {n}")
            for b in bad[:30]:
                log(f"VIOLATION lane {k}: {b}")
            failures += [f"lane {k}: {b}" for b in bad]
        rc, res, raw = c.check()
        log("cluster check:\n" + raw.rstrip())
        if rc != 0:
            failures.append("cluster check: replicas differ (above)")
        missing = [s for s in names if s not in ran and s not in skipped]
        log(f"scenarios run: {ran}; skipped: {sorted(skipped)}; failed to run: {missing}")
        if missing and not failures:
            failures.append(f"scenarios not run: {missing}")
    except Exception as e:
        failures.append(f"harness: {type(e).__name__}: {e}")
        log(f"harness error: {type(e).__name__}: {e}")
        for p, out in procs.values():
            if p.poll() is None:
                p.kill()
    finally:
        if failures:
            c.keep = True
        c.close()
    if failures:
        log(f"FAIL ({len(failures)} problems)")
        for f in failures[:20]:
            print("  " + f)
        sys.exit(1)
    log("PASS: every input exactly once in the committed output, nothing aborted visible, "
        "no LSO pinned, replicas identical")


if __name__ == "__main__":
    main()
