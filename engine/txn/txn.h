/*
 * txn.h — the transaction layer's front: the producer-id registry, and the transaction
 * coordinator and the consumer-group offset manager, each created with its internal topic on
 * first use (or at open when its topic exists), and wired together. Internal.
 *
 * The layer above (client/) and the composition root (engine.c) reach the coordinator and the
 * group manager only through here; the txn layer reaches the disk only through log.h.
 *
 * TX1. The coordinator and the group manager, once created, live until txn_close; the pointers
 *      are read under `lock` and never change after that, so a caller may keep them.
 * TX2. The group manager is created before the coordinator at open (the coordinator completes
 *      transactions that carry offsets), and whenever it is created later the coordinator is
 *      told (coordinator_attach_groups).
 */
#ifndef RT_TXN_H
#define RT_TXN_H

#include <pthread.h>
#include <stdbool.h>

#include "log.h"
#include "producer_registry.h"

struct coordinator;
struct group_manager;

struct txn {
    struct log *log;
    struct producer_registry producers;
    bool producers_open;
    pthread_mutex_t lock; /* creates the internal topics and their managers lazily */
    struct coordinator *coordinator;
    struct group_manager *groups;
};

/* Opens the producer-id registry of `dir` (before the log opens: partitions ask it which ids
 * are named while they replay). */
int txn_registry_open(struct txn *t, const char *dir, struct io_fault_plan *faults);

/* Once the log's partitions are open, before its shards start (they change the producer tables
 * it reads): raises the registry past every id the partitions hold. */
int txn_registry_raise(struct txn *t, struct log *log);

/* Once the log's shards run: opens the group manager and the coordinator whose topics exist (the
 * coordinator finishes every Prepare* before this returns). */
int txn_start(struct txn *t, struct log *log);

/* Closes the coordinator (its timer writes through the shards: before the log stops). */
void txn_stop(struct txn *t);

/* Closes the group manager and the registry (after the log's shards stopped). */
void txn_close(struct txn *t);

/* The coordinator if it exists, else NULL with the error detail saying no transaction was
 * ever started. */
struct coordinator *txn_coordinator(struct txn *t);

/* The same, created (with its internal topic) on first use. Return 0, or the real cause of
 * failing (RT_E_READ_ONLY for a read-only engine, an I/O error, ...). */
int txn_coordinator_create(struct txn *t, struct coordinator **out);

/* The group manager if it exists (NULL otherwise; no detail). */
struct group_manager *txn_groups(struct txn *t);
int txn_groups_create(struct txn *t, struct group_manager **out);

/* Producer ids: a fresh one, or a name's (its epoch bumped). */
int txn_producer_allocate(struct txn *t, int64_t *producer_id_out);
int txn_producer_open_name(struct txn *t, const char *name, int64_t *producer_id_out,
                           int16_t *epoch_out);

#endif /* RT_TXN_H */
