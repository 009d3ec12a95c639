#!/usr/bin/env bash
# cli_refs.sh — ids and references stay true (issue 22 item 5): tools/check_refs.py fails on an
# invariant or rule id defined twice (R1), an id cited but defined nowhere (R2), and a reference
# to a missing document or docs/format.md section (R3). The ringtail binary argument is unused.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
if python3 "$SRC/tools/check_refs.py" "$SRC"; then
    echo "1 passed, 0 failed"
else
    echo "0 passed, 1 failed"
    exit 1
fi
