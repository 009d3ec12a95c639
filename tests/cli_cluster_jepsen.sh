#!/usr/bin/env bash
# cli_cluster_jepsen.sh — issue 24 item 5's short, bounded run of the cluster fault tests
# (tests/cluster/run.py, docs/cluster.md §9): three `ringtail serve --voters` nodes, a topic of
# RF 3 with min.insync.replicas=2, one idempotent acks=all producer (librdkafka through
# confluent_kafka) writing unique values while each scenario breaks the cluster and heals it:
# SIGKILL of a partition leader, of the controller, SIGSTOP of a follower past the session and
# lag timeouts, and as root (skipped, said why, otherwise) the leader cut off from the other
# nodes by iptables and a node's disk (a tmpfs of its own) full for a while.
# Then the checker (tests/cluster/checker.py JC1-JC8): no acknowledged record lost, none
# duplicated, offsets monotonic and where the acks said, every replica identical up to the high
# watermark (`ringtail cluster check`), read_committed a prefix of read_uncommitted, and no
# fatal error of the idempotent producer (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID).
# The long run (every scenario, two producers, --duration) is documented in docs/cluster.md §9.
#
# usage: bash tests/cli_cluster_jepsen.sh /path/to/ringtail
set -u
RT=${1:?usage: cli_cluster_jepsen.sh /path/to/ringtail}
HERE=$(cd "$(dirname "$0")" && pwd)
if ! /usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null; then
    echo "SKIP: no confluent_kafka for /usr/bin/python3 (apt-get install python3-confluent-kafka)"
    exit 0
fi
# the checker can fail: each planted fault reported under its own check (no cluster)
/usr/bin/python3 "$HERE/cluster/checker_selftest.py" || exit 1
OUT=$(mktemp "${TMPDIR:-/tmp}/rt-cli-jepsen-XXXXXX")
trap 'rm -f "$OUT"' EXIT
/usr/bin/python3 "$HERE/cluster/run.py" "$RT" --producers 1 \
    --scenarios leader-kill,controller-kill,follower-pause,partition-leader,disk-full >"$OUT" 2>&1
RC=$?
grep -v '^%[0-9]|' "$OUT" # librdkafka's own log lines (disconnects while nodes die) left out
exit $RC
