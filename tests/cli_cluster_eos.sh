#!/usr/bin/env bash
# cli_cluster_eos.sh — issue 25 item 4's short, bounded run of the cluster's exactly-once fault
# test (tests/cluster/eos_run.py, docs/cluster.md §9.2): three `ringtail serve --voters` nodes;
# per client library — confluent_kafka (python), librdkafka's C API (tests/kafka/rdk_eos.c,
# built beside the ringtail binary) and kafkajs 2.2.4 — an input and an output topic (RF 3,
# min.insync.replicas=2), a group and a consume-transform-produce pipeline with the consumed
# offsets in each transaction, while the transaction coordinator's node, a group coordinator's,
# an output partition's leader and the controller are SIGKILLed, the coordinator paused past
# the session timeout and (as root) cut off by iptables, one after another. Then: every input
# exactly once in the read_committed output and nothing else (no aborted record visible, none
# lost, none twice), no LSO left pinned, every replica identical (`ringtail cluster check`).
# Every role killed, paused and cut off in turn (twelve scenarios), and rounds until --duration:
# the long run, documented in docs/cluster.md §9.2.
#
# usage: bash tests/cli_cluster_eos.sh /path/to/ringtail
set -u
RT=${1:?usage: cli_cluster_eos.sh /path/to/ringtail}
HERE=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import confluent_kafka' || { echo "FAIL - no confluent_kafka for /usr/bin/python3"; exit 1; }
[ -x "$(dirname "$RT")/rdk_eos" ] || { echo "FAIL - no rdk_eos beside $RT (tests/kafka/rdk_eos.c)"; exit 1; }
[ -d "$HERE/kafka/node/node_modules/kafkajs" ] || { echo "FAIL - no kafkajs in tests/kafka/node/node_modules (tools/setup.sh installs it)"; exit 1; }
# the checker can fail: each planted fault reported (no cluster)
/usr/bin/python3 "$HERE/cluster/eos_selftest.py" || exit 1
OUT=$(mktemp "${TMPDIR:-/tmp}/rt-cli-eos-XXXXXX")
trap 'rm -f "$OUT"' EXIT
/usr/bin/python3 "$HERE/cluster/eos_run.py" "$RT" \
    --scenarios coord-kill,group-kill,leader-kill,controller-kill,coord-pause,coord-partition \
    >"$OUT" 2>&1
RC=$?
grep -v '^%[0-9]|' "$OUT" # librdkafka's own log lines (disconnects while nodes die) left out
exit $RC
