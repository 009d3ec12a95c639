/*
 * engine.h — the engine object behind rt_engine: the data directory and its lock, options,
 * the topic table, the shards, and recovery orchestration at open. Internal; the public face
 * is ringtail.h.
 *
 * The topic table is append-only with a fixed capacity (topics_max) allocated at open: a topic
 * is fully built before it is published by a release store of topic_count, so lookups from
 * any thread take no lock. Topic creation is serialised by admin_lock.
 */
#ifndef RT_ENGINE_H
#define RT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "meta.h"
#include "partition.h"
#include "ringtail.h"
#include "shard.h"

struct topic {
    char name[RT_TOPIC_NAME_MAX + 1];
    uint32_t partition_count;
    struct partition *partitions;
};

struct rt_engine {
    char dir[SEGMENT_PATH_BYTES];
    int lock_fd;
    struct rt_options opts;
    struct partition_config pcfg;
    struct shard_env env;

    pthread_mutex_t admin_lock;
    struct meta_catalogue catalogue;
    struct topic *topics; /* topics_max slots */
    _Atomic uint32_t topic_count;
    uint32_t partitions_total; /* for shard assignment */

    struct shard *shards;
    uint32_t shard_count;

    _Atomic int write_error;
    _Atomic bool closing;
    struct engine_counters counters;
    struct partition_recovery recovery; /* summed over partitions at open */
};

/* The partition, or NULL (with the thread's error detail set). */
struct partition *engine_partition(rt_engine *e, const char *topic, uint32_t partition);

/* Appends an encoded, validated batch whose header is parsed. */
int engine_append(rt_engine *e, struct partition *p, uint8_t *batch, size_t len,
                  const struct batch_header *h, int64_t *base_offset_out);

/* Runs retention on every partition now, on the shard threads (tests and tools). */
int engine_enforce_retention(rt_engine *e);

/* What the last open recovered (tests and the demo). */
const struct partition_recovery *engine_recovery(const rt_engine *e);

#endif /* RT_ENGINE_H */
