#!/usr/bin/env bash
# cli_cluster_isr.sh — the leader side of Kafka's ISR replication (docs/cluster.md §8,
# tools/kafka/cluster/replica_state.h RS1-RS5, handle_fetch.c KF13, handle_produce.c KPR6) on
# three `ringtail serve --voters ...` nodes whose replica fetchers (replica_fetcher.h, the
# follower side) copy every partition. Topic isr (RF 3, min.insync.replicas=2) and m3 (RF 3,
# 3 partitions, min.insync.replicas=3); S is a node that is neither isr-0's leader L nor the
# controller, so stopping it (SIGSTOP) leaves the raft majority and the leader running. Checks:
# every ISR stays whole while followers fetch; Produce, a consumer's and a follower's Fetch and
# ListOffsets on a node that is not the leader are NOT_LEADER_OR_FOLLOWER (6), a
# current_leader_epoch above the image's UNKNOWN_LEADER_EPOCH (75); kcat bootstrapped on a
# non-leader finds the leader and produces; acks=all is not answered while S is stopped and
# still in the ISR, and answered NONE once it continues and fetched past the batch;
# REQUEST_TIMED_OUT (7) when the request's timeout comes first; an acks=1 record appended while
# S is stopped stays above the high watermark a consumer sees; S stopped longer than
# --replica-lag-time-max-ms leaves the ISR by AlterPartition (seen in `ringtail cluster status`,
# the leader epoch unchanged), acks=all with min.insync.replicas=2 is then answered by the two
# left; an acks=all to an m3 partition S follows, appended just before, is answered
# NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) once S left, and then acks=all is NOT_ENOUGH_REPLICAS (19)
# and acks=1 NONE;
# after SIGCONT S catches up and rejoins the ISR; S killed is fenced (leader epoch + 1) and a
# request at the old epoch to the partition it led, now another node's, is FENCED_LEADER_EPOCH
# (74).
#
# usage: bash tests/cli_cluster_isr.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_isr.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cisr-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -CONT "${PIDS[$i]}" 2>/dev/null; kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
: >"$T/out"; : >"$T/err"; RC=0 # what the harness's bad() shows
W="$(dirname "$0")/kafka/cluster_isr.py"
LAG_MS=3000
SESSION_MS=10000 # S is never stopped this long; it is fenced only once killed at the end

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, VOTERS, kport
for i in 1 2 3; do
    c="C$i" k="K$i"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" \
        --broker-session-timeout-ms $SESSION_MS --replica-lag-time-max-ms $LAG_MS \
        >>"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
done
addr() { echo "127.0.0.1:$(kport "$1")"; }
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.1; done
}
status_of() { "$RT" cluster status --bootstrap "$(addr "$1")" 2>&1; }
brokers_ok() { [ "$(status_of "$1" | grep -c $'^node\t.*unfenced')" = 3 ]; }
# field F (5 leader, 7 epoch, 11 isr) of partition TOPIC-0 in node VIEW's status (the leader's
# own image once known: another node may apply an ISR change a moment earlier)
VIEW=1
field() { status_of "$VIEW" | awk -F'\t' -v t="$1" -v f="$2" '$1 == "partition" && $2 == t && $3 == 0 {print $f}'; }
sorted_isr() { field "$1" 11 | tr ',' '\n' | sort -n | tr '\n' ' '; }
isr_is() { [ "$(sorted_isr "$1")" = "$2" ]; }

if wait_for 30 brokers_ok 1; then ok "three nodes registered"
else bad "nodes: $(status_of 1); $(tail -c 400 "$T/n1.err")"; fi
CTL=$(status_of 1 | sed -n 's/^controller\t//p')

$PY - "$(addr "${CTL:-1}")" >"$T/admin.out" 2>&1 <<'PYEOF'
import sys, time
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for t, n, mi in (("isr", 1, "2"), ("m3", 3, "3")):
    for attempt in range(8):
        try:
            a.create_topics([NewTopic(t, num_partitions=n, replication_factor=3,
                                      config={"min.insync.replicas": mi})],
                            request_timeout=15)[t].result()
            print(t, "created"); break
        except Exception as e:
            if e.args[0].name() != "NOT_CONTROLLER" or attempt == 7:
                print(t, "error", e.args[0].name()); break
            time.sleep(1)
PYEOF
grep -q "isr created" "$T/admin.out" && grep -q "m3 created" "$T/admin.out" &&
    ok "topics isr (RF 3, min.insync.replicas=2) and m3 (RF 3, 3 partitions, min.insync.replicas=3) created" ||
    bad "CreateTopics: $(cat "$T/admin.out")"
has_leader() { [ -n "$(field "$1" 5)" ] && [ "$(field "$1" 5)" -ge 1 ]; }
wait_for 10 has_leader isr
wait_for 10 has_leader m3
L=$(field isr 5)
EPOCH=$(field isr 7)
CTL=$(status_of 1 | sed -n 's/^controller\t//p')
S=0
for i in 1 2 3; do [ "$i" != "$L" ] && [ "$i" != "${CTL:-0}" ] && { S=$i; break; }; done
F=$(( 6 - L - S ))
# an m3 partition S follows (not leads)
MP=-1
for p in 0 1 2; do
    ml=$(status_of 1 | awk -F'\t' -v p=$p '$1 == "partition" && $2 == "m3" && $3 == p {print $5}')
    [ -n "$ml" ] && [ "$ml" != "$S" ] && [ "$ml" -ge 1 ] && { MP=$p; ML=$ml; break; }
done
VIEW=$L
echo "# isr-0: leader $L epoch $EPOCH, followers $F and $S (S is stopped below); controller $CTL; m3-$MP leader ${ML:-?}"
# field of partition TOPIC-P in node VIEW's status
pfield() { status_of "$VIEW" | awk -F'\t' -v t="$1" -v p="$2" -v f="$3" '$1 == "partition" && $2 == t && $3 == p {print $f}'; }
m3_isr() { pfield m3 "$MP" 11 | tr ',' '\n' | sort -n | tr '\n' ' '; }

all3="1 2 3 "
T0=$(date +%s%N)
if wait_for 20 isr_is isr "$all3" && sleep $(( LAG_MS / 1000 + 1 )) && isr_is isr "$all3"; then
    ok "with every follower fetching, the ISR of isr-0 stays 1,2,3 past the lag time"
else bad "ISR of isr-0: '$(sorted_isr isr)'; $(grep replication "$T/n$L.err" | tail -3)"; fi

# leadership and epoch checks (KF13, KPR6)
got=$($PY "$W" produce "$(addr "$F")" isr 0 1 5000)
[ "${got%% *}" = 6 ] && ok "Produce to non-leader $F: NOT_LEADER_OR_FOLLOWER (6)" || bad "produce on $F: $got"
got=$($PY "$W" fetch "$(addr "$F")" isr 0 -1 -1)
[ "${got%% *}" = 6 ] && ok "consumer Fetch on non-leader $F: NOT_LEADER_OR_FOLLOWER" || bad "fetch on $F: $got"
got=$($PY "$W" fetch "$(addr "$F")" isr 0 "$S" -1)
[ "${got%% *}" = 6 ] && ok "follower Fetch (replica_id $S) on non-leader $F: NOT_LEADER_OR_FOLLOWER" ||
    bad "replica fetch on $F: $got"
got=$($PY "$W" offsets "$(addr "$F")" isr 0 -1)
[ "${got%% *}" = 6 ] && ok "ListOffsets on non-leader $F: NOT_LEADER_OR_FOLLOWER" || bad "offsets on $F: $got"
got=$($PY "$W" fetch "$(addr "$L")" isr 0 -1 $((EPOCH + 1)))
[ "${got%% *}" = 75 ] && ok "Fetch v11 with current_leader_epoch $((EPOCH + 1)): UNKNOWN_LEADER_EPOCH (75)" ||
    bad "fetch epoch+1: $got"
got=$($PY "$W" offsets "$(addr "$L")" isr 0 $((EPOCH + 1)))
[ "${got%% *}" = 75 ] && ok "ListOffsets v4 with current_leader_epoch $((EPOCH + 1)): UNKNOWN_LEADER_EPOCH" ||
    bad "offsets epoch+1: $got"
got=$($PY "$W" fetch "$(addr "$L")" isr 0 -1 "$EPOCH")
[ "${got%% *}" = 0 ] && ok "Fetch v11 at the current epoch on the leader: NONE" || bad "fetch epoch: $got"

got=$($PY "$W" produce "$(addr "$L")" isr 0 -1 10000)
[ "${got%% *}" = 0 ] && ok "acks=all to leader $L, both followers fetching: NONE ($got)" || bad "acks=all: $got"
if echo "via-non-leader" | timeout 20 kcat -P -b "$(addr "$F")" -t isr -p 0 -X acks=all 2>"$T/kcat.err"; then
    ok "kcat bootstrapped on non-leader $F found leader $L and produced (acks=all)"
else bad "kcat: $(cat "$T/kcat.err")"; fi

# S stopped, still in the ISR: acks=all waits for it
kill -STOP "${PIDS[$S]}"
$PY "$W" produce "$(addr "$L")" isr 0 -1 10000 >"$T/parked.out" &
PP=$!
sleep 1
[ ! -s "$T/parked.out" ] && ok "acks=all not answered while follower $S is stopped (1 s; it is still in the ISR)" ||
    bad "answered while stopped: $(cat "$T/parked.out")"
kill -CONT "${PIDS[$S]}"
wait $PP
got=$(cat "$T/parked.out")
[ "${got%% *}" = 0 ] && ok "and answered NONE once it continued and fetched past the batch ($got)" || bad "parked: $got"
sleep 0.5
kill -STOP "${PIDS[$S]}"
one=$($PY "$W" produce "$(addr "$L")" isr 0 1 5000)
hw=$($PY "$W" fetch "$(addr "$L")" isr 0 -1 -1)
[ "${one%% *}" = 0 ] && [ "${hw#* }" = "${one#* }" ] &&
    ok "acks=1 while follower $S is stopped: appended at ${one#* }, the high watermark stays ${hw#* }" ||
    bad "acks=1 '$one', consumer's fetch '$hw'"
got=$($PY "$W" produce "$(addr "$L")" isr 0 -1 800)
kill -CONT "${PIDS[$S]}"
[ "${got%% *}" = 7 ] && ok "acks=all whose 800 ms timeout comes first: REQUEST_TIMED_OUT (7)" ||
    bad "timeout: $got"
sleep 0.5

# S stopped longer than the lag time leaves the ISR, and returns
want_lf=$(printf '%s\n' "$L" "$F" | sort -n | tr '\n' ' ')
kill -STOP "${PIDS[$S]}"
if [ "$MP" -ge 0 ]; then # appended with the ISR whole, answered after S left it
    $PY "$W" produce "$(addr "$ML")" m3 "$MP" -1 15000 >"$T/after.out" &
    AP=$!
fi
T0=$(date +%s%N)
if wait_for 20 isr_is isr "$want_lf"; then
    ok "follower $S SIGSTOPped: left the ISR of isr-0 ($(( ($(date +%s%N) - T0) / 1000000 )) ms; lag $LAG_MS ms): ISR $want_lf"
else bad "ISR while stopped: '$(sorted_isr isr)'; $(grep replication "$T/n$L.err" | tail -3)"; fi
grep -q "AlterPartition isr-0 epoch $EPOCH to an ISR of 2: NONE" "$T/n$L.err" &&
    ok "the leader's AlterPartition was committed by the controller" ||
    bad "leader log: $(grep replication "$T/n$L.err" | tail -3)"
[ "$(field isr 7)" = "$EPOCH" ] && ok "an ISR change keeps the leader epoch ($EPOCH)" ||
    bad "epoch now $(field isr 7)"
got=$($PY "$W" produce "$(addr "$L")" isr 0 -1 10000)
[ "${got%% *}" = 0 ] && ok "acks=all with ISR {$want_lf} = min.insync.replicas 2: NONE" || bad "acks=all, ISR 2: $got"
if [ "$MP" -ge 0 ]; then
    wait $AP
    got=$(cat "$T/after.out")
    [ "${got%% *}" = 20 ] &&
        ok "m3-$MP acks=all appended with the ISR whole, then $S left it: NOT_ENOUGH_REPLICAS_AFTER_APPEND (20)" ||
        bad "m3 acks=all across the shrink: $got"
    VIEW=$ML
    want_m3=$(printf '%s\n' 1 2 3 | grep -v "^$S\$" | tr '\n' ' ')
    wait_for 20 eval '[ "$(m3_isr)" = "$want_m3" ]'
    got=$($PY "$W" produce "$(addr "$ML")" m3 "$MP" -1 5000)
    [ "${got%% *}" = 19 ] && ok "m3-$MP (min.insync.replicas=3, ISR {$want_m3}): acks=all NOT_ENOUGH_REPLICAS (19)" ||
        bad "m3 acks=all: $got; ISR '$(m3_isr)'"
    got=$($PY "$W" produce "$(addr "$ML")" m3 "$MP" 1 5000)
    [ "${got%% *}" = 0 ] && ok "m3-$MP: acks=1 NONE" || bad "m3 acks=1: $got"
    VIEW=$L
else bad "no m3 partition led by a node other than $S"; fi
kill -CONT "${PIDS[$S]}"
T0=$(date +%s%N)
if wait_for 20 isr_is isr "$all3"; then
    ok "after SIGCONT follower $S caught up and rejoined the ISR ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else bad "ISR after SIGCONT: '$(sorted_isr isr)'"; fi
got=$($PY "$W" produce "$(addr "$L")" isr 0 -1 10000)
[ "${got%% *}" = 0 ] && ok "acks=all again: NONE" || bad "acks=all after rejoin: $got"

# S killed: fenced after the session timeout, the m3 partition it led moves to an ISR member
# with the leader epoch raised (MI6); a request at the old epoch is then FENCED_LEADER_EPOCH, and
# the new leader takes produce at the new one (its leader side set that epoch in its engine)
VIEW=$L
SP=-1
for p in 0 1 2; do [ "$(pfield m3 $p 5)" = "$S" ] && { SP=$p; break; }; done
if [ "$SP" -ge 0 ]; then
    SE=$(pfield m3 "$SP" 7)
    kill -KILL "${PIDS[$S]}"; wait "${PIDS[$S]}" 2>/dev/null; PIDS[$S]=0
    moved() { [ "$(pfield m3 "$SP" 7)" = $((SE + 1)) ] && [ "$(pfield m3 "$SP" 5)" != "$S" ]; }
    T0=$(date +%s%N)
    if wait_for 25 moved; then
        NL=$(pfield m3 "$SP" 5)
        ok "leader $S of m3-$SP killed: fenced, node $NL leads it at epoch $((SE + 1)) ($(( ($(date +%s%N) - T0) / 1000000 )) ms; session $SESSION_MS ms)"
        # $VIEW's image may be ahead of $NL's: until $NL has applied its leadership it answers
        # NOT_LEADER_OR_FOLLOWER (6), as Kafka's broker does; wait for its own view.
        fenced_fetch() { got=$($PY "$W" fetch "$(addr "$NL")" m3 "$SP" -1 "$SE"); [ "${got%% *}" = 74 ]; }
        wait_for 10 fenced_fetch
        [ "${got%% *}" = 74 ] && ok "Fetch v11 at the old epoch $SE: FENCED_LEADER_EPOCH (74)" || bad "fetch old epoch: $got"
        got=$($PY "$W" offsets "$(addr "$NL")" m3 "$SP" "$SE")
        [ "${got%% *}" = 74 ] && ok "ListOffsets v4 at the old epoch: FENCED_LEADER_EPOCH" || bad "offsets old epoch: $got"
        ready_new() { [ "$($PY "$W" produce "$(addr "$NL")" m3 "$SP" 1 5000 | cut -d' ' -f1)" = 0 ]; }
        wait_for 10 ready_new && ok "the new leader $NL takes produce (acks=1) at epoch $((SE + 1))" ||
            bad "produce on the new leader: $($PY "$W" produce "$(addr "$NL")" m3 "$SP" 1 5000)"
    else bad "after killing $S: m3-$SP leader '$(pfield m3 "$SP" 5)' epoch '$(pfield m3 "$SP" 7)'"; fi
else bad "no m3 partition led by $S"; fi

for i in 1 2 3; do
    [ "${PIDS[$i]}" = 0 ] && continue
    kill -TERM "${PIDS[$i]}"; wait "${PIDS[$i]}"; rc=$?; PIDS[$i]=0
    [ $rc = 0 ] && ok "node $i: SIGTERM stops it cleanly" || bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
