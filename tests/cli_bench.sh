#!/usr/bin/env bash
# cli_bench.sh — CI smoke test of the benchmark: `ringtail-bench --quick` at a very small size
# runs to the end, exits 0, and writes JSON that parses, with every workload's rows (W1, W2, R1,
# F, W3, W4 with its RocksDB TransactionDB peer and the fdatasync probe, M, and S: `ringtail serve`
# under librdkafka producers and a read_committed consumer beside in-process W2 and the loopback
# limit). It checks that the
# benchmark runs, never the numbers.
# usage: tests/cli_bench.sh [path/to/ringtail]   (ringtail-bench is looked for beside it)
set -uo pipefail
cli=${1:-build/ringtail}
dir=$(cd "$(dirname "$cli")" && pwd)
bench="$dir/ringtail-bench"
passed=0
failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }

if [[ ! -x "$bench" ]]; then
    echo "ok - skipped: $bench not built (needs librocksdb-dev liblmdb-dev libsqlite3-dev)"
    echo "0 passed, 0 failed"
    exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$bench" --help >"$tmp/help.txt" 2>&1 && grep -q -- '--quick' "$tmp/help.txt" \
    && ok "--help exits 0 and lists --quick" || fail "--help"

"$bench" --no-such-option >/dev/null 2>&1
[[ $? -eq 2 ]] && ok "unknown option exits 2" || fail "unknown option should exit 2"

start=$(date +%s)
if "$bench" --quick --dir "$tmp" --w1-bytes 2M --r1-bytes 4M --w2-seconds 0.1 \
    --w2-bytes-max 8M --producers 1,4 --w3-seconds 0.3 --w4-seconds 0.1 --w4-producers 1,4 \
    --mem-producers 2000 --mem-live 50 --serve-seconds 0.3 --json "$tmp/bench.json" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
    ok "--quick at a small size exits 0 ($(($(date +%s) - start)) s)"
else
    fail "--quick exited non-zero"
    tail -20 "$tmp/err.txt"
fi

if python3 - "$tmp/bench.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
have = {(r["workload"], r["system"]) for r in rows}
need = [("W1", "ringtail"), ("W1", "limit"), ("W2", "ringtail"), ("W2", "limit"),
        ("R1", "ringtail"), ("R1", "limit"), ("F", "ringtail"), ("W3", "ringtail"),
        ("W4", "ringtail"), ("W4", "rocksdb"), ("W4", "disk"), ("M", "ringtail"),
        ("S", "serve"), ("S", "in-proc"), ("S", "loopback")]
missing = [n for n in need if n not in have]
assert not missing, f"missing rows {missing}"
for w in ("W3", "W4"):
    for r in rows:
        if r["workload"] == w and r["system"] == "ringtail":
            assert r["available"] is True, f"{w} should be available"
            assert r["mb_per_s"] is not None and r["mb_per_s"] > 0, f"{w} {r['config']} no MB/s"
w4 = [r for r in rows if r["workload"] == "W4" and r["system"] == "ringtail"]
assert all(r["txn_per_s"] and r["commit_p50_over_fdatasync_p50"] for r in w4), "W4 ratios"
s = {r["config"]: r for r in rows if r["workload"] == "S" and r["system"] == "serve"}
assert set(s) == {"produce p1", "produce p16", "consume read_committed",
                  "consume, copying fetch"}, f"S rows {sorted(s)}"
assert all(r["mb_per_s"] and r["mb_per_s"] > 0 for r in s.values()), "S rows without MB/s"
m = [r for r in rows if r["workload"] == "M"]
assert len(m) == 3, f"{len(m)} M rows"
assert d["failures"] == 0, f"{d['failures']} failures"
PY
    ok "JSON parses and has W1, W2, R1, F, W3, W4, M and S rows"
else
    fail "JSON check"
fi

grep -q "W4 p4 >= 10000 committed txn/s" "$tmp/out.txt" && ok "targets list the W4 rate" \
    || fail "targets lack the W4 rate"
grep -q "S produce p16 >= 0.80 of in-process W2 p16" "$tmp/out.txt" &&
    grep -q "S consume >= 0.80 of the loopback limit" "$tmp/out.txt" &&
    ok "targets list the serve ratios" || fail "targets lack the serve ratios"

if "$cli" bench --help >/dev/null 2>&1; then
    ok "ringtail bench dispatches to ringtail-bench"
else
    echo "ok - skipped: 'ringtail bench' not wired into the CLI yet"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
