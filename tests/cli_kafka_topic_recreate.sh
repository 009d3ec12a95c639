#!/usr/bin/env bash
# cli_kafka_topic_recreate.sh — a deleted topic's committed offsets go with it (handle_admin.c
# KAD9, as Kafka's group coordinator deletes them): tests/kafka/topic_recreate.py commits for two
# groups, deletes the topic, creates the name again with fewer partitions and checks, on the wire,
# that no group has an offset left, that a commit naming the old partitions stores the ones that
# exist again and answers UNKNOWN_TOPIC_OR_PARTITION for the rest; then the same after a restart
# (the deletions are durable tombstones), and `ringtail verify` is clean.
#
# usage: bash tests/cli_kafka_topic_recreate.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_topic_recreate.sh /path/to/ringtail}
TR=$(dirname "$0")/kafka/topic_recreate.py
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-recreate-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
serve_start "$D"
python3 "$TR" "$BROKER" >"$T/out" 2>"$T/err"
RC=$?
sed 's/^/    /' "$T/out"
expect "topic_recreate.py: offsets after DeleteTopics and a create of the same name" 0
serve_stop

# A restart replays __consumer_offsets: the deleted offsets stay deleted.
serve_start "$D"
python3 "$TR" "$BROKER" restarted >"$T/out" 2>"$T/err"
RC=$?
sed 's/^/    /' "$T/out"
expect "topic_recreate.py restarted: the deletions survive a restart" 0
serve_stop
serve_verify "$D"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
