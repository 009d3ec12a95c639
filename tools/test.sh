#!/usr/bin/env bash
# test.sh — the whole test suite, as CI runs it (.ci/run calls exactly this):
#   1. setup.sh (dependencies + Release build) and every ctest test over the Release build
#      (engine tests run once over io_uring and once over the sync fallback);
#   2. the same suite under ASan+UBSan (the exhaustive power-loss sweeps at every third op,
#      RT_TEST_SWEEP_STRIDE=3: stage 1 sweeps every op; this one looks for memory errors);
#   3. the threaded engine tests under TSan (the model-based test and the concurrent write path
#      among them);
#   4. every libFuzzer target for a short, bounded time over its seed corpus (clang);
#   and, after step 1, librdkafka's own transaction, idempotence, offset and group tests against
#   `ringtail serve` (tools/conformance.sh --subset ci, each test one count), then its cluster
#   subset against three nodes (--cluster --subset ci), in the background while step 2's tree
#   builds;
# and prints one closing line "N passed, M failed". Longer fuzzing: see README.
set -uo pipefail
cd "$(dirname "$0")/.."
./tools/setup.sh || exit 1
jobs=$(nproc)
passed=0
failed=0
export CTEST_OUTPUT_ON_FAILURE=1

run_ctest() { # name builddir [ctest args...]
    local name=$1 dir=$2
    shift 2
    echo "== $name"
    local log
    log=$(mktemp)
    ctest --test-dir "$dir" -j"$jobs" --timeout 900 --output-on-failure "$@" 2>&1 | tee "$log"
    local p f
    p=$(grep -Eo '[0-9]+ tests? passed' "$log" | head -1 | grep -Eo '^[0-9]+' || echo 0)
    f=$(grep -Eo 'tests passed, [0-9]+ tests failed' "$log" | grep -Eo '[0-9]+ tests failed' | grep -Eo '^[0-9]+' || echo 0)
    total=$(grep -Eo 'failed out of [0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
    if [ "$total" = 0 ]; then
        echo "$name: no tests ran"
        failed=$((failed + 1))
    else
        passed=$((passed + total - f))
        failed=$((failed + f))
    fi
    rm -f "$log"
}

build() { # dir cmake-args...   (BUILD_NICE=N: the compilers at that niceness)
    local dir=$1
    shift
    cmake -S . -B "$dir" "$@" >/dev/null &&
        nice -n "${BUILD_NICE:-0}" cmake --build "$dir" -j"$jobs" >/dev/null 2>"$dir.build.log" || {
        cat "$dir.build.log"
        echo "build of $dir failed"
        failed=$((failed + 1))
        return 1
    }
}

echo "== format"
if clang-format --dry-run --Werror $(git ls-files '*.c' '*.h' '*.cc' 2>/dev/null) >/dev/null 2>&1 ||
    ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "format: every file matches .clang-format"
    passed=$((passed + 1))
else
    clang-format --dry-run $(git ls-files '*.c' '*.h' '*.cc') 2>&1 | grep -E '^[^ ]+:[0-9]+:' | cut -d: -f1 | sort -u
    echo "format: the files above do not match .clang-format (clang-format -i them)"
    failed=$((failed + 1))
fi

run_ctest "release" build/release -E '^fuzz_'

# librdkafka's own suite, its transaction, idempotence, offset and group tests, against a fresh
# `ringtail serve` of the Release tree, then its cluster subset against three `ringtail serve
# --voters` nodes (tools/conformance.sh, tests/conformance/expected*.txt; the full runs are in
# the README). Its tests mostly wait on the client's own timers (about 6 and 1 minutes, little
# CPU), so they run in the background while the ASan tree builds; their output is printed
# whole when they end, and the ASan tests start only after them.
clog=$(mktemp)
(
    ./tools/conformance.sh --subset ci
    ./tools/conformance.sh --cluster --subset ci
) </dev/null >"$clog" 2>&1 &
cpid=$!
asan_built=0
# The build runs niced: the conformance tests run on a real client's timers, and a compiler at
# full priority on two cores starves them (librdkafka's 0103 gives init_transactions 1 ms and
# expects it to time out; expected.txt marks it flaky, and a clean-clone run saw it again).
if BUILD_NICE=15 build build/asan -DCMAKE_BUILD_TYPE=Debug -DRT_SANITIZE=ON -DRT_BENCH=OFF; then
    asan_built=1
fi
wait "$cpid"
echo "== conformance (librdkafka's suite: the ci subsets, one broker and a cluster)"
cat "$clog"
clines=$(grep -Ex '[0-9]+ passed, [0-9]+ failed' "$clog")
if [ "$(printf '%s\n' "$clines" | grep -c .)" = 2 ]; then
    while read -r cline; do
        passed=$((passed + ${cline%% *}))
        cfailed=${cline#*, }
        failed=$((failed + ${cfailed%% *}))
    done <<<"$clines"
else
    echo "conformance: not two result lines (one per subset)"
    failed=$((failed + 1))
fi
rm -f "$clog"

if [ "$asan_built" = 1 ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        RT_TEST_SWEEP_STRIDE=3 run_ctest "asan+ubsan" build/asan -E '^fuzz_'
fi

if build build/tsan -DCMAKE_BUILD_TYPE=Debug -DRT_TSAN=ON -DRT_BENCH=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++; then
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan-uninstrumented.supp RT_TEST_SWEEP_STRIDE=3 run_ctest "tsan" build/tsan -R '^test_(engine|producer|txn|group|torture|model|write_path|named_producer|read_only|limits|kafka_metrics|broker_support|kafka_server|heal|open_segments|mapped_segments|cleaner|cluster_quorum|crash_open_cost)'
fi

if build build/fuzz -DCMAKE_BUILD_TYPE=Debug -DRT_FUZZ=ON -DRT_BENCH=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++; then
    run_ctest "fuzz (bounded)" build/fuzz -R '^fuzz_'
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
