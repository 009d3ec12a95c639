#!/usr/bin/env bash
# serve_cost.sh — user-space instructions a `ringtail serve` spends on a fixed produce and consume,
# counted by valgrind's callgrind, so two builds compare on a loaded machine where wall-clock
# benches cannot (docs/bench.md, "S before and after the codec change"). Each RINGTAIL binary runs
# under callgrind (--io sync --sync none, a fresh directory, a free 127.0.0.1 port); after a
# warm-up record the counts are zeroed, kcat produces 20 000 x 1 KiB records to one partition
# (linger.ms=500, 1 000 records a batch), the counts are dumped, kcat consumes them all from
# offset 0, and the counts are dumped again. Prints per binary: the two windows' totals and the
# inclusive cost of the Produce and Fetch handlers. Needs valgrind and kcat; takes about a minute
# a binary. Never part of the suite (it times nothing, but it is slow).
# usage: tools/serve_cost.sh RINGTAIL [RINGTAIL ...]
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 RINGTAIL [RINGTAIL ...]" >&2; exit 2; }
command -v valgrind >/dev/null && command -v kcat >/dev/null || { echo "needs valgrind and kcat" >&2; exit 3; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -c "
with open('$work/msgs.txt', 'w') as f:
    for i in range(20000):
        f.write('%08d' % i + 'x' * 1016 + '\n')
"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
n=0
for bin in "$@"; do
    n=$((n + 1))
    d=$work/$n
    mkdir -p "$d"
    port=$(free_port)
    RT_KAFKA_IO=sync valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$bin" serve "$d/data" \
        --listen "127.0.0.1:$port" --sync none >"$d/serve.log" 2>&1 &
    vpid=$!
    for _ in $(seq 1 60); do grep -q "listening on" "$d/serve.log" && break; sleep 1; done
    grep -q "listening on" "$d/serve.log" || { echo "$bin: did not start (see below)"; cat "$d/serve.log"; kill $vpid; continue; }
    echo warm | kcat -P -b "127.0.0.1:$port" -t t1 -p 0 >/dev/null 2>&1
    kcat -C -b "127.0.0.1:$port" -t t1 -p 0 -e -o beginning >/dev/null 2>&1
    callgrind_control -z $vpid >/dev/null 2>&1
    kcat -P -b "127.0.0.1:$port" -t t1 -p 0 -X linger.ms=500 -X batch.num.messages=1000 \
        -X batch.size=4000000 -l "$work/msgs.txt" >/dev/null 2>&1
    callgrind_control -d produce $vpid >/dev/null 2>&1
    got=$(kcat -C -b "127.0.0.1:$port" -t t1 -p 0 -e -o beginning -X fetch.wait.max.ms=10 2>/dev/null | wc -l)
    callgrind_control -d consume $vpid >/dev/null 2>&1
    kill $vpid
    wait $vpid 2>/dev/null
    echo "== $bin ($got records consumed)"
    for f in "$d"/cg.out.1 "$d"/cg.out.2; do
        [ -f "$f" ] || continue
        printf '  %-8s total %s\n' "$(grep -m1 '^desc: Trigger' "$f" | sed 's/.*dump //')" \
            "$(grep -E '^(summary|totals):' "$f" | head -1 | awk '{print $2}')"
        callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
            grep -E ':(kafka_handle_produce|kafka_handle_fetch|validate|batch_validate|kafka_slot_decode|kmsg_request_decode|kmsg_fetch_response_encode|kd_encode) ' |
            awk '{fn = $0; sub(/.*\?\?\?:/, "", fn); sub(/ .*/, "", fn); printf "    %-14s %s\n", $1, fn}'
    done
done
