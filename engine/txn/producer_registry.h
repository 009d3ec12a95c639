/*
 * producer_registry.h — the engine's durable producer-id allocator and its named producers,
 * kept in `<dir>/producers.meta` (docs/format.md §A.5).
 *
 * Producer ids are handed out from blocks of PRODUCER_ID_BLOCK: the file records the end of the
 * block in use, written (atomically, fsynced) before the first id of a block is handed out, so
 * after any restart allocation resumes past every id that may have been used: ids are never
 * reused. A named producer's (name -> producer id, epoch) is stored likewise; each open of a
 * name bumps its epoch before returning, fencing older instances.
 *
 * All calls are thread-safe (one mutex; none is on the append path). producer_registry_is_named
 * is what partitions ask, on their shard threads, when they first meet a producer id.
 */
#ifndef RT_PRODUCER_REGISTRY_H
#define RT_PRODUCER_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringtail.h"

#define PRODUCER_REGISTRY_FILE         "producers.meta"
#define PRODUCER_REGISTRY_TMP          "producers.meta.tmp"
#define PRODUCER_REGISTRY_MAGIC        0x52545052u /* "RTPR" */
#define PRODUCER_REGISTRY_VERSION      1
#define PRODUCER_REGISTRY_HEADER_BYTES 22
#define PRODUCER_ID_BLOCK              1000
#define PRODUCER_NAME_MAX              249

struct producer_name {
    char name[PRODUCER_NAME_MAX + 1];
    int64_t producer_id;
    int16_t epoch;
};

struct io_fault_plan;
struct producer_registry {
    char dir[4096];
    struct io_fault_plan *faults; /* the engine's fault plan (tests) or NULL: fsutil.h */
    pthread_mutex_t lock;
    int64_t next_id;   /* next id to hand out */
    int64_t block_end; /* persisted: ids below it may have been handed out */
    bool found;        /* the file existed at open */
    /* Granted blocks (opts.producer_ids_granted): ids only from [grant_next, grant_end), then
     * [spare_first, spare_end); next_id stays the floor below which nothing is handed out. */
    bool granted;
    int64_t grant_next, grant_end, spare_first, spare_end;
    struct producer_name *names;
    uint32_t name_count, name_capacity;
};

/* Parses the file's bytes (untrusted): 0, or RT_E_CORRUPT with *why and *bad_offset. On success
 * *block_end and the names are filled (names malloc'd; free()). */
int producer_registry_parse(const uint8_t *buf, size_t len, int64_t *block_end,
                            struct producer_name **names, uint32_t *count, const char **why,
                            size_t *bad_offset);

int producer_registry_open(struct producer_registry *r, const char *dir,
                           struct io_fault_plan *faults);
void producer_registry_close(struct producer_registry *r);

/* A fresh producer id (anonymous idempotent producer). */
int producer_registry_allocate(struct producer_registry *r, int64_t *producer_id_out);

/* The name's producer id with its epoch bumped (a new name gets a new id and epoch 0). */
int producer_registry_open_name(struct producer_registry *r, const char *name,
                                int64_t *producer_id_out, int16_t *epoch_out);

bool producer_registry_is_named(void *registry, int64_t producer_id);

/* Did producers.meta exist when the registry was opened? */
bool producer_registry_found(const struct producer_registry *r);

/* Makes every id below `floor` count as handed out: allocation resumes at `floor` or later.
 * Open calls it with one past the largest id the partitions and the transaction log know, so a
 * lost or older producers.meta can never make an id be handed out twice. Rewrites the file
 * when it was missing or `floor` passes its block. */
int producer_registry_raise(struct producer_registry *r, int64_t floor);

/* Granted mode (rt_producer_id_grant, ringtail.h): allocation takes ids only from the blocks
 * given by producer_registry_grant. */
void producer_registry_set_granted(struct producer_registry *r);
/* Adds the block [first, end) (the next one when a block is in use). 0, RT_E_INVALID_ARGUMENT
 * or the store's error. */
int producer_registry_grant(struct producer_registry *r, int64_t first, int64_t end);
/* Ids left in the granted blocks (0 when not in granted mode). */
int64_t producer_registry_available(struct producer_registry *r);

#endif /* RT_PRODUCER_REGISTRY_H */
