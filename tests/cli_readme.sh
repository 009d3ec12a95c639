#!/usr/bin/env bash
# cli_readme.sh — README.md is executed: every command it shows runs here, so a README edit that
# breaks a command (or a change that breaks a README command) fails this test.
#
# usage: bash tests/cli_readme.sh /path/to/build/ringtail     (README.md is read from the tree
#        this script sits in; RT_README=FILE reads another copy, e.g. an edited one)
#
# The convention (also stated in README.md, "Development"):
#   - Every line of every ```sh block is a command (`a && b` is two). Every ```c block is compiled
#     against the installed library and run. Any other fenced block fails the test.
#   - An inline `code` span in the text (not in a heading) is a command when its first word, after
#     any VAR=value, is `ringtail`, cmake, ctest, pkg-config, clang-format, perf or another tool
#     named in is_command() below, followed by at least one argument, or a path under ./, tools/,
#     build/ or .ci/ that is not a directory (`build/release/`).
#   - Each command found is matched against cover() below. It is run as written, with these
#     substitutions only: DIR -> a scratch data directory, ID -> the transactional id made
#     for it, `./build/release/` and `build/release/` -> the build tree being tested, `ringtail` ->
#     that tree's binary. A few are run in a short mode or checked another way; each such case
#     says why in cover() and prints "exception: REASON". A command no case matches fails the test
#     ("not covered"), so a new README command needs a decision here.
#   - Comments in sh blocks are not run; what a line's comment promises is checked by a case of
#     check_claims() (murmur2 placement, exactly once across reruns, one transaction per
#     --txn-records lines, the kinds of file dump reads, ...); a line without one is checked by
#     its exit status.
# The exceptions (each a case of cover(), which prints its reason when it applies):
#   ./tools/setup.sh           root and apt-get, rebuilds the tree under test  -> bash -n
#   ./tools/test.sh, .ci/run   the whole suite, this test included             -> bash -n / content
#   ctest --test-dir build     the suite                                       -> ctest -N
#   cmake -S . -B X [opts]     configured into a scratch tree; cmake --build is not run (minutes)
#   build/fuzz/fuzz_* 3600 s   an hour of fuzzing -> the target's source and corpus exist
#   ringtail bench --quick     30 s and more      -> --only fetch,mem --peers none
#   ringtail-bench --plot      6 minutes          -> tests/cli_bench.sh runs it --quick with --plot
#   rt_bench_micro             -> --benchmark_min_time=0.001;  RT_TORTURE_SECONDS=600 -> 2
#   tools/perf.sh, perf report needs perf and its own tree -> its usage
#   tools/conformance.sh       librdkafka's suite: apt-get source, a build, half an hour -> its usage
#   clang-format -i            rewrites files     -> the root .clang-format parses
#   cmake --install / pkg-config  into a scratch --prefix, the .pc pointed at it
#   bench commands in a tree configured -DRT_BENCH=OFF (the ASan tree): not built there
#   the SASL block (users, a SASL_PLAINTEXT broker, kcat with SCRAM) -> tests/cli_kafka_sasl.sh
#                              runs each step; checked: that it does
#   the cluster block (ringtail serve DIRn ... --voters ... &, cluster status/check) -> the
#                              tests/cli_cluster_*.sh run those steps; checked: that they do
#   ringtail serve DIR ... &   the broker runs until SIGTERM -> in the background on free ports
#                              (for 9092/9100) and its own directory; the kcat/curl lines run
#                              against it; `kill %1` is SIGTERM to it, exit 0 and verify clean
# The Kafka broker section's table of APIs and versions is compared with the ApiVersions answer
# of the broker the block starts (tests/kafka/api_versions.py).
# The named-producer import is also rerun at 2000 lines on a 3-partition topic: two runs of the
# README's `seq ... | ringtail produce DIR orders --producer-name importer` must store every line
# exactly once (issue 10, defect 2).
set -u

RT=${1:?usage: cli_readme.sh /path/to/ringtail}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$(dirname "$RT")" && pwd)
RT=$BUILD/$(basename "$RT")
README=${RT_README:-$SRC/README.md}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-readme-XXXXXX")
HANG_PID=
cleanup() {
    if [ -n "$HANG_PID" ]; then kill -9 "$HANG_PID" 2>/dev/null; wait "$HANG_PID" 2>/dev/null; fi
    if [ -n "${BROKER_PID:-}" ]; then kill -9 "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null; fi
    rm -rf "$T"
}
trap cleanup EXIT

. "$(dirname "$0")/helpers/cli_harness.sh"

D=$T/data # the data directory every DIR of the sh blocks stands for
# `ringtail` in a README command is the binary under test; no command may hang.
ringtail() { timeout 120 "$RT" "$@"; }
cache_has() { grep -q "^$1" "$BUILD/CMakeCache.txt" 2>/dev/null; }

# ---- extraction: README.md -> $T/readme.tsv (kind, README line, heading, text) and $T/c/*.c ----
mkdir -p "$T/c"
python3 - "$README" "$T" <<'EOF' || { echo "FAIL - cannot read $README"; exit 1; }
import re, sys
readme, out = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
rows, prose = [], []
heading, fence, fence_line, block = "", None, 0, []
for no, line in enumerate(lines, 1):
    if fence is not None:
        if line.startswith("```"):
            if fence == "c":
                path = "%s/c/block-%d.c" % (out, fence_line)
                open(path, "w").write("\n".join(block) + "\n")
                rows.append(("c", fence_line, heading, path))
            elif fence != "sh":
                rows.append(("other", fence_line, heading, fence or "(no language)"))
            fence = None
        elif fence == "sh":
            # drop comments; what a line's comment promises is checked by check_claims
            line = "" if line.lstrip().startswith("#") else re.sub(r"\s+#\s.*$", "", line)
            for cmd in line.split(" && "):
                if cmd.strip():
                    rows.append(("sh", no, heading, cmd.strip()))
        else:
            block.append(line)
        prose.append("")
        continue
    if line.startswith("```"):
        fence, fence_line, block = line[3:].strip(), no, []
        prose.append("")
        continue
    if line.startswith("#"):
        heading = line.lstrip("#").strip().replace("`", "")
        prose.append("")
        continue
    prose.append(line)
text = "\n".join(prose)
for m in re.finditer(r"`([^`]+)`", text):
    if "\n\n" in m.group(1):
        rows.append(("other", text.count("\n", 0, m.start()) + 1, "", "unbalanced backtick"))
        continue
    no = text.count("\n", 0, m.start()) + 1
    h = ""
    for i in range(no - 1, -1, -1):
        if lines[i].startswith("#"):
            h = lines[i].lstrip("#").strip().replace("`", "")
            break
    for cmd in " ".join(m.group(1).split()).split(" && "):
        rows.append(("inline", no, h, cmd))
with open(out + "/readme.tsv", "w") as f:
    for r in rows:
        f.write("%s\t%d\t%s\t%s\n" % r)
EOF

# is_command TEXT: is this inline span a command (see the convention above)?
is_command() {
    local -a w
    read -ra w <<<"$1"
    local i=0
    while [[ ${w[i]:-} =~ ^[A-Z_][A-Z0-9_]*= ]]; do i=$((i + 1)); done
    local first=${w[i]:-} args=$((${#w[@]} - i - 1))
    case $first in
    '') return 1 ;;
    ./* | tools/* | build/* | .ci/*) [[ $first != */ ]] ;;
    ringtail | cmake | ctest | pkg-config | clang-format | perf | seq | printf | sudo | apt-get | \
        git | bash | sh | make | cc | gcc | clang | python3 | gdb | valgrind) [ "$args" -ge 1 ] ;;
    *) return 1 ;;
    esac
}

# subst CMD: the README command as this test runs it.
subst() {
    printf '%s' "$1" | sed -E \
        -e 's#(^|[^A-Za-z0-9_/.])\.?/?build/release(/|$| )#\1'"$BUILD"'\2#g' \
        -e 's#(^|[^A-Za-z0-9_])DIR([^A-Za-z0-9_]|$)#\1"$D"\2#g' \
        -e 's#(^|[^A-Za-z0-9_-])ID([^A-Za-z0-9_]|$)#\1"$TXN_ID"\2#g'
}
# exception DESC REASON: a command checked in another way than running it as written.
exception() { echo "     (exception: $2)"; }

# ---- running a README ringtail command and checking what its comment promises ----------------
# records DIR TOPIC: every record of TOPIC (values), sorted — a multiset to diff.
records() { "$RT" consume "$1" "$2" --isolation read_committed 2>/dev/null | LC_ALL=C sort; }
# added BEFORE AFTER: the records in AFTER and not in BEFORE (multiset difference).
added() { LC_ALL=C comm -13 "$1" "$2"; }
# topic_of CMD: the word after `produce DIR`.
topic_of() {
    local -a w
    read -ra w <<<"${1#*produce }"
    printf '%s' "${w[1]:-}"
}

declare -A RAN
run_readme() { # CMD WHERE
    local cmd=$1 where=$2 line key
    line=$(subst "$cmd")
    key=$(sed -E 's#^(\./)?build/release/ringtail #ringtail #; s/[[:space:]]+#.*$//; s/[[:space:]]+$//' <<<"$cmd")
    if [ -n "${RAN[$key]:-}" ]; then
        ok "$where: \`$cmd\` (ran above, ${RAN[$key]})"
        return
    fi
    RAN[$key]=$where
    local topic="" input=""
    case $cmd in
    *'|'*produce*) topic=$(topic_of "$cmd") ;;
    esac
    [ -n "$topic" ] && records "$D" "$topic" >"$T/before"
    [ -n "$topic" ] && input=$(eval "${line%%|*}")
    case $cmd in
    'ringtail bench --quick'*)
        if cache_has "RT_BENCH:BOOL=OFF"; then
            exception "$cmd" "this tree was configured with -DRT_BENCH=OFF; the Release tree runs it"
            return
        fi
        exception "$cmd" "--quick takes 30 s and more; cli_bench.sh runs every workload small; here two"
        line=$(sed -E 's/[[:space:]]+#.*$//' <<<"$line") # options go before the comment
        line="$line --dir $T --only fetch,mem --peers none --mem-producers 2000 --mem-live 50"
        line="$line --self-check warn" # a ratio at these sizes is noise (cli_bench.sh)
        ;;
    'ringtail bench --only '*)
        if cache_has "RT_BENCH:BOOL=OFF"; then
            exception "$cmd" "this tree was configured with -DRT_BENCH=OFF; the Release tree runs it"
            return
        fi
        exception "$cmd" "a workload at its default size takes minutes; here at --quick's"
        line="$line --quick --dir $T --peers none --self-check warn"
        ;;
    esac
    (cd "$T" && eval "$line") >"$T/out" 2>"$T/err"
    RC=$?
    expect "$where: \`$cmd\` exits 0" 0
    check_claims "$cmd" "$line" "$where" "$topic" "$input"
}

check_claims() { # CMD LINE WHERE TOPIC INPUT
    local cmd=$1 line=$2 where=$3 topic=$4 input=$5
    case $cmd in
    *'topic create'*)
        check "$where: ... the topic exists" grep -q "created topic" "$T/out"
        ;;
    *produce*--key-sep*)
        local sep=${cmd#*--key-sep } n k want
        sep=${sep%% *}
        n=$("$RT" topic list "$D" | awk -F'\t' -v t="$topic" '$1 == t { print $2 }')
        while IFS= read -r l; do
            k=${l%%"$sep"*}
            want=$("$RT" murmur2 --partitions "$n" "$k" | cut -f3)
            "$RT" consume "$D" "$topic" -p "$want" --format json >"$T/json"
            check "$where: ... key '$k' is in partition $want (murmur2 % $n)" \
                grep -qF "\"key\":\"$k\"" "$T/json"
        done <<<"$input"
        ;;
    *produce*--producer-name*)
        # "exactly once across reruns": the rerun adds nothing, every line stored once.
        (cd "$T" && eval "$line") >"$T/out2" 2>"$T/err"
        RC=$?
        expect "$where: ... rerun exits 0" 0
        records "$D" "$topic" >"$T/after"
        check "$where: ... after the rerun every input line is stored exactly once" \
            test "$(added "$T/before" "$T/after")" = "$(LC_ALL=C sort <<<"$input")"
        rerun_named_import "$cmd" "$where"
        ;;
    *produce*--txn-id*--txn-records*)
        # "committed 1..3, 4..6, ...": one transaction per --txn-records lines, all committed.
        local per=${cmd#*--txn-records } total first=1
        per=${per%% *}
        total=$(wc -l <<<"$input")
        while [ "$first" -le "$total" ]; do
            local last=$((first + per - 1))
            [ "$last" -gt "$total" ] && last=$total
            check "$where: ... prints committed $first..$last" grep -qx "committed $first..$last" "$T/out"
            first=$((last + 1))
        done
        records "$D" "$topic" >"$T/after"
        check "$where: ... read_committed consumers see every line once" \
            test "$(added "$T/before" "$T/after")" = "$(LC_ALL=C sort <<<"$input")"
        ;;
    *produce*)
        records "$D" "$topic" >"$T/after"
        check "$where: ... every line is stored once" \
            test "$(added "$T/before" "$T/after")" = "$(LC_ALL=C sort <<<"$input")"
        ;;
    *'consume '*--format\ json*)
        check "$where: ... prints one JSON object per record, up to the end" \
            python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert rows and all({"topic", "partition", "offset", "value"} <= set(r) for r in rows)' "$T/out"
        ;;
    *'dump '*.log*)
        check "$where: ... lists batches with their CRC checked" grep -qE "crc 0x[0-9a-f]{8} ok$" "$T/out"
        # "# .log .index .timeindex ringtail.meta": the other kinds it names, beside that segment
        local log=${line#*dump } f
        log=${log%% *}
        for f in "${log%.log}.index" "${log%.log}.timeindex" '"$D"/ringtail.meta'; do
            (cd "$T" && eval "ringtail dump $f") >"$T/out" 2>"$T/err"
            RC=$?
            expect "$where: ... dump $(basename "$f") exits 0" 0
        done
        ;;
    *'verify '*)
        check "$where: ... the directory is healthy" grep -q "healthy" "$T/out"
        ;;
    *'recover '*)
        check "$where: ... a cleanly closed directory has nothing to recover" \
            grep -q "nothing to recover" "$T/out"
        ;;
    *'txn list'*)
        check "$where: ... prints the open transactions (or none)" \
            grep -qE "no open transactions|^ID" "$T/out"
        ;;
    *'demo')
        check "$where: ... the tour ends" grep -q "demo finished" "$T/out"
        ;;
    esac
}

# The named-producer import again, at 2000 lines on a fresh 3-partition topic, run twice: with
# null keys the sticky partitioner placed a line in another partition on the rerun (issue 10,
# defect 2: 2118 or 2542 records stored instead of 2000).
rerun_named_import() { # CMD WHERE
    local cmd=$1 where=$2 topic line
    topic=$(topic_of "$cmd")
    line=$(subst "$cmd" | sed -E 's/^seq 1 [0-9]+/seq 1 2000/')
    local D_SAVED=$D
    D=$T/rerun
    "$RT" topic create "$D" "$topic" --partitions 3 >/dev/null 2>&1
    (cd "$T" && eval "$line" && eval "$line") >"$T/out" 2>"$T/err"
    RC=$?
    expect "$where: ... the same with 2000 lines on 3 partitions, run twice, exits 0" 0
    records "$D" "$topic" >"$T/rerun.txt"
    check "$where: ... 2000 lines run twice store 2000 records (got $(wc -l <"$T/rerun.txt"))" \
        test "$(wc -l <"$T/rerun.txt")" -eq 2000
    check "$where: ... each of the 2000 lines exactly once" \
        test "$(sort -n "$T/rerun.txt")" = "$(seq 1 2000)"
    D=$D_SAVED
}

# ---- the commands, classified --------------------------------------------------------------
LATE=()            # inline `ringtail txn ... DIR`: run on a directory with a hanging transaction
INSTALL_CMD=""     # `cmake --install build/release`
PKGCONFIG_CMD=""   # `pkg-config --cflags --libs ringtail`
declare -A C_BLOCK # heading -> extracted C file

# ref_check CMD WHERE: a mention of a ringtail command or option, not a full command: the command
# must exist and its --help must name every option the mention uses.
ref_check() {
    local cmd=$1 where=$2 sub opt
    local -a w
    read -ra w <<<"$cmd"
    sub=${w[1]}
    if [ "$sub" = bench ] && cache_has "RT_BENCH:BOOL=OFF"; then
        exception "$cmd" "this tree was configured with -DRT_BENCH=OFF; the Release tree runs it"
        return
    fi
    run "$sub" --help
    expect "$where: \`$cmd\`: ringtail $sub --help exits 0" 0 "usage: ringtail $sub"
    for opt in "${w[@]:2}"; do
        [[ $opt == --* ]] || continue
        check "$where: ... ringtail $sub --help documents $opt" grep -qF -- "$opt" "$T/out"
    done
}

# ---- the Kafka broker block: `ringtail serve DIR ... &`, clients against it, `kill %1` -------
# The broker runs in the background on its own data directory ($T/broker: DIR in that one
# line) and on free ports in place of the README's 9092 and 9100; the client lines run against
# it as written otherwise; `kill %1` is SIGTERM to it, which must end it with exit 0.
BROKER_PID=
KPORT=
MPORT=
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
broker_subst() {
    sed -E -e 's/[[:space:]]+#.*$//' -e 's/[[:space:]]*&[[:space:]]*$//' \
        -e "s/127\.0\.0\.1:9092/127.0.0.1:$KPORT/g" -e "s/127\.0\.0\.1:9100/127.0.0.1:$MPORT/g" <<<"$1"
}
broker_start() { # CMD WHERE
    KPORT=$(free_port)
    MPORT=$(free_port)
    exception "$1" "runs until SIGTERM: started in the background on free ports and $T/broker"
    local line
    line=$(broker_subst "$1" | sed -E 's#(^|[^A-Za-z0-9_])DIR([^A-Za-z0-9_]|$)#\1"$T/broker"\2#')
    line=${line/#ringtail /\"\$RT\" }
    (cd "$T" && eval "exec $line") >"$T/broker.log" 2>&1 &
    BROKER_PID=$!
    local i
    for i in $(seq 1 200); do
        grep -q "listening on" "$T/broker.log" && break
        kill -0 "$BROKER_PID" 2>/dev/null || break
        sleep 0.1
    done
    cp "$T/broker.log" "$T/out"
    : >"$T/err"
    RC=0
    grep -q "listening on 127.0.0.1:$KPORT" "$T/broker.log" || RC=1
    expect "$2: \`$1\` prints listening on" 0
    # The README's table of APIs and versions is what this broker advertises (ApiVersions v0).
    python3 "$SRC/tests/kafka/api_versions.py" 127.0.0.1 "$KPORT" >"$T/advertised" 2>"$T/err"
    awk -F'|' '/^## Kafka broker/ {k = 1} /^## / && !/Kafka broker/ {k = 0}
        k && $2 ~ /^ *[0-9]+ *$/ && match($4, /[0-9]+-[0-9]+/) {
            split(substr($4, RSTART, RLENGTH), v, "-")
            printf "%d %d %d\n", $2, v[1], v[2] }' "$README" | sort -n >"$T/table"
    sort -n "$T/advertised" >"$T/advertised.sorted"
    cp "$T/table" "$T/out"
    RC=0
    [ -s "$T/table" ] && cmp -s "$T/table" "$T/advertised.sorted" || RC=1
    expect "$2: ... the README's table of APIs and versions is what the broker advertises" 0
}
broker_run() { # CMD WHERE
    if [ -z "$BROKER_PID" ]; then
        RC=1
        bad "$2: \`$1\`: the broker line before it did not start"
        return
    fi
    local line
    line=$(broker_subst "$1")
    (cd "$T" && eval "timeout 60 $line") >"$T/out" 2>"$T/err"
    RC=$?
    case $1 in
    *' -L'*) expect "$2: \`$1\` lists one broker" 0 "1 brokers?:" ;;
    *' -C '*)
        expect "$2: \`$1\` exits 0" 0
        check "$2: ... and reads the 1000 records produced above" test "$(wc -l <"$T/out")" -eq 1000
        ;;
    *) expect "$2: \`$1\` exits 0" 0 ;;
    esac
}
broker_stop() { # CMD WHERE
    exception "$1" "%1 is the broker started above: SIGTERM to it"
    if [ -z "$BROKER_PID" ]; then
        RC=1
        bad "$2: \`$1\`: no broker is running"
        return
    fi
    kill -TERM "$BROKER_PID"
    local i
    for i in $(seq 1 300); do
        kill -0 "$BROKER_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID"
    RC=$?
    BROKER_PID=
    cp "$T/broker.log" "$T/out"
    expect "$2: \`$1\`: the broker exits 0 on SIGTERM" 0
    run verify "$T/broker"
    expect "$2: ... and ringtail verify of its directory is clean" 0
}

cover() { # CMD KIND WHERE
    local cmd=$1 kind=$2 where=$3
    case $cmd in
    './tools/setup.sh' | 'tools/setup.sh')
        exception "$cmd" "needs root and apt-get, and rebuilds build/release, the tree under test"
        check "$where: \`$cmd\` is a valid bash script" bash -n "$SRC/tools/setup.sh"
        ;;
    './tools/test.sh' | 'tools/test.sh')
        exception "$cmd" "the whole test suite (minutes; it runs this test)"
        check "$where: \`$cmd\` is a valid bash script" bash -n "$SRC/tools/test.sh"
        ;;
    '.ci/run')
        exception "$cmd" "what CI runs: the whole test suite"
        check "$where: \`$cmd\` runs exactly ./tools/test.sh" grep -qx 'exec ./tools/test.sh' "$SRC/.ci/run"
        ;;
    'tools/conformance.sh' | 'tools/conformance.sh '*)
        exception "$cmd" "librdkafka's own suite against a broker (apt-get source, a build, half an hour); checked: its usage"
        (cd "$SRC" && bash tools/conformance.sh --help) >"$T/out" 2>&1
        check "$where: \`$cmd\`: tools/conformance.sh prints its usage" grep -q "usage: tools/conformance.sh" "$T/out"
        ;;
    'python3 tools/check_refs.py')
        (cd "$SRC" && python3 tools/check_refs.py) >"$T/out" 2>&1
        check "$where: \`$cmd\` finds 0 problems" grep -q ", 0 problem(s)$" "$T/out"
        ;;
    'tools/perf.sh' | 'tools/perf.sh '* | 'perf '*)
        exception "$cmd" "perf needs perf_event access and builds its own tree; checked: its usage"
        (cd "$SRC" && bash tools/perf.sh --help) >"$T/out" 2>&1
        check "$where: \`$cmd\`: tools/perf.sh prints its usage" grep -q "usage: tools/perf.sh WORKLOAD" "$T/out"
        ;;
    *alice.pw* | 'ringtail user '*DIR* | *SASL_PLAINTEXT://* | *security.protocol=SASL_PLAINTEXT*)
        # The SASL block (issue 23): users, a SASL_PLAINTEXT listener, kcat with SCRAM.
        exception "$cmd" "the SASL block: tests/cli_kafka_sasl.sh runs each of its steps against its own broker"
        local step
        case $cmd in
        printf*) step="alice-secret" ;;
        *'user add'*) step='run user add "$D" --name alice --mechanism SCRAM-SHA-512' ;;
        *'user list'*) step='run user list "$D"' ;;
        *'user remove'*) step='run user remove "$D" --name dave' ;;
        *'ringtail serve'*) step='--sasl-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512' ;;
        *) step='security.protocol=SASL_PLAINTEXT' ;;
        esac
        check "$where: \`$cmd\`: tests/cli_kafka_sasl.sh runs that step" grep -qF -- "$step" "$SRC/tests/cli_kafka_sasl.sh"
        ;;
    'ringtail serve DIR '*'&'*)
        broker_start "$cmd" "$where"
        ;;
    'ringtail serve DIR')
        exception "$cmd" "a mention: the broker runs until SIGTERM; the Kafka broker block starts it"
        ref_check "$cmd" "$where"
        ;;
    'ringtail serve DIR'[0-9]' '*'--voters '* | 'ringtail cluster status '* | 'ringtail cluster check '*)
        # The cluster block (issue 24): three nodes, each until SIGTERM, on fixed ports. The
        # tests/cli_cluster_*.sh run exactly these steps on free ports; checked: that they do, and
        # that --help documents every option the README uses.
        exception "$cmd" "the cluster block: tests/cli_cluster_*.sh start three nodes this way on free ports and run status and check"
        ref_check "$cmd" "$where"
        local step
        case $cmd in
        *'--voters '*) step='--voters "$VOTERS"' ;;
        *status*) step='cluster status --bootstrap' ;;
        *) step='cluster check' ;;
        esac
        check "$where: \`$cmd\`: a tests/cli_cluster_*.sh runs that step" \
            grep -qF -- "$step" "$SRC/tests/cli_cluster_meta.sh" "$SRC/tests/cli_cluster_replica.sh" "$SRC/tests/cli_cluster_isr.sh"
        ;;
    'kcat '* | *'| kcat '* | 'curl '*)
        broker_run "$cmd" "$where"
        ;;
    'kill %1')
        broker_stop "$cmd" "$where"
        ;;
    'ringtail '*DIR* | *'| ringtail '* | './build/release/ringtail '* | 'build/release/ringtail '* | \
        'ringtail demo'* | 'ringtail bench --'*)
        if [ "$kind" = inline ] && [[ $cmd == 'ringtail txn '*DIR* ]]; then
            LATE+=("$cmd"$'\t'"$where")
        else
            run_readme "$cmd" "$where"
        fi
        ;;
    'ringtail '*)
        ref_check "$cmd" "$where"
        ;;
    'build/release/ringtail-bench '*)
        # The full run takes 6 minutes; --quick at the smallest sizes still takes 2 (every panel of
        # the chart needs every workload), and cli_bench.sh is that run with --plot: check that it
        # is, rather than run it twice in one suite.
        exception "$cmd" "the full run takes 6 minutes; tests/cli_bench.sh runs it --quick with --plot and checks the chart"
        check "$where: \`$cmd\`: tests/cli_bench.sh runs ringtail-bench with --plot and checks the chart" \
            grep -q -- '--plot "$tmp/bench.png"' "$SRC/tests/cli_bench.sh"
        ;;
    'build/release/rt_bench_micro'*)
        exception "$cmd" "Google Benchmark's default run time; run with --benchmark_min_time=0.001"
        if cache_has "RT_BENCH:BOOL=OFF"; then
            exception "$cmd" "this tree was configured with -DRT_BENCH=OFF; the Release tree runs it"
            return
        fi
        (cd "$T" && eval "$(subst "$cmd") --benchmark_min_time=0.001") >"$T/out" 2>"$T/err"
        RC=$?
        expect "$where: \`$cmd\` (short mode) exits 0" 0 "BM_"
        ;;
    'RT_TORTURE_SECONDS='*)
        exception "$cmd" "a long run; run for 2 seconds"
        (cd "$T" && eval "$(subst "$cmd" | sed -E 's/RT_TORTURE_SECONDS=[0-9]+/RT_TORTURE_SECONDS=2/')") \
            >"$T/out" 2>"$T/err"
        RC=$?
        expect "$where: \`$cmd\` (2 s) exits 0" 0
        ;;
    'RT_TEST_FILTER='*)
        (cd "$T" && eval "$(subst "$cmd")") >"$T/out" 2>"$T/err"
        RC=$?
        expect "$where: \`$cmd\` exits 0" 0
        check "$where: ... and ran at least one case" \
            bash -c "grep -q 'RUN' '$T/out' || grep -q 'Passed' '$T/out'"
        ;;
    'cmake --install build/release')
        INSTALL_CMD=$cmd # run, with --prefix, before the C blocks
        ;;
    'pkg-config --cflags --libs ringtail')
        PKGCONFIG_CMD=$cmd # run against that install, to build the C blocks
        ;;
    'cmake -S . -B '*)
        exception "$cmd" "configure only, into a scratch tree (building is what ctest's caller did)"
        local args=${cmd#cmake -S . -B }
        args=${args#* }
        [ "$args" = "${cmd#cmake -S . -B }" ] && args=""
        # shellcheck disable=SC2086
        (cd "$SRC" && cmake -S . -B "$T/configure" $args) >"$T/out" 2>"$T/err"
        RC=$?
        rm -rf "$T/configure"
        expect "$where: \`$cmd\` configures" 0
        ;;
    'cmake --build '*)
        exception "$cmd" "a full build takes minutes on CI's two cores; the tree under test was built so"
        check "$where: \`$cmd\`: this tree was built by cmake" test -f "$BUILD/CMakeCache.txt"
        ;;
    'build/fuzz/fuzz_'*)
        exception "$cmd" "an hour of fuzzing with a clang build; ctest runs each target for 20 s under -DRT_FUZZ=ON"
        local -a w
        read -ra w <<<"$cmd"
        local target=${w[0]##*/}
        check "$where: \`$cmd\`: fuzz/$target.c exists" test -f "$SRC/fuzz/$target.c"
        check "$where: ... its corpus ${w[-1]} exists" test -d "$SRC/${w[-1]}"
        ;;
    'ctest --test-dir build'*)
        exception "$cmd" "the test suite itself (it runs this test); checked: it lists the tests"
        ctest --test-dir "$BUILD" -N >"$T/out" 2>"$T/err"
        RC=$?
        expect "$where: \`$cmd -N\` lists the tests" 0 "Total Tests: [1-9]"
        ;;
    'clang-format -i'*)
        exception "$cmd" "formats files in place; checked: .clang-format at the root parses"
        (cd "$SRC" && clang-format --style=file --dump-config) >"$T/out" 2>"$T/err"
        RC=$?
        expect "$where: \`$cmd\`: clang-format reads the root .clang-format" 0
        ;;
    *)
        RC=0
        : >"$T/out"
        : >"$T/err"
        bad "$where: README command \`$cmd\` is not covered by tests/cli_readme.sh: add a case to cover()"
        ;;
    esac
}

# ---- 1. the fenced blocks and inline commands, in README order ------------------------------
while IFS=$'\t' read -r kind no heading text; do
    where="README.md:$no"
    case $kind in
    sh) cover "$text" sh "$where" ;;
    inline) if is_command "$text"; then cover "$text" inline "$where"; fi ;;
    c) C_BLOCK[$heading]=$text ;;
    other)
        RC=0
        bad "$where: a fenced block of kind '$text' that tests/cli_readme.sh does not run"
        ;;
    esac
done <"$T/readme.tsv"

# ---- 2. inline txn commands on DIR: a directory with a hanging transaction (ID) -------------
# `ringtail txn list DIR` shows open transactions and `ringtail txn abort DIR --transactional-id
# ID` ends a hanging one: a transactional produce is killed (SIGKILL) while its transaction is
# open, after its records reached the partition.
D=$T/hanging
TXN_ID=readme-hang
"$RT" topic create "$D" orders --partitions 3 >/dev/null
# bytes of records in the partitions' logs (the tails are zero-filled when preallocated)
written() { for f in "$D"/orders-*/*.log; do head -c 65536 "$f"; done | tr -d '\0' | wc -c; }
mkfifo "$T/fifo"
"$RT" produce "$D" orders --txn-id "$TXN_ID" --txn-records 1000 <"$T/fifo" >/dev/null 2>&1 &
HANG_PID=$!
exec 3>"$T/fifo"
printf 'hanging-1\nhanging-2\nhanging-3\n' >&3
for _ in $(seq 1 200); do
    [ "$(written)" -gt 0 ] && break
    sleep 0.05
done
check "a transactional produce wrote its records and is still running" kill -0 "$HANG_PID"
exec 4>&2 2>/dev/null # no "Killed" notice from the shell
kill -9 "$HANG_PID"
wait "$HANG_PID"
exec 2>&4 4>&-
HANG_PID=
exec 3>&-
# A second directory for the operator's partition abort: a committed transaction whose COMMIT
# marker was cut off (a torn tail) and whose coordinator state is lost too, so nothing decides it
# and its partition stays pinned (README: "What no record decides ... stays pinned").
PD=$T/pinned
"$RT" topic create "$PD" t --partitions 1 >/dev/null
printf 'pinned-1\npinned-2\npinned-3\n' | "$RT" produce "$PD" t -p 0 --txn-id readme-pin \
    --txn-records 3 >/dev/null 2>&1
plog=$(ls "$PD"/t-0/*.log | sort | tail -n 1)
truncate -s -78 "$plog" # the marker batch is the last 78 bytes
for f in "$PD"/__transaction_state-0/*.log; do truncate -s 0 "$f"; done
rm -f "$PD/.clean_shutdown"
"$RT" recover "$PD" >/dev/null 2>&1
PINNED_ID=$("$RT" txn list "$PD" | awk '$1 == "t" && $2 == "0" { print $3; exit }')
check "a partition pinned by a transaction nothing decides is listed with its producer id" \
    test -n "$PINNED_ID"

# `txn list` mentions first (on the hanging and the pinned directories), then the aborts.
late_run() { # CMD WHERE DIR
    local line
    line=$(subst "$1" | sed -E -e 's/--topic T /--topic t /' -e 's/--partition P /--partition 0 /' \
        -e 's/--producer-id "\$TXN_ID"/--producer-id '"$PINNED_ID"'/')
    (cd "$T" && D=$3 && eval "$line") >"$T/out" 2>"$T/err"
    RC=$?
    expect "$2: \`$1\` exits 0" 0
}
for entry in "${LATE[@]}"; do
    cmd=${entry%%$'\t'*}
    where=${entry#*$'\t'}
    [[ $cmd == *'txn list'* ]] || continue
    late_run "$cmd" "$where" "$D"
    # The killed producer's partition joined without a coordinator record (coordinator.c CO9):
    # the read-only listing shows it pinned, by ID, whose last state is Empty.
    check "$where: ... shows the hanging transaction's partition, pinned by $TXN_ID" \
        grep -qE "^orders	[0-9]+	[0-9]+	[0-9]+	[0-9]+	[0-9]+	[0-9]+	$TXN_ID	Empty$" "$T/out"
    check "$where: ... and the LSO it pins (below the high watermark)" \
        awk -F'\t' -v id="$TXN_ID" '$8 == id && $6 < $7 { found = 1 } END { exit !found }' "$T/out"
    late_run "$cmd" "$where (pinned directory)" "$PD"
    check "$where: ... shows the pinned partition with its producer id" \
        grep -qE "^t	0	$PINNED_ID	" "$T/out"
done
for entry in "${LATE[@]}"; do
    cmd=${entry%%$'\t'*}
    where=${entry#*$'\t'}
    case $cmd in
    *'txn list'*) ;;
    *'txn abort'*'--topic'*)
        late_run "$cmd" "$where" "$PD"
        "$RT" txn list "$PD" >"$T/out" 2>&1
        check "$where: ... afterwards nothing is pinned" grep -q "no open transactions" "$T/out"
        "$RT" consume "$PD" t --isolation read_committed >"$T/out" 2>&1
        check "$where: ... and the released records are not served to read_committed" \
            test "$(grep -c pinned "$T/out")" -eq 0
        ;;
    *'txn abort'*)
        late_run "$cmd" "$where" "$D"
        "$RT" txn list "$D" >"$T/out" 2>&1
        check "$where: ... afterwards no transaction is open" grep -q "no open transactions" "$T/out"
        "$RT" consume "$D" orders --isolation read_committed >"$T/out" 2>&1
        check "$where: ... and its records are not served to read_committed" \
            test "$(grep -c hanging "$T/out")" -eq 0
        ;;
    *)
        RC=0
        bad "$where: \`$cmd\`: a txn command this test does not know (add a case)"
        ;;
    esac
done

# README: the next writing open aborts the transaction of a producer that died with its process.
"$RT" recover "$D" >/dev/null 2>&1
"$RT" txn list "$D" >"$T/out" 2>&1
check "README: a writing open aborts the dead producer's transaction (nothing open after it)" \
    grep -q "no open transactions" "$T/out"
"$RT" consume "$D" orders --isolation read_committed >"$T/out" 2>&1
check "README: ... and its records are not served to read_committed" \
    test "$(grep -c hanging "$T/out")" -eq 0

# ---- 3. the C blocks, built against `cmake --install build/release` with pkg-config -----------
P=$T/prefix
if [ -z "$INSTALL_CMD" ] || [ -z "$PKGCONFIG_CMD" ]; then
    RC=0
    bad "README no longer shows \`cmake --install build/release\` and \`pkg-config --cflags --libs ringtail\`"
fi
exception "$INSTALL_CMD" "installs into a scratch prefix (--prefix), not /usr/local"
(cd "$T" && eval "$(subst "$INSTALL_CMD") --prefix $P") >"$T/out" 2>"$T/err"
RC=$?
expect "README: \`$INSTALL_CMD\` (with --prefix) exits 0" 0
for f in libringtail.a libringtail.so ringtail.h ringtail.pc; do
    check "... installs $f" test -n "$(find "$P" -name "$f")"
done
pc_dir=$(dirname "$(find "$P" -name ringtail.pc | head -1)")
exception "$PKGCONFIG_CMD" "the .pc names its configured prefix; pointed at the scratch prefix"
flags=$(export PKG_CONFIG_PATH=$pc_dir && eval "${PKGCONFIG_CMD/pkg-config/pkg-config --define-variable=prefix=$P}" 2>"$T/err")
RC=$?
echo "$flags" >"$T/out"
expect "README: \`$PKGCONFIG_CMD\` exits 0" 0 "-lringtail"
CFLAGS_SAN=""
cache_has "RT_SANITIZE:BOOL=ON" && CFLAGS_SAN="-fsanitize=address,undefined"
cache_has "RT_TSAN:BOOL=ON" && CFLAGS_SAN="-fsanitize=thread"
libdir=$(dirname "$(find "$P" -name 'libringtail.so*' | head -1)")

# build NAME FILE: compile FILE (a block plus scaffolding) with the README's flags.
build() {
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror $CFLAGS_SAN -o "$T/$1" "$2" $flags >"$T/out" 2>"$T/err"
    RC=$?
}
runc() { LD_LIBRARY_PATH=$libdir timeout 60 "$@" >"$T/out" 2>"$T/err"; RC=$?; }

for heading in "${!C_BLOCK[@]}"; do
    case $heading in
    'Using the library' | 'Transactions') ;;
    *)
        RC=0
        bad "a C block under '$heading' has no scaffolding in tests/cli_readme.sh"
        ;;
    esac
done

# "Using the library": the block's #include lines first, the rest as main's body with the data
# directory (the path given to rt_open) replaced by argv[1].
blk=${C_BLOCK['Using the library']:-}
if [ -z "$blk" ]; then
    RC=0
    bad "README's 'Using the library' C block is gone"
else
    {
        grep '^#include' "$blk"
        printf '#include <stdio.h>\n#include <stdlib.h>\n\nint main(int argc, char **argv)\n{\n    (void)argc;\n'
        grep -v '^#include' "$blk" | sed -E 's#rt_open\("[^"]*"#rt_open(argv[1]#'
        printf '    return 0;\n}\n'
    } >"$T/lib.c"
    check "the 'Using the library' block opens a data directory given as a string" grep -q 'rt_open(argv\[1\]' "$T/lib.c"
    build lib "$T/lib.c"
    expect "the 'Using the library' block compiles against the installed library" 0
fi
if [ -n "$blk" ] && [ -x "$T/lib" ]; then
    runc "$T/lib" "$T/libdata"
    expect "... runs" 0
    check "... prints the record it appended (0: hello)" test "$(cat "$T/out")" = "0: hello"
    runc "$T/lib" "$T/libdata"
    expect "... runs a second time (the topic exists)" 0
    check "... and then prints both records" test "$(cat "$T/out")" = "$(printf '0: hello\n1: hello')"
    run verify "$T/libdata"
    expect "... the directory it wrote verifies" 0 "healthy"
fi

# "Transactions": main opens the engine on argv[1] and gives the block what it uses but does not
# define: e, msg (one record), offsets and n (one consumed offset). Afterwards it prints the
# group's committed offset.
blk=${C_BLOCK['Transactions']:-}
if [ -z "$blk" ]; then
    RC=0
    bad "README's 'Transactions' C block is gone"
else
    topic=$(sed -nE 's/.*rt_producer_send\(p, "([^"]+)".*/\1/p' "$blk")
    group=$(sed -nE 's/.*rt_producer_send_offsets\(p, "([^"]+)".*/\1/p' "$blk")
    txn_id=$(sed -nE 's/.*transactional_id = "([^"]+)".*/\1/p' "$blk")
    {
        printf '#include <ringtail.h>\n#include <stdio.h>\n\nint main(int argc, char **argv)\n{\n'
        cat <<'EOF'
    struct rt_options opts;
    rt_options_init(&opts);
    rt_engine *e;
    if (argc != 4 || rt_open(argv[1], &opts, &e) != 0)
        return 1;
    if (rt_topic_create(e, argv[2], 3) != 0 || rt_topic_create(e, "input", 1) != 0)
        return 1;
    struct rt_producer_message msg = {
        .record = {.value = "enriched-1", .value_len = 10, .timestamp_ms = -1}, .sequence = -1};
    struct rt_offset offsets[] = {{.topic = "input", .partition = 0, .offset = 42}};
    size_t n = 1;
EOF
        cat "$blk"
        cat <<'EOF'
    int64_t committed = -1;
    int rc_fetch = rt_group_fetch_offsets(e, argv[3], "input", 0, true, &committed);
    printf("committed offset %lld (%d)\n", (long long)committed, rc_fetch);
    rt_producer_close(p);
    rt_close(e);
    return 0;
}
EOF
    } >"$T/txn.c"
    build txn "$T/txn.c"
    expect "the 'Transactions' block compiles against the installed library" 0
fi
if [ -n "$blk" ] && [ -x "$T/txn" ]; then
    runc "$T/txn" "$T/txndata" "$topic" "$group"
    expect "... runs" 0
    check "... commits the consumed offset for '$group' with the transaction" \
        grep -qx "committed offset 42 (0)" "$T/out"
    run consume "$T/txndata" "$topic" --isolation read_committed
    check "... its record is committed (read_committed serves it once)" test "$(cat "$T/out")" = "enriched-1"
    run txn list "$T/txndata" --all
    check "... the coordinator holds '$txn_id' as CompleteCommit" grep -qE "^$txn_id	.*CompleteCommit" "$T/out"
    run verify "$T/txndata"
    expect "... the directory it wrote verifies" 0 "healthy"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
