# cluster_ports.sh — sourced by the tests/cli_cluster_*.sh that start three `ringtail serve
# --voters` nodes: six free 127.0.0.1 ports (controller C1-C3, Kafka K1-K3), the --voters value
# naming the three controllers (VOTERS), and kport I (node I's Kafka port). It starts nothing.
read -r C1 C2 C3 K1 K2 K3 <<<"$(/usr/bin/python3 -c '
import socket
ss = [socket.socket() for _ in range(6)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')"
VOTERS="1@127.0.0.1:$C1,2@127.0.0.1:$C2,3@127.0.0.1:$C3"
kport() { local k="K$1"; echo "${!k}"; }
