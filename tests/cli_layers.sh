#!/usr/bin/env bash
# cli_layers.sh — the house's shape, checked mechanically (issue 11's "done means"):
#   1. libringtail.so exports only rt_* symbols;
#   2. an upward #include does not compile: each layer's own compile command (from the build's
#      compile_commands.json) is given a probe that includes a header of a layer above it, and
#      must fail, while a probe including a header of its own layer compiles;
#   3. no include cycle between modules (a module is a .c with its .h) in engine/, io/, index/,
#      and io/ and index/ include nothing from engine/;
#   4. ringtail.pc is complete: installed to a scratch prefix, a program builds and runs from
#      `pkg-config` alone, linked statically (-static, every dependency's archive) and shared.
# Usage: cli_layers.sh path/to/build/ringtail
set -euo pipefail
CLI=$(realpath "$1")
BUILD=$(dirname "$CLI")
SRC=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

# ---- 1. exports
so="$BUILD/libringtail.so"
[ -f "$so" ] || fail "$so not built"
bad=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^rt_' || true)
[ -z "$bad" ] || fail "libringtail.so exports non-rt_ symbols: $(echo "$bad" | head -20 | tr '\n' ' ')"
n=$(nm -D --defined-only "$so" | wc -l)
[ "$n" -ge 40 ] || fail "libringtail.so exports only $n symbols: the public API is missing"
# every call ringtail.h declares is exported
exports=$(nm -D --defined-only "$so" | awk '{print $3}')
for f in $(grep -oE '\brt_[a-z0-9_]+\(' "$SRC/engine/ringtail.h" | tr -d '(' | sort -u); do
    grep -qx "$f" <<<"$exports" || fail "ringtail.h declares $f but libringtail.so does not export it"
done
echo "ok: libringtail.so exports $n symbols, all rt_*, every one ringtail.h declares"

# ---- 2. upward includes fail to compile
python3 - "$BUILD/compile_commands.json" "$SRC" "$TMP" <<'EOF'
import json, os, shlex, subprocess, sys
db, src, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
cmds = {os.path.realpath(e["file"]): e for e in json.load(open(db))}
# (a source file of the layer, headers it must NOT reach, a header it may reach)
cases = [
    ("io/io.c", ["fsutil.h", "batch.h", "log.h", "engine.h"], "io/io_backend.h"),
    ("index/crc32c.c", ["fsutil.h", "batch.h", "log.h"], "index/offset_index.h"),
    ("engine/base/error.c", ["batch.h", "log.h", "txn.h", "engine.h"], "fsutil.h"),
    ("engine/log/log.c", ["txn.h", "coordinator.h", "group.h", "producer.h", "consumer.h",
                          "engine.h"], "segment.h"),
    ("engine/txn/txn.c", ["producer.h", "consumer.h", "murmur2.h", "engine.h"], "log.h"),
    ("engine/client/producer.c", ["engine.h"], "coordinator.h"),
    ("engine/check/verify.c", ["engine.h", "producer.h"], "txn_log.h"),
]
failed = False
for rel, forbidden, allowed in cases:
    path = os.path.realpath(os.path.join(src, rel))
    e = cmds.get(path)
    if not e:
        print(f"FAIL: no compile command for {rel}"); sys.exit(1)
    args = shlex.split(e["command"]) if "command" in e else e["arguments"]
    def probe(header):
        p = os.path.join(tmp, "probe.c")
        open(p, "w").write(f'#include "ringtail.h"\n#include "{header}"\nint rt_probe_unused;\n')
        a = [x for x in args]
        # drop -o <obj> and -c <src>, then compile the probe syntax-only
        out = []
        skip = False
        for x in a:
            if skip: skip = False; continue
            if x in ("-o", "-c"): skip = True; continue
            if os.path.realpath(x) == path if not x.startswith("-") else False: continue
            out.append(x)
        r = subprocess.run(out + ["-fsyntax-only", p], cwd=e["directory"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return r.returncode == 0
    bad = False
    if not probe(allowed):
        print(f"FAIL: {rel}: its own layer's {allowed} does not compile with its flags"); bad = True
    for h in forbidden:
        if probe(h):
            print(f"FAIL: {rel}: #include \"{h}\" (a layer above) compiles"); bad = True
    if not bad:
        print(f"ok: {rel}: {', '.join(forbidden)} refused; {allowed} allowed")
    failed = failed or bad
sys.exit(1 if failed else 0)
EOF

# ---- 3. no module cycles; io/ and index/ independent of engine/
python3 - "$SRC" <<'EOF'
import os, re, sys
src = sys.argv[1]
mods = {}  # module name -> set of module names it includes
where = {}
for top in ("engine", "io", "index"):
    for d, _, files in os.walk(os.path.join(src, top)):
        for f in files:
            if not f.endswith((".c", ".h")): continue
            m = os.path.splitext(f)[0]
            where[m] = os.path.relpath(d, src)
            for line in open(os.path.join(d, f)):
                g = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if g:
                    mods.setdefault(m, set()).add(os.path.splitext(os.path.basename(g.group(1)))[0])
            mods.setdefault(m, set())
for m in mods: mods[m] = {x for x in mods[m] if x in mods and x != m}
# A header without a .c (io_backend.h, group_codec.h) is not a module: its includes count as
# its includer's.
has_c = {os.path.splitext(f)[0] for top in ("engine", "io", "index")
         for d, _, fs in os.walk(os.path.join(src, top)) for f in fs if f.endswith(".c")}
def expand(m, seen):
    out = set()
    for x in mods[m]:
        if x in has_c: out.add(x)
        elif x not in seen:
            seen.add(x); out |= expand(x, seen)
    return out
mods = {m: {x for x in expand(m, {m}) if x != m} for m in mods if m in has_c}
bad = False
for m, deps in mods.items():
    if where[m].startswith(("io", "index")):
        for x in deps:
            if where[x].startswith("engine"):
                print(f"FAIL: {where[m]}/{m} includes {where[x]}/{x}"); bad = True
# cycles: DFS
state = {}
stack = []
def dfs(m):
    global bad
    state[m] = 1; stack.append(m)
    for x in sorted(mods[m]):
        if state.get(x) == 1:
            cyc = stack[stack.index(x):] + [x]
            print("FAIL: include cycle: " + " -> ".join(cyc)); bad = True
        elif x not in state:
            dfs(x)
    stack.pop(); state[m] = 2
for m in sorted(mods):
    if m not in state: dfs(m)
if bad: sys.exit(1)
print(f"ok: {len(mods)} modules, no include cycle; io/ and index/ include nothing from engine/")
EOF

# ---- 5. the broker's layers (tools/kafka, issue 22 item 2): folders by concept, includes one
# way, the broker sees only ringtail.h of the engine, and no module cycle inside it.
#   net, proto, store  (bottom: net knows no Kafka API, proto no socket, store (the broker's small
#                   files: read whole, replaced durably) neither; none includes another)
#   group, metrics, sasl, auth, config  (may include net and proto; auth: ACLs and the
#                   authorizer; config: the dynamic broker configs)
#   cluster         (the metadata quorum on libraft and the metadata image; beside group: it may
#                   include net and proto, never handlers/ or server/)
#   handlers        (may include the layers below)
#   server          (top: wires net to the handlers)
python3 - "$SRC" <<'EOF'
import os, re, sys
src = sys.argv[1]
root = os.path.join(src, "tools", "kafka")
rank = {"net": 0, "proto": 0, "store": 0, "group": 1, "metrics": 1, "sasl": 1, "auth": 1, "config": 1,
        "cluster": 1,
        "handlers": 2, "server": 3}
bad = False
mods, has_c, folders = {}, set(), set()
for d, _, files in os.walk(root):
    rel = os.path.relpath(d, root)
    if rel == ".":
        for f in files:
            if f.endswith((".c", ".h")):
                print(f"FAIL: tools/kafka/{f} lies outside the layer folders"); bad = True
        continue
    layer = rel.split(os.sep)[0]
    folders.add(layer)
    if layer not in rank:
        print(f"FAIL: tools/kafka/{layer}/ is not a known layer ({', '.join(rank)})"); bad = True
        continue
    for f in files:
        if not f.endswith((".c", ".h")): continue
        m = os.path.splitext(f)[0]
        if f.endswith(".c"): has_c.add(m)
        deps = mods.setdefault(m, set())
        for n, line in enumerate(open(os.path.join(d, f)), 1):
            g = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not g: continue
            inc = g.group(1)
            at = f"tools/kafka/{layer}/{f}:{n}"
            if inc.startswith("tools/kafka/"):
                to = inc.split("/")[2]
                if to not in rank:
                    print(f"FAIL: {at} includes {inc}: no such layer"); bad = True
                elif to != layer and rank[to] >= rank[layer]:
                    print(f"FAIL: {at} includes {inc}: {to}/ is not below {layer}/"); bad = True
                deps.add(os.path.splitext(os.path.basename(inc))[0])
            elif inc not in ("engine/ringtail.h", "ringtail.h"):
                print(f"FAIL: {at} includes {inc}: the broker sees only engine/ringtail.h"); bad = True
for layer in rank:
    if layer not in folders:
        print(f"FAIL: tools/kafka/{layer}/ is missing"); bad = True
for m in mods: mods[m] = {x for x in mods[m] if x in mods and x != m}
def expand(m, seen):
    out = set()
    for x in mods[m]:
        if x in has_c: out.add(x)
        elif x not in seen:
            seen.add(x); out |= expand(x, seen)
    return out
mods = {m: {x for x in expand(m, {m}) if x != m} for m in mods if m in has_c}
state, stack = {}, []
def dfs(m):
    global bad
    state[m] = 1; stack.append(m)
    for x in sorted(mods[m]):
        if state.get(x) == 1:
            print("FAIL: broker include cycle: " + " -> ".join(stack[stack.index(x):] + [x])); bad = True
        elif x not in state:
            dfs(x)
    stack.pop(); state[m] = 2
for m in sorted(mods):
    if m not in state: dfs(m)
if bad: sys.exit(1)
print(f"ok: the broker's {len(mods)} modules in {len(rank)} layer folders, includes one way, "
      "only ringtail.h of the engine, no include cycle")
EOF

# ---- 4. ringtail.pc: static and shared programs from pkg-config alone
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
pc=$(find "$TMP/prefix" -name ringtail.pc | head -1)
[ -n "$pc" ] || fail "ringtail.pc not installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
[ "$(find "$TMP/prefix/include" -type f | wc -l)" = 1 ] || fail "installed headers: $(find "$TMP/prefix/include" -type f) (want ringtail.h alone)"
cat >"$TMP/prog.c" <<'EOF'
#include <ringtail.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    rt_engine *e = NULL;
    int rc = rt_open(argv[1], NULL, &e);
    if (rc) {
        fprintf(stderr, "rt_open: %s\n", rt_strerror(rc));
        return 1;
    }
    rc = rt_topic_create(e, "t", 1);
    struct rt_record r = {.key_len = -1, .value = "v", .value_len = 1, .timestamp_ms = -1};
    int64_t off = -1;
    if (rc == 0)
        rc = rt_append(e, "t", 0, &r, 1, &off);
    if (rt_close(e) || rc || off != 0)
        return 1;
    printf("%s ok\n", argc > 2 ? argv[2] : "");
    return 0;
}
EOF
cc -std=c11 -o "$TMP/prog_shared" "$TMP/prog.c" $(pkg-config --cflags --libs ringtail)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir ringtail) "$TMP/prog_shared" "$TMP/d1" shared | grep "shared ok" >/dev/null || fail "shared program"
deps=$(ldd "$TMP/prog_shared") # captured first: grep -q would close the pipe under pipefail
grep -q libringtail.so <<<"$deps" || fail "shared program does not link libringtail.so"
cc -std=c11 -static -o "$TMP/prog_static" "$TMP/prog.c" $(pkg-config --static --cflags --libs ringtail) 2>"$TMP/static.log" ||
    { cat "$TMP/static.log"; fail "static link from pkg-config --static --libs ringtail: $(pkg-config --static --libs ringtail)"; }
"$TMP/prog_static" "$TMP/d2" static | grep "static ok" >/dev/null || fail "static program"
if ldd "$TMP/prog_static" >/dev/null 2>&1; then fail "the static program is dynamic"; fi
echo "ok: static and shared programs built from pkg-config alone ($(pkg-config --static --libs ringtail))"
