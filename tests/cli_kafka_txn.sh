#!/usr/bin/env bash
# cli_kafka_txn.sh — librdkafka's transactional producer (tests/kafka/rdk_txn.c) against
# `ringtail serve`, read back by kcat at both isolation levels:
#   - 30 transactions of 10 records over 3 partitions, every third aborted (after its records
#     were delivered, so they are in the log): read_committed returns exactly the committed
#     records, once each; read_uncommitted returns all 300, once each;
#   - the same after the broker is SIGKILLed and restarted;
#   - a second producer with the same transactional.id fences the first (its commit fails,
#     fatally, as fenced) and commits itself;
#   - a producer left with its transaction open (SIGKILLed) pins read_committed readers of its
#     partition until the broker's timeout aborts it; then they move on past it, its records
#     never seen;
#   - offsets sent in transactions (TxnOffsetCommit), a third aborted: the group's committed
#     offset (OffsetFetch) is the last committed transaction's, also after a SIGKILL restart;
#   - byte-level refusals (tests/kafka/txn_wire.py): a transactional Produce to a partition not
#     added is INVALID_TXN_STATE and writes nothing, unknown partitions, other epochs, NUL in an
#     id, ids never initialised, timeout 0, truncated and lying requests;
#   - an InitProducerId asking more than --transaction-max-timeout-ms fails (the producer
#     cannot initialise);
#   - hard bounces: the broker SIGKILLed and restarted three times under a producer that keeps
#     committing small transactions: every acknowledged commit present exactly once, every
#     transaction all-or-nothing, no transaction left open (no LSO pinned);
#   - python3-confluent-kafka: a consume-transform-produce pipeline (assigned partitions, offsets
#     sent in its transactions, every third aborted) SIGKILLed midway and restarted: its output
#     exactly once; a producer left open pins read_committed readers until the broker's timeout
#     aborts it, then they move on without its records;
#   - KIP-664 (tests/kafka/txn_admin.py, what kafka-transactions.sh asks): ListTransactions,
#     DescribeTransactions and DescribeProducers see the python producer's open transaction;
#   - python3-confluent-kafka with KIP-447 (TxnOffsetCommit v3): offsets sent with a subscribed
#     member's group metadata are committed, and refused UNKNOWN_MEMBER_ID once it has left;
#   - kafkajs 2.2.4: 9 transactions with sendOffsets, a third aborted: read_committed returns
#     exactly the committed records, the group's offset is the last committed one's; a second
#     producer with the same transactionalId fences the first;
#   - plain offset commits of a consumer without group membership survive a broker SIGKILL;
#   - `ringtail verify` clean after SIGTERM.
# Runs over both network backends (--io uring, --io sync).
#
# usage: bash tests/cli_kafka_txn.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_txn.sh /path/to/ringtail}
BIN=$(dirname "$RT")
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-txn-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
SERVE_PID=
HANG_PID=
LOOP_PID=
PIPE_PID=
cleanup() {
    [ -n "$PIPE_PID" ] && kill -KILL "$PIPE_PID" 2>/dev/null
    [ -n "$LOOP_PID" ] && kill -KILL "$LOOP_PID" 2>/dev/null
    [ -n "$HANG_PID" ] && kill -KILL "$HANG_PID" 2>/dev/null
    [ -n "$SERVE_PID" ] && kill -KILL "$SERVE_PID" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

# The client program: built by CMake beside ringtail when tests/kafka/*.c are (k/clients), else
# here.
RDK=$BIN/rdk_txn
if [ ! -x "$RDK" ]; then
    RDK=$T/rdk_txn
    cc -O1 -Wall -Wextra -Werror -o "$RDK" "$(dirname "$0")/kafka/rdk_txn.c" \
        $(pkg-config --cflags --libs rdkafka) || { echo "FAIL - cannot build rdk_txn"; exit 1; }
fi

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# serve_start DIR ARGS...: the broker in the background on $PORT (kept across restarts).
serve_start() {
    local dir=$1 i mark
    shift
    mark=$(grep -c "listening on" "$T/serve.log" 2>/dev/null)
    "$RT" serve "$dir" --listen "127.0.0.1:$PORT" "$@" >>"$T/serve.log" 2>&1 &
    SERVE_PID=$!
    for i in $(seq 1 200); do
        [ "$(grep -c "listening on" "$T/serve.log")" -gt "${mark:-0}" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "FAIL - serve did not start; log:"
    tail -20 "$T/serve.log"
    exit 1
}

serve_stop() {
    kill -TERM "$SERVE_PID"
    wait "$SERVE_PID"
    RC=$?
    SERVE_PID=
    expect "$1" 0
}

serve_kill() {
    kill -KILL "$SERVE_PID"
    wait "$SERVE_PID" 2>/dev/null
    SERVE_PID=
}

# read_all ISO TOPIC: every value of the topic's 3 partitions at isolation ISO, one a line.
read_all() {
    local p
    for p in 0 1 2; do
        kcat -b "127.0.0.1:$PORT" -C -t "$2" -p "$p" -o beginning -e -q \
            -X isolation.level="$1" -f '%s\n' 2>>"$T/kcat.err"
    done
}

# same_once DESC WANT GOT: GOT holds exactly WANT's lines, each once.
same_once() {
    if [ -z "$(sort "$3" | uniq -d)" ] && cmp -s <(sort "$2") <(sort "$3"); then
        ok "$1"
    else
        RC=1
        echo "want $(wc -l <"$2") got $(wc -l <"$3") ($(sort "$3" | uniq -d | wc -l) repeated)" >"$T/err"
        : >"$T/out"
        bad "$1"
    fi
}

scenario() {
    local io=$1
    D=$T/data-$io
    PORT=$(free_port)
    run topic create "$D" tx --partitions 3
    expect "[$io] a 3-partition topic" 0
    serve_start "$D" --io "$io" --transaction-max-timeout-ms 60000

    "$RDK" "127.0.0.1:$PORT" tx run 30 >"$T/committed" 2>"$T/err"
    RC=$?
    : >"$T/out"
    expect "[$io] 30 transactions: 20 committed, 10 aborted, as the client saw them" 0 \
        "committed 20 aborted 10"
    for i in $(seq 0 29); do for j in $(seq 0 9); do echo "t$i-r$j"; done; done >"$T/all"
    read_all read_committed tx >"$T/rc"
    same_once "[$io] read_committed: exactly the 200 committed records, once each" \
        "$T/committed" "$T/rc"
    read_all read_uncommitted tx >"$T/ru"
    same_once "[$io] read_uncommitted: all 300 records, once each" "$T/all" "$T/ru"

    serve_kill
    serve_start "$D" --io "$io" --transaction-max-timeout-ms 60000
    read_all read_committed tx >"$T/rc"
    same_once "[$io] after SIGKILL and restart: read_committed still exactly the committed" \
        "$T/committed" "$T/rc"

    "$RDK" "127.0.0.1:$PORT" tx fence >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] a second producer with the same transactional.id fences the first" 0 \
        "A fenced: _FENCED fatal"
    if grep -q "B committed" "$T/out"; then ok "[$io] the second producer commits"; else
        bad "[$io] the second producer commits"; fi
    read_all read_committed tx | grep -E '^[ab]$' | sort >"$T/ab"
    if [ "$(cat "$T/ab")" = "b" ]; then ok "[$io] the fenced producer's record never committed"
    else RC=1; bad "[$io] the fenced producer's record never committed (got: $(cat "$T/ab"))"; fi

    # A transaction left open: its producer hangs (then dies); the broker's timeout (8 s) ends it.
    "$RDK" "127.0.0.1:$PORT" tx hang 8000 >"$T/hang.out" 2>"$T/hang.err" &
    HANG_PID=$!
    for i in $(seq 1 300); do grep -q open "$T/hang.out" && break; sleep 0.1; done
    kill -KILL "$HANG_PID"
    wait "$HANG_PID" 2>/dev/null
    HANG_PID=
    "$RDK" "127.0.0.1:$PORT" tx fence >/dev/null 2>&1 # commits "b" to partition 0 behind it
    kcat -b "127.0.0.1:$PORT" -C -t tx -p 0 -o beginning -e -q -X isolation.level=read_committed \
        -f '%s\n' >"$T/pinned" 2>>"$T/kcat.err"
    if ! grep -qE '^h[0-4]$' "$T/pinned" && [ "$(grep -c '^b$' "$T/pinned")" -eq 1 ]; then
        ok "[$io] while a transaction is open its partition's read_committed readers stop before it"
    else
        RC=1
        bad "[$io] while a transaction is open its partition's read_committed readers stop before it"
    fi
    moved=0
    for i in $(seq 1 300); do
        kcat -b "127.0.0.1:$PORT" -C -t tx -p 0 -o beginning -e -q \
            -X isolation.level=read_committed -f '%s\n' >"$T/pinned" 2>>"$T/kcat.err"
        if [ "$(grep -c '^b$' "$T/pinned")" -eq 2 ]; then moved=1; break; fi
        sleep 0.1
    done
    if [ $moved -eq 1 ] && ! grep -qE '^h[0-4]$' "$T/pinned"; then
        ok "[$io] the broker's timeout aborts it: readers move on, its records never seen"
    else
        RC=1
        bad "[$io] the broker's timeout aborts it: readers move on, its records never seen"
    fi

    # The same APIs at the byte level: refusals and their codes (tests/kafka/txn_wire.py).
    python3 "$(dirname "$0")/kafka/txn_wire.py" "127.0.0.1:$PORT" tx >"$T/out" 2>"$T/err"
    RC=$?
    sed "s/^/       [$io] /" "$T/out"
    expect "[$io] byte-level checks of the transactional APIs (txn_wire.py) pass" 0

    # Offsets in transactions (send_offsets_to_transaction): TxnOffsetCommit, then OffsetFetch.
    "$RDK" "127.0.0.1:$PORT" tx offsets >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] offsets sent in transactions: the group's offset is the last committed one's" 0 \
        "^committed offset 50$"
    serve_kill
    serve_start "$D" --io "$io" --transaction-max-timeout-ms 60000
    "$RDK" "127.0.0.1:$PORT" tx committed >"$T/out" 2>"$T/err"
    RC=$?
    expect "[$io] ... and after a SIGKILL and restart" 0 "^committed offset 50$"

    serve_stop "[$io] serve exits 0 on SIGTERM"
    run verify "$D"
    expect "[$io] verify: clean" 0
}

scenario uring
scenario sync

# Hard bounces: the broker SIGKILLed and restarted three times (same port) while a
# transactional producer keeps committing small transactions (3 records, one per partition).
D=$T/data-bounce
PORT=$(free_port)
run topic create "$D" tx --partitions 3
serve_start "$D" --transaction-max-timeout-ms 60000
N=150
"$RDK" "127.0.0.1:$PORT" tx loop $N >"$T/loop.out" 2>"$T/loop.err" &
LOOP_PID=$!
acked() { grep -c '^acked' "$T/loop.out"; }
last=0
for k in 1 2 3; do
    for i in $(seq 1 300); do [ "$(acked)" -ge $((last + 15)) ] && break; sleep 0.1; done
    last=$(acked)
    serve_kill
    serve_start "$D" --transaction-max-timeout-ms 60000
done
wait "$LOOP_PID"
RC=$?
cp "$T/loop.err" "$T/err"
: >"$T/out"
expect "bounces: the producer commits all $N transactions through 3 broker SIGKILLs (killed after $last acks at the latest)" 0
read_all read_committed tx >"$T/rc"
sed -n 's/^acked \(L[0-9]*\)$/\1/p' "$T/loop.out" | while read -r l; do
    echo "$l-0"; echo "$l-1"; echo "$l-2"
done >"$T/want"
same_once "bounces: every acknowledged transaction's records, exactly once, and nothing else" \
    "$T/want" "$T/rc"
if sed 's/-[0-9]$//' "$T/rc" | sort | uniq -c | awk '$1 != 3 { bad = 1 } END { exit bad }'; then
    ok "bounces: every transaction all-or-nothing"
else
    bad "bounces: every transaction all-or-nothing"
fi
serve_stop "bounces: serve exits 0 on SIGTERM"
run txn list "$D"
expect "bounces: no transaction left open, no LSO pinned" 0 "no open transactions"
run verify "$D"
expect "bounces: verify clean" 0

# python3-confluent-kafka (tests/kafka/py_txn.py, /usr/bin/python3 as tools/setup.sh installs it):
# a consume-transform-produce pipeline SIGKILLed midway and restarted -> exactly once; then a
# transactional producer left open pins read_committed readers until the broker's timeout.
PY="/usr/bin/python3 $(dirname "$0")/kafka/py_txn.py"
D=$T/data-py
PORT=$(free_port)
run topic create "$D" in --partitions 3
run topic create "$D" out --partitions 3
serve_start "$D" --transaction-max-timeout-ms 60000
$PY "127.0.0.1:$PORT" fill in 300 >"$T/out" 2>"$T/err"
RC=$?
expect "python: 300 input records" 0 "filled 300"
$PY "127.0.0.1:$PORT" pipe in out g 50 >"$T/pipe1.out" 2>"$T/pipe1.err" &
PIPE_PID=$!
for i in $(seq 1 300); do [ "$(grep -c committed "$T/pipe1.out")" -ge 4 ] && break; sleep 0.1; done
kill -KILL "$PIPE_PID"
wait "$PIPE_PID" 2>/dev/null
PIPE_PID=
if grep -q committed "$T/pipe1.out" && ! grep -q done "$T/pipe1.out"; then
    ok "python: the pipeline SIGKILLed midway ($(tail -1 "$T/pipe1.out"))"
else
    cp "$T/pipe1.err" "$T/err"
    bad "python: the pipeline SIGKILLed midway"
fi
timeout 300 $PY "127.0.0.1:$PORT" pipe in out g >"$T/out" 2>"$T/err"
RC=$?
expect "python: the restarted pipeline finishes (the group's committed offsets at the ends)" 0 \
    "^done$"
read_all read_committed out >"$T/rc"
seq 0 299 | sed 's/^/x-v/' >"$T/want"
same_once "python: the output read_committed is every input record transformed, exactly once" \
    "$T/want" "$T/rc"
read_all read_uncommitted out >"$T/ru"
if [ "$(wc -l <"$T/ru")" -gt 300 ]; then
    ok "python: (read_uncommitted also holds the aborted and killed transactions' output)"
else
    bad "python: (read_uncommitted also holds the aborted and killed transactions' output)"
fi
$PY "127.0.0.1:$PORT" hang out 10000 >"$T/hang.out" 2>"$T/hang.err" &
HANG_PID=$!
for i in $(seq 1 300); do grep -q open "$T/hang.out" && break; sleep 0.1; done
$PY "127.0.0.1:$PORT" after out >"$T/out" 2>"$T/err"
RC=$?
expect "python: a transaction committed behind the open one" 0 "after committed"
kcat -b "127.0.0.1:$PORT" -C -t out -p 0 -o beginning -e -q -X isolation.level=read_committed \
    -f '%s\n' >"$T/pinned" 2>>"$T/kcat.err"
if ! grep -qE '^(after|h[0-4])$' "$T/pinned"; then
    ok "python: while the producer's transaction is open, read_committed stops before it"
else
    bad "python: while the producer's transaction is open, read_committed stops before it"
fi
timeout 120 $PY "127.0.0.1:$PORT" wait out >"$T/out" 2>"$T/err"
RC=$?
expect "python: a read_committed reader waits until the broker's timeout aborts it, then moves on" \
    0 "^waited [0-9]+$"
if ! grep -qE '^h[0-4]$' "$T/out"; then ok "python: ... and never sees its records"; else
    bad "python: ... and never sees its records"; fi
kill -KILL "$HANG_PID"
wait "$HANG_PID" 2>/dev/null
HANG_PID=
$PY "127.0.0.1:$PORT" hang out 60000 >"$T/hang.out" 2>"$T/hang.err" &
HANG_PID=$!
for i in $(seq 1 300); do grep -q open "$T/hang.out" && break; sleep 0.1; done
# KIP-664 while a python producer's transaction is open (tests/kafka/txn_admin.py: kafka-transactions.sh's
# list, describe and describe-producers, its frames written from Kafka's message JSON).
ADM="python3 $(dirname "$0")/kafka/txn_admin.py 127.0.0.1:$PORT"
$ADM list Ongoing Bogus >"$T/out" 2>"$T/err"
RC=$?
expect "KIP-664: ListTransactions lists the open transaction, Ongoing" 0 "^py-hang [0-9]+ Ongoing$"
expect "KIP-664: ... and answers an unknown state filter back" 0 "^unknown Bogus$"
$ADM describe py-hang nope >"$T/out" 2>"$T/err"
RC=$?
expect "KIP-664: DescribeTransactions: Ongoing, its partition out-0" 0 \
    "^py-hang error=0 state=Ongoing timeout=60000 start=[0-9]+ producer=[0-9]+ epoch=[0-9]+ partitions=out-0$"
expect "KIP-664: ... an unknown id is TRANSACTIONAL_ID_NOT_FOUND (105)" 0 "^nope error=105 "
$ADM describe-producers out 0 9 >"$T/out" 2>"$T/err"
RC=$?
expect "KIP-664: DescribeProducers: out-0 holds a producer whose transaction is open" 0 \
    "producer=[0-9]+ epoch=[0-9]+ last_sequence=[0-9]+ last_timestamp=[0-9]+ coordinator_epoch=-1 txn_start_offset=[0-9]+$"
expect "KIP-664: ... partition 9 is UNKNOWN_TOPIC_OR_PARTITION (3)" 0 "^out-9 error=3$"
kill -KILL "$HANG_PID"
wait "$HANG_PID" 2>/dev/null
HANG_PID=
# A new instance of the id fences the killed one and aborts its transaction (InitProducerId).
/usr/bin/python3 -c "from confluent_kafka import Producer
Producer({'bootstrap.servers': '127.0.0.1:$PORT', 'transactional.id': 'py-hang'}).init_transactions(30)"
$ADM list >"$T/out" 2>"$T/err"
RC=$?
expect "KIP-664: ... once a new instance fenced it, its transaction is no longer open" 0 \
    "^py-hang [0-9]+ (Empty|CompleteAbort)$"
# KIP-447 (TxnOffsetCommit v3, handle_txn.c KT7): offsets sent with a live member's group
# metadata are committed; with the metadata of a member that has left, UNKNOWN_MEMBER_ID.
$PY "127.0.0.1:$PORT" kip447 in kip447-g >"$T/out" 2>"$T/err"
RC=$?
expect "python: KIP-447: offsets sent with a group member's metadata are committed" 0 \
    "^live committed [0-9]+$"
expect "python: KIP-447: ... and refused once that member has left (a zombie is fenced)" 0 \
    "^stale refused UNKNOWN_MEMBER_ID$"
$PY "127.0.0.1:$PORT" commit in plain 7 >"$T/out" 2>"$T/err"
RC=$?
expect "python: a consumer without group membership commits offsets (OffsetCommit) and reads them back" \
    0 "^committed 7 7 7$"
serve_kill
serve_start "$D" --transaction-max-timeout-ms 60000
$PY "127.0.0.1:$PORT" committed in plain >"$T/out" 2>"$T/err"
RC=$?
expect "python: ... and they survive a broker SIGKILL and restart" 0 "^committed 7 7 7$"
serve_stop "python: serve exits 0 on SIGTERM"
run verify "$D"
expect "python: verify clean" 0

# kafkajs 2.2.4 (tests/kafka/node, installed by tools/setup.sh): transactions with sendOffsets, a
# third aborted, and fencing (tests/kafka/node/kafkajs_txn.test.js); the output read back here.
D=$T/data-js
PORT=$(free_port)
run topic create "$D" seed --partitions 1
serve_start "$D" --transaction-max-timeout-ms 60000
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
if [ -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    (cd "$NODE_DIR" && RT_BROKER="127.0.0.1:$PORT" RT_KAFKAJS_OUT="$T/js.out" \
        timeout 300 node --test kafkajs_txn.test.js) >"$T/out" 2>"$T/err"
    RC=$?
    expect "kafkajs: transactions with sendOffsets (group offset = last commit) and fencing" 0 \
        "# fail 0"
else
    RC=1
    echo "kafkajs is not installed in $NODE_DIR (run tools/setup.sh)" >"$T/err"
    bad "kafkajs: transactions with sendOffsets (group offset = last commit) and fencing"
fi
read_all read_committed jstx >"$T/rc"
same_once "kafkajs: read_committed returns exactly the committed records, once each" \
    "$T/js.out" "$T/rc"
serve_stop "kafkajs: serve exits 0 on SIGTERM"
run verify "$D"
expect "kafkajs: verify clean" 0

# A transaction timeout above the broker's maximum: the producer cannot initialise.
D=$T/data-max
PORT=$(free_port)
run topic create "$D" tx --partitions 3
serve_start "$D" --transaction-max-timeout-ms 10000
timeout 60 "$RDK" "127.0.0.1:$PORT" tx run 1 >"$T/out" 2>"$T/err" # asks 30000 ms
RC=$?
if [ $RC -ne 0 ] && grep -qiE "init_transactions.*(timeout|INVALID_TRANSACTION_TIMEOUT)" "$T/err"; then
    ok "a transaction timeout above --transaction-max-timeout-ms: InitProducerId refused"
else
    bad "a transaction timeout above --transaction-max-timeout-ms: InitProducerId refused"
fi
serve_stop "serve exits 0 on SIGTERM"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
