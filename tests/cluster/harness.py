"""harness.py — a three-node `ringtail serve --voters` cluster on 127.0.0.1 for the fault tests
(issue 24 item 5, docs/cluster.md §9): it owns the nodes' processes (start, SIGTERM, SIGKILL,
SIGSTOP/SIGCONT), their free ports and data directories under one temporary directory, the
cluster's view as `ringtail cluster status` prints it, and the iptables rules of a network
partition. It never decides whether the cluster behaved: the checker does (checker.py).

Each node runs with its own group id (JH1: 61000 + node id) so that iptables' owner match can
tell its outgoing packets apart on loopback, where every address is 127.0.0.1. The rules live
in one chain of this process (JH2: named after its pid, jumped to from OUTPUT) and are always
removed at exit, so that no other test on the machine ever sees them.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NODES = (1, 2, 3)
GID_BASE = 61000  # JH1


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Cluster:
    def __init__(self, ringtail, session_ms=3000, lag_ms=2000, keep=False, log=print):
        self.rt = ringtail
        self.session_ms = session_ms
        self.lag_ms = lag_ms
        self.keep = keep
        self.log = log
        self.dir = tempfile.mkdtemp(prefix="rt-jepsen-", dir=os.environ.get("TMPDIR", "/tmp"))
        ports = free_ports(6)
        self.cport = {i: ports[i - 1] for i in NODES}
        self.kport = {i: ports[2 + i] for i in NODES}
        self.voters = ",".join(f"{i}@127.0.0.1:{self.cport[i]}" for i in NODES)
        self.bootstrap = ",".join(f"127.0.0.1:{self.kport[i]}" for i in NODES)
        self.proc = {}
        self.paused = set()
        self.chain = None
        self.mounted = []

    # --- processes -------------------------------------------------------------------------
    def ndir(self, i):
        return os.path.join(self.dir, f"n{i}")

    def tmpfs(self, size_mb=256):
        """Each node's data directory on a tmpfs of its own (root only), so that one node's
        disk can be filled; False with the reason when it cannot be mounted."""
        for i in NODES:
            os.makedirs(self.ndir(i), exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                                self.ndir(i)], capture_output=True, text=True)
            if r.returncode != 0:
                return False, r.stderr.strip()
            self.mounted.append(self.ndir(i))
        return True, ""

    def fill(self, i):
        """Fills node I's tmpfs (a file of zeros up to ENOSPC)."""
        path = os.path.join(self.ndir(i), "filler")
        subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M"], capture_output=True)
        self.log(f"node {i}: disk filled ({os.path.getsize(path) >> 20} MiB filler)")

    def unfill(self, i):
        os.unlink(os.path.join(self.ndir(i), "filler"))
        self.log(f"node {i}: disk freed")

    def start(self, i):
        os.makedirs(self.ndir(i), exist_ok=True)
        out = open(os.path.join(self.dir, f"n{i}.out"), "ab")
        err = open(os.path.join(self.dir, f"n{i}.err"), "ab")
        gid = GID_BASE + i

        def as_node():  # JH1
            os.setgroups([])
            os.setgid(gid)

        self.proc[i] = subprocess.Popen(
            [self.rt, "serve", self.ndir(i), "--listen", f"127.0.0.1:{self.kport[i]}",
             "--threads", "1", "--node-id", str(i),
             "--controller-listen", f"127.0.0.1:{self.cport[i]}", "--voters", self.voters,
             "--broker-session-timeout-ms", str(self.session_ms),
             "--replica-lag-time-max-ms", str(self.lag_ms),
             "--replica-high-watermark-checkpoint-interval-ms", "200"],
            stdout=out, stderr=err, preexec_fn=as_node if os.geteuid() == 0 else None)
        out.close()
        err.close()
        self.log(f"node {i}: started (pid {self.proc[i].pid})")

    def alive(self):
        return [i for i in NODES if i in self.proc and self.proc[i].poll() is None]

    def running(self):
        return [i for i in self.alive() if i not in self.paused]

    def kill(self, i):
        p = self.proc.pop(i)
        if i in self.paused:
            self.paused.discard(i)
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.log(f"node {i}: SIGKILL")

    def terminate(self, i):
        """SIGTERM, a clean shutdown; returns the exit status."""
        p = self.proc.pop(i)
        if i in self.paused:
            p.send_signal(signal.SIGCONT)
            self.paused.discard(i)
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
            self.log(f"node {i}: did not stop in 30 s after SIGTERM, killed")
        return rc

    def pause(self, i):
        self.proc[i].send_signal(signal.SIGSTOP)
        self.paused.add(i)
        self.log(f"node {i}: SIGSTOP")

    def resume(self, i):
        self.proc[i].send_signal(signal.SIGCONT)
        self.paused.discard(i)
        self.log(f"node {i}: SIGCONT")

    def exited(self):
        """Nodes whose process ended without the harness stopping it: {node: status}."""
        return {i: p.returncode for i, p in self.proc.items() if p.poll() is not None}

    def stacks(self):
        """Every live node's threads' stacks (gdb, when installed) into DIR/nI.stacks, for a
        node that stopped answering; returns the files written."""
        if shutil.which("gdb") is None:
            return []
        out = []
        for i in self.alive():
            path = os.path.join(self.dir, f"n{i}.stacks")
            with open(path, "w") as f:
                subprocess.run(["gdb", "-p", str(self.proc[i].pid), "-batch", "-ex",
                                "thread apply all bt"], stdout=f, stderr=subprocess.STDOUT,
                               timeout=60)
            out.append(path)
        return out

    # --- the cluster's view ----------------------------------------------------------------
    def status(self, via=None):
        """`ringtail cluster status` from a running node (the controller's answer preferred):
        {"controller": id, "nodes": set, "parts": {(topic, p): dict}} or None."""
        best = None
        for i in ([via] if via else self.running()):
            try:
                r = subprocess.run([self.rt, "cluster", "status", "--bootstrap",
                                    f"127.0.0.1:{self.kport[i]}"],
                                   capture_output=True, text=True, timeout=5)
            except subprocess.TimeoutExpired:
                continue
            if r.returncode != 0:
                continue
            st = {"controller": -1, "nodes": set(), "parts": {}, "via": i}
            for line in r.stdout.splitlines():
                f = line.split("\t")
                if f[0] == "controller":
                    st["controller"] = int(f[1])
                elif f[0] == "node" and f[3] == "unfenced":
                    st["nodes"].add(int(f[1]))
                elif f[0] == "partition":
                    st["parts"][(f[1], int(f[2]))] = {
                        "leader": int(f[4]), "epoch": int(f[6]),
                        "replicas": [int(x) for x in f[8].split(",") if x],
                        "isr": [int(x) for x in f[10].split(",") if x]}
            if st["controller"] == i:
                return st
            if best is None and st["controller"] > 0:
                best = st
        return best

    def wait(self, what, pred, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.status()
            if st is not None and pred(st):
                return st
            time.sleep(0.3)
        raise TimeoutError(f"{what}: not within {timeout} s; last status {self.status()}")

    def wait_healthy(self, topic, parts, timeout=60):
        """Every node listed, every partition of TOPIC led and its ISR whole."""
        def ok(st):
            if st["nodes"] != set(NODES):
                return False
            for p in range(parts):
                e = st["parts"].get((topic, p))
                if e is None or e["leader"] < 0 or sorted(e["isr"]) != sorted(e["replicas"]):
                    return False
            return True
        return self.wait("cluster healthy", ok, timeout)

    # --- network partitions (iptables) -----------------------------------------------------
    def iptables_works(self):
        if os.geteuid() != 0 or shutil.which("iptables") is None:
            return False, "not root or no iptables binary"
        r = subprocess.run(["iptables", "-S", "OUTPUT"], capture_output=True, text=True)
        if r.returncode != 0:
            return False, "iptables -S: " + r.stderr.strip()
        return True, ""

    def _ipt(self, *args):
        r = subprocess.run(["iptables", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"iptables {' '.join(args)}: {r.stderr.strip()}")

    def isolate(self, node):
        """Drop every packet NODE sends to another node's ports and every packet another node
        sends to NODE's ports: no request crosses, either way, on a new or an open connection
        (answers need a request). Clients (this process) still reach every node (JH1, JH2)."""
        self.chain = f"RTJ{os.getpid()}"  # JH2
        self._ipt("-N", self.chain)
        self._ipt("-I", "OUTPUT", "-j", self.chain)
        others = [j for j in NODES if j != node]
        oports = ",".join(str(p) for j in others for p in (self.kport[j], self.cport[j]))
        nports = f"{self.kport[node]},{self.cport[node]}"
        self._ipt("-A", self.chain, "-p", "tcp", "-m", "owner", "--gid-owner",
                  str(GID_BASE + node), "-m", "multiport", "--dports", oports, "-j", "DROP")
        for j in others:
            self._ipt("-A", self.chain, "-p", "tcp", "-m", "owner", "--gid-owner",
                      str(GID_BASE + j), "-m", "multiport", "--dports", nports, "-j", "DROP")
        self.log(f"node {node}: isolated from nodes {others} (iptables chain {self.chain})")

    def heal(self):
        if self.chain is None:
            return
        subprocess.run(["iptables", "-D", "OUTPUT", "-j", self.chain], capture_output=True)
        subprocess.run(["iptables", "-F", self.chain], capture_output=True)
        subprocess.run(["iptables", "-X", self.chain], capture_output=True)
        self.log(f"network healed (chain {self.chain} removed)")
        self.chain = None

    # --- the end ---------------------------------------------------------------------------
    def check(self):
        """`ringtail cluster check --prefix` over the stopped nodes' directories:
        (exit status, {(topic, p): (verdict, ends, hws)}, raw output)."""
        r = subprocess.run([self.rt, "cluster", "check", "--prefix"] +
                           [self.ndir(i) for i in NODES], capture_output=True, text=True)
        res = {}
        for line in r.stdout.splitlines():
            f = line.split("\t")
            if f[0] != "partition":
                continue
            ends = [int(x) for x in f[5].split(",")]
            hws = [None if x == "-" else int(x) for x in f[7].split(",")]
            res[(f[1], int(f[2]))] = (f[3], ends, hws)
        return r.returncode, res, r.stdout + r.stderr

    def close(self):
        self.heal()
        for i in list(self.proc):
            p = self.proc.pop(i)
            if i in self.paused:
                p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
        if self.keep and self.mounted:  # a tmpfs goes with its mount: copy what it held
            for m in self.mounted:
                shutil.copytree(m, m + ".kept", dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("filler"))
        for m in self.mounted:
            subprocess.run(["umount", m], capture_output=True)
        if self.keep:
            self.log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
