#!/bin/sh
# kafka-acls.sh for the conformance run: KAFKA_PATH=tests/conformance/kafka_path makes
# librdkafka's suite run this; it is tests/conformance/kafka_acls.py (CreateAcls, DeleteAcls,
# DescribeAcls written by hand: python3-confluent-kafka 1.7 has no ACL API).
exec /usr/bin/python3 "$(dirname "$0")/../../kafka_acls.py" "$@"
