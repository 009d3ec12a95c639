#!/usr/bin/env bash
# cli_kafka_group_delete.sh — deleting consumer groups and their offsets as Kafka does (issue 20
# item 5: DeleteGroups, OffsetDelete; handle_group.c KH5, group.c GO7) with real clients:
#   - librdkafka 2.0.2's AdminClient (tests/kafka/rdk_group_admin.c):
#     DeleteConsumerGroupOffsets deletes one committed offset of a group with only offsets
#     (rd_kafka_committed then answers none for it, the other offsets stay); a topic that does
#     not exist is UNKNOWN_TOPIC_OR_PART; DeleteGroups deletes the group (every offset gone) and
#     answers GROUP_ID_NOT_FOUND for an unknown one; a group with a live member (a
#     confluent_kafka consumer subscribed to the topic) is NON_EMPTY_GROUP and its topic's
#     offsets GROUP_SUBSCRIBED_TO_TOPIC; ListConsumerGroups (ListGroups v4, KIP-518) filtered by
#     state names the live group Stable and the offsets-only one Empty;
#   - kafkajs 2.2.4's admin.deleteGroups (tests/kafka/node/kafkajs_admin_groups.test.js);
#   - a broker restart does not bring a deleted group's offsets back (tombstones in
#     __consumer_offsets), and ringtail verify is clean.
# (confluent_kafka 1.7.0's AdminClient has no group deletion: librdkafka's C API stands in.)
#
# usage: bash tests/cli_kafka_group_delete.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u
RT=${1:?usage: cli_kafka_group_delete.sh /path/to/ringtail}
PY=/usr/bin/python3
G=$(dirname "$0")/kafka/py_groups.py
NODE_DIR=$(cd "$(dirname "$0")/kafka/node" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kafka-gdel-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
MPID=
cleanup() {
    [ -n "$MPID" ] && kill -KILL "$MPID" 2>/dev/null
    wait 2>/dev/null
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

BIN=$(cd "$(dirname "$RT")" && pwd)
build() { # build NAME: the real-client program from tests/kafka/NAME.c (or the build's)
    if [ -x "$BIN/$1" ]; then
        echo "$BIN/$1"
        return
    fi
    cc -O1 -Wall -Wextra -Werror -o "$T/$1" "$(dirname "$0")/kafka/$1.c" \
        $(pkg-config --cflags --libs rdkafka) || exit 1
    echo "$T/$1"
}
RDK=$(build rdk_offsets) || { echo "FAIL - cannot build rdk_offsets"; exit 1; }
ADM=$(build rdk_group_admin) || { echo "FAIL - cannot build rdk_group_admin"; exit 1; }

D=$T/data
run topic create "$D" dt --partitions 3
expect "a 3-partition topic" 0
serve_start "$D" --group-initial-rebalance-delay-ms 0
SERVE_PORT=$PORT

"$RDK" "$BROKER" dt dg commit >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka commits dt-0 for group dg" 0 "^commit 0 NO_ERROR$"
"$RDK" "$BROKER" dt dg txn >"$T/out" 2>"$T/err"
RC=$?
expect "... and dt-2 in a transaction" 0
"$ADM" "$BROKER" delete-offsets dg dt 0 >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka DeleteConsumerGroupOffsets (OffsetDelete): dt-0 deleted" 0 "^partition 0 NO_ERROR$"
"$RDK" "$BROKER" dt dg fetch >"$T/out" 2>"$T/err"
RC=$?
expect "... rd_kafka_committed answers none for dt-0" 0 "^committed 0 -1001 -$"
expect "... and dt-2's offset stays" 0 "^committed 2 3 txn-meta$"
"$ADM" "$BROKER" delete-offsets dg nosuch 0 >"$T/out" 2>"$T/err"
RC=$?
expect "OffsetDelete of a topic that does not exist: UNKNOWN_TOPIC_OR_PART" 0 \
    "^partition 0 UNKNOWN_TOPIC_OR_PART$"
"$ADM" "$BROKER" delete-groups dg nope >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka DeleteGroups: a group with only offsets is deleted" 0 "^group dg NO_ERROR$"
expect "... an unknown group is GROUP_ID_NOT_FOUND" 0 "^group nope GROUP_ID_NOT_FOUND$"
"$RDK" "$BROKER" dt dg fetch >"$T/out" 2>"$T/err"
RC=$?
expect "... the deleted group has no offsets left" 0 "^committed 2 -1001 -$"

# A group with only committed offsets (Empty), and a live member (confluent_kafka, subscribed to
# dt) of another.
"$RDK" "$BROKER" dt eg commit >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka commits for group eg" 0 "^commit 0 NO_ERROR$"
mkfifo "$T/M.in"
$PY "$G" "$BROKER" member dt live M 10000 <"$T/M.in" >"$T/M.log" 2>&1 &
MPID=$!
exec {MFD}>"$T/M.in"
RC=1
for i in $(seq 1 150); do
    grep -q '^assigned M 0,1,2' "$T/M.log" && { RC=0; break; }
    sleep 0.2
done
cp "$T/M.log" "$T/out"
: >"$T/err"
expect "a confluent_kafka member of group live owns dt's three partitions" 0
"$ADM" "$BROKER" list-groups Stable >"$T/out" 2>"$T/err"
RC=$?
expect "librdkafka ListConsumerGroups (ListGroups v4) filtered by Stable: the live group" 0 \
    "^listed live Stable$"
RC=0
grep -q '^listed eg' "$T/out" && RC=1
expect "... and not the Empty one" 0
"$ADM" "$BROKER" list-groups Empty >"$T/out" 2>"$T/err"
RC=$?
expect "... filtered by Empty: a group with only committed offsets, not the live one" 0 \
    "^listed eg Empty$"
RC=0
grep -q '^listed live' "$T/out" && RC=1
expect "... the live group is not Empty" 0
"$ADM" "$BROKER" delete-groups live >"$T/out" 2>"$T/err"
RC=$?
expect "DeleteGroups of a group with a member: NON_EMPTY_GROUP" 0 "^group live NON_EMPTY_GROUP$"
"$ADM" "$BROKER" delete-offsets live dt 1 >"$T/out" 2>"$T/err"
RC=$?
expect "OffsetDelete of a topic a member subscribes to: GROUP_SUBSCRIBED_TO_TOPIC" 0 \
    "^partition 1 GROUP_SUBSCRIBED_TO_TOPIC$"
echo leave >&"$MFD"
wait "$MPID" 2>/dev/null
MPID=
exec {MFD}>&-
"$ADM" "$BROKER" delete-groups live >"$T/out" 2>"$T/err"
RC=$?
expect "... once its member left, the group is deleted" 0 "^group live NO_ERROR$"

# kafkajs
(cd "$NODE_DIR" && RT_BROKER=$BROKER timeout 120 node --test --test-reporter=tap \
    kafkajs_admin_groups.test.js) >"$T/out" 2>"$T/err"
RC=$?
expect "kafkajs admin.deleteGroups (node --test kafkajs_admin_groups.test.js)" 0 "^# fail 0$"

serve_stop "serve exits 0 on SIGTERM"
serve_start "$D"
"$RDK" "$BROKER" dt dg fetch >"$T/out" 2>"$T/err"
RC=$?
expect "after a broker restart the deleted group's offsets stay deleted" 0 "^committed 2 -1001 -$"
serve_stop "serve exits 0 on SIGTERM after the restart"
unset SERVE_PORT
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
