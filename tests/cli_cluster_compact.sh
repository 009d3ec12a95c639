#!/usr/bin/env bash
# cli_cluster_compact.sh — a compacted topic replicated (issue 24; engine/log/partition.h RL8,
# docs/format.md A.10 "Replica appends", docs/cluster.md §7.3): three `ringtail serve --voters`
# nodes, a topic with cleanup.policy=compact, segment.ms 1000 (the first segment is made before
# the TOPIC record's segment.bytes reaches the engine) and min.cleanable.dirty.ratio 0.01,
# replication factor 3. Keyed records are produced (acks=all); one follower is SIGKILLed; more
# records of the same keys are produced while it is down, so the leader rolls segments and its
# cleaner removes superseded records (the leader's log then skips offsets: fewer records read
# back than produced). The follower, restarted, copies the leader's batches at their offsets,
# gaps included, and catches up (its log end is the leader's); every node stopped, `ringtail
# cluster check` finds no offset on which two replicas disagree (`identical` or `consistent`:
# what the follower copied before the clean is its own, and each replica's cleaner removes its
# own) and `ringtail verify` passes the follower's directory. Before RL8 the follower's replica
# append refused the first gap and it never caught up.
#
# usage: bash tests/cli_cluster_compact.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_compact.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ccmp-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
SESSION_MS=2000
TOPIC=cmp
touch "$T/out" "$T/err"

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
. "$(dirname "$0")/helpers/cluster_nodes.sh" # start_node, brokers_of, wait_for, all_list, status_of
trap cluster_cleanup EXIT
BOOT="127.0.0.1:$K1,127.0.0.1:$K2,127.0.0.1:$K3"

alive() { local i; for i in 1 2 3; do [ "${PIDS[$i]}" != 0 ] && echo "$i"; done; }
status() { # the controller's view
    local i
    for i in $(alive); do
        status_of "$i" | grep -q '^controller	[1-3]' && { status_of "$i"; return; }
    done
}
field() { # field NAME : the partition line's value after NAME
    status | awk -F'\t' -v t="$TOPIC" -v n="$1" '$1 == "partition" && $2 == t {
        for (i = 4; i < NF; i++) if ($i == n) print $(i + 1) }'
}
produce() { # produce FIRST LAST : keys k0..k9, values v-FIRST..v-LAST, acks=all
    seq "$1" "$2" | awk '{printf "k%d:v-%d\n", $1 % 10, $1}' |
        kcat -P -b "$BOOT" -t "$TOPIC" -K: -X acks=all -X linger.ms=0 -X batch.num.messages=10 \
            -X topic.metadata.refresh.interval.ms=500 2>>"$T/kcat.err"
}
read_back() { # the records the leader serves from the log start
    kcat -C -b "$BOOT" -t "$TOPIC" -o beginning -e -q -f '%k=%s\n' 2>>"$T/kcat.err" | wc -l
}

for i in 1 2 3; do start_node "$i"; done
if wait_for 30 all_list "1 2 3 " 1 2 3; then ok "three nodes registered"
else bad "brokers: '$(brokers_of 1)' / '$(brokers_of 2)' / '$(brokers_of 3)'"; fi

$PY - "$BOOT" "$TOPIC" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
cfg = {"cleanup.policy": "compact", "segment.bytes": "4096", "segment.ms": "1000",
       "min.cleanable.dirty.ratio": "0.01"}
for attempt in range(10):
    try:
        a.create_topics([NewTopic(sys.argv[2], num_partitions=1, replication_factor=3, config=cfg)],
                        request_timeout=15)[sys.argv[2]].result()
        print("created"); break
    except Exception as e:
        if e.args[0].name() != "NOT_CONTROLLER" or attempt == 9:
            print("error", e.args[0].name()); break
        time.sleep(1)
PYEOF
grep -q created "$T/admin.out" && ok "compacted topic $TOPIC created: RF 3, segment.ms 1000" ||
    bad "create: $(cat "$T/admin.out")"
has_leader() { l=$(field leader); [ -n "$l" ] && [ "$l" != -1 ]; }
wait_for 10 has_leader || bad "no leader: $(status)"

produce 1 200
LEADER=$(field leader)
in_sync() { [ "$(field isr | tr ',' '\n' | grep -c .)" = 3 ]; }
wait_for 20 in_sync && ok "200 keyed records; leader $LEADER, all three in sync" || bad "isr: $(status)"

# A follower goes down; the leader's cleaner runs while it is away.
F=1; [ "$LEADER" = 1 ] && F=2
CTL=$(status | sed -n 's/^controller\t//p')
[ "$F" = "$CTL" ] && { F=3; [ "$LEADER" = 3 ] && F=2; [ "$F" = "$CTL" ] && F=1; }
kill -KILL "${PIDS[$F]}"; wait "${PIDS[$F]}" 2>/dev/null; PIDS[$F]=0
produce 201 700; sleep 1.2; produce 701 1200 # segment.ms rolls between them (and CLN10 after)
compacted() { n=$(read_back); [ "$n" -gt 0 ] && [ "$n" -lt 1000 ]; }
if wait_for 30 compacted; then ok "node $F down; the leader's cleaner removed superseded records ($n of 1200 read back)"
else bad "the leader did not compact: $(read_back) records read back"; fi
[ "$(field leader)" = "$LEADER" ] || bad "the leadership moved: $(status)"

# The follower comes back and copies the compacted log, gaps included.
start_node "$F"
caught_up() {
    local ends
    ends=$(field end)
    [ -n "$ends" ] && [ "$(echo "$ends" | tr ',' '\n' | cut -d: -f2 | sort -u | wc -l)" = 1 ] && in_sync
}
if wait_for 40 caught_up; then ok "node $F restarted copies the compacted log: back in the ISR, log ends $(field end)"
else bad "node $F did not catch up: $(status) // $(grep -h 'replica' "$T/n$F.err" | tail -3)"; fi

for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done
run cluster check "$T/n1" "$T/n2" "$T/n3"
line=$(grep "^partition	$TOPIC	0	" "$T/out")
if [ $RC = 0 ] && echo "$line" | grep -qE $'\t(identical|consistent)\t'; then
    ok "cluster check: no offset on which the replicas disagree ($(echo "$line" | cut -f4), ends $(echo "$line" | cut -f6))"
else bad "cluster check (exit $RC): $line"; fi
run verify "$T/n$F"
[ $RC = 0 ] && ok "ringtail verify passes the follower's directory (its copied gaps)" || bad "verify n$F"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
