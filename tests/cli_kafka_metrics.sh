#!/usr/bin/env bash
# cli_kafka_metrics.sh — `ringtail serve --metrics HOST:PORT` (tools/kafka/metrics/metrics.c through
# libmicrohttpd) under real traffic: after kcat produces and consumes, GET /metrics answers 200
# in Prometheus text format that `promtool check metrics` (Debian's prometheus package) accepts,
# with the requests kcat made (by API and version, with latency histograms), bytes in and out,
# connections, the partition's high watermark, LSO and log size, and the engine's round and
# fdatasync counters; read pauses at a bound counted (and logged once per connection, not per
# pause); other paths answer 404; SIGTERM still exits 0 and verify is clean.
#
# usage: bash tests/cli_kafka_metrics.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_metrics.sh /path/to/ringtail}
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-kmetrics-XXXXXX")
. "$(dirname "$0")/helpers/cli_harness.sh"
. "$(dirname "$0")/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
MPORT=$(free_port)
serve_start "$D" --metrics "127.0.0.1:$MPORT" --in-flight-max 2
seq 1 1000 >"$T/in"
kcat -b "$BROKER" -P -t m -X acks=all <"$T/in" >"$T/out" 2>"$T/err"
RC=$?
expect "kcat produces 1000 records" 0
kcat -b "$BROKER" -C -t m -o beginning -e -q >"$T/consumed" 2>"$T/err"
RC=$?
expect "kcat consumes them" 0

# 40 pipelined requests against --in-flight-max 2: reading pauses about 19 times on that one
# connection; each pause is counted (ringtail_kafka_read_pauses_total), only a connection's first
# is logged (issue 20 item 9: a line per paused read flooded the log).
/usr/bin/python3 "$(dirname "$0")/kafka/serve_bounds.py" "$PORT" pipelining 40 >"$T/out" 2>"$T/err"
RC=$?
expect "40 pipelined requests are answered in order (--in-flight-max 2)" 0
curl -sS -o "$T/scrape" -w '%{http_code} %{content_type}\n' "http://127.0.0.1:$MPORT/metrics" >"$T/out" 2>"$T/err"
RC=$?
expect "GET /metrics answers 200 text/plain version 0.0.4" 0 "^200 text/plain; version=0.0.4"
promtool check metrics <"$T/scrape" >"$T/out" 2>"$T/err"
RC=$?
expect "promtool check metrics accepts the scrape" 0

# value SERIES: the value of the series written exactly so (name{labels}), or empty.
value() { awk -v s="$1" '$1 == s {print $2}' "$T/scrape"; }
# series_gt PATTERN MIN: some series matching the regex has a value > MIN.
series_gt() { awk -v re="$1" -v min="$2" '$1 ~ re && $2 + 0 > min + 0 {f = 1} END {exit !f}' "$T/scrape"; }
check_series() {
    local desc=$1 re=$2 min=$3
    if series_gt "$re" "$min"; then ok "$desc"; else RC=1; cp "$T/scrape" "$T/out"; : >"$T/err"; bad "$desc"; fi
}
check_series "Produce requests counted by version" '^ringtail_kafka_requests_total\{api="Produce",api_key="0",version="[0-9]+"\}$' 0
check_series "Fetch requests counted" '^ringtail_kafka_requests_total\{api="Fetch",api_key="1",version="[0-9]+"\}$' 0
check_series "ApiVersions and Metadata requests counted" '^ringtail_kafka_requests_total\{api="Metadata",' 0
check_series "a Produce latency histogram" '^ringtail_kafka_request_duration_seconds_count\{api="Produce",' 0
check_series "bytes received" '^ringtail_kafka_received_bytes_total$' 1000
check_series "bytes sent" '^ringtail_kafka_sent_bytes_total$' 1000
check_series "connections accepted" '^ringtail_kafka_connections_opened_total$' 0
check_series "engine rounds" '^ringtail_engine_rounds_total$' 0
check_series "engine fdatasyncs (sync=always)" '^ringtail_engine_fdatasyncs_total$' 0
check_series "the partition's log size" '^ringtail_partition_log_size_bytes\{topic="m",partition="0"\}$' 3000
pauses=$(value 'ringtail_kafka_read_pauses_total{reason="in_flight"}')
opened=$(value 'ringtail_kafka_connections_opened_total')
lines=$(grep -c "requests in flight" "$T/serve.log")
if [ "${pauses:-0}" -ge 10 ] && [ "$lines" -ge 1 ] && [ "$lines" -le "${opened:-0}" ]; then
    ok "in-flight pauses counted ($pauses), logged once per connection at most ($lines lines, $opened connections)"
else
    RC=1
    bad "in-flight pauses counted ('$pauses'), logged once per connection at most ($lines lines, '$opened' connections)"
fi
for r in request_memory response_memory; do
    [ -n "$(value "ringtail_kafka_read_pauses_total{reason=\"$r\"}")" ] && ok "read pauses: the $r series is there" ||
        { RC=1; bad "read pauses: the $r series is there"; }
done
if [ "$(value ringtail_kafka_queued_response_bytes)" = 0 ] && [ "$(value ringtail_kafka_queued_request_bytes)" = 0 ]; then
    ok "nothing queued once every answer was taken (queued request and response bytes 0)"
else
    RC=1
    bad "nothing queued once every answer was taken"
fi
hw=$(value 'ringtail_partition_high_watermark{topic="m",partition="0"}')
lso=$(value 'ringtail_partition_last_stable_offset{topic="m",partition="0"}')
if [ "$hw" = 1000 ] && [ "$lso" = 1000 ]; then
    ok "high watermark and LSO of m-0 are 1000"
else
    RC=1
    bad "high watermark and LSO of m-0 are 1000 (got '$hw' '$lso')"
fi
if grep -q '^ringtail_transactions_open 0$' "$T/scrape"; then ok "no open transactions"; else RC=1; bad "no open transactions"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$MPORT/other")
if [ "$code" = 404 ]; then ok "another path answers 404"; else RC=1; bad "another path answers 404 (got $code)"; fi

# The address is checked: a second broker whose --metrics port is taken fails (exit 1) and says
# so; one that is no HOST:PORT is a usage error (exit 2). Neither leaves anything running.
run serve "$T/other" --listen "127.0.0.1:$(free_port)" --metrics "127.0.0.1:$MPORT"
expect "--metrics on a port in use: exit 1, named" 1 "Address already in use"
run serve "$T/other-usage" --listen "127.0.0.1:$(free_port)" --metrics "no-such-address"
expect "--metrics without a port: usage error" 2 "bad value 'no-such-address' for --metrics"
check "... refused before anything was opened" test ! -e "$T/other-usage"

serve_stop
serve_verify "$D"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
