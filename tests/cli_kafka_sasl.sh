#!/usr/bin/env bash
# cli_kafka_sasl.sh — SASL over a SASL_PLAINTEXT listener (issue 23) with real clients and at the
# byte level: `ringtail user` stores salted credentials (never the password); kcat produces and
# consumes with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN; python3-confluent-kafka runs a
# transaction and a consumer group; kafkajs produces and consumes in a group with each
# mechanism; wrong passwords, unknown users, a mechanism not enabled, a request before
# authentication, truncated and oversized tokens, SaslHandshake v0's raw tokens and KIP-368
# re-authentication (tests/kafka/sasl_wire.py) are each answered with Kafka's code or a closed
# connection; credentials added, altered over the wire (AlterUserScramCredentials) and removed
# are seen by the running broker; a damaged credentials file is reported (file, offset) and not
# served; the failures are counted in the metrics.
#
# usage: bash tests/cli_kafka_sasl.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_sasl.sh /path/to/ringtail}
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=$HERE/kafka/node
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-sasl-XXXXXX")
. "$HERE/helpers/cli_harness.sh"
. "$HERE/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

D=$T/data
mkdir -p "$D"
printf 'alice-secret\n' >"$T/alice.pw"
printf 'bob-secret\n' >"$T/bob.pw"
printf 'dave-secret\n' >"$T/dave.pw"

# ---- ringtail user
run user add "$D" --name alice --mechanism SCRAM-SHA-512 --password-file "$T/alice.pw"
expect "user add alice SCRAM-SHA-512" 0 "alice SCRAM-SHA-512 iterations=4096 stored"
run user add "$D" --name alice --mechanism SCRAM-SHA-256 --password-file "$T/alice.pw" --iterations 8192
expect "user add alice SCRAM-SHA-256 with 8192 iterations" 0 "stored"
run user add "$D" --name bob --password-file "$T/bob.pw"
expect "user add bob (SCRAM-SHA-512 by default)" 0 "bob SCRAM-SHA-512"
run user list "$D"
expect "user list shows each credential" 0 "alice SCRAM-SHA-256 iterations=8192"
if grep -q "alice-secret\|bob-secret" "$D/scram-credentials"; then
    RC=1
    bad "the credentials file holds no password"
else
    ok "the credentials file holds no password"
fi
run user add "$D" --name eve --mechanism MD5 --password-file "$T/bob.pw"
expect "user add with an unknown mechanism is a usage error" 2 "SCRAM-SHA-256 or SCRAM-SHA-512"
run user add "$D" --name eve --password-file "$T/bob.pw" --iterations 100
expect "user add with 100 iterations is a usage error (at least 4096)" 2 "4096"
run user remove "$D" --name nobody
expect "user remove of an unknown user fails" 1 "no credential"
run serve "$D" --listeners "SASL_PLAINTEXT://127.0.0.1:0"
expect "a SASL listener without --sasl-mechanisms is a usage error (Kafka's GSSAPI is not served)" 2 "sasl-mechanisms"

# ---- a broker with every mechanism
SERVE_PORT=$(free_port)
serve_start "$D" --listeners "SASL_PLAINTEXT://127.0.0.1:$SERVE_PORT" \
    --sasl-mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512 \
    --connection-failed-authentication-delay-ms 200 --metrics 127.0.0.1:0 \
    --group-initial-rebalance-delay-ms 0
SERVE_PORT=
kc() { # kc MECHANISM USER PASSWORD KCAT-ARGS...
    local m=$1 u=$2 p=$3
    shift 3
    timeout 30 kcat -b "$BROKER" -X security.protocol=SASL_PLAINTEXT -X "sasl.mechanisms=$m" \
        -X "sasl.username=$u" -X "sasl.password=$p" "$@"
}
for m in SCRAM-SHA-512 SCRAM-SHA-256 PLAIN; do
    echo "kc-$m" | kc "$m" alice alice-secret -P -t kc >"$T/out" 2>"$T/err"
    RC=$?
    expect "kcat produces with $m" 0
done
kc SCRAM-SHA-512 bob bob-secret -C -t kc -e -q >"$T/out" 2>"$T/err"
RC=$?
expect "kcat (bob, SCRAM-SHA-512) consumes what alice produced" 0
if [ "$(sort "$T/out" | tr '\n' ' ')" = "kc-PLAIN kc-SCRAM-SHA-256 kc-SCRAM-SHA-512 " ]; then
    ok "... the three records"
else
    bad "... the three records"
fi
kc SCRAM-SHA-512 alice wrong -L -m 2 >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ] && grep -q "Authentication failed" "$T/err"; then ok "kcat with a wrong password is refused"; else bad "kcat with a wrong password is refused"; fi
kc PLAIN nobody x -L -m 2 >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ] && grep -q "Authentication failed" "$T/err"; then ok "kcat as an unknown user (PLAIN) is refused"; else bad "kcat as an unknown user (PLAIN) is refused"; fi

# python3-confluent-kafka: a transaction and a consumer group
timeout 120 /usr/bin/python3 "$HERE/kafka/py_sasl.py" "$BROKER" SCRAM-SHA-256 alice alice-secret py >"$T/out" 2>"$T/err"
RC=$?
expect "confluent-kafka (SCRAM-SHA-256): a committed transaction read by a group" 0 \
    "^read py-0,py-1,py-2,py-3,py-4,py-5,py-6,py-7,py-8,py-9$"
expect "... and the group's offset committed past the transaction" 0 "^committed 1[0-9]$"

# kafkajs: every mechanism, a group each
if [ -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    (cd "$NODE_DIR" && RT_BROKER=$BROKER RT_SASL_USER=alice RT_SASL_PASSWORD=alice-secret \
        timeout 180 node --test --test-reporter=tap kafkajs_sasl.test.js) >"$T/out" 2>"$T/err"
    RC=$?
    expect "kafkajs (scram-sha-512, scram-sha-256, plain): produce and consume in a group" 0 "^# fail 0$"
else
    RC=1
    bad "kafkajs is installed in tests/kafka/node (tools/setup.sh runs npm ci there)"
fi

# the byte level
python3 "$HERE/kafka/sasl_wire.py" main "$BROKER" alice alice-secret 200 >"$T/out" 2>"$T/err"
RC=$?
cat "$T/out"
expect "sasl_wire.py main: every check passed" 0

# credentials changed while the broker runs
python3 "$HERE/kafka/sasl_wire.py" alter "$BROKER" alice alice-secret carol carol-secret >"$T/out" 2>"$T/err"
RC=$?
cat "$T/out"
expect "sasl_wire.py alter: every check passed" 0
kc SCRAM-SHA-512 carol carol-secret -L -m 5 >"$T/out" 2>"$T/err"
RC=$?
expect "kcat authenticates as carol, made by AlterUserScramCredentials" 0
kc SCRAM-SHA-512 dave dave-secret -L -m 2 >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ]; then ok "dave does not authenticate before he is added"; else bad "dave does not authenticate before he is added"; fi
run user add "$D" --name dave --password-file "$T/dave.pw"
expect "user add dave while the broker runs" 0
kc SCRAM-SHA-512 dave dave-secret -L -m 5 >"$T/out" 2>"$T/err"
RC=$?
expect "the running broker authenticates dave (no restart)" 0
run user remove "$D" --name dave
expect "user remove dave while the broker runs" 0 "dave removed"
kc SCRAM-SHA-512 dave dave-secret -L -m 2 >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ]; then ok "the running broker refuses dave once removed"; else bad "the running broker refuses dave once removed"; fi

# the failures are counted
maddr=$(sed -n 's|.*metrics at http://\(.*\)/metrics|\1|p' "$T/serve.log" | tail -1)
curl -s "http://$maddr/metrics" >"$T/out" 2>"$T/err"
RC=$?
fails=$(sed -n 's/^ringtail_kafka_sasl_authentication_failures_total \([0-9]*\)$/\1/p' "$T/out")
oks=$(sed -n 's/^ringtail_kafka_sasl_authentications_total \([0-9]*\)$/\1/p' "$T/out")
if [ "${fails:-0}" -ge 8 ] && [ "${oks:-0}" -ge 8 ]; then
    ok "metrics count SASL successes ($oks) and failures ($fails)"
else
    bad "metrics count SASL successes (${oks:-none}) and failures (${fails:-none})"
fi
serve_stop
serve_verify "$D"

# ---- re-authentication (KIP-368) and a mechanism not enabled
SERVE_PORT=$(free_port)
serve_start "$D" --listeners "SASL_PLAINTEXT://127.0.0.1:$SERVE_PORT" \
    --sasl-mechanisms PLAIN,SCRAM-SHA-512 --connections-max-reauth-ms 1500 \
    --connection-failed-authentication-delay-ms 0
SERVE_PORT=
python3 "$HERE/kafka/sasl_wire.py" reauth "$BROKER" alice alice-secret bob bob-secret 1500 >"$T/out" 2>"$T/err"
RC=$?
cat "$T/out"
expect "sasl_wire.py reauth: every check passed" 0
kc SCRAM-SHA-256 alice alice-secret -L -m 2 >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ]; then ok "kcat with SCRAM-SHA-256, not enabled, is refused"; else bad "kcat with SCRAM-SHA-256, not enabled, is refused"; fi
serve_stop

# ---- a damaged credentials file is reported and not served
printf 'X' | dd of="$D/scram-credentials" bs=1 seek=17 conv=notrunc 2>/dev/null
run verify "$D"
expect "verify reports the damaged credentials file with its offset" 1 "scram-credentials: offset 1[0-9]: "
run serve "$D" --listeners "SASL_PLAINTEXT://127.0.0.1:0" --sasl-mechanisms PLAIN
expect "serve refuses to start on a damaged credentials file" 1 "scram-credentials: offset"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
