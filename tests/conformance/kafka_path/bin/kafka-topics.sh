#!/bin/sh
# kafka-topics.sh for the conformance run: KAFKA_PATH=tests/conformance/kafka_path makes
# librdkafka's suite run this; it is tests/conformance/kafka_topics.py (AdminClient), under the
# interpreter that has Debian's python3-confluent-kafka.
exec /usr/bin/python3 "$(dirname "$0")/../../kafka_topics.py" "$@"
