"""checker.py — the verdict of the fault tests (issue 24 item 5, docs/cluster.md §9), in the
style of Jepsen's Kafka workload: from the producers' history (workload.History), what readers
found after healing, and `ringtail cluster check` over the stopped nodes, it lists every
violation of:

  JC1 no acknowledged record lost: every acknowledged value is read (read_uncommitted);
  JC2 none duplicated: no value is read twice (any partition, any offset);
  JC3 offsets monotonic per partition: each reader's offsets strictly increase, and every
      acknowledged value is at the partition and offset its delivery report gave;
  JC4 one incarnation of an idempotent producer's values appear in its send order within a
      partition (what enable.idempotence promises);
  JC5 every replica identical up to the high watermark: cluster check finds the stopped nodes'
      logs byte-identical where they overlap, each node's log reaches the highest checkpointed
      high watermark, and that watermark covers every acknowledged offset;
  JC6 read_committed sees nothing read_uncommitted does not, in the same place, and no value of
      an aborted transaction (the workload writes none yet: transactions across the cluster are
      issue 25, so that half holds vacuously and says so);
  JC7 no value is read that no producer sent;
  JC8 no idempotent producer fails fatally (workload.py WL2): Kafka's idempotent producer keeps
      its exactly-once promise through leader changes, so a new leader never answers a retry
      OUT_OF_ORDER_SEQUENCE_NUMBER (45) or UNKNOWN_PRODUCER_ID (59) — librdkafka's fatal
      errors — and no delivery report carries either code. With strict_fatal false (run.py
      --allow-fatal) they are counted in the figures only.

It only reads what it is given; it never retries, waits or changes the cluster.
"""
import re

VALUE = re.compile(r"^P(\d+)\.(\d+)-(\d+)$")


FATAL_CODES = ("OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID")


def check(history, reads, committed, cluster_check, topic, aborted=(), strict_fatal=True):
    """Returns (violations: [str], figures: dict)."""
    bad = []
    # JC8: fatal producer errors, and delivery reports with the idempotence errors
    fatal_by_code = {}
    for who, name, text, ph in history.fatal:
        fatal_by_code[name] = fatal_by_code.get(name, 0) + 1
        if strict_fatal:
            bad.append(f"JC8 fatal: producer {who}: {name} (sent in {ph}): {text[:300]}")
    for v, (p, err, ph) in sorted(history.failed.items()):
        if err in FATAL_CODES and strict_fatal:
            bad.append(f"JC8 failed: {v} at {p}@None with {err} (sent in {ph})")
    acked = history.acked
    # where each value was read (read_uncommitted)
    where = {}
    for p, recs in reads.items():
        last = -1
        for off, v in recs:
            if off <= last:  # JC3
                bad.append(f"JC3 partition {p}: offset {off} read after {last}")
            last = off
            where.setdefault(v, []).append((p, off))
    for v, locs in where.items():
        if len(locs) > 1:  # JC2
            ph = history.sent.get(v, (None, "?"))[1]
            bad.append(f"JC2 duplicated: {v} (sent in {ph}) at {locs}")
        if v not in history.sent:  # JC7
            bad.append(f"JC7 never sent: {v} at {locs}")
    no_offset = 0
    for v, (p, off, ph) in sorted(acked.items(), key=lambda kv: (kv[1][0], kv[1][1] or -1)):
        locs = where.get(v)
        if off is None:  # a delivery report without an offset (librdkafka's invalid offset)
            no_offset += 1
        if not locs:  # JC1
            bad.append(f"JC1 lost: {v} acknowledged at {p}@{off} (sent in {ph})")
        elif off is not None and (p, off) not in locs:  # JC3
            bad.append(f"JC3 misplaced: {v} acknowledged at {p}@{off}, read at {locs} (sent in {ph})")
    # JC4: per producer incarnation and partition, read order == send order
    for p, recs in reads.items():
        last = {}
        for off, v in recs:
            m = VALUE.match(v)
            if not m:
                continue
            k = (m.group(1), m.group(2))
            seq = int(m.group(3))
            if k in last and seq <= last[k][0]:
                bad.append(f"JC4 partition {p}: {v}@{off} after P{k[0]}.{k[1]}-{last[k][0]}@{last[k][1]}")
            last[k] = (seq, off)
    # JC6: read_committed is read_uncommitted's prefix, record for record
    for p, recs in committed.items():
        ru = reads.get(p, [])
        if recs != ru[:len(recs)]:
            i = next((k for k in range(len(recs)) if k >= len(ru) or recs[k] != ru[k]), len(recs))
            bad.append(f"JC6 partition {p}: read_committed differs from read_uncommitted at "
                       f"record {i}: {recs[i] if i < len(recs) else None} vs "
                       f"{ru[i] if i < len(ru) else None}")
        for off, v in recs:
            if v in aborted:
                bad.append(f"JC6 partition {p}: read_committed saw aborted {v}@{off}")
    # JC5: replicas
    rc, parts, raw = cluster_check
    max_acked = {}
    for v, (p, off, ph) in acked.items():
        if off is not None:
            max_acked[p] = max(max_acked.get(p, -1), off)
    for p in reads:
        e = parts.get((topic, p))
        if e is None:
            bad.append(f"JC5 partition {p}: not in cluster check's output")
            continue
        verdict, ends, hws = e
        if verdict != "identical":
            bad.append(f"JC5 partition {p}: replicas {verdict} (ends {ends}, hw {hws})")
        hw = max((h for h in hws if h is not None), default=0)
        if min(ends) < hw:
            bad.append(f"JC5 partition {p}: a replica ends at {min(ends)}, below the high "
                       f"watermark {hw} (ends {ends}, hw {hws})")
        if max_acked.get(p, -1) >= hw:
            bad.append(f"JC5 partition {p}: acknowledged offset {max_acked[p]} at or above the "
                       f"high watermark {hw}")
    if rc not in (0, 1):
        bad.append(f"JC5 cluster check failed (exit {rc}): {raw.strip()[:400]}")
    figures = {
        "sent": len(history.sent), "acked": len(acked), "failed": len(history.failed),
        "unreported": len(set(history.sent) - set(acked) - set(history.failed)),
        "read": sum(len(r) for r in reads.values()),
        "read_committed": sum(len(r) for r in committed.values()),
        "unacked_read": sum(1 for v in where if v not in acked),
        "fatal": len(history.fatal),
        "fatal_by_code": fatal_by_code,
        "failed_idempotence": sum(1 for (p, e, ph) in history.failed.values() if e in FATAL_CODES),
        "acked_without_offset": no_offset,
    }
    return bad, figures


def summary(bad):
    """The violations grouped: per check and partition, how many and the offset range (the
    acknowledged offsets of lost records), one line each."""
    groups = {}
    at = re.compile(r"at (\d+)@(\d+|None)")
    for b in bad:
        kind = " ".join(b.split()[:2]).rstrip(":")
        m = at.search(b)
        key = (kind, int(m.group(1)) if m else -1)
        g = groups.setdefault(key, [0, None, None, set()])
        g[0] += 1
        if m and m.group(2) != "None":
            off = int(m.group(2))
            g[1] = off if g[1] is None else min(g[1], off)
            g[2] = off if g[2] is None else max(g[2], off)
        ph = re.search(r"sent in ([^)]*)", b)
        if ph:
            g[3].add(ph.group(1))
    out = []
    for (kind, p), (n, lo, hi, phases) in sorted(groups.items()):
        where = f" partition {p} offsets {lo}..{hi}" if p >= 0 else ""
        out.append(f"{kind}: {n}{where}" + (f" (sent in {', '.join(sorted(phases))})" if phases else ""))
    return out
