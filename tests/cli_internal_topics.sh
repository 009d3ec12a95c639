#!/usr/bin/env bash
# cli_internal_topics.sh — the internal topics (__transaction_state, __consumer_offsets) through
# the `ringtail` CLI, as a user would trip over them (issue 10, defect 5): `produce` to an
# internal topic and `topic create` of a reserved "__" name fail with a message naming the
# topic, write nothing, and the directory keeps opening (transactions, consume, verify) after.
#
# usage: bash tests/cli_internal_topics.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_internal_topics.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-internal-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"

D=$T/data
run topic create "$D" orders --partitions 1
expect "topic create orders" 0
# A committed transaction makes __transaction_state exist, as ordinary use does.
printf 'a\nb\n' >"$T/in"; IN=$T/in
run produce "$D" orders --txn-id tx -p 0
expect "transactional produce creates the transaction log" 0

listing() { (cd "$D" && find . -type f ! -name .lock -exec sha256sum {} + | sort); }
BEFORE=$(listing)

echo oops >"$T/in"; IN=$T/in
run produce "$D" __transaction_state -p 0
expect "produce to __transaction_state is refused" 1 "__transaction_state.*internal"
echo oops >"$T/in"; IN=$T/in
run produce "$D" __consumer_offsets -p 0
expect "produce to __consumer_offsets is refused" 1 "__consumer_offsets.*internal"
run topic create "$D" __consumer_offsets --partitions 1
expect "topic create __consumer_offsets is refused" 1 "reserved"
run topic create "$D" __mine --partitions 1
expect "topic create of any __ name is refused" 1 "reserved"
if [ "$(listing)" = "$BEFORE" ]; then ok "the refused commands wrote nothing"; else
    RC=1; bad "the refused commands changed the directory"; fi

# The directory still opens: another transaction, a read_committed consume, verify.
printf 'c\n' >"$T/in"; IN=$T/in
run produce "$D" orders --txn-id tx -p 0
expect "produce after the refusals" 0
run consume "$D" orders -p 0
expect "consume after the refusals" 0 "^c$"
if [ "$(wc -l <"$T/out")" -eq 3 ]; then ok "all three records are there"; else
    RC=1; bad "want 3 records"; fi
run verify "$D"
expect "verify is clean" 0

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
