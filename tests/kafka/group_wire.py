#!/usr/bin/env python3
"""group_wire.py — the group membership APIs of `ringtail serve` at the byte level, as a broken or
hostile client would use them (for tests/cli_kafka_groups.sh). Standard library only.

usage: group_wire.py HOST:PORT      (the broker auto-creates topics: topic "gw" is made)
       group_wire.py HOST:PORT defaults
                                   against a broker with Kafka's group defaults: session
                                   timeouts below 6000 or above 1800000 ms are
                                   INVALID_SESSION_TIMEOUT (26); two members joining an empty
                                   group 1 s apart both land in generation 1, answered after the
                                   initial rebalance delay (3 s) and its one extension (A5)
       group_wire.py HOST:PORT static      KIP-345: a static member needs no member id; the
                                   instance rejoining gets a new id in the same generation and
                                   its assignment without a rebalance; the old id is
                                   FENCED_INSTANCE_ID (82) in Heartbeat, OffsetCommit, JoinGroup
       group_wire.py HOST:PORT persist1    a member of "gwp" joins and syncs an assignment;
                                   prints "member ID generation N"
       group_wire.py HOST:PORT persist2 ID N
                                   after a broker restart: that member's heartbeat is NONE, its
                                   SyncGroup answers its assignment, the group is Stable (KG10)
       group_wire.py HOST:PORT offsets
                                   OffsetCommit / OffsetFetch only (topics "gwo", "gwo2"): the
                                   metadata a commit carries is answered by OffsetFetch (A3), up
                                   to 4096 bytes, OFFSET_METADATA_TOO_LARGE (12) beyond for that
                                   partition alone; a null topic array (v2+) answers every
                                   committed offset of the group, sorted (INVALID_GROUP_ID for
                                   an empty group id); a group with only committed offsets is
                                   listed (ListGroups) and described (DescribeGroups) as Empty

Each check prints "ok - ..." or "FAIL - ..."; exit 1 if any failed. Checks (Kafka's codes):
  - JoinGroup v5 without a member id: MEMBER_ID_REQUIRED (79) with a fresh id; with it: NONE,
    generation 1, this member the leader, its metadata echoed in the member list;
  - a join sharing no protocol, or of another protocol type: INCONSISTENT_GROUP_PROTOCOL (23);
    a session timeout of 10 ms: INVALID_SESSION_TIMEOUT (26); an id never handed out:
    UNKNOWN_MEMBER_ID (25); an empty group id: INVALID_GROUP_ID (24);
  - Heartbeat of another generation: ILLEGAL_GENERATION (22); the leader's SyncGroup: NONE and
    its assignment; OffsetCommit of the generation: NONE, of another: 22, of an unknown member:
    25, a simple (generation -1) commit while the group has members: 25;
  - a second member's join parks; the first member's heartbeat gets REBALANCE_IN_PROGRESS (27),
    its rejoin completes generation 2 for both (same leader, the leader's list has 2 members,
    the follower's none); a request pipelined behind the parked join is answered after it;
  - a follower's SyncGroup waits for the leader's and gets what the leader assigned it; a
    SyncGroup of an old generation: 22;
  - LeaveGroup: NONE, then UNKNOWN_MEMBER_ID; the remaining member must rejoin (27);
  - a member that stops heart-beating is removed after its session timeout (DescribeGroups:
    Empty, no members); one that does not rejoin is dropped at the rebalance timeout and the
    waiting member's join is answered without it;
  - JoinGroup v0 without a member id joins at once (no MEMBER_ID_REQUIRED before v4);
  - DescribeGroups of an unknown group: "Dead"; ListGroups names the groups;
  - a truncated JoinGroup closes the connection, and the broker answers a new one.
"""
import struct
import sys
import time

import kwire
from kwire import R, check, kbytes, kstr, s32, s64


class Conn(kwire.Conn):
    def __init__(self, addr):
        super().__init__(addr, "group_wire", timeout=15, answer=R)


JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, COMMIT = 11, 12, 13, 14, 15, 16, 8


def join_body(group, member, session=6000, rebalance=6000, ptype="consumer",
              protocols=(("range", b"meta"),), version=5):
    b = kstr(group) + s32(session)
    if version >= 1:
        b += s32(rebalance)
    b += kstr(member)
    if version >= 5:
        b += kstr(None)
    b += kstr(ptype) + s32(len(protocols))
    for name, meta in protocols:
        b += kstr(name) + kbytes(meta)
    return b


def join_resp(r, version=5):
    out = {}
    if version >= 2:
        r.i32()
    out["err"] = r.i16()
    out["gen"] = r.i32()
    out["protocol"] = r.str()
    out["leader"] = r.str()
    out["member"] = r.str()
    n = r.i32()
    out["members"] = []
    for _ in range(max(n, 0)):
        mid = r.str()
        if version >= 5:
            r.str()
        out["members"].append((mid, r.bytes()))
    return out


def heartbeat(c, group, gen, member):
    r = c.call(HEARTBEAT, 3, kstr(group) + s32(gen) + kstr(member) + kstr(None))
    r.i32()
    return r.i16()


def sync_body(group, gen, member, assignments=()):
    b = kstr(group) + s32(gen) + kstr(member) + kstr(None) + s32(len(assignments))
    for mid, a in assignments:
        b += kstr(mid) + kbytes(a)
    return b


def sync_resp(r):
    r.i32()
    return r.i16(), r.bytes()


def commit(c, group, gen, member):
    b = kstr(group) + s32(gen) + kstr(member) + s64(-1) + s32(1) + kstr("gw") + s32(1)
    b += s32(0) + s64(5) + kstr("")
    r = c.call(COMMIT, 2, b)
    r.i32()  # topics
    r.str()
    r.i32()
    r.i32()
    return r.i16()


def describe(c, group):
    r = c.call(DESCRIBE, 0, s32(1) + kstr(group))
    r.i32()
    err = r.i16()
    r.str()
    state = r.str()
    r.str()
    r.str()
    n = r.i32()
    return err, state, n


def join2(c, group, **kw):
    """MEMBER_ID_REQUIRED, then the join with the id: sends the second join, returns the id."""
    first = join_resp(c.call(JOIN, 5, join_body(group, "", **kw)))
    c.send(JOIN, 5, join_body(group, first["member"], **kw))
    return first


FETCH_OFFSETS = 9


def commit_md(c, group, parts, version=2):
    """OffsetCommit v2 of parts [(topic, partition, offset, metadata)] as a simple consumer;
    the codes in request order."""
    topics = {}
    for t, p, o, m in parts:
        topics.setdefault(t, []).append((p, o, m))
    b = kstr(group) + s32(-1) + kstr("") + s64(-1) + s32(len(topics))
    for t, ps in topics.items():
        b += kstr(t) + s32(len(ps))
        for p, o, m in ps:
            b += s32(p) + s64(o) + kstr(m)
    r = c.call(COMMIT, version, b)
    codes = []
    for _ in range(r.i32()):
        r.str()
        for _ in range(r.i32()):
            r.i32()
            codes.append(r.i16())
    return codes


def fetch_offsets(c, group, topics, version=2):
    """OffsetFetch v1/v2: topics {name: [partitions]} or None (all of the group's).
    ({(topic, partition): (offset, metadata, err)}, top-level error or None, topic order)."""
    if topics is None:
        b = kstr(group) + s32(-1)
    else:
        b = kstr(group) + s32(len(topics))
        for t, ps in topics.items():
            b += kstr(t) + s32(len(ps)) + b"".join(s32(p) for p in ps)
    r = c.call(FETCH_OFFSETS, version, b)
    out, order = {}, []
    for _ in range(r.i32()):
        t = r.str()
        for _ in range(r.i32()):
            p = r.i32()
            o = struct.unpack(">q", s32(r.i32()) + s32(r.i32()))[0]
            m = r.str()
            out[(t, p)] = (o, m, r.i16())
            order.append((t, p))
    top = r.i16() if version >= 2 else None
    return out, top, order


def offsets_main(addr):
    """A3 and issue 20 item 5: commit metadata stored and answered; a null topic array answers
    every committed offset of the group."""
    a = Conn(addr)
    a.call(3, 4, s32(2) + kstr("gwo") + kstr("gwo2") + b"\x01")  # auto-creates both topics
    time.sleep(0.2)
    codes = commit_md(a, "gwo-g", [("gwo", 0, 11, "abc"), ("gwo2", 0, 5, None)])
    check(codes == [0, 0], "OffsetCommit v2 with metadata \"abc\" and a null one: NONE for both")
    got, _, _ = fetch_offsets(a, "gwo-g", {"gwo": [0], "gwo2": [0]}, version=1)
    check(got.get(("gwo", 0)) == (11, "abc", 0),
          "OffsetFetch v1 answers the committed metadata \"abc\" (A3), got %r" % (got.get(("gwo", 0)),))
    check(got.get(("gwo2", 0)) == (5, "", 0), "a null metadata is answered as \"\" (as Kafka stores it)")
    codes = commit_md(a, "gwo-g", [("gwo", 0, 12, "m" * 4096)])
    got, _, _ = fetch_offsets(a, "gwo-g", {"gwo": [0]})
    check(codes == [0] and got.get(("gwo", 0)) == (12, "m" * 4096, 0),
          "metadata of 4096 bytes (offset.metadata.max.bytes) is stored and answered whole")
    codes = commit_md(a, "gwo-g", [("gwo", 0, 13, "m" * 4097), ("gwo2", 0, 6, "ok")])
    got, _, _ = fetch_offsets(a, "gwo-g", {"gwo": [0], "gwo2": [0]})
    check(codes == [12, 0], "metadata of 4097 bytes: OFFSET_METADATA_TOO_LARGE (12) for that partition alone, got %r" % codes)
    check(got.get(("gwo", 0)) == (12, "m" * 4096, 0) and got.get(("gwo2", 0)) == (6, "ok", 0),
          "the refused partition keeps its offset, the other is stored")
    got, top, order = fetch_offsets(a, "gwo-g", None)
    check(top == 0 and got == {("gwo", 0): (12, "m" * 4096, 0), ("gwo2", 0): (6, "ok", 0)},
          "OffsetFetch v2 with a null topic array: every committed offset of the group, got top %r %r"
          % (top, sorted(got)))
    check(order == [("gwo", 0), ("gwo2", 0)], "sorted by topic and partition")
    got, top, _ = fetch_offsets(a, "gwo-never", None)
    check(top == 0 and got == {}, "a null topic array for a group with no commits: no topics, NONE")
    got, top, _ = fetch_offsets(a, "", None)
    check(top == 24, "a null topic array with an empty group id: INVALID_GROUP_ID (24), got %r" % top)
    r = a.call(LIST, 0, b"")
    err = r.i16()
    listed = [(r.str(), r.str()) for _ in range(r.i32())]
    check(err == 0 and ("gwo-g", "") in listed,
          "ListGroups names a group that only committed offsets, protocol type \"\" (got %r)" % listed)
    check(sum(1 for g, _ in listed if g == "gwo-g") == 1, "... once")
    err, state, n = describe(a, "gwo-g")
    check(err == 0 and state == "Empty" and n == 0,
          "DescribeGroups of it: Empty, no members (got %r %r %r)" % (err, state, n))
    err, state, n = describe(a, "gwo-never")
    check(state == "Dead", "a group with neither members nor offsets is still Dead")
    print("%s" % ("all passed" if kwire.failed == 0 else "%d failed" % kwire.failed))
    sys.exit(1 if kwire.failed else 0)


def defaults_main(addr):
    """A broker with Kafka's group defaults: the initial rebalance delay (A5, 3000 ms) and the
    session timeout bounds (6000 .. 1800000 ms)."""
    c = Conn(addr)
    for ms, want in ((5999, 26), (1800001, 26), (6000, 79), (1800000, 79)):
        r = join_resp(c.call(JOIN, 5, join_body("gwd-s%d" % ms, "", session=ms)))
        check(r["err"] == want, "a session timeout of %d ms: %d, got %d" % (ms, want, r["err"]))
    # Two members 1 s apart into an empty group: one generation, both in it.
    x, y = Conn(addr), Conn(addr)
    fx = join2(x, "gwd", session=10000, rebalance=10000)
    t0 = time.time()
    time.sleep(1.0)
    fy = join2(y, "gwd", session=10000, rebalance=10000)
    gx, gy = x.recv(), y.recv()
    took = time.time() - t0
    rx = join_resp(gx[1]) if gx else {"err": -1}
    ry = join_resp(gy[1]) if gy else {"err": -1}
    both = sorted([fx["member"], fy["member"]])
    check(rx["err"] == 0 and ry["err"] == 0 and rx["gen"] == 1 and ry["gen"] == 1,
          "two members joining 1 s apart are both answered generation 1 (got %r %r)"
          % (rx.get("gen"), ry.get("gen")))
    leader = rx if rx.get("members") else ry
    check(sorted(m for m, _ in leader.get("members", [])) == both,
          "the leader's member list holds both members")
    check(5.5 <= took < 8.5, "the first join waited group.initial.rebalance.delay.ms, extended "
          "once by the second member: 3 + 3 s (answered after %.1f s)" % took)
    err, state, n = describe(c, "gwd")
    check(state == "CompletingRebalance" and n == 2, "DescribeGroups: CompletingRebalance with 2 "
          "members, got %s %d" % (state, n))
    print("%s" % ("all passed" if kwire.failed == 0 else "%d failed" % kwire.failed))
    sys.exit(1 if kwire.failed else 0)


def persist1_main(addr):
    """Before a broker restart: one member of "gwp" in a Stable generation with an assignment."""
    c = Conn(addr)
    c.call(3, 4, s32(1) + kstr("gw") + b"\x01")  # Metadata v4: auto-creates the commits' topic
    f = join_resp(c.call(JOIN, 5, join_body("gwp", "", session=30000, rebalance=30000)))
    r = join_resp(c.call(JOIN, 5, join_body("gwp", f["member"], session=30000, rebalance=30000)))
    err, asg = sync_resp(c.call(SYNC, 3, sync_body("gwp", r["gen"], f["member"],
                                                    [(f["member"], b"asg-P")])))
    check(r["err"] == 0 and err == 0 and asg == b"asg-P", "a member joins and syncs its assignment")
    check(heartbeat(c, "gwp", r["gen"], f["member"]) == 0, "its heartbeat: NONE")
    print("member %s generation %d" % (f["member"], r["gen"]), flush=True)
    sys.exit(1 if kwire.failed else 0)


def persist2_main(addr, member, gen):
    """After the restart: the same member, generation and assignment (KG10)."""
    c = Conn(addr)
    check(heartbeat(c, "gwp", gen, member) == 0,
          "after a broker restart the member's heartbeat of its generation is NONE (no rebalance)")
    err, asg = sync_resp(c.call(SYNC, 3, sync_body("gwp", gen, member)))
    check(err == 0 and asg == b"asg-P", "its SyncGroup answers the assignment it had (got %r %r)" % (err, asg))
    err, state, n = describe(c, "gwp")
    check(state == "Stable" and n == 1, "DescribeGroups: Stable with its member (got %s %d)" % (state, n))
    check(commit(c, "gwp", gen, member) == 0, "OffsetCommit of that generation and member: NONE")
    check(heartbeat(c, "gwp", gen + 1, member) == 22, "another generation is still ILLEGAL_GENERATION")
    print("%s" % ("all passed" if kwire.failed == 0 else "%d failed" % kwire.failed))
    sys.exit(1 if kwire.failed else 0)


def join_static(group, member, instance, session=10000):
    b = kstr(group) + s32(session) + s32(session) + kstr(member) + kstr(instance)
    return b + kstr("consumer") + s32(1) + kstr("range") + kbytes(b"meta")


def commit_v7(c, group, gen, member, instance):
    b = kstr(group) + s32(gen) + kstr(member) + kstr(instance) + s32(1) + kstr("gw") + s32(1)
    b += s32(0) + s64(5) + s32(-1) + kstr("")
    r = c.call(COMMIT, 7, b)
    r.i32()  # throttle
    r.i32()
    r.str()
    r.i32()
    r.i32()
    return r.i16()


def static_main(addr):
    """KIP-345 static membership (KG11)."""
    a = Conn(addr)
    a.call(3, 4, s32(1) + kstr("gw") + b"\x01")  # auto-creates the commits' topic
    r = join_resp(a.call(JOIN, 5, join_static("gws", "", "inst-a")))
    check(r["err"] == 0 and r["member"] and r["gen"] == 1,
          "a static member (group.instance.id) joins without MEMBER_ID_REQUIRED: generation 1 (got %r)" % r["err"])
    old = r["member"]
    err, asg = sync_resp(a.call(SYNC, 3, sync_body("gws", 1, old, [(old, b"asg-a")])))
    check(err == 0 and asg == b"asg-a", "its SyncGroup: its assignment")
    b = Conn(addr)  # the same instance restarted: no member id
    t0 = time.time()
    r2 = join_resp(b.call(JOIN, 5, join_static("gws", "", "inst-a")))
    check(r2["err"] == 0 and r2["gen"] == 1 and r2["member"] != old and time.time() - t0 < 1.0,
          "the instance rejoining gets a new member id in the same generation at once (no rebalance)")
    check(r2["leader"] == r2["member"], "... and stays the leader under its new id")
    new = r2["member"]
    err, asg = sync_resp(b.call(SYNC, 3, sync_body("gws", 1, new)))
    check(err == 0 and asg == b"asg-a", "its SyncGroup with the new id: the assignment it had (got %r %r)" % (err, asg))
    r = a.call(HEARTBEAT, 3, kstr("gws") + s32(1) + kstr(old) + kstr("inst-a"))
    r.i32()
    check(r.i16() == 82, "the old member id's heartbeat with the instance: FENCED_INSTANCE_ID (82)")
    check(heartbeat(a, "gws", 1, old) == 25, "... without it: UNKNOWN_MEMBER_ID (25)")
    check(commit_v7(a, "gws", 1, old, "inst-a") == 82, "OffsetCommit v7 of the old id: FENCED_INSTANCE_ID (82)")
    check(commit_v7(b, "gws", 1, new, "inst-a") == 0, "OffsetCommit v7 of the new id: NONE")
    r = join_resp(a.call(JOIN, 5, join_static("gws", old, "inst-a")))
    check(r["err"] == 82, "a JoinGroup of the old id with the instance: FENCED_INSTANCE_ID (82)")
    r = b.call(HEARTBEAT, 3, kstr("gws") + s32(1) + kstr(new) + kstr("inst-a"))
    r.i32()
    check(r.i16() == 0, "the new id's heartbeat: NONE (the group stayed Stable)")
    print("%s" % ("all passed" if kwire.failed == 0 else "%d failed" % kwire.failed))
    sys.exit(1 if kwire.failed else 0)


def main():
    addr = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "static":
        return static_main(addr)
    if len(sys.argv) > 2 and sys.argv[2] == "persist1":
        return persist1_main(addr)
    if len(sys.argv) > 4 and sys.argv[2] == "persist2":
        return persist2_main(addr, sys.argv[3], int(sys.argv[4]))
    if len(sys.argv) > 2 and sys.argv[2] == "defaults":
        return defaults_main(addr)
    if len(sys.argv) > 2 and sys.argv[2] == "offsets":
        return offsets_main(addr)
    a = Conn(addr)
    a.call(3, 4, s32(1) + kstr("gw") + b"\x01")  # Metadata v4: auto-creates the commits' topic
    first = join_resp(a.call(JOIN, 5, join_body("gw1", "")))
    check(first["err"] == 79 and first["member"], "JoinGroup v5 without a member id: MEMBER_ID_REQUIRED (79) with an id")
    A = first["member"]
    r = join_resp(a.call(JOIN, 5, join_body("gw1", A)))
    check(r["err"] == 0 and r["gen"] == 1 and r["leader"] == A and r["protocol"] == "range"
          and r["members"] == [(A, b"meta")],
          "the join with that id: NONE, generation 1, leader, protocol range, its metadata echoed")

    b = Conn(addr)
    r = join_resp(b.call(JOIN, 5, join_body("gw1", "", protocols=(("roundrobin", b""),))))
    check(r["err"] == 23, "a join sharing no protocol with the members: INCONSISTENT_GROUP_PROTOCOL (23)")
    r = join_resp(b.call(JOIN, 5, join_body("gw1", "", ptype="connect")))
    check(r["err"] == 23, "a join of another protocol type: INCONSISTENT_GROUP_PROTOCOL (23)")
    r = join_resp(b.call(JOIN, 5, join_body("gw1", "", session=10)))
    check(r["err"] == 26, "a 10 ms session timeout: INVALID_SESSION_TIMEOUT (26)")
    r = join_resp(b.call(JOIN, 5, join_body("gw1", "nobody-1")))
    check(r["err"] == 25, "a member id never handed out: UNKNOWN_MEMBER_ID (25)")
    r = join_resp(b.call(JOIN, 5, join_body("", "")))
    check(r["err"] == 24, "an empty group id: INVALID_GROUP_ID (24)")

    check(heartbeat(a, "gw1", 7, A) == 22, "Heartbeat of generation 7: ILLEGAL_GENERATION (22)")
    err, asg = sync_resp(a.call(SYNC, 3, sync_body("gw1", 1, A, [(A, b"A1")])))
    check(err == 0 and asg == b"A1", "the leader's SyncGroup: NONE and its own assignment")
    check(heartbeat(a, "gw1", 1, A) == 0, "Heartbeat of the generation: NONE")
    check(commit(a, "gw1", 1, A) == 0, "OffsetCommit of the generation and member: NONE")
    check(commit(a, "gw1", 0, A) == 22, "OffsetCommit of another generation: ILLEGAL_GENERATION (22)")
    check(commit(a, "gw1", 1, "nobody-2") == 25, "OffsetCommit of an unknown member: UNKNOWN_MEMBER_ID (25)")
    check(commit(a, "gw1", -1, "") == 25, "a simple commit (generation -1) while the group has members: 25")

    # A second member: its join parks until A rejoins; a request pipelined behind it waits.
    fb = join2(b, "gw1")
    B = fb["member"]
    check(fb["err"] == 79, "the second member gets its id (79)")
    behind = b.send(LIST, 0, b"")
    time.sleep(0.3)
    check(heartbeat(a, "gw1", 1, A) == 27, "the first member's heartbeat during the rebalance: REBALANCE_IN_PROGRESS (27)")
    ra = join_resp(a.call(JOIN, 5, join_body("gw1", A)))
    got = b.recv()
    rb = join_resp(got[1]) if got else {"err": -1}
    check(ra["err"] == 0 and ra["gen"] == 2 and ra["leader"] == A and len(ra["members"]) == 2,
          "the rejoin completes generation 2: the leader gets both members")
    check(rb["err"] == 0 and rb["gen"] == 2 and rb["leader"] == A and rb["members"] == [] and rb["member"] == B,
          "the parked join is answered: generation 2, same leader, no member list for a follower")
    nxt = b.recv()
    check(got is not None and nxt is not None and got[0] == behind - 1 and nxt[0] == behind,
          "the request pipelined behind the parked join is answered after it")

    check(sync_resp(a.call(SYNC, 3, sync_body("gw1", 1, A)))[0] == 22, "SyncGroup of the old generation: ILLEGAL_GENERATION (22)")
    b.send(SYNC, 3, sync_body("gw1", 2, B))
    time.sleep(0.3)
    err, asg = sync_resp(a.call(SYNC, 3, sync_body("gw1", 2, A, [(A, b"a2"), (B, b"b2")])))
    got = b.recv()
    errb, asgb = sync_resp(got[1]) if got else (-1, None)
    check(err == 0 and asg == b"a2", "the leader's SyncGroup of generation 2: its assignment")
    check(errb == 0 and asgb == b"b2", "the follower's waiting SyncGroup gets what the leader assigned it")

    r = b.call(LEAVE, 1, kstr("gw1") + kstr(B))
    r.i32()
    check(r.i16() == 0, "LeaveGroup: NONE")
    r = b.call(LEAVE, 1, kstr("gw1") + kstr(B))
    r.i32()
    check(r.i16() == 25, "LeaveGroup again: UNKNOWN_MEMBER_ID (25)")
    check(heartbeat(a, "gw1", 2, A) == 27, "after the leave the remaining member must rejoin (27)")
    ra = join_resp(a.call(JOIN, 5, join_body("gw1", A, session=1000)))
    check(ra["err"] == 0 and ra["gen"] == 3 and ra["members"] == [(A, b"meta")], "its rejoin: generation 3, alone")

    # Session timeout: A goes silent (session 1 s).
    state = None
    for _ in range(50):
        time.sleep(0.2)
        err, state, n = describe(b, "gw1")
        if state == "Empty":
            break
    check(state == "Empty" and n == 0, "a member silent past its session timeout is removed: Empty, no members")

    # Rebalance timeout: C stays Stable but does not rejoin when D joins.
    c = Conn(addr)
    fc = join_resp(c.call(JOIN, 5, join_body("gw2", "", session=30000, rebalance=1000)))
    C = fc["member"]
    rc = join_resp(c.call(JOIN, 5, join_body("gw2", C, session=30000, rebalance=1000)))
    sync_resp(c.call(SYNC, 3, sync_body("gw2", rc["gen"], C, [(C, b"c")])))
    d = Conn(addr)
    fd = join2(d, "gw2", session=30000, rebalance=1000)
    got = d.recv()
    rd = join_resp(got[1]) if got else {"err": -1}
    check(rd["err"] == 0 and rd["leader"] == fd["member"] and [m for m, _ in rd["members"]] == [fd["member"]],
          "a member that does not rejoin is dropped at the rebalance timeout; the waiting join is answered without it")
    check(heartbeat(c, "gw2", rc["gen"], C) == 25, "the dropped member's heartbeat: UNKNOWN_MEMBER_ID (25)")

    e = Conn(addr)
    r = join_resp(e.call(JOIN, 0, join_body("gw3", "", version=0)), version=0)
    check(r["err"] == 0 and r["member"] and r["gen"] == 1, "JoinGroup v0 without a member id joins at once (NONE, generation 1)")

    err, state, n = describe(e, "never-seen")
    check(err == 0 and state == "Dead" and n == 0, "DescribeGroups of an unknown group: Dead")
    r = e.call(LIST, 0, b"")
    err = r.i16()
    names = [(r.str(), r.str())[0] for _ in range(r.i32())]
    check(err == 0 and {"gw1", "gw2", "gw3"} <= set(names), "ListGroups names the groups")

    bad = Conn(addr)
    bad.send(JOIN, 5, join_body("gw4", "")[:9])
    check(bad.recv() is None, "a truncated JoinGroup closes the connection")
    f = Conn(addr)
    r = join_resp(f.call(JOIN, 5, join_body("gw4", "")))
    check(r["err"] == 79, "and the broker answers a new connection")

    print("%s" % ("all passed" if kwire.failed == 0 else "%d failed" % kwire.failed))
    sys.exit(1 if kwire.failed else 0)


if __name__ == "__main__":
    main()
