#!/usr/bin/env bash
# cli_kafka_group_defaults.sh — consumer groups and offsets as Kafka users take them for granted
# (issue 20 items 4 (A3, A5) and 5), with real clients against `ringtail serve` at Kafka's
# group defaults:
#   - group_wire.py defaults: session timeouts outside 6000..1800000 ms INVALID_SESSION_TIMEOUT;
#     two joins 1 s apart into an empty group answered together in generation 1 after the
#     3 s initial rebalance delay and its one extension;
#   - two librdkafka members started 1 s apart get three partitions each from their first
#     assignment on (librdkafka's test 0113: no member first owns everything).
# Offsets as Kafka keeps them (tests/kafka/rdk_offsets.c on librdkafka, librdkafka's test 0099):
#   - a commit's metadata is answered by OffsetFetch (rd_kafka_committed), for plain and
#     transactional commits, after a restart too; 5000 bytes are OFFSET_METADATA_TOO_LARGE;
#   - group_wire.py offsets: the same at the byte level, and a null topic array answering every
#     committed offset of the group; a group with only committed offsets listed and described
#     as Empty (and, by confluent_kafka's AdminClient, after a restart).
# Membership persisted in __consumer_offsets (group_coord.c KG10):
#   - group_wire.py persist1 / persist2: a member's generation, id and assignment answered after
#     a broker restart (heartbeat NONE, its SyncGroup its assignment, Stable);
#   - two librdkafka members keep their partitions across a broker restart: no revoke, no new
#     assignment 8 s after it (main's broker forgot the group: they rejoined, and for a moment
#     both owned the same partitions).
# Static membership (KIP-345, group_coord.c KG11): group_wire.py static.
#
# usage: bash tests/cli_kafka_group_defaults.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u
RT=${1:?usage: cli_kafka_group_defaults.sh /path/to/ringtail}
PY=/usr/bin/python3
G=$(dirname "$0")/kafka/py_groups.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-gdef-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
. "$(dirname "$0")/kafka/group_members.sh"
cleanup() {
    members_cleanup
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# ---- Kafka's group defaults: initial rebalance delay (A5), session timeout bounds -------------
D=$T/data-defaults
run topic create "$D" gt --partitions 6
expect "defaults: a 6-partition topic" 0
serve_start "$D"
python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" defaults >"$T/out" 2>"$T/err"
RC=$?
expect "byte-level defaults (group_wire.py defaults: session 6000..1800000 ms, two joins 1 s apart in one generation)" 0 \
    "^all passed$"
rm -f "$T"/*.log "$T"/*.in
start_member P gt dgrp 10000
sleep 1
start_member Q gt dgrp 10000
RC=1
if wait_for 40 split_ok 3 P Q; then RC=0; fi
grep -h -E '^(assigned|revoked)' "$T"/[PQ].log >"$T/err"
: >"$T/out"
expect "librdkafka (0113): two members 1 s apart: three partitions each" 0
first_of() { grep -m1 -E '^assigned ' "$T/$1.log" | awk '{print $3}'; }
RC=0
[ "$(first_of P | tr ',' '\n' | grep -c .)" -eq 3 ] && [ "$(first_of Q | tr ',' '\n' | grep -c .)" -eq 3 ] || RC=1
[ "$(grep -c -E '^assigned ' "$T/P.log")" -eq 1 ] || RC=1
expect "... from their first assignment on: one generation, no member ever held all six" 0
leave_member P
leave_member Q
serve_stop "defaults part: serve exits 0 on SIGTERM"

# ---- offsets as Kafka keeps them (A3; issue 20 item 5) -----------------------------------------
BIN=$(cd "$(dirname "$RT")" && pwd)
RDK=$BIN/rdk_offsets
if [ ! -x "$RDK" ]; then
    RDK=$T/rdk_offsets
    cc -O1 -Wall -Wextra -Werror -o "$RDK" "$(dirname "$0")/kafka/rdk_offsets.c" \
        $(pkg-config --cflags --libs rdkafka) || { echo "FAIL - cannot build rdk_offsets"; exit 1; }
fi
D=$T/data-offsets
run topic create "$D" ot --partitions 3
expect "offsets: a 3-partition topic" 0
serve_start "$D"
SERVE_PORT=$PORT
"$RDK" "$BROKER" ot og commit >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka (0099): a commit with 5000 bytes of metadata is refused OFFSET_METADATA_TOO_LARGE" 0 \
    "^commit result OFFSET_METADATA_TOO_LARGE$"
"$RDK" "$BROKER" ot og txn >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka: send_offsets_to_transaction with metadata commits" 0
"$RDK" "$BROKER" ot og fetch >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka (0099): rd_kafka_committed answers the metadata of a plain commit" 0 \
    "^committed 0 7 m-0099$"
expect "librdkafka: ... and of a transactional one (TxnOffsetCommit)" 0 "^committed 2 3 txn-meta$"
expect "librdkafka: the partition whose metadata was too large has no commit" 0 "^committed 1 -1001 -$"
python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" offsets >"$T/out" 2>"$T/err"
RC=$?
expect "byte-level offsets (group_wire.py offsets: metadata, 4096/4097 bytes, null topic array)" 0 \
    "^all passed$"
serve_stop "offsets part: serve exits 0 on SIGTERM"
serve_start "$D"
"$RDK" "$BROKER" ot og fetch >"$T/out" 2>"$T/err"
RC=$?
expect "offsets: the metadata survives a broker restart" 0 "^committed 2 3 txn-meta$"
$PY "$G" "$BROKER" describe og >"$T/out" 2>"$T/err"
RC=$?
expect "confluent_kafka: a group with only committed offsets is described Empty after the restart" 0 \
    "^state Empty members 0 protocol $"
expect "confluent_kafka: ... and listed (ListGroups)" 0 "^listed$"
serve_stop "offsets part: serve exits 0 on SIGTERM after the restart"
unset SERVE_PORT

# ---- group membership survives a broker restart (KG10) -----------------------------------------
D=$T/data-persist
run topic create "$D" gt --partitions 6
expect "persist: a 6-partition topic" 0
serve_start "$D" --group-initial-rebalance-delay-ms 0
SERVE_PORT=$PORT
python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" persist1 >"$T/p1" 2>"$T/err"
RC=$?
cp "$T/p1" "$T/out"
expect "persist: a member of gwp joins and syncs its assignment" 0 "^member "
rm -f "$T"/*.log "$T"/*.in
start_member P gt pgrp 10000
start_member Q gt pgrp 10000
RC=1
if wait_for 40 split_ok 3 P Q; then RC=0; fi
grep -h -E '^(assigned|revoked)' "$T"/[PQ].log >"$T/err"
: >"$T/out"
expect "persist: two librdkafka members own three partitions each" 0
sleep 2
changes() { grep -c -E '^(assigned|revoked) ' "$T/$1.log"; }
BEFORE_P=$(changes P)
BEFORE_Q=$(changes Q)
serve_stop "persist: serve exits 0 on SIGTERM with the members running"
serve_start "$D" --group-initial-rebalance-delay-ms 0
set -- $(grep '^member ' "$T/p1")
python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" persist2 "${2:-x}" "${4:-0}" >"$T/out" 2>"$T/err"
RC=$?
expect "persist: after the restart the member keeps its generation and assignment (group_wire.py persist2)" 0 \
    "^all passed$"
sleep 8
RC=0
[ "$(changes P)" -eq "$BEFORE_P" ] && [ "$(changes Q)" -eq "$BEFORE_Q" ] || RC=1
grep -h -E '^(assigned|revoked)' "$T"/[PQ].log >"$T/err"
expect "persist: 8 s after the restart neither librdkafka member was revoked or reassigned (no rebalance, no shared partitions)" 0
$PY "$G" "$BROKER" describe pgrp >"$T/out" 2>"$T/err"
RC=$?
expect "persist: the group is Stable with both members after the restart" 0 \
    "^state Stable members 2 protocol range$"
python3 "$(dirname "$0")/kafka/group_wire.py" "$BROKER" static >"$T/out" 2>"$T/err"
RC=$?
expect "static membership (group_wire.py static: no rebalance on an instance's rejoin, FENCED_INSTANCE_ID for the old id)" 0 \
    "^all passed$"
leave_member P
leave_member Q
serve_stop "persist: serve exits 0 on SIGTERM after the restart"
unset SERVE_PORT

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
