#!/usr/bin/env bash
# cli_cluster_txn_verify.sh — AddPartitionsToTxn v4 (KIP-890's VerifyOnly batches) is a cluster
# node's only (tools/kafka/handlers/txn_verify.c KTV5, api_table.c KA9; docs/cluster.md §7.3): a
# one-voter `ringtail serve --voters` node, a plain `ringtail serve`, and a one-voter node with
# `--authorizer on`; tests/kafka/txn_verify_wire.py (refusals) checks that ApiVersions advertises
# AddPartitionsToTxn 0-3 on the first two, that the single broker closes a v4 request, and that
# the node with the authorizer and no ACL answers v4 CLUSTER_AUTHORIZATION_FAILED. The
# coordinator's answers to v4 are cli_cluster_txn_verify_e2e.sh's (three nodes).
#
# usage: bash tests/cli_cluster_txn_verify.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_txn_verify.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-ctv-XXXXXX")
PIDS=(0 0 0)
cleanup() {
    for p in "${PIDS[@]}"; do
        if [ "$p" != 0 ]; then kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; fi
    done
    [ -n "${KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
HELP="$(cd "$(dirname "$0")" && pwd)/kafka/txn_verify_wire.py"

. "$(dirname "$0")/helpers/cluster_ports.sh" # C1-C3, K1-K3, kport
mkdir -p "$T/n1" "$T/single" "$T/n3"
"$RT" serve "$T/n1" --listen "127.0.0.1:$K1" --threads 1 --node-id 1 \
    --controller-listen "127.0.0.1:$C1" --voters "1@127.0.0.1:$C1" >"$T/n1.out" 2>"$T/n1.err" &
PIDS[0]=$!
"$RT" serve "$T/single" --listen "127.0.0.1:$K2" --threads 1 >"$T/s.out" 2>"$T/s.err" &
PIDS[1]=$!
"$RT" serve "$T/n3" --listen "127.0.0.1:$K3" --threads 1 --node-id 1 \
    --controller-listen "127.0.0.1:$C3" --voters "1@127.0.0.1:$C3" --authorizer on \
    >"$T/n3.out" 2>"$T/n3.err" &
PIDS[2]=$!

up() { # up PORT: the broker answers Metadata with itself as a broker
    kcat -L -m 3 -b "127.0.0.1:$1" 2>/dev/null | grep -q "^  broker "
}
wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done
}
if wait_for 30 up "$K1" && wait_for 30 up "$K2"; then ok "the brokers are up"; else
    RC=1; cp "$T/n1.err" "$T/err"; : >"$T/out"; bad "the brokers are up"; fi

if "$PY" "$HELP" refusals "$K1" "$K2" "$K3" >"$T/out" 2>"$T/err"; then RC=0; else RC=$?; fi
cat "$T/out"
if [ "$RC" = 0 ]; then ok "v4 on the wire (txn_verify_wire.py)"; else
    cat "$T/n1.err" >>"$T/err"; bad "v4 on the wire (txn_verify_wire.py)"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
