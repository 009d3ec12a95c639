/*
 * hw_checkpoint.h — Kafka's `replication-offset-checkpoint` (docs/format.md M): the high
 * watermark of every replicated partition of a cluster node, in the data directory, as text
 * ("0\n", the entry count, then one "topic partition offset" line each). It owns the format, its
 * parser and the durable replacement of the file; it never decides a high watermark (the
 * replica fetcher and the leader side do) and never touches the engine.
 *
 * Invariants:
 *   HC1  The parser accepts exactly what hw_checkpoint_format writes for some entry list: version
 *        0, a count equal to the lines that follow, each a valid topic name, a partition in
 *        0..2^31-1 and an offset >= 0 in plain decimal (no sign, no leading zero), single spaces,
 *        every line ended by "\n", nothing after; anything else is RT_E_CORRUPT naming the line.
 *        It never reads outside the buffer and allocates at most one entry per line present.
 *   HC2  hw_checkpoint_store replaces the file atomically and durably: a temporary file written
 *        and fsynced, renamed over the file, the directory fsynced; a crash leaves the old file or
 *        the new one, never a mixture.
 *   HC3  A missing file is an empty checkpoint (a node's first start, or a single broker's
 *        directory joining a cluster): every partition's high watermark is then 0.
 */
#ifndef RT_KAFKA_CLUSTER_HW_CHECKPOINT_H
#define RT_KAFKA_CLUSTER_HW_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#define HW_CHECKPOINT_FILE      "replication-offset-checkpoint"
#define HW_CHECKPOINT_TOPIC_MAX 249

struct hw_entry {
    char topic[HW_CHECKPOINT_TOPIC_MAX + 1];
    int32_t partition;
    int64_t offset;
};

struct hw_checkpoint {
    struct hw_entry *entries;
    size_t count;
};

/* Parses buf (HC1). 0 with *out filled (free with hw_checkpoint_free), RT_E_CORRUPT (*bad_line:
 * the 1-based line at fault) or -ENOMEM; on an error *out is empty. */
int hw_checkpoint_parse(const char *buf, size_t len, struct hw_checkpoint *out, size_t *bad_line);
/* The text of c in a malloc'ed buffer. 0 or -ENOMEM. */
int hw_checkpoint_format(const struct hw_checkpoint *c, char **buf, size_t *len);
/* Reads DIR/replication-offset-checkpoint (HC3: missing = empty). 0, RT_E_CORRUPT or -errno. */
int hw_checkpoint_load(const char *dir, struct hw_checkpoint *out, size_t *bad_line);
/* Replaces DIR/replication-offset-checkpoint with c (HC2). 0 or -errno. */
int hw_checkpoint_store(const char *dir, const struct hw_checkpoint *c);
/* The offset of (topic, partition), or -1 when c has none. */
int64_t hw_checkpoint_get(const struct hw_checkpoint *c, const char *topic, int32_t partition);
/* Appends an entry. 0 or -ENOMEM (c unchanged). */
int hw_checkpoint_add(struct hw_checkpoint *c, const char *topic, int32_t partition,
                      int64_t offset);
void hw_checkpoint_free(struct hw_checkpoint *c);

#endif
