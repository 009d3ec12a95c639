#!/usr/bin/env python3
"""check_refs.py — keeps the tree's ids and references true (issue 22 item 5, STYLE.md 16).

It reads every tracked source and doc file of the repository and fails (exit 1, one line per
problem) when:
  R1  an invariant or rule id is defined in more than one place. A definition is a comment line
      that starts with the id, then a period or two spaces ("  KA1  Entries are ..." or
      " * PR6. A send ..."), in a .c/.h/.cc file; ids are letters then digits (CO13, KS2, FI8).
  R2  a cited id does not exist: for every prefix that has definitions somewhere, a citation of
      that prefix with a number that no file defines ("KS9" where only KS1-KS3 exist).
  R3  a reference names a document or section the repository does not have: "DESIGN §n" (the
      design brief lives outside the repository), "docs/NAME.md" for a missing file, and
      "format.md X.n" / "format.md §X" for a section heading docs/format.md does not have.
Usage: check_refs.py [repo-dir]   (default: the directory above this script)
It never changes a file.
"""
import os
import re
import subprocess
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
top = os.path.realpath(top)

try:
    files = subprocess.run(["git", "-C", top, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
except (OSError, subprocess.CalledProcessError):
    files = []
    for d, _, names in os.walk(top):
        if "/build" in d or "/.git" in d or "node_modules" in d:
            continue
        files += [os.path.relpath(os.path.join(d, n), top) for n in names]

SRC_EXT = (".c", ".h", ".cc")
TEXT_EXT = SRC_EXT + (".md", ".sh", ".py", ".txt", ".cmake")
files = [f for f in files if f.endswith(TEXT_EXT) or os.path.basename(f) == "CMakeLists.txt"]
files = [f for f in files if "node_modules" not in f and not f.startswith("fuzz/corpus/")
         and f != "tools/check_refs.py"
         and not f.startswith("bench/kcodec/old_")]  # main's old codecs, kept to bench against  # its own doc names the patterns it refuses

ID = r"[A-Z]{1,5}[0-9]{1,3}[a-z]?"
# (a 4-character id in a column of 3-character ones is followed by one space only)
DEF = re.compile(r"^\s*(?:/\*|\*|//)\s{1,6}(" + ID + r")(?:\.\s|\s{2,}|\s*$)"
                 r"|^ \*   ([A-Z]{2,4}[0-9]{2,3}) (?=\S)")
CITE = re.compile(r"(?<![A-Za-z0-9_\-./$])(" + ID + r")(?![A-Za-z0-9_=])")

problems = []
defs = {}  # id -> [(file, line)]
texts = {}
for f in files:
    path = os.path.join(top, f)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            texts[f] = fh.read().splitlines()
    except OSError:
        continue
    if not f.endswith(SRC_EXT):
        continue
    in_comment = False
    for n, line in enumerate(texts[f], 1):
        s = line.strip()
        starts = s.startswith("/*")
        if starts:
            in_comment = True
        if in_comment or s.startswith("//"):
            m = DEF.match(line)
            if m:
                defs.setdefault(m.group(1) or m.group(2), []).append((f, n))
        if "*/" in s:
            in_comment = False

# Rules defined in the normative docs ("- **R1** batches are accepted ...") count as ids too: a
# citation of one is checked (R2), and the docs' own ids must be unique among the docs (R1); a
# doc rule and a code invariant may share a name only across the two (format.md's W-rules and
# the bench's workloads W1-W4 are both public names).
doc_defs = {}
DOC_DEF = re.compile(r"^- \*\*(" + ID + r")[\s*.]")
for f in ("docs/format.md", "docs/limits.md", "docs/torture.md", "docs/architecture.md"):
    for n, line in enumerate(texts.get(f, []), 1):
        m = DOC_DEF.match(line)
        if m:
            doc_defs.setdefault(m.group(1), []).append((f, n))

# R1
for i, where in sorted(list(defs.items()) + list(doc_defs.items())):
    if len(where) > 1:
        places = ", ".join(f"{f}:{n}" for f, n in where)
        problems.append(f"R1 {i} is defined {len(where)} times: {places}")

# R2: prefixes that have definitions
def prefix(i):
    return re.match(r"[A-Z]+", i).group(0)

defined_prefixes = {prefix(i) for i in defs} | {prefix(i) for i in doc_defs}
# Ids that are names of other things (Kafka, hardware, the bench's workloads), not ours.
NOT_OURS = re.compile(r"^(KIP|SHA|CRC|TLS|SSE|AVX|RFC|UTF|ISO|LZ|ZSTD|GCC|C|V|X|S|E|P|Q|L|T)[0-9]")
for f, lines in texts.items():
    for n, line in enumerate(lines, 1):
        for m in CITE.finditer(line):
            i = m.group(1)
            p = prefix(i)
            if p not in defined_prefixes or i in defs or i in doc_defs or NOT_OURS.match(i):
                continue
            problems.append(f"R2 {f}:{n}: {i} is cited but defined nowhere")

# R3
fmt_sections = set()
for line in texts.get("docs/format.md", []):
    m = re.match(r"^#{1,4}\s+([A-Z](?:\.[0-9]+)*)[\s.]", line)
    if m:
        fmt_sections.add(m.group(1))
doc_files = {f for f in texts if f.startswith("docs/")}
for f, lines in texts.items():
    for n, line in enumerate(lines, 1):
        if re.search(r"DESIGN\s*§", line):
            problems.append(f"R3 {f}:{n}: 'DESIGN §' names a document outside the repository")
        for m in re.finditer(r"\bdocs/([A-Za-z0-9_\-]+\.md)", line):
            if "docs/" + m.group(1) not in doc_files and not os.path.exists(
                    os.path.join(top, "docs", m.group(1))):
                problems.append(f"R3 {f}:{n}: docs/{m.group(1)} does not exist")
        for m in re.finditer(r"format\.md,?\s+§?([A-G](?:\.[0-9]+)?)\b", line):
            if m.group(1) not in fmt_sections:
                problems.append(f"R3 {f}:{n}: docs/format.md has no section {m.group(1)}")

for p in problems:
    print(p)
print(f"check_refs: {len(defs)} ids defined, {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
