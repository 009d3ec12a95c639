#!/usr/bin/env bash
# cli_kafka_acl.sh — `ringtail serve --authorizer on` (issue 23, authorization) with real clients
# over PLAINTEXT as User:ANONYMOUS: with no ACLs kcat's produce fails with
# TOPIC_AUTHORIZATION_FAILED and Metadata lists no topic, and every API confluent-kafka sends is
# answered with Kafka's code (tests/kafka/py_acl.py); `ringtail acl add` on the running broker's
# directory is picked up by mtime (DESCRIBE only: offsets fetched and listed, commits and fetches
# refused; a transaction's AddPartitionsToTxn and AddOffsetsToTxn refused); CreateAcls through kafkajs (tests/kafka/node/acl.js) for a topic prefix, then
# produce and consume work and a group needs READ on the group; DescribeAcls lists them; they
# survive a restart; DeleteAcls takes them away; without --authorizer the ACL APIs answer
# SECURITY_DISABLED; a SASL user (SCRAM-SHA-512) gets what her ACLs allow and no more; a corrupt
# acls.meta stops the start naming its offset.
#
# usage: bash tests/cli_kafka_acl.sh /path/to/ringtail
# Each check prints "ok" or "FAIL"; the last line is "N passed, M failed"; exit 1 on any failure.
set -u

RT=${1:?usage: cli_kafka_acl.sh /path/to/ringtail}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=$HERE/kafka/node
T=$(mktemp -d "${TMPDIR:-/tmp}/rt-cli-acl-XXXXXX")
. "$HERE/helpers/cli_harness.sh"
. "$HERE/kafka/harness.sh"
cleanup() {
    serve_cleanup
    rm -rf "$T"
}
trap cleanup EXIT

# kc ARGS...: kcat with a bounded run, output in $T/out (stdout and stderr).
kc() {
    timeout 30 kcat -b "$BROKER" -X socket.timeout.ms=10000 "$@" >"$T/out" 2>&1
    RC=$?
    : >"$T/err"
}
# node_acl SUB ARGS...: tests/kafka/node/acl.js, output in $T/out.
node_acl() {
    (cd "$NODE_DIR" && timeout 60 node acl.js "$@") >"$T/out" 2>"$T/err"
    RC=$?
}
# wait_bindings N: until the broker has reloaded acls.meta holding N bindings (10 s at most).
wait_bindings() {
    local i
    for i in $(seq 1 100); do
        grep -q "ACLs reloaded from .*: $1 bindings" "$T/serve.log" && return 0
        sleep 0.1
    done
    return 1
}

D=$T/data
run topic create "$D" pay-1 --partitions 1
expect "a topic pay-1" 0
serve_start "$D" --authorizer on

# ---- no ACLs: everything refused with Kafka's codes ----------------------------------------
echo one | kc -P -t pay-1
expect "kcat produce without ACLs: Topic authorization failed" 0 "Topic authorization failed"
kc -L
expect "kcat metadata without ACLs lists no topic" 0 " 0 topics:"
$PY "$HERE/kafka/py_acl.py" denied "$BROKER" pay-1 g >"$T/out" 2>"$T/err"
RC=$?
expect "confluent-kafka without ACLs: every API refused with Kafka's code" 0
node_acl denied "$BROKER" pay
expect "kafkajs DescribeAcls without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED" 0

# ---- ringtail acl add on the running broker's directory (mtime) ------------------------------
run acl add "$D" --principal User:ANONYMOUS --operation DESCRIBE --group g
expect "ringtail acl add DESCRIBE on group g" 0 "^added$"
run acl add "$D" --principal User:ANONYMOUS --operation DESCRIBE --topic pay-1
expect "ringtail acl add DESCRIBE on topic pay-1" 0 "^added$"
run acl add "$D" --principal User:ANONYMOUS --operation WRITE --transactional-id acl-txn2
expect "ringtail acl add WRITE on transactional id acl-txn2" 0 "^added$"
check "the broker reloads acls.meta by its mtime" wait_bindings 3
$PY "$HERE/kafka/py_acl.py" describe-only "$BROKER" pay-1 g >"$T/out" 2>"$T/err"
RC=$?
expect "DESCRIBE only: offsets fetched and listed; commit, fetch and join refused" 0
$PY "$HERE/kafka/py_acl.py" txn "$BROKER" pay-1 g >"$T/out" 2>"$T/err"
RC=$?
expect "a transaction: AddPartitionsToTxn and AddOffsetsToTxn refused with Kafka's codes" 0

# ---- CreateAcls over the wire (kafkajs) ----------------------------------------------------
run acl add "$D" --principal User:ANONYMOUS --operation ALTER --cluster
expect "ringtail acl add ALTER on the cluster (CreateAcls needs it)" 0 "^added$"
check "the broker reloads acls.meta again" wait_bindings 4
node_acl create "$BROKER" pay g
expect "kafkajs CreateAcls: WRITE, READ, CREATE on topics pay*, READ on group g" 0
printf 'a\nb\nc\n' | kc -P -t pay-2
expect "kcat produce to pay-2 (auto-created under the prefix)" 0
kc -C -t pay-2 -e -o beginning
expect "kcat consume of pay-2 reads the three records" 0 "^c$"
kc -L
expect "kcat metadata lists the topics it may describe" 0 'topic "pay-2"'
kc -G other -o beginning -e pay-2
expect "a consumer of group 'other' (no ACL): Group authorization failed" 1 \
    "Group authorization failed"
run acl add "$D" --principal User:ANONYMOUS --operation READ --group other
expect "ringtail acl add READ on group other" 0 "^added$"
check "the broker reloads acls.meta a third time" wait_bindings 9
kc -G other -o beginning -e pay-2
expect "the consumer of group 'other' reads once it has READ on the group" 0 "^c$"
kc -C -t nopay -e
expect "a topic outside the prefix stays refused" 1 "Topic authorization failed"
node_acl describe "$BROKER" pay
expect "kafkajs DescribeAcls lists the three topic ACLs" 0 "acl pay 4 User:ANONYMOUS 5"
serve_stop

# ---- a restart keeps them ----------------------------------------------------------------
run acl list "$D" --principal User:ANONYMOUS --topic pay
expect "ringtail acl list shows the ACLs created over the wire" 0 \
    "User:ANONYMOUS.\*.ALLOW.CREATE.TOPIC.PREFIXED.pay"
serve_start "$D" --authorizer on
echo d | kc -P -t pay-2
expect "after a restart kcat still produces to pay-2" 0
kc -C -t pay-2 -e -o beginning
expect "and reads the four records" 0 "^d$"
node_acl delete "$BROKER" pay
expect "kafkajs DeleteAcls deletes the three" 0 "^deleted 3$"
echo e | kc -P -t pay-2
expect "after DeleteAcls kcat produce is refused again" 0 "Topic authorization failed"
serve_stop

# ---- without --authorizer ---------------------------------------------------------------
serve_start "$D"
node_acl disabled "$BROKER" pay
expect "without --authorizer DescribeAcls answers SECURITY_DISABLED" 0
echo f | kc -P -t pay-2
expect "without --authorizer kcat produces" 0
serve_stop
serve_verify "$D"

# ---- a SASL principal (User:alice over SCRAM-SHA-512) ---------------------------------------
D2=$T/sasl
run topic create "$D2" t1 --partitions 1
expect "a topic t1 for the SASL broker" 0
printf 'alice-secret' >"$T/pw"
run user add "$D2" --name alice --mechanism SCRAM-SHA-512 --password-file "$T/pw"
expect "ringtail user add alice" 0
run acl add "$D2" --principal User:alice --operation WRITE --topic t1
expect "ringtail acl add WRITE on t1 for User:alice" 0 "^added$"
SERVE_PORT=$(free_port)
serve_start "$D2" --listeners "SASL_PLAINTEXT://127.0.0.1:$SERVE_PORT" \
    --sasl-mechanisms SCRAM-SHA-512,PLAIN --authorizer on
SERVE_PORT=
SASL="-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=alice"
# shellcheck disable=SC2086
echo s | kc $SASL -X sasl.password=alice-secret -P -t t1
expect "alice (SASL) produces to t1: her WRITE ACL" 0
# shellcheck disable=SC2086
kc $SASL -X sasl.password=alice-secret -C -t t1 -e
expect "alice (SASL) may not read t1: Topic authorization failed" 1 "Topic authorization failed"
python3 "$(dirname "$0")/kafka/sasl_wire.py" denied "$BROKER" alice alice-secret >"$T/out" 2>&1
RC=$?
expect "alice may neither describe nor alter SCRAM credentials without cluster ACLs (KSA6)" 0
run user list "$D2"
if grep -q mallory "$T/out"; then bad "the refused upsert stored nothing"; else ok "the refused upsert stored nothing"; fi
serve_stop

# ---- a corrupt acls.meta is reported, never applied ------------------------------------------
printf '\x00' | dd of="$D/acls.meta" bs=1 seek=20 conv=notrunc status=none
timeout 20 "$RT" serve "$D" --listen 127.0.0.1:0 --authorizer on >"$T/out" 2>"$T/err"
RC=$?
expect "a corrupt acls.meta stops the start, naming the file and offset" 1 \
    "acls.meta: corrupt at byte offset 6: CRC mismatch"
run acl list "$D"
expect "ringtail acl list reports it too" 1 "acls.meta: corrupt at byte offset"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
