#!/usr/bin/env bash
# setup.sh — first of the two quick-start commands' halves: installs the Debian packages ringtail
# needs (only those missing; apt-get as root, or through sudo) and builds the Release tree in
# build/release. Safe to rerun: it installs nothing twice and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config git python3 util-linux liburing-dev libjemalloc-dev
          libcmocka-dev libbenchmark-dev clang clang-format libclang-rt-14-dev llvm zlib1g-dev libsnappy-dev
          liblz4-dev libzstd-dev librocksdb-dev liblmdb-dev libsqlite3-dev gnuplot-nox)
# The Kafka broker's real-client tests and its metrics (issue 12): kcat, librdkafka for the C test
# programs and the serve bench, Debian's confluent-kafka under /usr/bin/python3, libmicrohttpd for
# --metrics, promtool (prometheus) to check a scrape, iproute2 for `ss -K`. Node and npm (for
# kafkajs) only when missing: a machine with another node (nodesource's) keeps it.
packages+=(kcat librdkafka-dev python3-confluent-kafka libmicrohttpd-dev prometheus iproute2 curl)
# TLS listeners and SASL/SCRAM (issue 23): OpenSSL 3's libssl and libcrypto (PBKDF2, HMAC, the
# digests), and its CLI for the tests' certificates.
packages+=(libssl-dev openssl)
# The cluster's metadata quorum (issue 24): Canonical's raft library (libraft-dev, the one under
# dqlite and LXD) and libuv, its event loop, disk I/O and TCP transport (libuv1-dev).
packages+=(libraft-dev libuv1-dev)
# The cluster's fault tests (tests/cluster/, issue 24): iptables cuts a node off from the others
# (rules by the nodes' owner group on 127.0.0.1).
packages+=(iptables)
# tools/conformance.sh unpacks librdkafka's Debian source package (dpkg-source) and builds its
# test-runner (g++; with rapidjson-dev its JSON-checking tests, 0053 stats and 0110 batch size,
# run instead of skipping); it adds the deb-src entry and fetches the source itself.
packages+=(dpkg-dev g++ rapidjson-dev)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# kafkajs, pinned by tests/kafka/node/package-lock.json, into that directory (git-ignored
# node_modules): `npm ci` installs exactly the locked version, only when it is not there yet.
if [ ! -f tests/kafka/node/node_modules/kafkajs/package.json ]; then
    echo "setup: installing kafkajs (npm ci in tests/kafka/node)"
    (cd tests/kafka/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

jobs=$(nproc)
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$jobs"
echo "setup: built build/release/ringtail"
