#!/usr/bin/env bash
# conformance.sh — librdkafka's own test suite against `ringtail serve`, as our conformance run
# (issue 20 item 8). It
#   1. gets librdkafka's source from Debian's source package of the installed librdkafka (the
#      version `dpkg-query` names): when apt has no deb-src entry yet, it adds one derived from
#      the machine's own apt sources (/etc/apt/sources.list.d/debian.sources or
#      /etc/apt/sources.list: the same URIs, suites and components, type deb-src; no host is
#      named here), runs apt-get update and `apt-get source` into build/conformance/src;
#   2. builds the suite's test-runner from its tests/ sources (config.h from the source's
#      ./configure) against Debian's librdkafka: it links -lrdkafka++ -lrdkafka from the system,
#      and ldd must show the system's librdkafka.so.1;
#   3. starts a fresh `ringtail serve` on a free 127.0.0.1 port over a new data directory, with
#      what a single-broker test cluster needs (auto-create, 4 partitions per auto-created topic
#      as the suite's trivup clusters use, replication factors accepted, small segments, --sync
#      none: the suite tests the protocol, not fsync), and writes the test.conf the suite reads
#      (bootstrap.servers); TEST_KAFKA_VERSION=2.4.0 (3.0.0 for 0081_admin). Tests of the
#      suite's noautocreate scenario run against a second such broker with
#      --auto-create-topics false, and
#      0135_sasl_credentials against a third with a SASL_PLAINTEXT listener (SCRAM-SHA-512, one
#      user made by `ringtail user add`), and 0097_ssl_verify against a fourth with an SSL
#      listener requiring client certificates (tls_certs.sh's, the client's in PEM, DER and
#      PKCS#12 as trivup's SSL_* variables name them), and 0081_admin, 0109, 0115 and 0119
#      against a fifth with --authorizer on (allow.everyone.if.no.acl.found, as trivup's);
#      tests of other scenarios are reported as skipped;
#   4. runs every broker-facing test (the runner's -L leaves out the local ones), one test
#      number at a time with a per-test timeout, restarting the broker if a test killed it;
#      the tests that run Kafka's kafka-topics.sh or kafka-acls.sh get ours (KAFKA_PATH=
#      tests/conformance/kafka_path: confluent-kafka's AdminClient, and CreateAcls/DeleteAcls/
#      DescribeAcls written by hand, when /usr/bin/python3 has confluent-kafka);
#   5. prints a per-test table (passed / failed / skipped, and why) and compares it with
#      tests/conformance/expected.txt: any difference fails the run, a test that newly passes
#      included (so expected.txt gets updated). The last line is "N passed, M failed" where a
#      test counts as passed when its outcome is the expected one.
#
# Cluster mode (--cluster; issue 25 item 4): instead of step 3's single brokers, three
# `ringtail serve --voters` nodes on free 127.0.0.1 ports (node ids 1-3, --threads 1, the same
# topic options as the single broker, topics created without a replication factor, the
# auto-created ones included, on all three: --default-replication-factor 3, as the suite's
# 0008 asks; --sync none), bootstrap.servers listing all three; the
# run waits until every node lists the three brokers and `__transaction_state` and
# `__consumer_offsets` have leaders. It runs the tests listed in
# tests/conformance/expected-cluster.txt (the suite's transaction, idempotence and
# multi-broker tests, and the group and offset tests; --tests narrows them) and compares with
# that file; a node that died is restarted over its directory; afterwards `ringtail cluster
# check --prefix` over the three stopped nodes' directories (each one's first once) is the
# verify step. Its run directory is build/conformance/run-cluster.
# RT_CONFORMANCE_RUN=DIR sets the run directory; RT_CONFORMANCE_DEBUG=eos,protocol,... adds
# librdkafka's debug contexts to the tests' clients (both modes).
#
# usage: tools/conformance.sh [--cluster] [--subset ci] [--tests 0001,0082,...]
#                             [--ringtail PATH] [--timeout SECONDS] [--quick] [--table FILE]
#                             [--no-compare]
#   --cluster     three `ringtail serve --voters` nodes, expected-cluster.txt (above)
#   --subset ci   the transaction, idempotence, offset and group tests that CI runs
#                 (tools/test.sh; the ones marked "ci" in expected.txt, or in
#                 expected-cluster.txt with --cluster)
#   --tests LIST  only these test numbers
#   --ringtail P  the ringtail binary (build/release/ringtail)
#   --timeout S   per-test timeout (300, 0081_admin at least 600; the runner's own timeouts
#                 usually fire first)
#   --quick       the runner's -Q (fewer iterations, less data; beware: it also skips every
#                 SUB_TEST() that is not SUB_TEST_QUICK(), so many tests then pass doing
#                 nothing; expected.txt describes a run without it)
#   --table FILE  also write the table (markdown) to FILE
#   --no-compare  print the table only; exit 0 unless the run itself could not be made
# Needs root (or sudo) only to add the deb-src entry and run apt-get; the rest runs as anyone.
# Exit: 0 when every test had its expected outcome, 1 otherwise, 2 usage, 3 set-up failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE=$ROOT/build/conformance
EXPECTED=$ROOT/tests/conformance/expected.txt
RT=$ROOT/build/release/ringtail
SUBSET=
ONLY=
TIMEOUT=300
QUICK=
TABLE=
COMPARE=1
CLUSTER=
while [ $# -gt 0 ]; do
    case $1 in
    --subset) SUBSET=${2:?}; shift 2 ;;
    --tests) ONLY=${2:?}; shift 2 ;;
    --ringtail) RT=$(realpath "${2:?}"); shift 2 ;;
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --quick) QUICK=-Q; shift ;;
    --table) TABLE=$(realpath -m "${2:?}"); shift 2 ;;
    --no-compare) COMPARE=; shift ;;
    --cluster) CLUSTER=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "conformance: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$CLUSTER" ] && EXPECTED=$ROOT/tests/conformance/expected-cluster.txt
if [ -n "$SUBSET" ] && [ "$SUBSET" != ci ]; then
    echo "conformance: --subset takes ci" >&2
    exit 2
fi
[ -x "$RT" ] || { echo "conformance: no ringtail binary at $RT (build it first)" >&2; exit 3; }
die() { echo "conformance: $*" >&2; exit 3; }
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo

# ---- 1. librdkafka's source, from Debian's source package ----------------------------------
VERSION=$(dpkg-query -W -f='${Version}' librdkafka-dev 2>/dev/null) ||
    die "librdkafka-dev is not installed (tools/setup.sh installs it)"
UPSTREAM=${VERSION%-*}
UPSTREAM=${UPSTREAM#*:}
SRC=$CACHE/src/librdkafka-$UPSTREAM

# The deb-src twin of every deb entry of the machine's apt sources, on stdout.
derive_deb_src_822() {
    [ -f /etc/apt/sources.list.d/debian.sources ] || return 0
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb([ \n]|$)/ && !/Types:[^\n]*deb-src/ {
             sub(/Types:[^\n]*/, "Types: deb-src"); print }' /etc/apt/sources.list.d/debian.sources
}
derive_deb_src_list() {
    [ -f /etc/apt/sources.list ] || return 0
    sed -n 's/^[[:space:]]*deb[[:space:]]\+/deb-src /p' /etc/apt/sources.list
}
have_deb_src() {
    grep -rqsE '^[[:space:]]*(Types:.*deb-src|deb-src[[:space:]])' /etc/apt/sources.list \
        /etc/apt/sources.list.d/
}

if [ ! -f "$SRC/tests/test.c" ]; then
    command -v dpkg-source >/dev/null || die "dpkg-source missing (apt-get install dpkg-dev)"
    if ! have_deb_src; then
        echo "conformance: adding deb-src entries derived from the apt sources"
        src822=$(derive_deb_src_822)
        srclist=$(derive_deb_src_list)
        [ -z "$src822" ] ||
            echo "$src822" | $SUDO tee /etc/apt/sources.list.d/ringtail-deb-src.sources >/dev/null
        [ -z "$srclist" ] ||
            echo "$srclist" | $SUDO tee /etc/apt/sources.list.d/ringtail-deb-src.list >/dev/null
        have_deb_src || die "no deb entries in the apt sources to derive deb-src entries from"
        $SUDO apt-get update -qq || die "apt-get update failed"
    fi
    mkdir -p "$CACHE/src"
    (cd "$CACHE/src" && apt-get source -qq "librdkafka=$VERSION" >"$CACHE/apt-source.log" 2>&1) || {
        # The lists may predate the deb-src entry.
        $SUDO apt-get update -qq
        (cd "$CACHE/src" && apt-get source -qq "librdkafka=$VERSION" >"$CACHE/apt-source.log" 2>&1)
    } || die "apt-get source librdkafka=$VERSION failed: $(tail -3 "$CACHE/apt-source.log")"
    [ -f "$SRC/tests/test.c" ] || die "the source package has no tests/test.c under $SRC"
fi

# ---- 2. test-runner, against Debian's librdkafka -----------------------------------------------
RUNNER=$CACHE/test-runner
if [ ! -x "$RUNNER" ] || [ "$SRC/tests/test.c" -nt "$RUNNER" ]; then
    echo "conformance: building librdkafka $UPSTREAM's test-runner against the system library"
    if [ ! -f "$SRC/config.h" ]; then
        (cd "$SRC" && ./configure --prefix=/usr >"$CACHE/configure.log" 2>&1) ||
            die "librdkafka's ./configure failed: see $CACHE/configure.log"
    fi
    OBJ=$CACHE/obj
    rm -rf "$OBJ"
    mkdir -p "$OBJ"
    jobs=$(nproc)
    (cd "$SRC/tests" && ls [08]*-*.c test.c rusage.c sockem.c sockem_ctrl.c \
        ../src/tinycthread.c ../src/tinycthread_extra.c ../src/rdlist.c |
        xargs -P"$jobs" -I{} sh -c 'gcc -g -O1 -w -I../src -I.. -c "{}" \
            -o "'"$OBJ"'/$(basename "{}" .c).o" || echo "FAILED {}"') >"$CACHE/build.log" 2>&1
    (cd "$SRC/tests" && ls [08]*-*.cpp testcpp.cpp |
        xargs -P"$jobs" -I{} sh -c 'g++ -g -O1 -w -I../src -I../src-cpp -I.. -c "{}" \
            -o "'"$OBJ"'/$(basename "{}" .cpp).oo" || echo "FAILED {}"') >>"$CACHE/build.log" 2>&1
    grep -q FAILED "$CACHE/build.log" && die "compiling the tests failed: see $CACHE/build.log"
    g++ -rdynamic -o "$RUNNER" "$OBJ"/*.o "$OBJ"/*.oo -lrdkafka++ -lrdkafka -lpthread -lm -ldl \
        -lrt >>"$CACHE/build.log" 2>&1 || die "linking test-runner failed: see $CACHE/build.log"
fi
# Captured first: under pipefail, grep -q closing the pipe early can fail the pipeline (SIGPIPE).
runner_libs=$(ldd "$RUNNER")
grep -Eq 'librdkafka\.so\.1 => /(usr/)?lib/' <<<"$runner_libs" ||
    die "test-runner does not load the system's librdkafka.so.1: $(grep rdkafka <<<"$runner_libs")"

# ---- the tests: every broker-facing one (not TEST_F_LOCAL, not manual) ----------------------------
# One line per test: NAME FLAGS SCENARIO (from the tests[] table of test.c).
LIST=$CACHE/tests.txt
python3 - "$SRC/tests/test.c" >"$LIST" <<'EOF' || die "cannot read the test table of test.c"
import re, sys
src = open(sys.argv[1], encoding="utf-8", errors="replace").read()
table = src[src.index("struct test tests[] = {"):]
table = table[:table.index("\n};")]
for chunk in table.split("_TEST(")[1:]:
    m = re.match(r"\s*(\w+)\s*,\s*([^,)]*)", chunk)
    if not m:
        continue
    name, flags = m.group(1), re.sub(r"\s+", "", m.group(2))
    if "TEST_F_LOCAL" in flags or "TEST_F_MANUAL" in flags or not re.match(r"\d{4}_", name):
        continue
    sc = re.search(r'\.scenario\s*=\s*"(\w+)"', chunk.split("_TEST(")[0])
    print(name, flags or "0", sc.group(1) if sc else "default")
EOF
if [ "$SUBSET" = ci ]; then
    [ -f "$EXPECTED" ] || die "no $EXPECTED to take the ci subset from"
    ONLY=$(awk '$0 !~ /^#/ && $3 == "ci" { sub(/_.*/, "", $1); print $1 }' "$EXPECTED" |
        sort -u | paste -sd, -)
    [ -n "$ONLY" ] || die "expected.txt marks no test ci"
elif [ -n "$CLUSTER" ]; then
    # The cluster run's tests are those expected-cluster.txt lists (--tests narrows them).
    [ -f "$EXPECTED" ] || die "no $EXPECTED to take the cluster run's tests from"
    listed=$(awk '$0 !~ /^#/ && NF { sub(/_.*/, "", $1); print $1 }' "$EXPECTED" | sort -u)
    if [ -n "$ONLY" ]; then
        ONLY=$(echo "$ONLY" | tr ',' '\n' | grep -xF -f <(echo "$listed") | paste -sd, -)
    else
        ONLY=$(echo "$listed" | paste -sd, -)
    fi
    [ -n "$ONLY" ] || die "none of the tests named is in expected-cluster.txt"
fi
NUMBERS=$(cut -d_ -f1 "$LIST" | sort -u)
# A test whose scenario is not the default one runs against a broker configured for it:
# noautocreate is a second broker with --auto-create-topics false; other scenarios are not run.
if [ -n "$ONLY" ]; then
    NUMBERS=$(echo "$NUMBERS" | grep -xF -f <(echo "$ONLY" | tr ',' '\n'))
fi
[ -n "$NUMBERS" ] || die "no test selected"

# ---- 3. a fresh broker ------------------------------------------------------------------------
RUN=${RT_CONFORMANCE_RUN:-$CACHE/run${CLUSTER:+-cluster}} # the run's directory (data, logs, results)
rm -rf "$RUN"
mkdir -p "$RUN/logs" "$RUN/cwd"
# The runner works in $RUN/cwd: 0053_stats reads its JSON schema from the hard-coded path
# ../src/statistics_schema.json, which $RUN/src (the source's src/) answers.
ln -s "$SRC/src" "$RUN/src"
SERVE_PID=
cleanup() {
    local pid
    for pid in $SERVE_PID $NOAUTO_PID ${SASL_PID:-} ${SSL_PID:-} ${ACL_PID:-} \
        ${NODE_PIDS[1]:-0} ${NODE_PIDS[2]:-0} ${NODE_PIDS[3]:-0}; do
        [ "$pid" = 0 ] && continue
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
SERVE_ARGS=(--listen "127.0.0.1:$PORT" --num-partitions 4 --auto-create-topics true
    --accept-replication-factor --segment-bytes 2097152 --sync none)
NOAUTO_PID=
NOAUTO_PORT=
# serve_run LOG DIR ARGS...: starts a broker, waits for its listening line; sets LAST_PID.
serve_run() {
    local log=$1 dir=$2 mark
    shift 2
    : >>"$log"
    mark=$(grep -c "listening on" "$log")
    "$RT" serve "$dir" "$@" >>"$log" 2>&1 &
    LAST_PID=$!
    for _ in $(seq 1 200); do
        [ "$(grep -c "listening on" "$log")" -gt "${mark:-0}" ] && return 0
        kill -0 "$LAST_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "ringtail serve did not start: $(tail -5 "$log")"
}
serve_start() {
    serve_run "$RUN/serve.log" "$RUN/data" "${SERVE_ARGS[@]}"
    SERVE_PID=$LAST_PID
}
noauto_start() {
    [ -n "$NOAUTO_PORT" ] || NOAUTO_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    serve_run "$RUN/serve-noautocreate.log" "$RUN/data-noautocreate" \
        --listen "127.0.0.1:$NOAUTO_PORT" --num-partitions 4 --auto-create-topics false \
        --accept-replication-factor --segment-bytes 2097152 --sync none
    NOAUTO_PID=$LAST_PID
    printf 'bootstrap.servers=127.0.0.1:%s\ntest.timeout.multiplier=2\n' "$NOAUTO_PORT" \
        >"$RUN/test-noautocreate.conf"
}
# SASL (issue 23): the tests that need sasl.* in test.conf (0135_sasl_credentials) run against a
# third broker with a SASL_PLAINTEXT listener and one SCRAM-SHA-512 user made by `ringtail user`.
SASL_PID=
SASL_PORT=
sasl_start() {
    [ -n "$SASL_PORT" ] || SASL_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$RUN/data-sasl"
    printf 'conformance-secret\n' >"$RUN/sasl.pw"
    "$RT" user add "$RUN/data-sasl" --name conformance --mechanism SCRAM-SHA-512 \
        --password-file "$RUN/sasl.pw" >/dev/null || die "ringtail user add failed"
    serve_run "$RUN/serve-sasl.log" "$RUN/data-sasl" \
        --listeners "SASL_PLAINTEXT://127.0.0.1:$SASL_PORT" --sasl-mechanisms SCRAM-SHA-512 \
        --num-partitions 4 --auto-create-topics true --accept-replication-factor \
        --segment-bytes 2097152 --sync none
    SASL_PID=$LAST_PID
    printf 'bootstrap.servers=127.0.0.1:%s\ntest.timeout.multiplier=2\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=conformance\nsasl.password=conformance-secret\n' \
        "$SASL_PORT" >"$RUN/test-sasl.conf"
}
# SSL (issue 23): the tests that need ssl.* in test.conf and trivup's SSL_* environment
# (0097_ssl_verify) run against a fourth broker with an SSL listener that requires client
# certificates; the certificates are tests/helpers/tls_certs.sh's (openssl CLI), and the client's
# in every encoding the test loads (PEM with its key encrypted by SSL_password, DER, PKCS#12).
SSL_PID=
SSL_PORT=
SSL_ENV=()
ssl_start() {
    [ -n "$SSL_PORT" ] || SSL_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    local c=$RUN/certs pw=conformance-ssl
    if [ ! -f "$c/client.p12" ]; then
        bash "$ROOT/tests/helpers/tls_certs.sh" "$c" || die "tls_certs.sh failed"
        openssl pkey -in "$c/client.key" -aes256 -passout "pass:$pw" -out "$c/client.enc.key" &&
            openssl x509 -in "$c/client.pem" -outform DER -out "$c/client.der" &&
            openssl pkey -in "$c/client.key" -outform DER -out "$c/client.key.der" &&
            openssl x509 -in "$c/ca.pem" -outform DER -out "$c/ca.der" &&
            cat "$c/ca.pem" "$c/wrongca.pem" >"$c/all_cas.pem" &&
            openssl pkcs12 -export -in "$c/client.pem" -inkey "$c/client.key" \
                -certfile "$c/ca.pem" -passout "pass:$pw" -out "$c/client.p12" ||
            die "openssl could not make the client's encodings"
    fi
    serve_run "$RUN/serve-ssl.log" "$RUN/data-ssl" \
        --listeners "SSL://127.0.0.1:$SSL_PORT" --ssl-cert-pem "$c/server.pem" \
        --ssl-key-pem "$c/server.key" --ssl-ca-pem "$c/ca.pem" --ssl-client-auth required \
        --num-partitions 4 --auto-create-topics true --accept-replication-factor \
        --segment-bytes 2097152 --sync none
    SSL_PID=$LAST_PID
    printf 'bootstrap.servers=127.0.0.1:%s\ntest.timeout.multiplier=2\nsecurity.protocol=SSL\nssl.ca.location=%s\nssl.certificate.location=%s\nssl.key.location=%s\nssl.key.password=%s\n' \
        "$SSL_PORT" "$c/ca.pem" "$c/client.pem" "$c/client.enc.key" "$pw" >"$RUN/test-ssl.conf"
    SSL_ENV=("SSL_password=$pw" "SSL_pkcs=$c/client.p12" "SSL_pub_der=$c/client.der"
        "SSL_priv_der=$c/client.key.der" "SSL_pub_pem=$c/client.pem"
        "SSL_priv_pem=$c/client.enc.key" "SSL_ca_der=$c/ca.der" "SSL_all_cas_pem=$c/all_cas.pem"
        "SSL_ca_pem=$c/ca.pem")
}
# ACLs (issue 23): 0081_admin's CreateAcls/DescribeAcls/DeleteAcls steps, and the tests that
# deny themselves a topic with kafka-acls.sh (0109, 0115, 0119: our kafka_acls.py shim), need a
# broker with an authorizer; they run against a fifth broker with --authorizer on and Kafka's
# allow.everyone.if.no.acl.found=true (what trivup's test clusters set), so the ACLs they make
# name only their own topics and cannot deny the other tests anything.
ACL_PID=
ACL_PORT=
acl_start() {
    [ -n "$ACL_PORT" ] || ACL_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    serve_run "$RUN/serve-acl.log" "$RUN/data-acl" --listen "127.0.0.1:$ACL_PORT" \
        --authorizer on --allow-everyone-if-no-acl-found true --num-partitions 4 \
        --auto-create-topics true --accept-replication-factor --segment-bytes 2097152 --sync none
    ACL_PID=$LAST_PID
    printf 'bootstrap.servers=127.0.0.1:%s\ntest.timeout.multiplier=2\n' "$ACL_PORT" \
        >"$RUN/test-acl.conf"
}
# Cluster mode (--cluster): three `ringtail serve --voters` nodes (node ids 1-3), started as
# tests/helpers/cluster_nodes.sh starts them, with the single broker's topic options; NODE_PIDS
# holds their pids, node_start I (re)starts node I over $RUN/nI.
NODE_PIDS=(0 0 0 0)
cluster_start_node() {
    local i=$1 c="CPORT$1" k="KPORT$1"
    serve_run "$RUN/n$i.log" "$RUN/n$i" --listen "127.0.0.1:${!k}" --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!c}" --voters "$VOTERS" --num-partitions 4 \
        --default-replication-factor 3 --auto-create-topics true --segment-bytes 2097152 \
        --sync none
    NODE_PIDS[$i]=$LAST_PID
}
# Ready: each node lists the three brokers, and __consumer_offsets and __transaction_state have
# leaders (the controller creates them once the nodes registered; txn_cluster.c KTC1).
cluster_ready() {
    local i st
    for i in 1 2 3; do
        local k="KPORT$i"
        st=$("$RT" cluster status --bootstrap "127.0.0.1:${!k}" 2>/dev/null) || return 1
        [ "$(awk -F'\t' '$1 == "node" && $4 == "unfenced"' <<<"$st" | wc -l)" = 3 ] || return 1
        awk -F'\t' '$1 == "partition" && $2 == "__transaction_state" && $5 != -1 { t = 1 }
            $1 == "partition" && $2 == "__consumer_offsets" && $5 != -1 { o = 1 }
            END { exit !(t && o) }' <<<"$st" || return 1
    done
}
cluster_wait_ready() {
    for _ in $(seq 1 600); do
        cluster_ready && return 0
        sleep 0.1
    done
    die "the three nodes did not become ready: $(tail -3 "$RUN/n1.log")"
}
if [ -n "$CLUSTER" ]; then
    read -r CPORT1 CPORT2 CPORT3 KPORT1 KPORT2 KPORT3 <<<"$(python3 -c '
import socket
ss = [socket.socket() for _ in range(6)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
    VOTERS="1@127.0.0.1:$CPORT1,2@127.0.0.1:$CPORT2,3@127.0.0.1:$CPORT3"
    for i in 1 2 3; do cluster_start_node "$i"; done
    cluster_wait_ready
    PORT=$KPORT1
    BOOTSTRAP=127.0.0.1:$KPORT1,127.0.0.1:$KPORT2,127.0.0.1:$KPORT3
else
    serve_start
    BOOTSTRAP=127.0.0.1:$PORT
fi
printf 'bootstrap.servers=%s\ntest.timeout.multiplier=2\n' "$BOOTSTRAP" >"$RUN/test.conf"
# RT_CONFORMANCE_DEBUG=eos,protocol,...: librdkafka's debug contexts for the tests' clients
# (their logs then show every request and its error; for investigating a failure).
[ -n "${RT_CONFORMANCE_DEBUG:-}" ] && printf 'debug=%s\n' "$RT_CONFORMANCE_DEBUG" >>"$RUN/test.conf"
echo "conformance: librdkafka $UPSTREAM's suite against ${CLUSTER:+a three-node }ringtail" \
    "serve on $BOOTSTRAP ($(echo "$NUMBERS" | wc -l) test numbers${QUICK:+, quick mode}," \
    "timeout ${TIMEOUT}s each)"

# ---- 4. one test number at a time -----------------------------------------------------------------
# The tests that run Kafka's kafka-topics.sh (test.c's test_kafka_topics) get ours instead:
# KAFKA_PATH=tests/conformance/kafka_path, whose bin/kafka-topics.sh is kafka_topics.py
# (confluent-kafka's AdminClient), with ZK_ADDRESS/BROKERS naming the test's broker. Without
# Debian's python3-confluent-kafka, KAFKA_PATH stays unset and those tests fail as they would.
KAFKA_TOOLS=
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null && KAFKA_TOOLS=$ROOT/tests/conformance/kafka_path
RESULTS=$RUN/results.txt
: >"$RESULTS"
PAIRS=$(for num in $NUMBERS; do awk -v n="$num" 'index($1, n "_") == 1 { print n ":" $3 }' "$LIST"; done | sort -u)
for pair in $PAIRS; do
    num=${pair%%:*}
    scenario=${pair#*:}
    log=$RUN/logs/$num.log
    conf=test.conf
    pid_var=SERVE_PID
    if [ -n "$CLUSTER" ]; then
        : # every test of the cluster run runs against the three nodes
    elif [ "$scenario" != default ]; then
        log=$RUN/logs/$num-$scenario.log
        if [ "$scenario" != noautocreate ]; then
            awk -v n="$num" -v s="$scenario" 'index($1, n "_") == 1 && $3 == s {
                printf "%s\tskip\t0\tneeds the %s scenario: not run by this script\n", $1, s }' \
                "$LIST" | tee -a "$RESULTS" | awk -F'\t' '{ printf "  %-40s %-5s %4ss  %s\n", $1, $2, $3, $4 }'
            continue
        fi
        [ -n "$NOAUTO_PID" ] || noauto_start
        conf=test-noautocreate.conf
        pid_var=NOAUTO_PID
    elif [ "$num" = 0135 ]; then # SASL credentials: the SASL broker
        [ -n "$SASL_PID" ] || sasl_start
        conf=test-sasl.conf
        pid_var=SASL_PID
    elif [[ "$num" =~ ^(0081|0109|0115|0119)$ ]]; then # ACLs: the broker with an authorizer
        [ -n "$ACL_PID" ] || acl_start
        conf=test-acl.conf
        pid_var=ACL_PID
    elif [ "$num" = 0097 ]; then # SSL verification: the SSL broker and trivup's SSL_* variables
        [ -n "$SSL_PID" ] || ssl_start
        conf=test-ssl.conf
        pid_var=SSL_PID
    fi
    addr=127.0.0.1:$PORT
    [ -n "$CLUSTER" ] && addr=$BOOTSTRAP
    [ "$pid_var" = NOAUTO_PID ] && addr=127.0.0.1:$NOAUTO_PORT
    [ "$pid_var" = ACL_PID ] && addr=127.0.0.1:$ACL_PORT
    tools_env=()
    [ -n "$KAFKA_TOOLS" ] && tools_env=("KAFKA_PATH=$KAFKA_TOOLS" "ZK_ADDRESS=$addr" "BROKERS=$addr")
    [ "$pid_var" = SSL_PID ] && tools_env+=("${SSL_ENV[@]}")
    # 0081_admin is told the broker is Kafka 3.0.0: its one version gate between 2.4 and 3.x
    # is AlterConfigs of a topic that does not exist, which Kafka >= 2.7 answers
    # UNKNOWN_TOPIC_OR_PART as ringtail does (Kafka 3.x's answer), older Kafka UNKNOWN (-1).
    # Its two halves (producer, consumer) take about 240 s here, mostly group steps: it gets
    # at least 600 s, so a loaded machine does not turn a pass into a timeout.
    kver=2.4.0
    tmo=$TIMEOUT
    if [ "$num" = 0081 ]; then
        kver=3.0.0
        [ "$tmo" -lt 600 ] && tmo=600
    fi
    start=$(date +%s)
    (cd "$RUN/cwd" && env TESTS="$num" TEST_SCENARIO="$scenario" TEST_KAFKA_VERSION=$kver \
        RDKAFKA_TEST_CONF="$RUN/$conf" "${tools_env[@]}" \
        timeout -k 10 "$tmo" "$RUNNER" -L -p1 $QUICK >"$log" 2>&1) 2>/dev/null
    rc=$?
    took=$(($(date +%s) - start))
    died=
    if [ -n "$CLUSTER" ]; then
        for i in 1 2 3; do
            kill -0 "${NODE_PIDS[$i]}" 2>/dev/null && continue
            died=1
            wait "${NODE_PIDS[$i]}" 2>/dev/null
            echo "conformance: node $i died during $num; restarting it" >&2
            cluster_start_node "$i"
        done
        [ -n "$died" ] && cluster_wait_ready
    elif ! kill -0 "${!pid_var}" 2>/dev/null; then
        died=1
        wait "${!pid_var}" 2>/dev/null
        echo "conformance: the broker died during $num; restarting it" >&2
        case $pid_var in
        SERVE_PID) serve_start ;;
        SASL_PID) sasl_start ;;
        SSL_PID) ssl_start ;;
        ACL_PID) acl_start ;;
        *) noauto_start ;;
        esac
    fi
    python3 - "$LIST" "$num" "$log" "$rc" "$took" "$died" "$scenario" >>"$RESULTS" <<'EOF'
import re, sys
lst, num, log, rc, took, died, scenario = sys.argv[1:8]
names = [l.split()[0] for l in open(lst)
         if l.startswith(num + "_") and l.split()[2] == scenario]
text = re.sub(r"\x1b\[[0-9;]*m", "", open(log, errors="replace").read())
rows = {}
for m in re.finditer(r"^\|[ \t]*(\d{4}_\S+)[ \t]*\|[ \t]*(\w+)[ \t]*\|[ \t]*[\d.]+s[ \t]*\|([^\n]*)$", text, re.M):
    rows[m.group(1)] = (m.group(2), m.group(3).strip())
fails = re.findall(r"### Test \"?[^\n]*?\"? failed at ([^\n]*?) ###\n?([^\n]*)", text)
for name in names:
    state, why = rows.get(name, (None, ""))
    if state is None:
        if rc in ("124", "137"):
            state, why = "FAILED", "timeout after %ss" % took
        else:
            state = "FAILED"
            why = "exit %s%s" % (rc, (": " + fails[0][1].strip() + " (" +
                                       fails[0][0].split(" at ")[0] + ")") if fails else "")
    if state not in ("PASSED", "FAILED", "SKIPPED"):
        state, why = "FAILED", "state %s%s" % (state, (": " + why) if why else "")
    if died:
        why = (why + "; " if why else "") + "the broker died"
    why = re.sub(r"\s+", " ", why)[:160]
    print("%s\t%s\t%s\t%s" % (name, state.lower().replace("passed", "pass")
                                .replace("failed", "fail").replace("skipped", "skip"), took, why))
EOF
    tail -n "$(awk -v n="$num" -v s="$scenario" 'index($1, n "_") == 1 && $3 == s' "$LIST" | wc -l)" "$RESULTS" |
        awk -F'\t' '{ printf "  %-40s %-5s %4ss  %s\n", $1, $2, $3, $4 }'
done
cleanup
SERVE_PID=
NOAUTO_PID=
NODE_PIDS=(0 0 0 0)
VERIFY=clean
# Cluster: the replicas of every partition agree (a follower may be behind: --prefix). The
# check lists the first directory's topics, so it runs three times, each node's directory first
# once. A partition with fewer than three replicas (a test's own replication factor 1) is
# "missing" in the nodes that do not replicate it, which is right; any other row but identical
# or consistent (differ@OFFSET), or the check failing to read a directory, is not.
if [ -n "$CLUSTER" ]; then
    : >"$RUN/verify.log"
    for order in "1 2 3" "2 3 1" "3 1 2"; do
        set -- $order
        "$RT" cluster check --prefix "$RUN/n$1" "$RUN/n$2" "$RUN/n$3" >>"$RUN/verify.log" 2>&1
        [ $? -le 1 ] || VERIFY="not clean (ringtail cluster check failed: see $RUN/verify.log)"
    done
    awk -F'\t' '$1 == "partition" && $4 !~ /^(identical|consistent|missing)$/ { bad++ }
        $1 != "partition" { bad++ } END { exit bad > 0 }' "$RUN/verify.log" ||
        VERIFY="not clean (ringtail cluster check --prefix: see $RUN/verify.log)"
fi
for d in "$RUN/data" "$RUN/data-noautocreate"; do
    [ -d "$d" ] || continue
    "$RT" verify "$d" >>"$RUN/verify.log" 2>&1 || VERIFY="not clean (see $RUN/verify.log)"
done

# ---- 5. the table, and the comparison with expected.txt ------------------------------------------
python3 - "$RESULTS" "$EXPECTED" "${TABLE:-}" "$COMPARE" "$VERIFY" "$UPSTREAM" <<'EOF'
import sys
results, expected_path, table, compare, verify, version = sys.argv[1:7]
got = [l.rstrip("\n").split("\t") for l in open(results) if l.strip()]
expected = {}
try:
    for line in open(expected_path):
        if not line.strip() or line.startswith("#"):
            continue
        head, _, reason = line.partition("#")
        f = head.split()
        expected[f[0]] = (f[1], reason.strip())
except FileNotFoundError:
    pass
counts = {"pass": 0, "fail": 0, "skip": 0}
rows, diffs, matched = [], [], 0
for name, outcome, took, why in got:
    counts[outcome] += 1
    exp = expected.get(name)
    note = exp[1] if exp and exp[0] == outcome and outcome != "pass" else ""
    # "flaky": a test whose outcome depends on timing the broker does not control; either
    # pass or fail matches (its reason says why).
    if exp is not None and exp[0] == "flaky" and outcome in ("pass", "fail"):
        exp = (outcome, exp[1])
    if exp is not None and exp[0] == outcome:
        matched += 1
    if exp is None:
        diffs.append("%s: %s, not in expected.txt" % (name, outcome))
    elif exp[0] != outcome:
        if outcome == "pass":
            diffs.append("%s: newly passes (expected %s: %s) -- update expected.txt"
                         % (name, exp[0], exp[1]))
        else:
            diffs.append("%s: %s (%s), expected %s" % (name, outcome, why, exp[0]))
    rows.append((name, outcome, took, why, note))
print("\n%d tests: %d passed, %d failed, %d skipped; ringtail verify afterwards: %s"
      % (len(got), counts["pass"], counts["fail"], counts["skip"], verify))
if table:
    with open(table, "w") as t:
        t.write("| test | outcome | s | the runner's reason | expected.txt's reason |\n")
        t.write("| --- | --- | ---: | --- | --- |\n")
        for name, outcome, took, why, note in rows:
            t.write("| %s | %s | %s | %s | %s |\n" % (name, outcome, took,
                    why.replace("|", "/"), note.replace("|", "/")))
        t.write("\n%d tests: %d passed, %d failed, %d skipped (librdkafka %s); `ringtail verify` "
                "of the data directory afterwards: %s.\n"
                % (len(got), counts["pass"], counts["fail"], counts["skip"], version, verify))
if compare != "1":
    sys.exit(0)
if verify != "clean":
    diffs.append("ringtail verify of the data directory is not clean")
for d in diffs:
    print("DIFF " + d)
print("%d passed, %d failed" % (matched, len(diffs)))
sys.exit(1 if diffs else 0)
EOF
