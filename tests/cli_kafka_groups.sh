#!/usr/bin/env bash
# cli_kafka_groups.sh — consumer groups over the wire (group_coord.c, handle_group.c) with real
# clients: python3-confluent-kafka consumers (librdkafka 2.0.2 underneath, tests/kafka/
# py_groups.py) subscribing to a 6-partition topic as one group, each committing every record it
# consumes (OffsetCommit with its generation):
#   - three members: the partitions are split among them, each partition owned by exactly one
#     member, every partition owned (range assignor: two each);
#   - one leaves (LeaveGroup): the other two take over its partitions (three each);
#   - one is SIGKILLed: after its session timeout (3 s) the last one owns all six;
#   - across all of it every record is consumed exactly once (commits carry the ownership over);
#   - the group APIs at the byte level (tests/kafka/group_wire.py): MEMBER_ID_REQUIRED,
#     INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
#     REBALANCE_IN_PROGRESS where Kafka answers them, OffsetCommit's generation check, parked
#     joins and follower syncs answered in pipelining order, session and rebalance timeouts,
#     a truncated request closing only its connection;
#   - DescribeGroups says Stable with one member and the range protocol; ListGroups names the
#     group;
#   - the committed offsets (OffsetFetch) are every partition's end, and survive a broker
#     restart: a new member after it consumes only the records produced since.
# The scenario runs with --group-initial-rebalance-delay-ms 0 --group-min-session-timeout-ms 1000
# (its 3 s / 1 s session timeouts); Kafka's group defaults and offsets are
# tests/cli_kafka_group_defaults.sh's (this driver is near its 600 s ctest timeout).
# Both network backends (--io uring, --io sync). Then, on the default backend:
#   - kafkajs 2.2.4 (tests/kafka/node/kafkajs_groups.test.js): a group consumer's
#     consume-transform-produce with sendOffsets in its transactions, a third aborted: output
#     exactly once, the group's committed offsets the last committed transaction's;
#   - tests/kafka/py_txn.py's pipeline with subscribe() instead of assign() (py_groups.py
#     pipe), SIGKILLed midway and restarted: it rejoins the group, its output exactly once.
#
# usage: bash tests/cli_kafka_groups.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_groups.sh /path/to/ringtail}
PY=/usr/bin/python3
G=$(dirname "$0")/kafka/py_groups.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-groups-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
. "$(dirname "$0")/kafka/group_members.sh"
cleanup() {
    members_cleanup
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

count_is() { [ "$(consumed | sort -u | wc -l)" -eq "$1" ]; }

once_ok() { # DESC N: exactly v0..v<N-1> consumed, each once
    seq 0 $(($2 - 1)) | sed 's/^/v/' | sort >"$T/want"
    consumed | sort >"$T/got"
    if cmp -s "$T/want" "$T/got"; then
        ok "$1"
    else
        RC=1
        echo "want $2, got $(wc -l <"$T/got") ($(uniq -d "$T/got" | wc -l) repeated)" >"$T/err"
        : >"$T/out"
        bad "$1"
    fi
}

fill() { # FROM COUNT: records v<FROM>.. into the 6 partitions (value i to partition i % 6)
    $PY - "$BROKER" "$1" "$2" <<'PYEOF' >/dev/null 2>>"$T/fill.err"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "enable.idempotence": True})
a, n = int(sys.argv[2]), int(sys.argv[3])
for i in range(a, a + n):
    p.produce("gt", value=("v%d" % i).encode(), partition=i % 6)
    p.poll(0)
sys.exit(0 if p.flush(30) == 0 else 1)
PYEOF
}

# The membership scenario predates Kafka's group defaults: its members use 3 s (and group_wire.py
# 1 s) session timeouts and expect a lone first member to be answered at once, so it runs with
# both lowered; the defaults are checked below.
LOW="--group-initial-rebalance-delay-ms 0 --group-min-session-timeout-ms 1000"

scenario() {
    local io=$1
    D=$T/data-$io
    rm -f "$T"/*.log "$T"/*.in
    run topic create "$D" gt --partitions 6
    expect "[$io] a 6-partition topic" 0
    serve_start "$D" --io "$io" $LOW
    SERVE_PORT=$PORT
    fill 0 300


    start_member A
    start_member B
    start_member C
    RC=1
    if wait_for 40 split_ok 2 A B C; then RC=0; fi
    : >"$T/out"
    grep -h -E '^(assigned|revoked)' "$T"/[ABC].log >"$T/err"
    expect "[$io] three members: each owns two partitions, every partition owned once" 0
    wait_for 30 count_is 300
    once_ok "[$io] three members: the 300 records consumed once each across the group" 300

    leave_member C
    RC=1
    if wait_for 30 split_ok 3 A B; then RC=0; fi
    grep -h -E '^(assigned|revoked)' "$T"/[AB].log >"$T/err"
    expect "[$io] C leaves: A and B own three partitions each, every partition owned once" 0
    fill 300 300
    wait_for 30 count_is 600
    once_ok "[$io] after the leave: all 600 records consumed once each" 600

    kill_member B
    RC=1
    if wait_for 40 split_ok 6 A; then RC=0; fi
    grep -h -E '^(assigned|revoked)' "$T/A.log" >"$T/err"
    expect "[$io] B SIGKILLed: after its session timeout A owns all six partitions" 0
    fill 600 300
    wait_for 30 count_is 900
    once_ok "[$io] after the kill: all 900 records consumed once each" 900

    python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] byte-level checks of the group APIs (group_wire.py: codes, parking, timeouts) pass" 0 \
        "^all passed$"

    $PY "$G" "$BROKER" describe grp >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] DescribeGroups: Stable, one member, protocol range" 0 \
        "^state Stable members 1 protocol range$"
    expect "[$io] ListGroups names the group" 0 "^listed$"

    leave_member A
    $PY "$G" "$BROKER" committed gt grp 6 >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] committed offsets: 150 on every partition" 0 \
        "^committed 150 150 150 150 150 150$"
    serve_stop "[$io] serve exits 0 on SIGTERM"
    serve_start "$D" --io "$io" $LOW
    $PY "$G" "$BROKER" committed gt grp 6 >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] committed offsets survive a broker restart" 0 \
        "^committed 150 150 150 150 150 150$"
    fill 900 60
    start_member E
    wait_for 30 count_is 960
    sleep 1
    once_ok "[$io] a member after the restart resumes at the committed offsets: 960 once each" 960
    leave_member E
    serve_stop "[$io] serve exits 0 on SIGTERM after the restart"
    unset SERVE_PORT
    serve_verify "$D"
}

scenario uring
scenario sync

# ---- kafkajs 2.2.4: consume-transform-produce in a group, exactly once -----------------------
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
D=$T/data-js
serve_start "$D"
if [ -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    (cd "$NODE_DIR" && RT_BROKER=$BROKER timeout 300 node --test --test-reporter=tap \
        kafkajs_groups.test.js) >"$T/out" 2>"$T/err"
    RC=$?
else
    RC=1
    echo "kafkajs is not installed in tests/kafka/node (tools/setup.sh runs npm ci there)" >"$T/out"
fi
expect "kafkajs: a group consumer's consume-transform-produce with sendOffsets, a third aborted: output exactly once, the group's offsets the last commit's" 0 "^# fail 0$"
serve_stop "kafkajs part: serve exits 0 on SIGTERM"

# ---- python: the transactional pipeline with subscribe(), SIGKILLed midway -------------------
D=$T/data-pipe
run topic create "$D" pin --partitions 3
expect "pipeline: a 3-partition input topic" 0
run topic create "$D" pout --partitions 3
expect "pipeline: a 3-partition output topic" 0
serve_start "$D" --group-min-session-timeout-ms 1000 # py_groups.py pipe: 3 s sessions
$PY - "$BROKER" <<'PYEOF' >/dev/null 2>"$T/err"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "enable.idempotence": True})
for i in range(300):
    p.produce("pin", value=("v%d" % i).encode(), partition=i % 3)
    p.poll(0)
sys.exit(0 if p.flush(30) == 0 else 1)
PYEOF
RC=$?
: >"$T/out"
expect "pipeline: 300 input records" 0
$PY "$G" "$BROKER" pipe pin pout pg 50 >"$T/pipe1.out" 2>"$T/pipe1.err" &
MPID[pipe]=$!
for i in $(seq 1 300); do [ "$(grep -c committed "$T/pipe1.out")" -ge 4 ] && break; sleep 0.1; done
kill -KILL "${MPID[pipe]}"
wait "${MPID[pipe]}" 2>/dev/null
unset "MPID[pipe]"
RC=0
if grep -q committed "$T/pipe1.out" && ! grep -q done "$T/pipe1.out"; then
    ok "pipeline (subscribe): SIGKILLed midway ($(tail -1 "$T/pipe1.out"))"
else
    cp "$T/pipe1.err" "$T/err"
    cp "$T/pipe1.out" "$T/out"
    RC=1
    bad "pipeline (subscribe): SIGKILLed midway"
fi
timeout 300 $PY "$G" "$BROKER" pipe pin pout pg >"$T/out" 2>"$T/err"
RC=$?
expect "pipeline (subscribe): restarted, it rejoins the group and finishes" 0 "^done$"
$PY "$G" "$BROKER" read pout 3 >"$T/pout" 2>"$T/err"
seq 0 299 | sed 's/^/x-v/' | sort >"$T/want"
RC=0
if cmp -s "$T/want" <(sort "$T/pout"); then
    ok "pipeline (subscribe): read_committed output is x-v0..x-v299, each exactly once"
else
    RC=1
    echo "want 300, got $(wc -l <"$T/pout") ($(sort "$T/pout" | uniq -d | wc -l) repeated)" >"$T/out"
    bad "pipeline (subscribe): read_committed output is x-v0..x-v299, each exactly once"
fi
serve_stop "pipeline part: serve exits 0 on SIGTERM"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
