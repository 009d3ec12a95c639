#!/usr/bin/env bash
# perf.sh — profile one ringtail-bench workload with `perf record` and print the top of
# `perf report`: self cost by symbol (where the cycles are) and inclusive cost (which call
# paths they come from). Builds its own RelWithDebInfo tree with frame pointers (build-perf/),
# so call graphs use frame pointers (--call-graph fp) and need no DWARF unwinding.
#
# usage: tools/perf.sh WORKLOAD [PRODUCERS] [-- extra ringtail-bench options]
#   WORKLOAD   w1 | w2 | r1 | fetch
#   PRODUCERS  for w2: the one producer count to profile (default 16)
# env: PERF_OUT (perf.data path, default build-perf/perf-<workload>.data), PERF_TOP (rows, 40),
#      PERF_FREQ (sampling Hz, 999), RT_BENCH_DIR (scratch parent for --dir)
# The peers and the limits are left out (--peers none --no-limit), so every sample is ringtail's
# or the kernel's work on its behalf.
set -euo pipefail
cd "$(dirname "$0")/.."

workload=${1:-}
if [[ -z "$workload" || "$workload" == -h || "$workload" == --help ]]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
shift
producers=16
if [[ $# -gt 0 && "$1" != -- ]]; then
    producers=$1
    shift
fi
[[ "${1:-}" == -- ]] && shift

command -v perf >/dev/null || { echo "perf.sh: perf not found (apt-get install linux-perf)" >&2; exit 1; }

build=build-perf
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRT_FRAME_POINTERS=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target ringtail-bench >/dev/null

args=(--peers none --no-limit)
case "$workload" in
w1) args+=(--only w1 --w1-bytes "${W1_BYTES:-2G}") ;;
w2) args+=(--only w2 --producers "$producers" --w2-seconds "${W2_SECONDS:-10}") ;;
r1) args+=(--only r1 --w1-bytes 16M --r1-bytes "${R1_BYTES:-2G}") ;;
fetch) args+=(--only fetch) ;;
*) echo "perf.sh: unknown workload '$workload' (w1, w2, r1, fetch)" >&2; exit 2 ;;
esac
[[ -n "${RT_BENCH_DIR:-}" ]] && args+=(--dir "$RT_BENCH_DIR")

out=${PERF_OUT:-$build/perf-$workload.data}
top=${PERF_TOP:-40}
echo "perf.sh: perf record -F ${PERF_FREQ:-999} -g --call-graph fp -- ringtail-bench ${args[*]} $*"
perf record -F "${PERF_FREQ:-999}" -g --call-graph fp -o "$out" -- "$build/ringtail-bench" "${args[@]}" "$@" \
    | grep -E '^(W1|W2|R1|F) ' || true

echo
echo "== self cost by symbol (top $top) =="
perf report -i "$out" --stdio --no-children --sort symbol -g none --percent-limit 0.3 2>/dev/null \
    | grep -v "^#" | grep -v "^$" | cut -c1-110 | head -n "$top"
echo
echo "== self cost by thread (comm) =="
perf report -i "$out" --stdio --no-children --sort comm -g none 2>/dev/null \
    | grep -v "^#" | grep -v "^$" | cut -c1-110 | head -n 12
echo
echo "== inclusive cost (children), top $top =="
perf report -i "$out" --stdio --children --sort symbol -g none --percent-limit 2 2>/dev/null \
    | grep -v "^#" | grep -v "^$" | cut -c1-110 | head -n "$top"
echo
echo "perf.sh: full report: perf report -i $out"
