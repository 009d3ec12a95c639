#!/usr/bin/env bash
# cli_txn_reconcile.sh — a partition that lost a transaction's marker (a torn tail: the last
# 78-byte batch of its newest .log cut off while the directory is closed, and no clean-shutdown
# file) never stays pinned (issue 10, defect 9): opening the directory rewrites the marker the
# coordinator recorded (`consume --isolation read_committed` sees the committed records, `txn
# list` shows nothing open), and when the coordinator's state is lost too, `txn list` shows the
# pinned partition with its producer id and `txn abort --topic --partition --producer-id`
# releases it. Bad input to the new options is a usage error.
#
# usage: bash tests/cli_txn_reconcile.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_txn_reconcile.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-txnrec-XXXXXX")
trap 'rm -rf "$T"' EXIT

. "$(dirname "$0")/helpers/cli_harness.sh"

# consumed: the number of records the last consume printed.
consumed() { wc -l <"$T/out" | tr -d ' '; }

# lose_marker DIR TOPIC-PART: cut the last batch (a transaction marker) off the newest .log.
lose_marker() {
    local log
    log=$(ls "$1/$2"/*.log | sort | tail -n 1)
    # attributes (i16 at byte 21 of the batch): 0x0030 = transactional control batch
    if [ "$(tail -c 78 "$log" | od -An -tx1 -j22 -N1 | tr -d ' ')" != 30 ]; then
        echo "setup: the last batch of $log is not a marker"
        exit 1
    fi
    truncate -s -78 "$log"
    rm -f "$1/.clean_shutdown"
}

printf '1\n2\n3\n4\n' >"$T/four"

# ---- the coordinator recorded the outcome: open rewrites the marker --------------------------
D=$T/rec
run topic create "$D" t --partitions 1
expect "topic create" 0 "created topic t"
IN=$T/four run produce "$D" t -p 0 --txn-id tx-r --txn-records 4
expect "produce one committed transaction" 0 "^committed 4 records"
lose_marker "$D" t-0
run consume "$D" t --isolation read_committed
expect "read_committed consume (read-only) before any writing open" 0 "not closed cleanly"
check "... sees nothing yet: a read-only open writes no marker" test "$(consumed)" = 0
run recover "$D"
expect "recover: a writing open reconciles the transaction" 0 "^recovered "
run recover "$D"
expect "recover again: nothing left to do" 0 "nothing to recover"
run consume "$D" t --isolation read_committed
expect "read_committed consume after the lost COMMIT marker" 0
check "... sees the committed records (open rewrote the marker)" test "$(consumed)" = 4
run txn list "$D"
expect "txn list after reconciliation: nothing pinned" 0 "^no open transactions in "

# ---- the coordinator's state is lost too: the operator releases the partition ---------------
L=$T/lost
run topic create "$L" t --partitions 2
IN=$T/four run produce "$L" t -p 0 --txn-id tx-l --txn-records 4
expect "produce one committed transaction" 0 "^committed 4 records"
lose_marker "$L" t-0
for f in "$L"/__transaction_state-0/*.log; do truncate -s 0 "$f"; done
run consume "$L" t --isolation read_committed
expect "read_committed consume while t-0 is pinned" 0
check "... sees nothing" test "$(consumed)" = 0
run txn list "$L"
expect "txn list shows the pinned partition with its producer id" 0 \
    "^t	0	[0-9]+	[0-9]+	0	0	4	-	-$"
check "... under its own heading" grep -q "^pinned partitions with no live transaction:" "$T/out"
PID=$(awk -F'\t' '$1 == "t" && $2 == 0 { print $3 }' "$T/out")
EPOCH=$(awk -F'\t' '$1 == "t" && $2 == 0 { print $4 }' "$T/out")
PID=${PID:-0}
EPOCH=${EPOCH:-0}

run txn abort "$L" --topic t --partition 0
expect "--topic/--partition without --producer-id is a usage error" 2 "go together"
run txn abort "$L" --topic t --partition 0 --producer-id "$PID" --transactional-id tx-l
expect "--transactional-id with --topic is a usage error" 2 "not both"
run txn abort "$L" --topic t --partition 0 --producer-id -1
expect "a negative --producer-id is a usage error" 2 "--producer-id needs"
run txn abort "$L" --topic t --partition x --producer-id "$PID"
expect "a non-numeric --partition is a usage error" 2 "--partition needs"
run txn abort "$L" --topic t --partition 0 --producer-id "$PID" --producer-epoch 40000
expect "an out-of-range --producer-epoch is a usage error" 2 "--producer-epoch needs"
run txn abort "$L" --topic t --partition 9 --producer-id "$PID"
expect "a partition that does not exist fails" 1 "no partition t-9 in "
run txn abort "$L" --topic t --partition 1 --producer-id "$PID"
expect "a partition the producer has nothing open in fails" 1 "has no open transaction in t-1"
run txn abort "$L" --topic t --partition 0 --producer-id $((PID + 7))
expect "another producer id fails" 1 "has no open transaction in t-0"
run txn abort "$L" --topic t --partition 0 --producer-id "$PID" --producer-epoch $((EPOCH + 1))
expect "a wrong --producer-epoch fails" 1 "epoch"
run consume "$L" t --isolation read_committed
check "... and none of them released anything" test "$(consumed)" = 0

run txn abort "$L" --topic t --partition 0 --producer-id "$PID" --producer-epoch "$EPOCH"
expect "txn abort --topic t --partition 0 --producer-id releases the LSO" 0 \
    "^aborted the transaction of producer $PID in t-0 \(LSO 0 -> 5\)$"
run txn list "$L"
expect "txn list afterwards: nothing pinned" 0 "^no open transactions in "
run consume "$L" t --isolation read_committed
expect "read_committed consume after the abort" 0
check "... sees none of the aborted records" test "$(consumed)" = 0
run consume "$L" t --isolation read_uncommitted
check "... read_uncommitted still has them" test "$(consumed)" = 4
run txn abort "$L" --topic t --partition 0 --producer-id "$PID"
expect "a second abort finds nothing open" 1 "has no open transaction in t-0"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
