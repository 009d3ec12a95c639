#!/usr/bin/env bash
# cli_cluster_quorum.sh — `ringtail serve --node-id N --controller-listen HOST:PORT --voters ...`
# (issue 24's first block; docs/cluster.md): the options are validated (each bad combination a
# usage error naming it, exit 2); three serve processes form the metadata quorum and each logs
# the same leader; SIGKILL of the leader's process → the two others log a new leader; the killed
# node restarted on its directory rejoins and names a leader; SIGTERM stops each cleanly (exit 0).
# `ringtail verify` finds a member's directory healthy (__cluster_metadata/ is known to it).
# Without --voters nothing of the cluster appears: no __cluster_metadata/, no controller line.
#
# usage: bash tests/cli_cluster_quorum.sh /path/to/ringtail
set -u

RT=${1:?usage: cli_cluster_quorum.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-cluster-XXXXXX")
PIDS=(0 0 0 0)
cleanup() {
    for i in 1 2 3; do
        if [ "${PIDS[$i]}" != 0 ]; then kill -KILL "${PIDS[$i]}" 2>/dev/null; wait "${PIDS[$i]}" 2>/dev/null; fi
    done
    rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/helpers/cli_harness.sh"

ports=$(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r P1 P2 P3 <<<"$ports"
VOTERS="1@127.0.0.1:$P1,2@127.0.0.1:$P2,3@127.0.0.1:$P3"

# ---- the options
mkdir -p "$T/u"
run serve "$T/u" --listen 127.0.0.1:0 --node-id 1
expect "--node-id without --voters is a usage error" 2 "need --voters"
run serve "$T/u" --listen 127.0.0.1:0 --voters "$VOTERS"
expect "--voters without --node-id is a usage error" 2 "needs --node-id"
run serve "$T/u" --listen 127.0.0.1:0 --voters "$VOTERS" --node-id 4
expect "a --node-id outside the voters is a usage error" 2 "not one of --voters"
run serve "$T/u" --listen 127.0.0.1:0 --voters "1@127.0.0.1:$P1,1@127.0.0.1:$P2" --node-id 1
expect "a voters list with a repeated id is a usage error naming the entry" 2 "entry 2: duplicate id"
run serve "$T/u" --listen 127.0.0.1:0 --voters "1@127.0.0.1" --node-id 1
expect "a voter without a port is a usage error" 2 "missing :PORT"
run serve "$T/u" --listen 127.0.0.1:0 --voters "$VOTERS" --node-id 1 --broker-id 2
expect "--broker-id other than --node-id is a usage error" 2 "differs from --node-id"
run serve --help
expect "--help lists --voters, --node-id, --controller-listen" 0 "controller.quorum.voters"
[ ! -e "$T/u/__cluster_metadata" ] && ok "a refused start made no __cluster_metadata/" ||
    bad "a refused start made __cluster_metadata/"

# start_node I : ringtail serve for voter I in the background (its stderr in $T/nI.err)
start_node() {
    local i=$1 port_var="P$1"
    mkdir -p "$T/n$i"
    "$RT" serve "$T/n$i" --listen 127.0.0.1:0 --threads 1 --node-id "$i" \
        --controller-listen "127.0.0.1:${!port_var}" --voters "$VOTERS" \
        >"$T/n$i.out" 2>>"$T/n$i.err" &
    PIDS[$i]=$!
}
# leader_of I : the leader node I logged last ("" if none)
leader_of() {
    sed -n 's/.*controller: node \([0-9]*\)\( (this node)\)\? is the leader.*/\1/p' "$T/n$1.err" | tail -1
}
# wait_leader NODES... : until every node given names the same leader (20 s at most); prints it
wait_leader() {
    local l
    for _ in $(seq 1 400); do
        l=$(leader_of "$1")
        local same=1
        for i in "$@"; do [ "$(leader_of "$i")" = "$l" ] || same=0; done
        if [ -n "$l" ] && [ $same = 1 ]; then echo "$l"; return 0; fi
        sleep 0.05
    done
    return 1
}

for i in 1 2 3; do start_node "$i"; done
T0=$(date +%s%N)
if L=$(wait_leader 1 2 3); then
    ok "three serve processes agree on leader $L ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else
    RC=1; bad "no common leader: $(leader_of 1)/$(leader_of 2)/$(leader_of 3); $(tail -c 400 "$T/n1.err")"
    L=1
fi
grep -q "listening on 127.0.0.1:" "$T/n1.out" && ok "each node serves Kafka beside the quorum" ||
    { RC=1; bad "node 1 printed no listening line"; }
[ -s "$T/n1/__cluster_metadata/metadata1" ] && ok "raft's files are in DIR/__cluster_metadata/" ||
    { RC=1; bad "no DIR/__cluster_metadata/metadata1"; }

# SIGKILL the leader's process
kill -KILL "${PIDS[$L]}"; wait "${PIDS[$L]}" 2>/dev/null; PIDS[$L]=0
OTHERS=()
for i in 1 2 3; do [ "$i" != "$L" ] && OTHERS+=("$i"); done
T0=$(date +%s%N)
NL=
for _ in $(seq 1 400); do
    NL=$(wait_leader "${OTHERS[@]}") && [ "$NL" != "$L" ] && break
    NL=
    sleep 0.05
done
if [ -n "$NL" ]; then
    ok "SIGKILL of leader $L: nodes ${OTHERS[*]} agree on leader $NL ($(( ($(date +%s%N) - T0) / 1000000 )) ms)"
else
    RC=1; bad "no new leader after SIGKILL of $L: $(leader_of "${OTHERS[0]}")/$(leader_of "${OTHERS[1]}")"
fi

# the killed node restarts on its directory and names the current leader
echo "--- restart" >>"$T/n$L.err"
start_node "$L"
if [ -n "$NL" ] && for _ in $(seq 1 400); do
    sed -n '/--- restart/,$p' "$T/n$L.err" | grep -q "controller: node $NL is the leader" && break
    sleep 0.05
done && sed -n '/--- restart/,$p' "$T/n$L.err" | grep -q "controller: node $NL is the leader"; then
    ok "the restarted node $L follows leader $NL"
else
    RC=1; bad "restarted node $L: $(sed -n '/--- restart/,$p' "$T/n$L.err" | tail -c 600)"
fi

# SIGTERM stops each cleanly
for i in 1 2 3; do
    kill -TERM "${PIDS[$i]}"
    wait "${PIDS[$i]}"; rc=$?
    PIDS[$i]=0
    if [ $rc = 0 ] && grep -q "stopped cleanly" "$T/n$i.err"; then ok "node $i: SIGTERM stops it cleanly"
    else RC=$rc; bad "node $i: exit $rc: $(tail -c 400 "$T/n$i.err")"; fi
done

run verify "$T/n1"
expect "ringtail verify: a member's directory is healthy, __cluster_metadata/ known" 0 "healthy\$"

# without --voters: today's single broker, nothing of the cluster
mkdir -p "$T/s"
"$RT" serve "$T/s" --listen 127.0.0.1:0 --threads 1 >"$T/s.out" 2>"$T/s.err" &
SP=$!
for _ in $(seq 1 200); do grep -q "listening on" "$T/s.out" && break; sleep 0.05; done
kill -TERM $SP; wait $SP
if [ ! -e "$T/s/__cluster_metadata" ] && ! grep -q "controller" "$T/s.err"; then
    ok "without --voters: no __cluster_metadata/, no controller line"
else
    RC=1; bad "without --voters, cluster traces: $(ls "$T/s"); $(grep controller "$T/s.err")"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
