#!/usr/bin/env bash
# cli_cluster_markers_acl.sh — WriteTxnMarkers needs CLUSTER_ACTION on the cluster when the
# authorizer is on (handle_txn_markers.c KTM1; docs/cluster.md §7.3): a one-voter cluster node
# with `--authorizer on` and no ACLs answers a marker CLUSTER_AUTHORIZATION_FAILED (31) and
# writes nothing; once `ringtail acl add` grants User:ANONYMOUS CLUSTER_ACTION on the cluster,
# the same request gets past the check (a topic no node has: UNKNOWN_TOPIC_OR_PARTITION, 3).
# A single broker (no --voters) refuses the API as an unknown version (KA8): the connection
# closes.
#
# usage: bash tests/cli_cluster_markers_acl.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_markers_acl.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cmacl-XXXXXX")
PID=0
cleanup() {
    if [ "$PID" != 0 ]; then kill -KILL "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; fi
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"
PY=/usr/bin/python3
. "$(dirname "$0")/helpers/cluster_ports.sh" # C1, K1, kport
HERE=$(cd "$(dirname "$0")/kafka" && pwd)

wait_for() {
    local end=$(( $(date +%s) + $1 )); shift
    until "$@"; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.2; done
}
marker() { # marker PORT TOPIC: the error code of one COMMIT marker, "None" when not answered
    $PY -c "
import sys; sys.path.insert(0, '$HERE')
import markers_wire
try:
    print(markers_wire.write_markers('127.0.0.1:$1', 1, 1000, 0, True, '$2', 0))
except OSError:
    print(None)" 2>&1
}

mkdir -p "$T/n1"
"$RT" serve "$T/n1" --listen "127.0.0.1:$K1" --threads 1 --node-id 1 \
    --controller-listen "127.0.0.1:$C1" --voters "1@127.0.0.1:$C1" --authorizer on \
    >>"$T/n1.out" 2>>"$T/n1.err" &
PID=$!
serving() { [ "$(marker "$K1" t)" != None ]; }
wait_for 30 serving || bad "the node never answered: $(tail -c 600 "$T/n1.err")"
got=$(marker "$K1" t)
[ "$got" = 31 ] && ok "no ACL: WriteTxnMarkers answered CLUSTER_AUTHORIZATION_FAILED" ||
    bad "no ACL: '$got'"
run acl add "$T/n1" --principal User:ANONYMOUS --operation CLUSTER_ACTION --cluster
[ "$RC" = 0 ] || bad "acl add: exit $RC: $(cat "$T/out" "$T/err" 2>/dev/null)"
granted() { [ "$(marker "$K1" no-such-topic)" = 3 ]; }
wait_for 10 granted && ok "CLUSTER_ACTION granted: past the check (UNKNOWN_TOPIC_OR_PARTITION)" ||
    bad "granted: '$(marker "$K1" no-such-topic)'"
kill -TERM "$PID"; wait "$PID"; rc=$?; PID=0
[ $rc = 0 ] || bad "node: exit $rc: $(tail -c 400 "$T/n1.err")"

mkdir -p "$T/single"
"$RT" serve "$T/single" --listen "127.0.0.1:$K2" --threads 1 >>"$T/s.out" 2>>"$T/s.err" &
PID=$!
up() { $PY -c "import socket; socket.create_connection(('127.0.0.1', $K2), 1)" 2>/dev/null; }
wait_for 20 up || bad "the single broker did not listen"
got=$(marker "$K2" t)
[ "$got" = None ] && grep -q "API version not supported" "$T/s.err" &&
    ok "a single broker refuses WriteTxnMarkers (connection closed, logged)" ||
    bad "single broker: '$got' // $(tail -c 300 "$T/s.err")"
kill -TERM "$PID"; wait "$PID"; rc=$?; PID=0
[ $rc = 0 ] || bad "single broker: exit $rc"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
