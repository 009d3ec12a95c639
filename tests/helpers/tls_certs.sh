#!/usr/bin/env bash
# tls_certs.sh DIR — makes the certificates the TLS tests use, with the openssl CLI (EC P-256
# keys: fast), into DIR:
#   ca.pem/.key         the test CA
#   server.pem/.key     the broker's certificate (CN=localhost; SAN IP:127.0.0.1, DNS:localhost)
#   server2.pem/.key    another one from the same CA (CN=reloaded), for the SIGHUP reload test
#   client.pem/.key     a client certificate (subject O=ringtail, OU=test, CN=alice)
#   wrongca.pem/.key    a CA nobody trusts
#   bad.pem/.key        a client certificate signed by wrongca (CN=mallory)
# It never touches anything outside DIR.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # NAME SUBJECT
    key "$1.key"
    openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "$2" 2>/dev/null
}
leaf() { # NAME SUBJECT CA [EXTFILE]
    key "$1.key"
    openssl req -new -key "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" \
        -days 2 ${4:+-extfile "$4"} 2>/dev/null
    rm -f "$1.csr"
}
ca ca "/CN=ringtail test CA"
ca wrongca "/CN=wrong CA"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext
leaf server "/CN=localhost" ca san.ext
leaf server2 "/CN=reloaded" ca san.ext
leaf client "/O=ringtail/OU=test/CN=alice" ca
leaf bad "/CN=mallory" wrongca
