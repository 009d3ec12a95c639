#!/usr/bin/env bash
# cli_cluster_replica.sh — issue 24's follower side (docs/cluster.md §7.2,
# tools/kafka/cluster/replica_fetcher.h RF1-RF4, RF6): three `ringtail serve --voters ...` nodes, a
# topic of replication factor 3 and 3 partitions, records produced with kcat (librdkafka) to the
# leaders; every follower fetches them (Fetch with its replica id) and holds its high watermark
# (each node's replication-offset-checkpoint, written every 200 ms here, shows it). Then:
#  - a follower SIGKILLed while more is produced catches up once restarted;
#  - a leader SIGKILLed, given a divergent tail offline (records its successor never had: what
#    an unreplicated append leaves), restarted as a follower, truncates that tail by the
#    leader-epoch protocol (OffsetForLeaderEpoch) and catches up;
#  - OffsetForLeaderEpoch as served (handle_epoch.c KE1): NOT_LEADER_OR_FOLLOWER from a
#    follower, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a stale / future current epoch,
#    and the leader's log end for its own epoch;
#  - a follower stopped while more is produced and the leaders' log starts move past its log
#    end (DeleteRecords) restarts its logs there (RF6, rt_partition_restart_at) and catches up;
#  - every node stopped, `ringtail cluster check` finds all replicas byte-identical (and the
#    copy of the divergent directory different at the truncated offset).
#
# usage: bash tests/cli_cluster_replica.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_replica.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-crep-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    [ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
SESSION_MS=2000
TOPIC=rep

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
BOOT="127.0.0.1:$K1,127.0.0.1:$K2,127.0.0.1:$K3"

start_node() { # start_node I
    local i=$1 c="C$1" k="K$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS \
        --replica-high-watermark-checkpoint-interval-ms 200 >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
wait_for() { # wait_for SECONDS COMMAND... : until the command succeeds
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done
}
brokers_of() {
    kcat -L -m 3 -b "127.0.0.1:$(kport "$1")" 2>/dev/null |
        sed -n 's/^  broker \([0-9]*\) at.*/\1/p' | sort | tr '\n' ' '
}
all_list() { local want=$1; shift; for i in "$@"; do [ "$(brokers_of "$i")" = "$want" ] || return 1; done; }
alive() { local i; for i in 1 2 3; do [ "${PIDS[$i]}" != 0 ] && echo "$i"; done; }
status() { # the controller's view: "partition TOPIC P leader L epoch E replicas R isr I lag R:N,.. end R:O,.."
    local i
    for i in $(alive); do
        "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null | grep -q '^controller	[1-3]' &&
            { "$RT" cluster status --bootstrap "127.0.0.1:$(kport "$i")" 2>/dev/null; return; }
    done
}
controller() { status | sed -n 's/^controller\t//p'; }
leader_of() { status | awk -F'\t' -v t="$TOPIC" -v p="$1" '$1 == "partition" && $2 == t && $3 == p {print $5}'; }
produce() { # produce FIRST LAST : values FIRST..LAST, acks=all, spread over the partitions
    seq "$1" "$2" | sed 's/^/v-/' |
        kcat -P -b "$BOOT" -t "$TOPIC" -X acks=all -X partitioner=random \
            -X topic.metadata.refresh.interval.ms=500 2>>"$T/kcat.err"
}
# caught_up N [NODE] : on every follower of every partition (NODE's partitions only when
# given), the checkpointed high watermark is the same, and they add up to N records
caught_up() {
    local want=$1 only=${2:-}
    status >"$T/status.now"
    $PY - "$T" "$TOPIC" "$want" "$only" <<'PYEOF'
import sys
T, topic, want, only = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ck = {}
for n in (1, 2, 3):
    try:
        lines = open(f"{T}/n{n}/replication-offset-checkpoint").read().split("\n")
    except OSError:
        lines = ["0", "0"]
    ck[n] = {(l.split()[0], int(l.split()[1])): int(l.split()[2]) for l in lines[2:] if l}
total = 0
parts = [l.split("\t") for l in open(f"{T}/status.now") if l.startswith("partition\t" + topic + "\t")]
if len(parts) != 3:
    sys.exit(1)
for f in parts:
    p, leader, replicas = int(f[2]), int(f[4]), [int(x) for x in f[8].split(",")]
    hws = {ck[r].get((topic, p)) for r in replicas if r != leader and (not only or r == int(only))}
    if len(hws) != 1 or None in hws:
        sys.exit(1)
    total += hws.pop()
sys.exit(0 if only or total == want else 1)
PYEOF
}

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered"
else bad "brokers: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi

$PY - "$BOOT" "$TOPIC" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=3, replication_factor=3)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin.out" && ok "topic $TOPIC created: RF 3, 3 partitions" || bad "create: $(cat "$T/admin.out")"
three() { [ "$(status | grep -c "^partition	$TOPIC	")" = 3 ]; }
wait_for 10 three || bad "partitions not in the metadata: $(status)"

# 1. followers copy the leaders' records
produce 1 300
if wait_for 20 caught_up 300; then
    ok "300 records on the leaders: every follower's high watermark reaches them (sum 300)"
else bad "followers did not catch up: $(cat "$T"/n*/replication-offset-checkpoint | tr '\n' ' ') // $(grep -h replica "$T"/n*.err | tail -5)"; fi

# 2. a follower killed while more is produced catches up after its restart
CTL=$(controller)
F=1; [ "$CTL" = 1 ] && F=2
kill -KILL "${PIDS[$F]}"; wait "${PIDS[$F]}" 2>/dev/null; PIDS[$F]=0
moved_off() { # no partition led by node $1 (or leaderless), the fence applied
    local p l
    for p in 0 1 2; do l=$(leader_of $p); [ -n "$l" ] && [ "$l" != "$1" ] && [ "$l" != -1 ] || return 1; done
}
wait_for 15 moved_off "$F" || bad "node $F's leaderships did not move: $(status)"
produce 301 600
# lag_check STATUS_FILE WANT_SUM DOWN_NODE : every partition's "lag" field names its replicas,
# the down node (if any) as '?', every other replica at lag 0 (nothing is being produced), and
# the leaders' log ends ("end") add up to WANT_SUM — real offsets asked of each node
lag_check() {
    $PY - "$1" "$TOPIC" "$2" "$3" <<'PYEOF'
import sys
path, topic, want, down = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
total, n = 0, 0
for l in open(path):
    f = l.rstrip("\n").split("\t")
    if f[:2] != ["partition", topic]:
        continue
    n += 1
    leader, replicas = f[4], f[8].split(",")
    lag = dict(x.split(":") for x in f[12].split(","))
    end = dict(x.split(":") for x in f[14].split(","))
    if f[11] != "lag" or f[13] != "end" or sorted(lag) != sorted(replicas):
        sys.exit(f"fields: {f}")
    for r in replicas:
        want_lag = "?" if r == down else "0"
        if lag[r] != want_lag:
            sys.exit(f"replica {r} lag {lag[r]}, want {want_lag}: {f}")
    total += int(end[leader])
if n != 3 or total != want:
    sys.exit(f"{n} partitions, leaders' ends add up to {total}, want {want}")
PYEOF
}
sleep 0.5
status >"$T/status.down"
if msg=$(lag_check "$T/status.down" 600 "$F" 2>&1); then
    ok "cluster status with node $F down: its lag '?', every other replica's 0, leaders' ends sum 600"
else bad "lag with node $F down: $msg // $(cat "$T/status.down")"; fi
start_node "$F"
T0=$(date +%s%N)
if wait_for 30 caught_up 600; then
    ok "follower $F SIGKILLed, 300 more produced, restarted: caught up (sum 600, $(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else bad "node $F did not catch up: $(cat "$T"/n*/replication-offset-checkpoint | tr '\n' ' ') // $(grep -h replica "$T"/n*.err | tail -5)"; fi
caught_lag() { status >"$T/status.up" && lag_check "$T/status.up" 600 "" >/dev/null 2>&1; }
if wait_for 10 caught_lag; then
    ok "cluster status after the catch-up: every replica's lag 0, leaders' ends sum 600"
else bad "lag after the catch-up: $(lag_check "$T/status.up" 600 "" 2>&1) // $(cat "$T/status.up")"; fi

# 3. a leader with a divergent tail truncates it as a follower
CTL=$(controller)
L=""; P=""
for p in 0 1 2; do l=$(leader_of $p); if [ "$l" != "$CTL" ]; then L=$l; P=$p; break; fi; done
if [ -z "$L" ]; then L=$(leader_of 0); P=0; fi
kill -KILL "${PIDS[$L]}"; wait "${PIDS[$L]}" 2>/dev/null; PIDS[$L]=0
wait_for 20 moved_off "$L" || bad "node $L's leaderships did not move: $(status)"
NEWL=$(leader_of "$P")
printf 'divergent-1\ndivergent-2\ndivergent-3\n' >"$T/div.in"
"$RT" produce "$T/n$L" "$TOPIC" -p "$P" <"$T/div.in" >"$T/out" 2>"$T/err"
RC=$?
[ $RC = 0 ] && ok "node $L (leader of $TOPIC-$P) killed; 3 records appended to its log offline (a divergent tail)" ||
    bad "offline append on node $L"
cp -r "$T/n$L" "$T/diverged"
produce 601 900
start_node "$L"
if wait_for 30 caught_up 900 && wait_for 10 caught_up 900 "$L"; then
    ok "node $L restarted as a follower of $TOPIC-$P (leader $NEWL): caught up (sum 900)"
else bad "node $L did not catch up: $(cat "$T"/n*/replication-offset-checkpoint | tr '\n' ' ') // $(grep -h replica "$T"/n*.err | tail -5)"; fi
grep -q "replica: $TOPIC-$P: truncated from" "$T/n$L.err" &&
    ok "node $L truncated its divergent tail: $(grep -h "replica: $TOPIC-$P: truncated" "$T/n$L.err" | head -1 | sed 's/^ringtail serve: //')" ||
    bad "no truncation logged on node $L: $(grep -h replica "$T/n$L.err" | tail -5)"

# 4. a follower whose log end falls below its leaders' log start (RF6): stopped, more produced,
# DeleteRecords (21, v1) to each leader's high watermark, restarted: it restarts its logs at the
# leaders' log starts (rt_partition_restart_at) and catches up
delete_to_hw() { # delete_to_hw NODE PARTITION : prints "error low_watermark"
    $PY - "$(kport "$1")" "$TOPIC" "$2" <<'PYEOF'
import socket, struct, sys
port, topic, p = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
body = struct.pack(">i", 1) + struct.pack(">h", len(topic)) + topic
body += struct.pack(">iiq", 1, p, -1) + struct.pack(">i", 10000)
req = struct.pack(">hhih", 21, 1, 9, 1) + b"t" + body
s = socket.create_connection(("127.0.0.1", port), timeout=15)
s.sendall(struct.pack(">i", len(req)) + req)
def exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("closed")
        b += c
    return b
r = exact(struct.unpack(">i", exact(4))[0])
tl = struct.unpack(">h", r[12:14])[0]
part, low, err = struct.unpack(">iqh", r[14 + tl + 4:14 + tl + 4 + 14])
print(err, low)
PYEOF
}
CTL=$(controller)
G=""
for i in 1 2 3; do [ "$i" != "$CTL" ] && [ "$i" != "$NEWL" ] && { G=$i; break; }; done
kill -KILL "${PIDS[$G]}"; wait "${PIDS[$G]}" 2>/dev/null; PIDS[$G]=0
wait_for 15 moved_off "$G" || bad "node $G's leaderships did not move: $(status)"
produce 901 1200
sleep 1 # the other follower's next fetch moves the leaders' high watermarks
dels="" dok=0
for p in 0 1 2; do
    r=$(delete_to_hw "$(leader_of $p)" $p)
    dels="$dels $p:$r;"
    read -r d_err d_low <<<"$r"
    [ "${d_err:-x}" = 0 ] && [ "${d_low:-0}" -gt 0 ] && dok=$((dok + 1))
done
[ $dok = 3 ] && ok "node $G stopped, 300 more produced, DeleteRecords to each leader's high watermark (partition:error log start:$dels)" ||
    bad "DeleteRecords to the leaders' high watermarks:$dels"
start_node "$G"
if wait_for 30 caught_up 1200 && wait_for 10 caught_up 1200 "$G"; then
    ok "node $G restarted below the leaders' log starts: caught up (sum 1200)"
else bad "node $G did not catch up: $(cat "$T"/n*/replication-offset-checkpoint | tr '\n' ' ') // $(grep -h replica "$T"/n*.err | tail -5)"; fi
n=$(grep -c "replica: $TOPIC-[0-2]: log end .* below leader .* restarted the log there" "$T/n$G.err")
[ "$n" -ge 1 ] && ok "node $G restarted $n of its logs at the leader's log start: $(grep -h "restarted the log there" "$T/n$G.err" | head -1 | sed 's/^ringtail serve: //')" ||
    bad "no restart logged on node $G: $(grep -h replica "$T/n$G.err" | tail -5)"

# OffsetForLeaderEpoch (23, v3) as served (handle_epoch.c KE1): "error leader_epoch end_offset"
epoch_ask() { # epoch_ask NODE REPLICA_ID CURRENT_EPOCH EPOCH
    $PY - "$(kport "$1")" "$TOPIC" "$P" "$2" "$3" "$4" <<'PYEOF'
import socket, struct, sys
port, topic, p, rid, cur, ep = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), *map(int, sys.argv[4:])
body = struct.pack(">ii", rid, 1) + struct.pack(">h", len(topic)) + topic
body += struct.pack(">iiii", 1, p, cur, ep)
req = struct.pack(">hhih", 23, 3, 7, 1) + b"t" + body
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(struct.pack(">i", len(req)) + req)
def exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c: raise SystemExit("closed")
        b += c
    return b
r = exact(struct.unpack(">i", exact(4))[0])
tl = struct.unpack(">h", r[12:14])[0]
err, part, lep, end = struct.unpack(">hiiq", r[14 + tl + 4:14 + tl + 4 + 18])
print(err, lep, end)
PYEOF
}
EP=$(status | awk -F'\t' -v t="$TOPIC" -v p="$P" '$1 == "partition" && $2 == t && $3 == p {print $7}')
FOL=$L # the restarted node follows partition $P
got=$(epoch_ask "$FOL" -1 -1 "$EP")
[ "${got%% *}" = 6 ] && ok "OffsetForLeaderEpoch to follower $FOL of $TOPIC-$P: NOT_LEADER_OR_FOLLOWER" ||
    bad "OffsetForLeaderEpoch to a follower: '$got'"
got=$(epoch_ask "$NEWL" 1 $((EP - 1)) "$EP")
[ "${got%% *}" = 74 ] && ok "OffsetForLeaderEpoch with current epoch $((EP - 1)) < $EP: FENCED_LEADER_EPOCH" ||
    bad "stale current epoch: '$got'"
got=$(epoch_ask "$NEWL" 1 $((EP + 1)) "$EP")
[ "${got%% *}" = 75 ] && ok "OffsetForLeaderEpoch with current epoch $((EP + 1)) > $EP: UNKNOWN_LEADER_EPOCH" ||
    bad "future current epoch: '$got'"
got=$(epoch_ask "$NEWL" 1 "$EP" "$EP")
read -r e_err e_ep e_end <<<"$got"
if [ "$e_err" = 0 ] && [ "$e_ep" = "$EP" ] && [ "${e_end:-0}" -gt 0 ]; then
    ok "OffsetForLeaderEpoch on leader $NEWL for epoch $EP: ends at the log end ($e_end)"
else bad "OffsetForLeaderEpoch on the leader: '$got'"; fi
LEADER_END=$e_end

for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done
run cluster check "$T/n1" "$T/n2" "$T/n3"
sum=$(awk -F'\t' '{split($6, e, ","); s += e[1]} END {print s}' "$T/out")
if [ $RC = 0 ] && [ "$(grep -c $'\tidentical\t' "$T/out")" = 3 ] && [ "$sum" = 1200 ]; then
    ok "cluster check: the 3 partitions identical on all 3 nodes above the log start, 1200 records"
else bad "cluster check (exit $RC, sum $sum)"; fi
hw_ok=$(awk -F'\t' '{split($6, e, ","); n = split($8, h, ","); for (i = 1; i <= n; i++) if (h[i] != "-" && h[i] != e[i]) bad = 1} END {print bad ? "no" : "yes"}' "$T/out")
[ "$hw_ok" = yes ] && ok "every checkpointed high watermark written at shutdown is its log end" ||
    bad "checkpointed HW: $(cat "$T/out")"
pend=$(awk -F'\t' -v p="$P" '$3 == p {split($6, e, ","); print e[1]}' "$T/out")
[ "$pend" = "$LEADER_END" ] && ok "the leader's answer for its epoch was its log end ($pend)" ||
    bad "leader's epoch end $LEADER_END, log end $pend"
run cluster check "$T/diverged" "$T/n$NEWL"
grep -q "^partition	$TOPIC	$P	differ@" "$T/out" && [ $RC = 1 ] &&
    ok "cluster check tells the divergent copy from the leader's log ($(grep "^partition	$TOPIC	$P" "$T/out" | cut -f4))" ||
    bad "cluster check of the divergent copy (exit $RC)"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
