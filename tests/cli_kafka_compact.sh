#!/usr/bin/env bash
# cli_kafka_compact.sh — a compacted topic (cleanup.policy=compact, issue 26) through real
# clients: kcat produces keyed records and a tombstone to `ringtail serve`, the broker stops,
# `ringtail topic compact` cleans the sealed segments (engine/log/cleaner.c), `ringtail verify`
# is clean (offset gaps are legal in a cleaned segment, docs/format.md A.9), and after a restart
# kcat reads back every key's latest value last, the deleted key's tombstone, fewer records than
# were written, and offsets that only increase (kept as they were, with gaps).
#
# usage: bash tests/cli_kafka_compact.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_compact.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-compact-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
# min.compaction.lag.ms keeps the broker's background cleaner off the topic while it serves (the
# reads before the clean must see every record); the offline clean below runs after it is removed.
run topic create "$D" ct --partitions 1 --config cleanup.policy=compact --config segment.bytes=1024 \
    --config min.compaction.lag.ms=3600000
expect "a compacted topic with small segments" 0 "^created topic ct"
serve_start "$D"

KC=(kcat -b "$BROKER" -X socket.timeout.ms=10000 -m 15)

# 60 records over 5 keys, one batch each (small segments fill and roll), then a tombstone of k3
# (-Z: an empty value is sent as null) and a last record so the tombstone's segment is sealed.
for i in $(seq 0 59); do echo "k$((i % 5)):v$i"; done >"$T/in"
echo "k3:" >>"$T/in"
for i in $(seq 0 29); do echo "pad:p$i"; done >>"$T/in"
check "kcat produced 91 keyed records (a tombstone among them)" \
    "${KC[@]}" -P -t ct -p 0 -K: -Z -X linger.ms=0 -X batch.num.messages=1 -l "$T/in"

"${KC[@]}" -C -t ct -p 0 -o beginning -e -Z -f '%o %k %s\n' >"$T/before" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] && [ "$(wc -l <"$T/before")" -eq 91 ] && ok "kcat read 91 records back before the clean" ||
    bad "kcat read 91 records back before the clean"
before=$(wc -l <"$T/before")
serve_stop

run topic alter "$D" ct --delete-config min.compaction.lag.ms
expect "the compaction lag removed" 0 "^altered 1 config of topic ct"
run topic compact "$D" ct
expect "ringtail topic compact cleans the topic" 0 "^compacted topic ct"
serve_verify "$D"

SERVE_PORT=$PORT serve_start "$D"
"${KC[@]}" -C -t ct -p 0 -o beginning -e -Z -f '%o %k %s\n' >"$T/after" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] && ok "kcat reads the compacted topic" || bad "kcat reads the compacted topic"
after=$(wc -l <"$T/after")
if python3 - "$T/before" "$T/after" <<'EOF'; then
import sys
def rows(path):
    out = []
    for line in open(path):
        parts = line.rstrip("\n").split(" ", 2)
        out.append((int(parts[0]), parts[1], parts[2] if len(parts) > 2 else ""))
    return out
before, after = rows(sys.argv[1]), rows(sys.argv[2])
assert len(after) < len(before), (len(before), len(after))
offsets = [o for o, _, _ in after]
assert offsets == sorted(set(offsets)), offsets                 # increasing
assert set(after) <= set(before), set(after) - set(before)      # offsets and records kept
latest = {}
for o, k, v in before:
    latest[k] = v
last = {}
for o, k, v in after:
    last[k] = v
assert last == latest, (last, latest)                            # latest value per key, last
assert last["k3"] in ("", "NULL"), last["k3"]                    # the tombstone is still there
assert len(set(o for o, _, _ in before) - set(offsets)) > 0      # gaps where batches went
EOF
    ok "after the clean: each key's latest value last, fewer records ($before -> $after), offsets kept with gaps"
else
    bad "after the clean: each key's latest value last, fewer records ($before -> $after), offsets kept with gaps"
    cat "$T/after"
fi

# Reading from inside a gap starts at the next record after it (CL2).
gap=$(python3 - "$T/before" "$T/after" <<'EOF'
import sys
b = [int(l.split(" ")[0]) for l in open(sys.argv[1])]
a = set(int(l.split(" ")[0]) for l in open(sys.argv[2]))
print(min(o for o in b if o not in a))
EOF
)
"${KC[@]}" -C -t ct -p 0 -o "$gap" -c 1 -e -Z -f '%o\n' >"$T/one" 2>"$T/err"
first=$(head -1 "$T/one")
if [ -n "$first" ] && [ "$first" -gt "$gap" ]; then
    ok "a fetch at offset $gap (removed) starts at the next record, $first"
else
    bad "a fetch at offset $gap (removed) starts at the next record (got '$first')"
fi
serve_stop
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
