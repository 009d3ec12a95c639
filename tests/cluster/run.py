#!/usr/bin/python3
"""run.py — the fault tests of a three-node ringtail cluster (issue 24 item 5,
docs/cluster.md §9): starts the cluster (harness.py), creates a topic of replication factor 3
with min.insync.replicas=2, runs the idempotent acks=all producers (workload.py) while it
breaks the cluster scenario after scenario, heals it, reads everything back with both
isolation levels, stops every node, runs `ringtail cluster check` and hands all of it to the
checker (checker.py). Exit 0 only when every check holds and every scenario ran.

It owns the order of events and the scenarios; it never relaxes a check of the checker.

usage: run.py RINGTAIL [--scenarios a,b,..] [--duration SECONDS] [--keep] [--seed N]
  --scenarios   which of: leader-kill, controller-kill, follower-pause, follower-kill,
                partition-leader, disk-full, none (default: all of them)
  --duration    go round the scenarios again until this many seconds have passed (default:
                one round)
"""
import argparse
import json
import os
import random
import sys
import time

from confluent_kafka.admin import AdminClient, NewTopic

import checker
import harness
import workload

TOPIC = "jepsen"
PARTS = 3
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:7.2f}] {msg}", flush=True)


def create_topic(c):
    a = AdminClient({"bootstrap.servers": c.bootstrap})
    for attempt in range(20):
        try:
            a.create_topics([NewTopic(TOPIC, num_partitions=PARTS, replication_factor=3,
                                      config={"min.insync.replicas": "2"})],
                            request_timeout=15)[TOPIC].result()
            return
        except Exception as e:  # NOT_CONTROLLER while the quorum settles: again
            name = e.args[0].name() if e.args and hasattr(e.args[0], "name") else str(e)
            if name not in ("NOT_CONTROLLER", "REQUEST_TIMED_OUT") or attempt == 19:
                raise
            time.sleep(1)


def leader_of(c, p):
    return c.status()["parts"][(TOPIC, p)]["leader"]


def settle(c, hold):
    """Let the workload run a moment on the broken cluster."""
    time.sleep(hold)


# --- scenarios: each breaks the cluster, waits, heals, and returns a description -------------
def leader_kill(c, rnd):
    st = c.status()
    p = rnd.randrange(PARTS)
    n = st["parts"][(TOPIC, p)]["leader"]
    c.kill(n)
    c.wait("leaderships moved", lambda s: all(
        e["leader"] not in (n, -1) for (t, _), e in s["parts"].items() if t == TOPIC), 30)
    settle(c, 2)
    c.start(n)
    return f"SIGKILL of node {n}, leader of {TOPIC}-{p}; restarted after its partitions moved"


def controller_kill(c, rnd):
    n = c.status()["controller"]
    c.kill(n)
    c.wait("a new controller", lambda s: s["controller"] not in (n, -1), 30)
    settle(c, 2)
    c.start(n)
    return f"SIGKILL of node {n}, the controller; restarted after a new one was elected"


def follower_of(c, rnd):
    """A node that is not the controller and leads no partition of the topic, if there is one;
    else one that is not the controller (with RF 3 on 3 nodes every node follows some
    partitions, and usually leads one): (node, the partitions it leads)."""
    st = c.status()
    leads = {i: [p for (t, p), e in st["parts"].items() if t == TOPIC and e["leader"] == i]
             for i in harness.NODES}
    cands = [i for i in harness.NODES if not leads[i] and i != st["controller"]]
    if not cands:
        cands = [i for i in harness.NODES if i != st["controller"]]
    n = rnd.choice(cands)
    return n, leads[n]


def led(parts):
    return f"leader of {', '.join(f'{TOPIC}-{p}' for p in parts)}" if parts else "leading nothing"


def follower_pause(c, rnd):
    n, parts = follower_of(c, rnd)
    c.pause(n)
    hold = (max(c.session_ms, c.lag_ms) + 1500) / 1000
    settle(c, hold)
    c.resume(n)
    return (f"SIGSTOP of node {n} (not the controller, a follower of the others' partitions, "
            f"{led(parts)}) for {hold:.1f} s, past the session and lag timeouts; SIGCONT")


def follower_kill(c, rnd):
    n, parts = follower_of(c, rnd)
    c.kill(n)
    settle(c, 3)
    c.start(n)
    return (f"SIGKILL of node {n} (not the controller, a follower of the others' partitions, "
            f"{led(parts)}), restarted 3 s later")


def partition_leader(c, rnd):
    ok, why = c.iptables_works()
    if not ok:
        raise SkipScenario(why)
    st = c.status()
    p = rnd.randrange(PARTS)
    n = st["parts"][(TOPIC, p)]["leader"]
    c.isolate(n)
    try:
        c.wait("leaderships moved off the isolated node", lambda s: s["via"] != n and all(
            e["leader"] != n for (t, _), e in s["parts"].items() if t == TOPIC), 30)
        settle(c, 2)
    finally:
        c.heal()
    return (f"node {n}, leader of {TOPIC}-{p}, cut off from the other nodes by iptables "
            f"(clients still reach it) until its leaderships moved, then healed")


def disk_full(c, rnd):
    if not c.mounted:
        raise SkipScenario(c.tmpfs_why or "the nodes' directories are not on a tmpfs")
    n, parts = follower_of(c, rnd)
    c.fill(n)
    settle(c, (max(c.session_ms, c.lag_ms) + 1500) / 1000)
    c.unfill(n)
    return f"node {n} ({led(parts)}): its disk full for a while, then freed"


class SkipScenario(Exception):
    pass


SCENARIOS = {
    "leader-kill": leader_kill,
    "controller-kill": controller_kill,
    "follower-pause": follower_pause,
    "follower-kill": follower_kill,
    "partition-leader": partition_leader,
    "disk-full": disk_full,
    "none": lambda c, rnd: (settle(c, 3), "no fault for 3 s")[1],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ringtail")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rate", type=int, default=100, help="sends per second per producer")
    ap.add_argument("--producers", type=int, default=2, help="idempotent producers at once")
    ap.add_argument("--allow-fatal", action="store_true",
                    help="count fatal producer errors in the figures instead of failing (JC8)")
    args = ap.parse_args()
    names = [s for s in args.scenarios.split(",") if s]
    for s in names:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s}; known: {', '.join(SCENARIOS)}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rnd = random.Random(seed)
    log(f"seed {seed}, scenarios {names}, duration {args.duration} s")

    c = harness.Cluster(args.ringtail, keep=args.keep, log=log)
    c.tmpfs_why = None
    failures = []
    try:
        if "disk-full" in names:
            ok, c.tmpfs_why = c.tmpfs() if os.geteuid() == 0 else (False, "not root")
            log("node directories on tmpfs mounts" if ok else f"no tmpfs: {c.tmpfs_why}")
        for i in harness.NODES:
            c.start(i)
        c.wait("three nodes and a controller",
               lambda s: s["nodes"] == set(harness.NODES), 60)
        create_topic(c)
        c.wait_healthy(TOPIC, PARTS)
        log(f"topic {TOPIC}: {PARTS} partitions, RF 3, min.insync.replicas=2; data in {c.dir}")
        h = workload.History()
        prod = workload.Producers(c.bootstrap, TOPIC, PARTS, h, count=args.producers, rate=args.rate, log=log)
        h.phase = "steady"
        prod.start()
        time.sleep(2)
        end = time.monotonic() + args.duration
        ran = []
        skipped = set()
        rounds = 0
        while True:
            for s in names:
                with h.lock:
                    h.phase = f"{s}#{rounds}"
                log(f"--- scenario {s} (round {rounds})")
                try:
                    desc = SCENARIOS[s](c, rnd)
                    log(f"    {desc}")
                    c.wait_healthy(TOPIC, PARTS, 60)
                    log("    healed: every node listed, every ISR whole")
                    ran.append(s)
                except SkipScenario as e:
                    log(f"    skipped: {e}")
                    skipped.add(s)
                except TimeoutError as e:
                    failures.append(f"scenario {s}: {e}")
                    log(f"    FAILED: {e}")
                    log(f"    stacks of the live nodes: {c.stacks()}")
                    for i in harness.NODES:  # heal what can be healed for the rest
                        if i not in c.proc:
                            c.start(i)
                        elif i in c.paused:
                            c.resume(i)
                    c.heal()
                    c.wait_healthy(TOPIC, PARTS, 60)
                dead = c.exited()
                if dead:
                    failures.append(f"scenario {s}: node(s) exited on their own: {dead}")
                    log(f"    node(s) exited on their own: {dead}")
                    for i in dead:
                        c.proc.pop(i)
                        c.start(i)
                    c.wait_healthy(TOPIC, PARTS, 60)
                with h.lock:
                    h.phase = f"after-{s}#{rounds}"
                time.sleep(1)
            rounds += 1
            if time.monotonic() >= end:
                break
        with h.lock:
            h.phase = "final"
        time.sleep(1)
        prod.stop()
        log(f"producers stopped: {len(h.sent)} sent, {len(h.acked)} acknowledged")
        c.wait_healthy(TOPIC, PARTS, 60)
        reads, ends, short = workload.read_all(c.bootstrap, TOPIC, PARTS, "read_uncommitted")
        if short:
            failures.append(f"read_uncommitted did not reach the end of partitions {short} ({ends})")
        committed, cends, cshort = workload.read_all(c.bootstrap, TOPIC, PARTS, "read_committed")
        if cshort:
            failures.append(f"read_committed did not reach the end of partitions {cshort} ({cends})")
        log(f"read back: {sum(len(r) for r in reads.values())} records (ends {ends})")
        time.sleep(0.5)  # one more checkpoint round (200 ms) on every node
        for i in harness.NODES:
            rc = c.terminate(i)
            if rc != 0:
                failures.append(f"node {i}: exit {rc} at SIGTERM")
        cc = c.check()
        log("cluster check:\n" + cc[2].rstrip())
        try:
            bad, fig = checker.check(h, reads, committed, cc, TOPIC,
                                     strict_fatal=not args.allow_fatal)
        except Exception as e:  # keep what the post-mortem needs even then
            bad, fig = [f"checker: {type(e).__name__}: {e}"], {}
        log(f"figures: {fig}")
        for who, name, text, ph in h.fatal:  # WL2
            log(f"fatal producer error: {who} {name} (in {ph}): {text}")
        errs = {}
        for v, (p, e, ph) in h.failed.items():
            errs[(e, ph)] = errs.get((e, ph), 0) + 1
        for (e, ph), n in sorted(errs.items()):
            log(f"failed sends: {n} x {e} (sent in {ph})")
        per_phase = {}
        for v, (p, off, ph) in h.acked.items():
            per_phase[ph] = per_phase.get(ph, 0) + 1
        log(f"acknowledged per phase: {per_phase}")
        for line in checker.summary(bad):
            log("SUMMARY " + line)
        for b in bad[:50]:
            log("VIOLATION " + b)
        if len(bad) > 50:
            log(f"... {len(bad) - 50} more violations")
        failures += bad
        if bad or args.keep:  # for the post-mortem: times are this run's clock (the log's)
            with open(os.path.join(c.dir, "history.json"), "w") as f:
                json.dump({"t0": T0, "sent": h.sent, "acked": h.acked, "failed": h.failed,
                           "fatal": h.fatal,
                           "sent_at": {v: t - T0 for v, t in h.sent_at.items()},
                           "reported_at": {v: t - T0 for v, t in h.reported_at.items()},
                           "read_uncommitted": reads, "read_committed": committed,
                           "violations": bad}, f)
            log(f"history, reads and violations in {c.dir}/history.json")
        missing = [s for s in names if s not in ran and s not in skipped]
        log(f"scenarios run: {ran}; skipped (said why above): {sorted(skipped)}; "
            f"failed to run: {missing}")
        if missing and not failures:
            failures.append(f"scenarios not run: {missing}")
    except Exception as e:
        failures.append(f"harness: {type(e).__name__}: {e}")
        log(f"harness error: {type(e).__name__}: {e}")
        c.keep = True
    finally:
        if failures:
            c.keep = True
        c.close()
    if failures:
        log(f"FAIL ({len(failures)} problems)")
        for f in failures[:20]:
            print("  " + f)
        sys.exit(1)
    log("PASS: no acknowledged record lost, none duplicated, offsets monotonic, replicas identical")


if __name__ == "__main__":
    main()
