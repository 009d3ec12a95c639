#!/usr/bin/env bash
# cli_kafka_admin.sh — topic administration by real clients against `ringtail serve`: Debian's
# confluent-kafka AdminClient (tests/kafka/py_admin.py) creates topics with configs, is refused
# INVALID_CONFIG for an unknown config or a bad value, reads each config's value and source back
# with DescribeConfigs, replaces them with AlterConfigs; after a restart the configs are still
# there; DeleteTopics deletes a topic with records and a topic recreated under its name starts
# empty; CreatePartitions grows a topic with records; dynamic broker log configs
# (message.max.bytes at the cluster default and per broker) limit topics without their own
# override, before and after a restart; kafkajs (tests/kafka/node/admin.js) does the same through its admin client. SIGTERM exits 0 and `ringtail verify` is clean after each part.
#
# usage: bash tests/cli_kafka_admin.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_admin.sh /path/to/ringtail}
PY=/usr/bin/python3
ADMIN=$(dirname "$0")/kafka/py_admin.py
NODE_ADMIN=$(dirname "$0")/kafka/node/admin.js
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-admin-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# py_part NAME ARGS..: runs py_admin.py, counting its ok/FAIL lines as checks.
py_part() {
    local out
    out=$("$PY" "$ADMIN" "$@" 2>&1)
    while IFS= read -r line; do
        case "$line" in
        ok\ *) ok "confluent_kafka: ${line#ok }" ;;
        FAIL\ *) bad "confluent_kafka: ${line#FAIL }" ;;
        %[5-7]\|*) ;; # librdkafka's own notice/info lines (a producer's "Purging 1 unserved events
        # from background queue" at destruction, timing-dependent) are not results
        *) [ -n "$line" ] && bad "confluent_kafka: $line" ;;
        esac
    done <<<"$out"
}

D=$T/data
serve_start "$D"
py_part configs "$BROKER"
serve_stop
SERVE_PORT=$PORT serve_start "$D"
py_part recheck "$BROKER"
py_part delete "$BROKER"
py_part partitions "$BROKER"
serve_stop
serve_verify "$D"
if ls -d "$D"/del-*-delete >/dev/null 2>&1; then
    bad "a deleted topic's renamed directories are removed by the time serve exits"
else
    ok "a deleted topic's renamed directories are removed by the time serve exits"
fi

# Dynamic broker log configs applied (broker_config.h BC5): the cluster default and this
# broker's message.max.bytes limit topics without their own override, and still do after a
# restart (broker-configs.meta applied at start).
D3=$T/data3
serve_start "$D3"
py_part dynlog "$BROKER"
serve_stop
SERVE_PORT=$PORT serve_start "$D3"
py_part dynlog_recheck "$BROKER"
serve_stop
serve_verify "$D3"

if [ -f "$NODE_ADMIN" ] && command -v node >/dev/null; then
    D2=$T/data2
    serve_start "$D2"
    out=$(cd "$(dirname "$NODE_ADMIN")" && node admin.js "$BROKER" 2>&1)
    while IFS= read -r line; do
        case "$line" in
        ok\ *) ok "kafkajs: ${line#ok }" ;;
        FAIL\ *) bad "kafkajs: ${line#FAIL }" ;;
        *) [ -n "$line" ] && bad "kafkajs: $line" ;;
        esac
    done <<<"$out"
    serve_stop
    serve_verify "$D2"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
