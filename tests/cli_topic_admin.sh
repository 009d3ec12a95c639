#!/usr/bin/env bash
# cli_topic_admin.sh — `ringtail topic` administration offline: create with --config (checked by
# Kafka's rule for each key before the directory is touched), describe (every config with its
# source), alter (set and remove), add-partitions (only up; existing records kept), delete (the
# topic and its directories gone; a topic recreated under the name starts empty), delete-records
# (the log start moves, inside a batch too; a restart keeps it; above the high watermark, below
# -1, an unknown topic and missing options refused); each refusal
# with a clear message and exit 2 (usage) or 1 (failure); `ringtail verify` clean at the end.
#
# usage: bash tests/cli_topic_admin.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_topic_admin.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-topic-admin-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
trap 'rm -rf "$T"' EXIT
D=$T/data

run topic create "$D" t --partitions 2 --config retention.ms=5000 --config segment.bytes=1048576
expect "create with two configs" 0 "^created topic t with 2 partitions"
run topic create "$D" bad --partitions 1 --config cleanup.policy=shred
expect "cleanup.policy=shred refused as a usage error naming the key" 2 "cleanup.policy"
run topic create "$D" bad --partitions 1 --config dummy.doesntexist=1
expect "an unknown config refused naming it" 2 "dummy.doesntexist"
run topic create "$D" bad --partitions 1 --config retention.ms=abc
expect "a bad value refused naming the key" 2 "retention.ms"
run topic create "$D" bad --partitions 1 --config retention.ms
expect "--config without =VALUE refused" 2 "KEY=VALUE"
run topic create "$D" bad --partitions 1 --config retention.ms=1 --config retention.ms=2
expect "a key given twice refused" 2 "twice"
run topic list "$D"
expect "refused creates made nothing" 0 "^t	2$"
if grep -q bad "$T/out"; then bad "no topic 'bad'"; else ok "no topic 'bad'"; fi

run topic describe "$D" t
expect "describe: retention.ms from the topic, honoured" 0 "^retention.ms	5000	topic	honoured$"
expect "describe: segment.bytes from the topic" 0 "^segment.bytes	1048576	topic	honoured$"
expect "describe: compression.type its default, kept" 0 "^compression.type	producer	default	kept$"
expect "describe: the partition count" 0 "^partitions	2$"
run topic describe "$D" nope
expect "describe of an unknown topic fails" 1 "no topic 'nope'"

run topic alter "$D" t --config max.message.bytes=2000 --delete-config retention.ms
expect "alter: set one, remove one" 0 "altered 2 configs"
run topic describe "$D" t
expect "after alter: max.message.bytes from the topic" 0 "^max.message.bytes	2000	topic"
expect "after alter: retention.ms back to its default" 0 "^retention.ms	[0-9]+	default"
expect "after alter: segment.bytes kept" 0 "^segment.bytes	1048576	topic"
run topic alter "$D" t
expect "alter without a change is a usage error" 2 "nothing to change"
run topic alter "$D" t --config message.timestamp.type=Sometime
expect "alter with a bad value refused" 2 "message.timestamp.type"

printf 'a\nb\nc\n' >"$T/in"
IN=$T/in run produce "$D" t --partition 0
expect "three records into partition 0" 0
run topic add-partitions "$D" t --partitions 5
expect "add-partitions to 5" 0 "now has 5 partitions"
run topic add-partitions "$D" t --partitions 3
expect "add-partitions down refused" 1 "must be above"
run topic add-partitions "$D" t
expect "add-partitions without --partitions refused" 2 "missing --partitions"
run topic list "$D"
expect "the topic has 5 partitions" 0 "^t	5$"
run consume "$D" t --partition 0 --format value
expect "partition 0 keeps its records" 0 "^c$"

run topic delete "$D" t
expect "delete" 0 "deleted topic t"
run topic delete "$D" t
expect "delete again fails" 1 "no topic 't'"
run topic delete "$D" __consumer_offsets
expect "an internal topic cannot be deleted" 1 "internal"
if ls -d "$D"/t-* >/dev/null 2>&1; then bad "no directory of t is left"; else ok "no directory of t is left"; fi
run topic create "$D" t --partitions 1
expect "recreated" 0
run consume "$D" t --partition 0 --format value
if [ -s "$T/out" ]; then bad "the recreated topic is empty"; else ok "the recreated topic is empty"; fi

IN=$T/in
seq 1 30 >"$IN"
run produce "$D" t
expect "30 records into the recreated topic" 0
run topic delete-records "$D" --topic t --partition 0 --offset 10
expect "delete-records moves the log start to 10 (inside the one batch)" 0 \
    "^log start offset of t-0 is 10 in "
run consume "$D" t --partition 0 --format value
if [ "$(head -1 "$T/out")" = 11 ] && [ "$(wc -l <"$T/out")" -eq 20 ]; then
    ok "consume after delete-records reads offsets 10..29 only"
else
    bad "consume after delete-records reads offsets 10..29 only"
fi
run topic delete-records "$D" --topic t --partition 0 --offset 3
expect "a lower offset changes nothing and answers the log start" 0 "^log start offset of t-0 is 10 "
run topic delete-records "$D" --topic t --partition 0 --offset 31
expect "an offset above the high watermark fails" 1 "OFFSET_OUT_OF_RANGE"
run topic delete-records "$D" --topic t --partition 0 --offset -2
expect "an offset below -1 is a usage error" 2 "offset"
run topic delete-records "$D" --topic t --partition 0
expect "without --offset: a usage error" 2 "--offset"
run topic delete-records "$D" --topic nope --partition 0 --offset 1
expect "an unknown topic fails" 1 "UNKNOWN_TOPIC"
run topic delete-records "$D" --topic t --partition 0 --offset -1
expect "-1: the high watermark" 0 "^log start offset of t-0 is 30 "
run consume "$D" t --partition 0 --format value
if [ -s "$T/out" ]; then bad "nothing is read below the log start"; else ok "nothing is read below the log start"; fi
run verify "$D"
expect "verify is clean" 0 "healthy"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
