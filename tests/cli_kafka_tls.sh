#!/usr/bin/env bash
# cli_kafka_tls.sh — `ringtail serve` with an SSL listener (issue 23, TLS) and real clients; the
# certificates are made by tests/helpers/tls_certs.sh with the openssl CLI (a CA, the broker's
# certificate for 127.0.0.1 and localhost, a client certificate, a CA nobody trusts):
#   - option errors: an SSL listener without --ssl-cert-pem, client auth without a CA (exit 2);
#     an unreadable certificate (exit 1, the file named);
#   - the startup line says whether kernel TLS runs (this machine: no tls module, the copying
#     path), and metrics count TLS connections by it;
#   - kcat produces and consumes over SSL (ssl.ca.location), and with a client certificate;
#     python3-confluent-kafka produces, runs a consumer group and a transaction over SSL, with
#     and without a client certificate; kafkajs (tests/kafka/node/kafkajs_tls.test.js) the same
#     with mTLS;
#   - refused, each closing only its own connection with OpenSSL's reason logged once: a client
#     that does not trust the broker (wrong CA), a plaintext client on the TLS port, a garbage
#     ClientHello, a client certificate from a wrong CA, and a handshake that never finishes
#     (--ssl-handshake-timeout-ms);
#   - SIGHUP reloads the certificate for new connections while an open one goes on; a reload
#     from a broken file is logged and the old certificate stays;
#   - --ssl-client-auth required: kcat without a certificate is refused, with one it works;
#   - SASL_SSL: kcat authenticates with SCRAM-SHA-512 and PLAIN inside TLS; a wrong password
#     is refused.
#
# usage: bash tests/cli_kafka_tls.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_tls.sh /path/to/ringtail}
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=$HERE/kafka/node
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-tls-XXXXXX")
. "$HERE/helpers/cli_harness.sh"
. "$HERE/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# expect_failed DESCRIPTION: the command before failed (kcat's exit status after a refused
# connection is 1, or a crash in its teardown).
expect_failed() {
    if [ "$RC" -ne 0 ]; then ok "$1"; else bad "$1 (it succeeded)"; fi
}

C=$T/certs
bash "$HERE/helpers/tls_certs.sh" "$C" >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -ne 0 ]; then
    bad "tls_certs.sh makes the test certificates with the openssl CLI"
    echo "$passed passed, $failed failed"
    exit 1
fi
# The files the broker reads, copied: the reload check replaces them.
mkdir -p "$T/srv"
cp "$C/server.pem" "$C/server.key" "$T/srv/"
SSLP=$(free_port)
SSL_BROKER=127.0.0.1:$SSLP

# ---- option errors
run serve "$T/x" --listeners "SSL://127.0.0.1:0"
expect "an SSL listener without --ssl-cert-pem is a usage error" 2 "need --ssl-cert-pem"
run serve "$T/x" --listeners "SSL://127.0.0.1:0" --ssl-cert-pem "$C/server.pem" \
    --ssl-key-pem "$C/server.key" --ssl-client-auth required
expect "--ssl-client-auth required without --ssl-ca-pem is a usage error" 2 "needs --ssl-ca-pem"
run serve "$T/x" --listeners "SSL://127.0.0.1:0" --ssl-cert-pem "$C/server.pem" \
    --ssl-key-pem "$C/server.key" --ssl-client-auth sometimes
expect "--ssl-client-auth takes none, requested or required" 2
run serve "$T/x" --listeners "SSL://127.0.0.1:0" --ssl-cert-pem "$C/server.pem" \
    --ssl-key-pem "$C/server.key" --io uring
expect "--io uring with an SSL listener is a usage error (TLS runs on epoll)" 2 "io_uring"
run serve "$T/x" --listeners "SSL://127.0.0.1:0" --ssl-cert-pem "$C/missing.pem" \
    --ssl-key-pem "$C/server.key"
expect "an unreadable certificate fails at start, naming the file" 1 "TLS: .*missing.pem"

# ---- the broker: PLAINTEXT and SSL listeners, client certificates requested
D=$T/data
serve_start "$D" --listeners "PLAINTEXT://127.0.0.1:$(free_port),SSL://$SSL_BROKER" \
    --ssl-cert-pem "$T/srv/server.pem" --ssl-key-pem "$T/srv/server.key" \
    --ssl-ca-pem "$C/ca.pem" --ssl-client-auth requested --ssl-handshake-timeout-ms 1000 \
    --group-initial-rebalance-delay-ms 0 --metrics 127.0.0.1:0
grep -q "listening on SSL://$SSL_BROKER" "$T/serve.log"
RC=$?
cp "$T/serve.log" "$T/err"
: >"$T/out"
expect "the SSL listener is announced as listening on SSL://HOST:PORT" 0
grep -qE "SSL://$SSL_BROKER: TLS 1.2-1.3, client auth requested; kernel TLS: (available|unavailable \(.*\))" "$T/serve.log"
RC=$?
expect "the startup line says whether kernel TLS runs, and why" 0
KTLS=false
grep -q "kernel TLS: available" "$T/serve.log" && KTLS=true

KC=(-X security.protocol=ssl -X "ssl.ca.location=$C/ca.pem")
MTLS=(-X "ssl.certificate.location=$C/client.pem" -X "ssl.key.location=$C/client.key")
seq 1 200 | sed 's/^/k/' >"$T/kvalues"
timeout 30 kcat -b "$SSL_BROKER" "${KC[@]}" -P -t ktls -p 0 <"$T/kvalues" >"$T/out" 2>"$T/err"
RC=$?
expect "kcat produces 200 records over SSL (ssl.ca.location)" 0
timeout 30 kcat -b "$SSL_BROKER" "${KC[@]}" -C -t ktls -o beginning -e -q >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && cmp -s "$T/out" "$T/kvalues"; then ok "kcat consumes them back over SSL"; else bad "kcat consumes them back over SSL"; fi
timeout 30 kcat -b "$SSL_BROKER" "${KC[@]}" "${MTLS[@]}" -C -t ktls -o beginning -e -q >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && cmp -s "$T/out" "$T/kvalues"; then ok "kcat with a client certificate (mTLS) consumes them too"; else bad "kcat with a client certificate (mTLS) consumes them too"; fi

timeout 120 $PY "$HERE/kafka/py_tls.py" "$SSL_BROKER" "$C" clients ptls >"$T/out" 2>"$T/err"
RC=$?
expect "confluent-kafka over SSL: produce, a consumer group reads and commits, a transaction" 0 \
    "txn read 10"
grep -q "group read 100 committed 100" "$T/out"
RC=$?
expect "... the group read all 100 records and committed 100 offsets" 0
timeout 120 $PY "$HERE/kafka/py_tls.py" "$SSL_BROKER" "$C" clients pmtls mtls >"$T/out" 2>"$T/err"
RC=$?
expect "confluent-kafka with a client certificate (mTLS): the same" 0 "txn read 10"

if [ -f "$NODE_DIR/node_modules/kafkajs/package.json" ]; then
    (cd "$NODE_DIR" && RT_BROKER=$SSL_BROKER RT_CERTS=$C \
        timeout 120 node --test --test-reporter=tap kafkajs_tls.test.js) >"$T/out" 2>"$T/err"
    RC=$?
    expect "kafkajs with mTLS: produce, a consumer group and a transaction" 0 "^# fail 0$"
else
    RC=1
    bad "kafkajs is installed in tests/kafka/node (tools/setup.sh runs npm ci there)"
fi

# ---- refused: each closes its own connection, logged once with OpenSSL's reason
timeout 20 kcat -b "$SSL_BROKER" -X security.protocol=ssl -X "ssl.ca.location=$C/wrongca.pem" \
    -L -m 3 >"$T/out" 2>"$T/err"
RC=$?
# kcat 1.7.1 may crash at its exit after the failure (its own teardown): any failing exit.
if [ $RC -ne 0 ] && grep -q "certificate verify failed" "$T/err"; then
    ok "kcat that trusts another CA fails (certificate verify failed)"
else
    bad "kcat that trusts another CA fails (certificate verify failed)"
fi
timeout 20 kcat -b "$SSL_BROKER" -L -m 3 >"$T/out" 2>"$T/err"
RC=$?
expect_failed "kcat speaking plaintext to the TLS port fails"
timeout 20 kcat -b "$SSL_BROKER" "${KC[@]}" -X "ssl.certificate.location=$C/bad.pem" \
    -X "ssl.key.location=$C/bad.key" -L -m 3 >"$T/out" 2>"$T/err"
RC=$?
expect_failed "kcat with a client certificate from a wrong CA is refused"
timeout 20 $PY "$HERE/kafka/py_tls.py" "$SSL_BROKER" "$C" garbage >"$T/out" 2>"$T/err"
RC=$?
expect "a garbage ClientHello is closed" 0 "^closed$"
timeout 30 $PY "$HERE/kafka/py_tls.py" "$SSL_BROKER" "$C" slow >"$T/out" 2>"$T/err"
RC=$?
expect "a handshake that never finishes is closed (--ssl-handshake-timeout-ms)" 0 "^closed after"
sleep 0.3
cp "$T/serve.log" "$T/err"
: >"$T/out"
for why in "tls handshake failed: tlsv1 alert unknown ca" \
    "tls handshake failed: wrong version number" \
    "tls handshake failed: certificate verify failed \(certificate: unable to get local issuer certificate\)" \
    "tls handshake failed: unexpected message" \
    "tls handshake not done within 1000 ms"; do
    grep -qE "connection [0-9]+ from 127.0.0.1:[0-9]+: $why; closing" "$T/serve.log"
    RC=$?
    expect "the log names the reason: $why" 0
done
timeout 30 kcat -b "$SSL_BROKER" "${KC[@]}" -C -t ktls -o beginning -e -q >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && cmp -s "$T/out" "$T/kvalues"; then ok "after them, kcat still consumes over SSL"; else bad "after them, kcat still consumes over SSL"; fi

# ---- metrics
MPORT=$(sed -n 's|.*metrics at http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/serve.log" | head -1)
curl -s "http://127.0.0.1:$MPORT/metrics" >"$T/metrics" 2>"$T/err"
cp "$T/metrics" "$T/out"
ok_conns=$(sed -n "s/^ringtail_kafka_tls_connections_total{ktls=\"$KTLS\"} //p" "$T/metrics")
failed_hs=$(sed -n 's/^ringtail_kafka_tls_handshakes_failed_total //p' "$T/metrics")
RC=0
if [ "${ok_conns:-0}" -ge 5 ] && [ "${failed_hs:-0}" -ge 5 ]; then
    ok "metrics: TLS connections by ktls=\"$KTLS\" ($ok_conns) and failed handshakes ($failed_hs)"
else
    bad "metrics: TLS connections by ktls=\"$KTLS\" ($ok_conns) and failed handshakes ($failed_hs)"
fi

# ---- SIGHUP: a new certificate for new connections, the open one goes on
timeout 30 $PY "$HERE/kafka/py_tls.py" "$SSL_BROKER" "$C" reload "$SERVE_PID" \
    "$T/srv/server.pem" "$T/srv/server.key" >"$T/out" 2>"$T/err"
RC=$?
expect "SIGHUP: new connections get the new certificate (CN=reloaded)" 0 "^after reloaded$"
grep -q "^A answers$" "$T/out"
RC=$?
expect "... while the connection opened before it still answers" 0
grep -q "^kept reloaded$" "$T/out"
RC=$?
expect "... and a reload from a broken file keeps the certificate in use" 0
cp "$T/serve.log" "$T/err"
grep -q "SIGHUP: TLS certificate and key reloaded" "$T/serve.log" &&
    grep -q "SIGHUP: TLS reload failed, the old certificate stays: $T/srv/server.pem" "$T/serve.log"
RC=$?
expect "both reloads are logged, the failed one with its file and reason" 0
serve_stop
serve_verify "$D"

# ---- ssl.client.auth=required
cp "$C/server.pem" "$C/server.key" "$T/srv/"
serve_start "$D" --listeners "SSL://$SSL_BROKER" --ssl-cert-pem "$T/srv/server.pem" \
    --ssl-key-pem "$T/srv/server.key" --ssl-ca-pem "$C/ca.pem" --ssl-client-auth required
timeout 20 kcat -b "$SSL_BROKER" "${KC[@]}" -L -m 3 >"$T/out" 2>"$T/err"
RC=$?
expect_failed "--ssl-client-auth required: kcat without a certificate is refused"
timeout 30 kcat -b "$SSL_BROKER" "${KC[@]}" "${MTLS[@]}" -C -t ktls -o beginning -e -q >"$T/out" 2>"$T/err"
RC=$?
if [ $RC -eq 0 ] && cmp -s "$T/out" "$T/kvalues"; then ok "... with one it consumes"; else bad "... with one it consumes"; fi
cp "$T/serve.log" "$T/err"
grep -q "tls handshake failed: peer did not return a certificate" "$T/serve.log"
RC=$?
expect "... and the refusal is logged with its reason" 0
serve_stop
serve_verify "$D"

# ---- SASL_SSL: SCRAM-SHA-512 and PLAIN inside TLS
printf 'alice-secret\n' >"$T/alice.pw"
run user add "$D" --name alice --mechanism SCRAM-SHA-512 --password-file "$T/alice.pw"
expect "user add alice (SCRAM-SHA-512)" 0
cp "$C/server.pem" "$C/server.key" "$T/srv/"
serve_start "$D" --listeners "SASL_SSL://$SSL_BROKER" --ssl-cert-pem "$T/srv/server.pem" \
    --ssl-key-pem "$T/srv/server.key" --sasl-mechanisms SCRAM-SHA-512,PLAIN
grep -q "listening on SASL_SSL://$SSL_BROKER" "$T/serve.log" &&
    grep -q "SASL_SSL://$SSL_BROKER: TLS 1.2-1.3" "$T/serve.log"
RC=$?
expect "a SASL_SSL listener runs TLS (its startup line)" 0
SASL=(-X security.protocol=SASL_SSL -X "ssl.ca.location=$C/ca.pem" -X sasl.username=alice)
for m in SCRAM-SHA-512 PLAIN; do
    timeout 30 kcat -b "$SSL_BROKER" "${SASL[@]}" -X "sasl.mechanisms=$m" -X sasl.password=alice-secret \
        -C -t ktls -o beginning -e -q >"$T/out" 2>"$T/err"
    RC=$?
    if [ $RC -eq 0 ] && cmp -s "$T/out" "$T/kvalues"; then ok "kcat over SASL_SSL ($m) consumes"; else bad "kcat over SASL_SSL ($m) consumes"; fi
done
timeout 20 kcat -b "$SSL_BROKER" "${SASL[@]}" -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.password=wrong \
    -L -m 3 >"$T/out" 2>"$T/err"
RC=$?
expect_failed "kcat over SASL_SSL with a wrong password is refused"
serve_stop
serve_verify "$D"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
