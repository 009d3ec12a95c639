/*
 * coordinator.c — the transaction coordinator (see coordinator.h). It owns the transactional ids,
 * their state machine, the records of __transaction_state (docs/format.md G) and the order in
 * which a transaction's records, data and markers may become durable. It never writes a
 * partition but through the log's marker and append calls, and never lets a marker be written
 * before the decision it carries is durable.
 *
 * State machine of one transactional id (Kafka's TransactionState; the function behind each
 * transition in brackets; [mem] = held in memory only, no record written):
 *
 *          init [coordinator_init]         join [coordinator_join, mem] / add [.._add_partitions]
 *   (none) -----------------------> Empty ------------------------------------------> Ongoing
 *                                    ^  ^                                              |  |  |
 *   CompleteCommit/CompleteAbort ----+  |   commit in one round [coordinator_commit_   |  |  |
 *      (next join -> Ongoing)           |   one_round]: PrepareCommit (0x7202) beside  |  |  |
 *                                       |   the last data; markers once both durable   v  |  |
 *                                       |                              PrepareCommit(1R)  |  |
 *                                       |                  data failed |     | markers    |  |
 *                                       |                              v     v            |  |
 *                                       |              PrepareAbort(1R)  CompleteCommit   |  |
 *                                       |   end(commit) [end_locked]: PrepareCommit,      |  |
 *                                       |   durable markers, CompleteCommit  <------------+  |
 *                                       |   wire EndTxn [end_wire_locked, CO12]: Prepare*   |
 *                                       |   (0x7203) in one round, markers and Complete*    |
 *                                       |   lazily (commit and abort alike) <---------------+
 *                                       |   end(abort), timeout, check-back:                 |
 *                                       +------ CompleteAbort <-- PrepareAbort <-------------+
 *   Ongoing --(init by a newer instance)--> PrepareEpochFence --> PrepareAbort --> CompleteAbort
 *   Empty/Complete* idle past transactional_id_expiration_ms --> Dead (tombstone; forgotten)
 *
 * Invariants (tests name them):
 *   CO1. Every durable transition is in __transaction_state before anything depends on it:
 *        Prepare* before the first marker (one-round: before the first marker and together
 *        with the last data, CO9); a wire client's Ongoing (coordinator_add_partitions) before
 *        its producer writes to the partition; Complete* only after every marker is written.
 *        The in-process producer's Ongoing is never written (CO9).
 *   CO2. A Prepare* state found at open (or left by a failed round) is completed with the same
 *        outcome; it is never flipped — except a one-round PrepareCommit whose data is not all
 *        durable, which CO10 turns into PrepareAbort (that commit was never acknowledged). So a
 *        transaction is all-or-nothing across partitions.
 *   CO3. The epoch is bumped at every transaction end (except as CO7 says), and markers carry
 *        the bumped epoch: once a marker is in a partition, any write of the finished epoch
 *        there is rejected (KIP-890). So at most one transaction has data at one (id, epoch).
 *   CO4. A request with an older epoch, or another producer id, than the id's current one is
 *        RT_E_PRODUCER_FENCED; a request while the id is completing (Prepare*, or a one-round
 *        commit in flight) is RT_E_CONCURRENT_TRANSACTIONS.
 *   CO5. An Ongoing transaction older than its timeout is aborted with an epoch bump by the timer
 *        (unless parked as hanging by check-back), so no LSO is pinned forever. An Ongoing held
 *        only in memory dies with the process; its partitions are reconciled at the next open
 *        (COR3), so no LSO hangs across a crash either.
 *   CO6. The transaction log stays bounded: when it holds many more records than live ids, the
 *        live state is re-appended in a fresh segment and everything older is deleted (CO11).
 *   CO7. Kafka clients (EndTxn v0-v4, before KIP-890 part 2) keep their epoch across
 *        transactions: coordinator_end_keep_epoch ends a transaction with markers at the current
 *        epoch and leaves the identity as it is (a fence or a timeout still bumps it, CO4/CO5). In
 *        place of CO3's bump, a transactional batch from outside is accepted only for a partition
 *        its producer's id holds in an Ongoing transaction at that very epoch
 *        (coordinator_verify, KIP-890 part 1), so a write after the end cannot open a
 *        transaction no coordinator knows of. Several such transactions share one (producer
 *        id, epoch), so (P, E) does not tell a lost marker from the next transaction: their
 *        decision records name each partition's first offset instead (CO12, COR8). Caveat: a batch
 *        checked just before its transaction's markers and appended just after them opens such
 *        a transaction (the check runs on the caller's thread, the markers on the shards); a
 *        well-behaved client never ends a transaction with a produce unanswered, and the next
 *        open aborts it (COR3).
 *   CO8. Every id with a producer id >= 0 is in pid_buckets under that id, re-indexed whenever
 *        its value is adopted (transition, finish, replay) and unlinked when it is removed.
 *   CO9. One durable round (rt_producer_commit): (a) a partition joins in memory only — the
 *        transactional batch (producer id, epoch, transactional bit) records the participation;
 *        (b) commit queues a PrepareCommit (value 0x7202: the markers' epoch, the data's epoch
 *        txn_epoch, and per partition the producer's last sequence in the transaction) and, at
 *        the same time, the producer hands over its last batches — in one hand-over with it
 *        (producer.c PR6, log_append_async_many), so where they share a shard they share one
 *        round, and no batch runs an inline round (shard.c SH5) ahead of the rest; the id is `deciding`
 *        meanwhile (its lock dropped so the producer's sender can run; every other operation is
 *        refused, the timer skips it, compaction waits); (c) the outcome is decided once the
 *        PrepareCommit and every batch are durable — only then are the markers written, lazily
 *        (published once written, no fdatasync of their own: shard.c SH6), and commit returns
 *        once they are visible; CompleteCommit follows, lazily too. If a batch failed after the
 *        PrepareCommit was durable, PrepareAbort (0x7202) is written durably, then ABORT markers.
 *   CO10. A one-round Prepare* found as an id's last value at open is completed from the
 *        partitions' state (complete_one_round; format.md G.6 R1): a partition whose producer
 *        state is past the data's epoch, or at it with the transaction closed and the recorded
 *        sequence in, has its marker; one with the transaction open and the sequence in needs
 *        it; anything else is data that never became durable, and the whole transaction aborts.
 *        A producer the partition does not know (its table evicted or expired it: only once no
 *        transaction of it is open there, producer_state.c, so a marker closed it, and only
 *        this decision's can have) has its marker if the partition holds its data: at a kept
 *        epoch the batch starting at the recorded first offset is a transactional data batch
 *        of (P, E) (batch_starting_at); at a bumped epoch a transactional data batch of (P, E)
 *        holds the recorded sequence (batch_with_sequence: a scan of the partition's headers,
 *        paid only here; CO3 makes it this transaction's). Sequences compare in wrap space
 *        (PST4). Reconciliation (COR1-COR8) sees only open transactions, whose producers are
 *        never evicted: "unknown" never enters it.
 *   CO11. A lazy marker is durable once its file's next fdatasync (or a seal) ran. Before a
 *        record that could repair it is deleted (compaction, CO6; expiry to Dead) every
 *        partition written since its last fdatasync is fdatasynced (log_sync_unsynced).
 *   CO12. One durable round over the wire (rt_txn_end at a kept epoch, CO7; end_wire_locked):
 *        (a) AddPartitionsToTxn stays durable (an Ongoing record before the client may write
 *        the partition: the transaction survives a restart, as in Kafka, and verification has
 *        the partitions after a reopen); it is not on EndTxn's path; (b) EndTxn reads, for each
 *        partition of the transaction, the producer's state there (the client has every produce
 *        answer before it sends EndTxn): the open transaction's first offset F and the last
 *        sequence S (-1 and -1 where it wrote nothing), and appends Prepare* as a 0x7203 value
 *        (txn_epoch = producer_epoch = the kept epoch E, per partition S and F); (c) for a
 *        commit, every partition that holds bytes not yet fdatasynced is fdatasynced
 *        (log_sync_unsynced_shards) while that record's round runs, so the data up to S is
 *        durable together with the decision (nothing extra where it already is: sync=always);
 *        an abort's data need not be durable; (d) once both are durable the outcome is
 *        decided; the markers are written lazily (SH6) and EndTxn returns once they are
 *        visible; Complete* follows lazily (CO9). An EndTxn that fails before (d) adopts
 *        nothing (the write side is then failed, sticky) and the next open decides by R1.
 *        A retried EndTxn after Complete* answers 0 only for the same outcome (end_op), and the
 *        open that decided R1 wrote the outcome it decided, so a retry never turns an abort
 *        into a success.
 *   CO13. A durable Ongoing found at open (a wire transaction's, CO12(a)) stays live only if
 *        the run that wrote it acknowledged produces only once durable (sync=always: its value's
 *        acked_durable flag, set by coordinator_add_partitions) and the opening run does too
 *        (so a later open finds the flag of a value written by a run that kept it live:
 *        by induction every run the transaction lived through was sync=always, and every
 *        produce the client saw answered is durable). Otherwise (sync=none or interval then or
 *        now, or a value written before the flag existed) its acknowledged data may be gone
 *        with the page cache, so the open fences it (PrepareEpochFence, ABORT markers, the epoch
 *        bumped): the client's retried EndTxn is RT_E_PRODUCER_FENCED, never a success for a
 *        transaction the crash cut short.
 *   CO14. KIP-360: an init naming the producer's (id, epoch) it expects (InitProducerId v3+,
 *        a producer recovering from a fenced or failed transaction) bumps the epoch (aborting
 *        an Ongoing transaction, completing a Prepare*) only when the id holds exactly that
 *        identity, or when the id was never given one (a new id); when it names the identity
 *        the last init bumped from and nothing happened since (the id Empty at the identity
 *        that init handed out), it is a retry of that init and gets the same answer with no
 *        second bump; anything else is RT_E_PRODUCER_FENCED and changes nothing (stricter than
 *        Kafka, which aborts an Ongoing transaction of the same producer id before checking
 *        the epoch). The last init's identities are held in memory only (as Kafka's
 *        lastProducerEpoch): after a reopen a retry of an init that went through is fenced.
 *
 * Reconciliation with the partitions (a partition may lose a marker the coordinator counted on:
 * a lazy one at power loss, CO9; a torn tail; docs/format.md G.5, G.6). For a transaction open in
 * a partition — producer P at epoch E there, first offset F — with the id holding P (if any):
 *   COR1. The id is Ongoing at epoch E, or Prepare* at the epoch its markers carry (E + 1, or E
 *         when the epoch was exhausted) — a one-round Prepare* only when its txn_epoch is E
 *         (and, at a kept epoch, only for the transaction whose first offset it names: COR8) —
 *         and lists the partition: the transaction is live. Open leaves it to its producer, its
 *         timeout (CO5), rt_txn_abort, or CO2/CO10.
 *   COR2. The id is CompleteCommit or CompleteAbort at epoch E + 1 — the bump that ended this very
 *         transaction (CO3) — so its outcome is recorded: the partition gets a COMMIT or ABORT
 *         marker at epoch E + 1, as the lost one was.
 *   COR3. Otherwise (no id holds P; the id is at an epoch other than E / E + 1, or Empty, or
 *         Ongoing without this partition, or a one-round Prepare* of another txn_epoch) the
 *         coordinator holds no open transaction there and no commit of it can be known (COR7
 *         aside): an ABORT marker at epoch E (its .txnindex entry included). This is how the
 *         transaction of an in-process producer that died with its process ends (CO5).
 *   COR4. An empty transaction log (the coordinator's state lost, or none ever written) decides
 *         nothing: such transactions stay open, listed by rt_txn_list_partitions.
 *   COR5. Reconciliation runs in coordinator_open before CO2/CO10 complete the Prepare* ids (COR1
 *         leaves their transactions to them; a stale epoch's transaction in one of their
 *         partitions is aborted first, else their marker would close it as part of the later
 *         transaction) and before the timer starts and rt_open returns; its markers are durable
 *         (log_write_markers), so a second open finds nothing to do. A marker into
 *         __consumer_offsets applies or drops the producer's pending offsets, as finish() does.
 *   COR6. An operator can always release a pinned LSO (rt_txn_abort_partition): a live (COR1)
 *         transaction is aborted through the coordinator in all its partitions (all-or-nothing);
 *         any other gets an ABORT marker at the partition's epoch for P, in that partition alone.
 *   COR8. Before COR1 for a transaction whose first offset is F: the newest kept-epoch
 *         decision record (0x7203) with producer P, txn_epoch E and (partition, F) among its
 *         partitions decides it (COMMIT or ABORT at epoch E), whatever the id holds now — an
 *         Ongoing at E listing the partition is then a later transaction, since every ended
 *         wire transaction's record names F, is durable before any of its markers, and is kept
 *         until they are (CO11) — unless the id's last value is that very record (COR1: then
 *         CO10, where at a kept epoch a partition is *ready* only with the first offset F).
 *         Exact: F identifies one transaction in a partition; an offset is written twice only
 *         after a power loss cut the partition's tail, and the record naming the lost data was
 *         decided (R1) at that open, before anything was written there again, so the newer of
 *         two records naming one (P, E, partition, F) names the data there now. A kept-epoch
 *         record is never matched by (P, E) alone (COR7 skips it), and a kept-epoch Prepare*
 *         is live (COR1) only for the transaction whose F it names.
 *   COR7. Before COR2/COR3: the newest one-round decision record the log still holds for (P,
 *         txn_epoch E) naming the partition decides it (COMMIT or ABORT at that record's marker
 *         epoch), unless it is the id's last value (COR1, then CO10). A lazy marker lost after
 *         the id moved on (its next transaction's records are newer) is repaired so; CO11 keeps
 *         the record until the marker is durable. The records are collected by replay and freed
 *         after reconciliation.
 *
 * Costs of reconciliation: one shard call per shard to collect the open transactions, a scan of
 * the ids per open transaction (O(open x ids)) and of the one-round decisions replayed
 * (O(open x decisions)), at open only; one marker round per shard; for each one-round Prepare*
 * left at open, one shard call per partition (log_producer_state), and where the partition no
 * longer knows the producer (evicted, CO10) one batch read at a kept epoch, or at a bumped
 * epoch a scan of the partition's batch headers (O(partition bytes / batch)).
 *
 * Costs of a wire EndTxn (CO12): one shard call per partition for its producer state, one
 * fdatasync round for the decision record (and, beside it, one per shard holding unsynced data
 * of the transaction: none under sync=always), one marker write per shard, no wait for
 * Complete*. The AddPartitionsToTxn before it is one durable record per new partition set.
 *
 * Costs: a one-round commit writes 2 log records (PrepareCommit with its data, CompleteCommit
 * lazily) and one marker per partition; commit waits for one round (the data and the
 * PrepareCommit, fdatasynced in parallel on their shards, in sequence where they share one) and
 * one write (the markers). rt_producer_abort, timeouts and fences write Prepare* and Complete*
 * and wait for Prepare* and the durable markers. The writes of concurrent
 * transactions share group-commit rounds. The timer scans every id each tick (O(ids)).
 */
#include "coordinator.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "records.h"
#include "group.h"
#include "log.h"
#include "producer_registry.h"
#include "producer_state.h"

#define COORD_BUCKETS             1024
#define COORD_TICK_MS             50
#define COORD_COMPACT_MIN_RECORDS 4096
#define COORDINATOR_EPOCH         0 /* one coordinator per data directory, guarded by the lock file */

struct txn_meta {
    char id[TXN_ID_MAX_BYTES + 1];
    pthread_mutex_t lock; /* serialises operations on this id; held across its log writes */
    int refs;             /* table lookups in flight (under the table lock) */
    bool removed;
    struct txn_log_value v; /* partitions owned */
    uint32_t part_capacity;
    int64_t last_check_ms;
    rt_txn_check_fn check_fn; /* the live producer's handler, if any */
    void *check_ctx;
    struct txn_meta *next;
    int64_t pid_key; /* the producer id it is indexed under in pid_buckets (-1: none; CO8) */
    struct txn_meta *pid_next;
    /* CO9: a one-round commit is between queuing its PrepareCommit and adopting it (the id's
     * lock is dropped meanwhile, so the producer's sender can run); `decided` is broadcast
     * when it clears. */
    bool deciding;
    pthread_cond_t decided;
    /* CO14: the identity the last init bumped from and the one it handed out (-1: none since
     * this process opened the coordinator). Memory only, as Kafka's lastProducerEpoch. */
    int64_t init_from_pid, init_to_pid;
    int16_t init_from_epoch, init_to_epoch;
};

/* COR7: a one-round decision record replayed at open (PrepareCommit or PrepareAbort with
 * one_round), kept until reconciliation has run. */
struct decision {
    int64_t producer_id; /* the producer the transaction's data carries */
    int16_t txn_epoch;   /* ... and its epoch */
    int16_t marker_epoch;
    bool commit;
    bool kept_epoch; /* 0x7203: identified per partition by first offset (COR8) */
    uint32_t partition_count;
    struct txn_log_partition *partitions;
};

struct coordinator {
    struct log *lg;
    struct producer_registry *producers;
    _Atomic(struct group_manager *) groups; /* NULL until consumer offsets exist (TX2) */
    struct partition *log;
    pthread_mutex_t table_lock;
    struct txn_meta *buckets[COORD_BUCKETS];
    struct txn_meta *pid_buckets[COORD_BUCKETS]; /* the same ids by producer id (CO8) */
    uint32_t live;
    uint64_t log_records;     /* appended since the last compaction (or replayed) */
    uint32_t async_in_flight; /* Complete* records handed to the log, not yet written */
    rt_txn_check_fn check_fn; /* engine-wide handler */
    void *check_ctx;
    pthread_t timer;
    bool timer_running;
    pthread_mutex_t timer_lock;
    pthread_cond_t timer_cv;
    bool stopping;
    struct decision *decisions; /* COR7, open only: in log order */
    size_t decision_count, decision_capacity;
};

static const struct decision *decision_find(const struct coordinator *c, int64_t pid, int16_t epoch,
                                            const char *topic, uint32_t partition);
static const struct decision *decision_find_kept(const struct coordinator *c,
                                                 const struct log_open_txn *t);

static struct group_manager *coordinator_groups(struct coordinator *c)
{
    return atomic_load_explicit(&c->groups, memory_order_acquire);
}

void coordinator_attach_groups(struct coordinator *c, struct group_manager *groups)
{
    assert(groups);
    struct group_manager *expected = NULL;
    bool set = atomic_compare_exchange_strong(&c->groups, &expected, groups);
    assert(set || expected == groups); /* TX1: created once */
    (void)set;
}

static uint32_t bucket_of(const char *id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h % COORD_BUCKETS;
}

/* ---- the table ---- */

static struct txn_meta *meta_get(struct coordinator *c, const char *id, bool create)
{
    pthread_mutex_lock(&c->table_lock);
    uint32_t b = bucket_of(id);
    struct txn_meta *m = c->buckets[b];
    while (m && strcmp(m->id, id) != 0)
        m = m->next;
    if (!m && create) {
        m = calloc(1, sizeof(*m));
        if (m) {
            snprintf(m->id, sizeof(m->id), "%s", id);
            pthread_mutex_init(&m->lock, NULL);
            pthread_cond_init(&m->decided, NULL);
            m->v.producer_id = -1;
            m->v.producer_epoch = -1;
            m->v.state = TXN_EMPTY;
            m->pid_key = -1;
            m->init_from_pid = -1; /* CO14 */
            m->init_to_pid = -1;
            m->next = c->buckets[b];
            c->buckets[b] = m;
            c->live++;
        }
    }
    if (m)
        m->refs++;
    pthread_mutex_unlock(&c->table_lock);
    return m;
}

static void meta_free(struct txn_meta *m)
{
    free(m->v.partitions);
    pthread_cond_destroy(&m->decided);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static void meta_put(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    bool free_it = --m->refs == 0 && m->removed;
    pthread_mutex_unlock(&c->table_lock);
    if (free_it)
        meta_free(m);
}

/* Unlinks a Dead id; memory goes with the last reference. Caller holds m->lock and a ref. */
static uint32_t pid_bucket_of(int64_t pid)
{
    uint64_t x = (uint64_t)pid * 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(x >> 40) % COORD_BUCKETS;
}

/* Caller holds the table lock. */
static void pid_unlink_locked(struct coordinator *c, struct txn_meta *m)
{
    if (m->pid_key < 0)
        return;
    struct txn_meta **pp = &c->pid_buckets[pid_bucket_of(m->pid_key)];
    while (*pp && *pp != m)
        pp = &(*pp)->pid_next;
    if (*pp)
        *pp = m->pid_next;
    m->pid_key = -1;
    m->pid_next = NULL;
}

static void meta_remove(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    struct txn_meta **pp = &c->buckets[bucket_of(m->id)];
    while (*pp && *pp != m)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = m->next;
        c->live--;
    }
    m->removed = true;
    pid_unlink_locked(c, m);
    pthread_mutex_unlock(&c->table_lock);
}

/* CO8: re-indexes m under its current producer id. Caller holds m->lock. */
static void pid_index(struct coordinator *c, struct txn_meta *m)
{
    pthread_mutex_lock(&c->table_lock);
    if (m->pid_key != m->v.producer_id && !m->removed) {
        pid_unlink_locked(c, m);
        if (m->v.producer_id >= 0) {
            uint32_t b = pid_bucket_of(m->v.producer_id);
            m->pid_key = m->v.producer_id;
            m->pid_next = c->pid_buckets[b];
            c->pid_buckets[b] = m;
        }
    }
    pthread_mutex_unlock(&c->table_lock);
}

/* A snapshot of the table: every id, each with a reference taken under the table lock, so the
 * caller can visit them without it (ids created meanwhile are not in it; removed ones stay valid
 * until their reference is put). Returns the malloc'd array (the caller puts each reference and
 * frees it) and its length in *n_out, or NULL when out of memory. O(ids + COORD_BUCKETS). */
static struct txn_meta **table_snapshot(struct coordinator *c, uint32_t *n_out)
{
    pthread_mutex_lock(&c->table_lock);
    uint32_t cap = c->live ? c->live : 1;
    struct txn_meta **all = malloc((size_t)cap * sizeof(*all));
    uint32_t n = 0;
    for (uint32_t b = 0; all && b < COORD_BUCKETS; b++)
        for (struct txn_meta *m = c->buckets[b]; m; m = m->next) {
            assert(n < cap); /* live counts exactly the linked ids */
            m->refs++;
            all[n++] = m;
        }
    assert(!all || n == c->live);
    pthread_mutex_unlock(&c->table_lock);
    *n_out = n;
    return all;
}

/* ---- the log ---- */

/* Encodes one transaction-log record (value NULL: a tombstone) as a batch in a malloc'd buffer
 * placed `offset` bytes into the allocation (room for a caller's header). */
static int log_encode(const char *id, const struct txn_log_value *v, size_t offset,
                      uint8_t **alloc_out, size_t *len_out)
{
    uint8_t key[2 + 2 + TXN_ID_MAX_BYTES];
    size_t key_len = 0;
    int rc = txn_log_key_encode(id, key, sizeof(key), &key_len);
    if (rc)
        return rc;
    size_t value_len = v ? txn_log_value_size(v) : 0;
    uint8_t *value = v ? malloc(value_len) : NULL;
    if (v && !value)
        return -ENOMEM;
    if (v && (rc = txn_log_value_encode(v, value, value_len, &value_len)) != 0) {
        free(value);
        return rc;
    }
    struct rt_record r = {.key = key,
                          .key_len = (int32_t)key_len,
                          .value = value,
                          .value_len = v ? (int32_t)value_len : -1,
                          .timestamp_ms = fs_now_ms()};
    size_t cap = BATCH_HEADER_BYTES + record_encoded_size(&r, 0, 0);
    uint8_t *alloc = malloc(offset + cap);
    if (!alloc) {
        free(value);
        return -ENOMEM;
    }
    struct batch_builder b;
    size_t len = 0;
    rc = batch_builder_init(&b, alloc + offset, cap, 0, -1, -1, -1);
    if (rc == 0)
        rc = batch_builder_add(&b, &r);
    if (rc == 0)
        rc = batch_builder_finish(&b, &len);
    free(value);
    if (rc) {
        free(alloc);
        return rc;
    }
    *alloc_out = alloc;
    *len_out = len;
    return 0;
}

/* Appends one record to the transaction log, durably, waiting for it. */
static int log_write(struct coordinator *c, const char *id, const struct txn_log_value *v)
{
    uint8_t *batch = NULL;
    size_t len = 0;
    int rc = log_encode(id, v, 0, &batch, &len);
    if (rc == 0)
        rc = log_append_forced(c->lg, c->log, batch, len, NULL);
    free(batch);
    if (rc == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    return rc;
}

/* An asynchronous log write: the request and the batch bytes in one allocation. */
struct async_write {
    struct shard_request req;
    struct coordinator *c;
};

static void async_write_done(struct shard_request *r)
{
    struct async_write *w = (struct async_write *)r;
    struct coordinator *c = w->c;
    if (r->result == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    /* A failure leaves the engine's write side failed (sticky): the id's Prepare* record is
     * then the last durable one and the next open completes it again (CO2). */
    free(w);
    __atomic_sub_fetch(&c->async_in_flight, 1, __ATOMIC_RELEASE);
}

/* Appends one record without waiting (fdatasynced in its round, or with `lazy` only with the
 * log's next fdatasync: SH6). Safe for Complete* records: anything that depends on them (the
 * id's next record) goes to the same log partition later, so it can be durable only if this one
 * is; and after a one-round commit nothing depends on it at all (CO10 completes the
 * PrepareCommit again from the partitions' state, finding every marker there). */
static int log_write_async(struct coordinator *c, const char *id, const struct txn_log_value *v,
                           bool lazy)
{
    uint8_t *alloc = NULL;
    size_t len = 0;
    int rc = log_encode(id, v, sizeof(struct async_write), &alloc, &len);
    if (rc)
        return rc;
    struct async_write *w = (struct async_write *)alloc;
    memset(w, 0, sizeof(*w));
    uint8_t *batch = alloc + sizeof(struct async_write);
    const char *why = NULL;
    rc = batch_header_parse(batch, len, &w->req.header, &why);
    assert(rc == 0);
    w->c = c;
    w->req.kind = SHARD_REQ_APPEND;
    w->req.partition = c->log;
    w->req.batch = batch;
    w->req.len = len;
    w->req.coordinator = true;
    w->req.force_sync = !lazy;
    w->req.lazy_sync = lazy;
    w->req.on_done = async_write_done;
    __atomic_add_fetch(&c->async_in_flight, 1, __ATOMIC_ACQUIRE);
    rc = log_append_async(c->lg, &w->req);
    if (rc) {
        __atomic_sub_fetch(&c->async_in_flight, 1, __ATOMIC_RELEASE);
        free(alloc);
    }
    return rc;
}

/* A log write queued now and waited for later (CO9: the PrepareCommit rides the same rounds as
 * the transaction's last data). The request, its waiter and the batch bytes in one allocation. */
struct wait_write {
    struct shard_request req;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void wait_write_done(struct shard_request *r)
{
    struct wait_write *w = (struct wait_write *)r;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu); /* w is the waiter's from here on */
}

/* Builds one record's request, fdatasynced in its round, for the caller to queue (CO9: with the
 * transaction's last data); log_write_wait collects the outcome. */
static int log_write_prepare(struct coordinator *c, const char *id, const struct txn_log_value *v,
                             struct wait_write **out)
{
    uint8_t *alloc = NULL;
    size_t len = 0;
    int rc = log_encode(id, v, sizeof(struct wait_write), &alloc, &len);
    if (rc)
        return rc;
    struct wait_write *w = (struct wait_write *)alloc;
    memset(w, 0, sizeof(*w));
    uint8_t *batch = alloc + sizeof(struct wait_write);
    const char *why = NULL;
    rc = batch_header_parse(batch, len, &w->req.header, &why);
    assert(rc == 0);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->req.kind = SHARD_REQ_APPEND;
    w->req.partition = c->log;
    w->req.batch = batch;
    w->req.len = len;
    w->req.coordinator = true;
    w->req.force_sync = true;
    w->req.on_done = wait_write_done;
    *out = w;
    return 0;
}

/* Frees a prepared request that was never queued. */
static void log_write_discard(struct wait_write *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static int log_write_wait(struct coordinator *c, struct wait_write *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    int rc = w->req.result;
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    if (rc == 0)
        __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    return rc;
}

/* Writes m's value with `state` (and whatever else the caller changed in `next`), and adopts it
 * in memory only once it is durable (CO1). */
static int transition(struct coordinator *c, struct txn_meta *m, struct txn_log_value *next)
{
    next->last_update_ms = fs_now_ms();
    int rc = log_write(c, m->id, next);
    if (rc)
        return rc;
    if (next->partitions != m->v.partitions)
        free(m->v.partitions);
    m->v = *next;
    pid_index(c, m);
    return 0;
}

static bool is_prepare(enum txn_state s)
{
    return s == TXN_PREPARE_COMMIT || s == TXN_PREPARE_ABORT || s == TXN_PREPARE_EPOCH_FENCE;
}

/* The epoch a finished transaction's markers carry and the producer's next (id, epoch). */
static int next_identity(struct coordinator *c, const struct txn_meta *m, int16_t *marker_epoch,
                         int64_t *next_pid, int16_t *next_epoch)
{
    if (m->v.producer_epoch < INT16_MAX - 1) {
        *marker_epoch = (int16_t)(m->v.producer_epoch + 1);
        *next_pid = m->v.producer_id;
        *next_epoch = *marker_epoch;
        return 0;
    }
    /* Epoch exhausted: markers close the old id at its last epoch; a fresh id takes over. */
    *marker_epoch = m->v.producer_epoch;
    *next_epoch = 0;
    return producer_registry_allocate(c->producers, next_pid);
}

/* Phase two of a commit or abort whose Prepare* is durable: markers into every partition (one
 * round per shard), pending offsets applied or dropped, then Complete* (CO1, CO2). */
static int finish_as(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                     int16_t next_epoch, bool lazy, const bool *skip)
{
    uint32_t count = m->v.partition_count, n = 0;
    struct marker_spec *specs = calloc(count ? count : 1, sizeof(*specs));
    if (!specs)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++)
        if (!skip || !skip[i]) /* CO10: a partition whose marker is there already */
            specs[n++] = (struct marker_spec){.topic = m->v.partitions[i].topic,
                                              .partition = m->v.partitions[i].partition,
                                              .producer_id = m->v.producer_id,
                                              .producer_epoch = m->v.producer_epoch,
                                              .coordinator_epoch = COORDINATOR_EPOCH,
                                              .type = commit ? CONTROL_COMMIT : CONTROL_ABORT,
                                              .lazy = lazy};
    int rc = n ? log_write_markers(c->lg, specs, n) : 0;
    if (rc) {
        /* A marker rejected for a stale epoch means a newer epoch already wrote there: the
         * partition has moved on and this marker is moot; so is one into a partition whose
         * topic was deleted (rt_topic_delete: nothing is left there to close, as Kafka drops
         * markers for deleted partitions). Anything else stops here: the state stays Prepare*
         * and the next open (or retry) completes it (CO2). */
        bool only_stale = true;
        for (uint32_t i = 0; i < n; i++)
            if (specs[i].result && specs[i].result != RT_E_INVALID_PRODUCER_EPOCH &&
                specs[i].result != RT_E_UNKNOWN_TOPIC_OR_PARTITION)
                only_stale = false;
        if (!only_stale) {
            free(specs);
            return rc;
        }
    }
    struct group_manager *groups = coordinator_groups(c);
    for (uint32_t i = 0; i < count && groups; i++) { /* skipped ones too (CO10) */
        if (strcmp(m->v.partitions[i].topic, GROUP_OFFSETS_TOPIC) == 0) {
            group_txn_complete(groups, m->v.producer_id, commit);
            break; /* completes every pending offset of the producer */
        }
    }
    free(specs);
    struct txn_log_value next = m->v;
    next.state = commit ? TXN_COMPLETE_COMMIT : TXN_COMPLETE_ABORT;
    next.partitions = NULL;
    next.partition_count = 0;
    next.one_round = false;
    next.kept_epoch = false;
    next.producer_id = next_pid;
    next.producer_epoch = next_epoch;
    next.start_ms = -1;
    next.check_count = 0;
    next.hanging = false;
    next.last_update_ms = fs_now_ms();
    /* The outcome is decided (the markers are durable, or CO9's decision round was). Complete*
     * rides a later round (docs/architecture.md, the commit path): commit does not wait for it, and after a
     * one-round commit it is not even fdatasynced on its own (CO10 repeats it if lost). */
    rc = log_write_async(c, m->id, &next, lazy && m->v.one_round);
    if (rc)
        return rc;
    free(m->v.partitions);
    m->v = next;
    m->part_capacity = 0;
    pid_index(c, m);
    return 0;
}

static int finish(struct coordinator *c, struct txn_meta *m, bool commit, int64_t next_pid,
                  int16_t next_epoch)
{
    return finish_as(c, m, commit, next_pid, next_epoch, false, NULL);
}

/* Two-phase end of m's open transaction. Caller holds m->lock. */
static int end_locked_as(struct coordinator *c, struct txn_meta *m, bool commit, bool fence,
                         bool bump)
{
    if (m->deciding) /* CO9: its producer is committing it in one round right now */
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is committing its transaction", m->id);
    assert(m->v.state == TXN_ONGOING || is_prepare(m->v.state));
    assert(bump || !fence); /* a fence always bumps */
    int16_t marker_epoch = m->v.producer_epoch;
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    int rc;
    if (m->v.state == TXN_ONGOING) {
        rc = bump ? next_identity(c, m, &marker_epoch, &next_pid, &next_epoch) : 0;
        if (rc)
            return rc;
        struct txn_log_value prep = m->v;
        if (fence) {
            prep.state = TXN_PREPARE_EPOCH_FENCE;
            prep.producer_epoch = marker_epoch;
            rc = transition(c, m, &prep);
            if (rc)
                return rc;
            prep = m->v;
        }
        prep.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
        prep.producer_epoch = marker_epoch;
        rc = transition(c, m, &prep);
        if (rc)
            return rc;
    } else {
        /* Completing a Prepare* found at open: its epoch is already the markers' epoch. */
        commit = m->v.state == TXN_PREPARE_COMMIT;
        if (m->v.producer_epoch >= INT16_MAX - 1 && bump) {
            next_epoch = 0;
            rc = producer_registry_allocate(c->producers, &next_pid);
            if (rc)
                return rc;
        }
    }
    return finish(c, m, commit, next_pid, next_epoch);
}

static int end_locked(struct coordinator *c, struct txn_meta *m, bool commit, bool fence)
{
    return end_locked_as(c, m, commit, fence, true);
}

/* ---- operations ---- */

static bool holds_partition(const struct txn_meta *m, const char *topic, uint32_t partition);

/* CO12: ends m's Ongoing wire transaction (its epoch kept, CO7) in one durable round. The
 * decision record (0x7203: txn_epoch = marker epoch = the kept epoch, and per partition the
 * producer's last sequence and the transaction's first offset there, read from the partition's
 * producer state) is appended while every partition that may hold the data unsynced is
 * fdatasynced (a commit only: an abort's data may vanish); once both are durable the outcome
 * is decided, and the markers and Complete* follow lazily (SH6). Caller holds m->lock. */
static int end_wire_locked(struct coordinator *c, struct txn_meta *m, bool commit)
{
    assert(m->v.state == TXN_ONGOING);
    if (m->deciding)
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is committing its transaction", m->id);
    uint32_t n = m->v.partition_count;
    struct txn_log_value prep = m->v;
    prep.partitions = malloc((size_t)(n ? n : 1) * sizeof(*prep.partitions));
    struct partition **parts = calloc(n ? n : 1, sizeof(*parts));
    struct partition **dirty = calloc(n ? n : 1, sizeof(*dirty));
    struct log_producer_view *views = calloc(n ? n : 1, sizeof(*views));
    uint32_t *at = calloc(n ? n : 1, sizeof(*at));
    int rc = prep.partitions && parts && dirty && views && at ? 0 : -ENOMEM;
    uint32_t dirty_count = 0, found = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        struct txn_log_partition *tp = &prep.partitions[i];
        *tp = m->v.partitions[i];
        tp->last_sequence = -1; /* nothing of this transaction there, unless its state says */
        tp->first_offset = -1;
        struct partition *p = log_partition(c->lg, tp->topic, tp->partition);
        if (!p)
            continue; /* the marker write reports it */
        at[found] = i;
        parts[found++] = p;
    }
    /* One shard call per partition, the shards in parallel. */
    if (rc == 0)
        rc = log_producer_states(c->lg, parts, found, m->v.producer_id, views);
    for (uint32_t k = 0; rc == 0 && k < found; k++) {
        const struct log_producer_view *pv = &views[k];
        struct txn_log_partition *tp = &prep.partitions[at[k]];
        if (!pv->known || pv->epoch != m->v.producer_epoch || pv->txn_first_offset < 0)
            continue;
        tp->first_offset = pv->txn_first_offset;
        tp->last_sequence = pv->last_sequence > INT32_MAX ? INT32_MAX : (int32_t)pv->last_sequence;
        if (pv->unsynced && commit)
            dirty[dirty_count++] = parts[k];
    }
    free(views);
    free(at);
    free(parts);
    prep.state = commit ? TXN_PREPARE_COMMIT : TXN_PREPARE_ABORT;
    prep.one_round = true;
    prep.kept_epoch = true;
    prep.txn_epoch = m->v.producer_epoch; /* the markers carry it too (CO7) */
    prep.last_update_ms = fs_now_ms();
    struct wait_write *w = NULL;
    if (rc == 0)
        rc = log_write_prepare(c, m->id, &prep, &w);
    if (rc == 0) {
        rc = log_append_async(c->lg, &w->req);
        if (rc)
            log_write_discard(w);
    }
    if (rc) {
        free(prep.partitions);
        free(dirty);
        return rc;
    }
    /* The decision round: the record's fdatasync and the data's run meanwhile. */
    int data_rc = dirty_count ? log_sync_unsynced_shards(c->lg, dirty, dirty_count) : 0;
    free(dirty);
    rc = log_write_wait(c, w);
    if (rc == 0)
        rc = data_rc;
    if (rc) {
        /* Not decided (the engine's write side has failed, sticky): nothing is adopted; the
         * next open decides by R1 from what became durable (CO10, CO12). */
        free(prep.partitions);
        return rc;
    }
    free(m->v.partitions);
    m->v = prep;
    pid_index(c, m);
    return finish_as(c, m, commit, m->v.producer_id, m->v.producer_epoch, true, NULL);
}

static int fenced(const struct txn_meta *m, int64_t pid, int16_t epoch)
{
    if (pid != m->v.producer_id || epoch < m->v.producer_epoch)
        return error_set(RT_E_PRODUCER_FENCED,
                         "transactional id '%s': producer %" PRId64 " epoch %d is fenced by "
                         "producer %" PRId64 " epoch %d (CO4)",
                         m->id, pid, epoch, m->v.producer_id, m->v.producer_epoch);
    if (epoch > m->v.producer_epoch)
        return error_set(RT_E_INVALID_PRODUCER_EPOCH,
                         "transactional id '%s': epoch %d is newer than the coordinator's %d",
                         m->id, epoch, m->v.producer_epoch);
    return 0;
}

/* CO14: may an init that names (expected_pid, expected_epoch) go on? 0 (bump), 1 (a retry of
 * the init that already bumped from it: answer the identity it handed out, no bump), or
 * RT_E_PRODUCER_FENCED. Caller holds m->lock. */
static int init_expected_check(const struct txn_meta *m, int64_t expected_pid,
                               int16_t expected_epoch)
{
    if (expected_pid < 0 || m->v.producer_id < 0)
        return 0; /* nothing expected, or a new id: the producer recovers with a fresh one */
    if (expected_pid == m->v.producer_id && expected_epoch == m->v.producer_epoch)
        return 0;
    if (m->init_from_pid >= 0 && expected_pid == m->init_from_pid &&
        expected_epoch == m->init_from_epoch && m->v.state == TXN_EMPTY &&
        m->v.producer_id == m->init_to_pid && m->v.producer_epoch == m->init_to_epoch)
        return 1;
    return error_set(RT_E_PRODUCER_FENCED,
                     "transactional id '%s': InitProducerId expects producer %" PRId64
                     " epoch %d, the coordinator holds producer %" PRId64 " epoch %d (CO14)",
                     m->id, expected_pid, expected_epoch, m->v.producer_id, m->v.producer_epoch);
}

int coordinator_init_expected(struct coordinator *c, const char *id, int32_t timeout_ms,
                              rt_txn_check_fn check_fn, void *check_ctx, int64_t expected_pid,
                              int16_t expected_epoch, int64_t *producer_id_out, int16_t *epoch_out)
{
    if (!id || !*id || strlen(id) > TXN_ID_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "transactional ids are 1..%d bytes",
                         TXN_ID_MAX_BYTES);
    struct txn_meta *m = meta_get(c, id, true);
    if (!m)
        return -ENOMEM;
    pthread_mutex_lock(&m->lock);
    int rc = init_expected_check(m, expected_pid, expected_epoch);
    bool retry = rc == 1;
    if (retry)
        rc = 0;
    if (rc == 0 && m->deciding)
        rc = error_set(RT_E_CONCURRENT_TRANSACTIONS,
                       "transactional id '%s' is committing its transaction", m->id);
    int64_t from_pid = m->v.producer_id;
    int16_t from_epoch = m->v.producer_epoch;
    if (rc == 0 && !retry && m->v.state == TXN_ONGOING) {
        rc = end_locked(c, m, false, true); /* fence the previous instance and abort */
    } else if (rc == 0 && !retry && is_prepare(m->v.state)) {
        rc = end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
    }
    if (rc == 0 && !retry) {
        struct txn_log_value next = m->v;
        next.partitions = NULL;
        next.partition_count = 0;
        if (next.producer_id < 0) {
            rc = producer_registry_allocate(c->producers, &next.producer_id);
            next.producer_epoch = 0;
        } else if (next.producer_epoch >= INT16_MAX - 1) {
            rc = producer_registry_allocate(c->producers, &next.producer_id);
            next.producer_epoch = 0;
        } else {
            next.producer_epoch++;
        }
        next.state = TXN_EMPTY;
        next.one_round = false;
        next.kept_epoch = false;
        next.timeout_ms = timeout_ms;
        next.start_ms = -1;
        next.check_count = 0;
        next.hanging = false;
        if (rc == 0)
            rc = transition(c, m, &next);
        if (rc == 0) {
            m->init_from_pid = from_pid;
            m->init_from_epoch = from_epoch;
            m->init_to_pid = m->v.producer_id;
            m->init_to_epoch = m->v.producer_epoch;
        }
    }
    if (rc == 0) {
        m->check_fn = check_fn;
        m->check_ctx = check_ctx;
        *producer_id_out = m->v.producer_id;
        *epoch_out = m->v.producer_epoch;
    }
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

int coordinator_init(struct coordinator *c, const char *id, int32_t timeout_ms,
                     rt_txn_check_fn check_fn, void *check_ctx, int64_t *producer_id_out,
                     int16_t *epoch_out)
{
    return coordinator_init_expected(c, id, timeout_ms, check_fn, check_ctx, -1, -1,
                                     producer_id_out, epoch_out);
}

/* Adds parts to m's transaction (Ongoing from now on), durably or (CO9) in memory only. Caller
 * holds m->lock. */
static int add_locked(struct coordinator *c, struct txn_meta *m, int64_t pid, int16_t epoch,
                      const struct txn_log_partition *parts, uint32_t count, bool durable)
{
    int rc;
    if (is_prepare(m->v.state) && pid == m->v.producer_id &&
        (epoch == m->v.producer_epoch || epoch + 1 == m->v.producer_epoch))
        /* The same instance, whose transaction is between its phases (Prepare* carries the
         * bumped epoch): not a zombie, just early (CO4). */
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is completing its previous transaction", m->id);
    rc = fenced(m, pid, epoch);
    if (rc == 0 && m->v.state == TXN_DEAD)
        rc = error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' expired", m->id);
    if (rc)
        return rc;
    /* The new set: the current one (if Ongoing) plus what is not in it yet. */
    uint32_t have = m->v.state == TXN_ONGOING ? m->v.partition_count : 0;
    struct txn_log_partition *set = malloc((size_t)(have + count) * sizeof(*set));
    if (!set)
        return -ENOMEM;
    uint32_t n = have;
    if (have)
        memcpy(set, m->v.partitions, (size_t)have * sizeof(*set));
    for (uint32_t i = 0; i < count; i++) {
        bool found = false;
        for (uint32_t k = 0; k < n && !found; k++)
            found =
                set[k].partition == parts[i].partition && strcmp(set[k].topic, parts[i].topic) == 0;
        if (!found) {
            set[n] = parts[i];
            set[n].last_sequence = -1;  /* filled in by a one-round commit's PrepareCommit */
            set[n++].first_offset = -1; /* ... or a wire end's (CO12) */
        }
    }
    if (n == have && m->v.state == TXN_ONGOING) {
        free(set); /* nothing new */
        return 0;
    }
    if (m->deciding) {
        free(set);
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is committing its transaction", m->id);
    }
    if (n > TXN_LOG_PARTITIONS_MAX) {
        free(set);
        return error_set(RT_E_TXN_PARTITIONS_FULL, "a transaction spans at most %d partitions",
                         TXN_LOG_PARTITIONS_MAX);
    }
    struct txn_log_value next = m->v;
    next.partitions = set;
    next.partition_count = n;
    next.one_round = false;
    next.kept_epoch = false;
    if (m->v.state != TXN_ONGOING) {
        next.start_ms = fs_now_ms();
        next.check_count = 0;
        next.hanging = false;
        m->last_check_ms = next.start_ms;
    }
    next.state = TXN_ONGOING;
    /* CO13: whether this run acknowledges the producer's writes only once durable (kept by
     * every later value of this Ongoing, a hanging park's included) */
    next.acked_durable = log_options(c->lg)->sync_mode == RT_SYNC_ALWAYS;
    if (durable) {
        rc = transition(c, m, &next);
        if (rc)
            free(set);
        return rc;
    }
    /* CO9: the transactional batch records the participation; the coordinator only needs it
     * in memory (for verify, the timeout and the commit). */
    next.last_update_ms = fs_now_ms();
    free(m->v.partitions);
    m->v = next;
    return 0;
}

static int add_op(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                  const struct txn_log_partition *parts, uint32_t count, bool durable)
{
    struct txn_meta *m = meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    pthread_mutex_lock(&m->lock);
    int rc = add_locked(c, m, pid, epoch, parts, count, durable);
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

int coordinator_add_partitions(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                               const struct txn_log_partition *parts, uint32_t count)
{
    return add_op(c, id, pid, epoch, parts, count, true);
}

int coordinator_join(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                     const struct txn_log_partition *parts, uint32_t count)
{
    return add_op(c, id, pid, epoch, parts, count, false);
}

static int end_op(struct coordinator *c, const char *id, int64_t pid, int16_t epoch, bool commit,
                  bool bump, int64_t *producer_id_out, int16_t *epoch_out)
{
    struct txn_meta *m = meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    pthread_mutex_lock(&m->lock);
    int rc = fenced(m, pid, epoch);
    if (rc == 0) {
        switch (m->v.state) {
        case TXN_ONGOING:
            rc = bump ? end_locked_as(c, m, commit, false, true) : end_wire_locked(c, m, commit);
            break;
        case TXN_COMPLETE_COMMIT:
        case TXN_COMPLETE_ABORT:
            /* CO7: at the same epoch a wire client's Complete* is its own last end, so the
             * other outcome asked now cannot be a retry of it: an abort retried after its
             * commit went through must not be told it aborted (as Kafka: INVALID_TXN_STATE). */
            if (!bump && commit != (m->v.state == TXN_COMPLETE_COMMIT)) {
                rc = error_set(RT_E_INVALID_TXN_STATE,
                               "transactional id '%s': its last transaction is %s; nothing is "
                               "open to %s",
                               id, txn_state_name(m->v.state), commit ? "commit" : "abort");
                break;
            }
            /* fall through */
        case TXN_EMPTY:
            /* Nothing was added: an empty transaction ends locally, epoch unchanged. */
            break;
        default:
            rc = error_set(RT_E_CONCURRENT_TRANSACTIONS, "transactional id '%s' is %s", id,
                           txn_state_name(m->v.state));
            break;
        }
    }
    if (rc == 0) {
        *producer_id_out = m->v.producer_id;
        *epoch_out = m->v.producer_epoch;
    }
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

int coordinator_end(struct coordinator *c, const char *id, int64_t pid, int16_t epoch, bool commit,
                    int64_t *producer_id_out, int16_t *epoch_out)
{
    return end_op(c, id, pid, epoch, commit, true, producer_id_out, epoch_out);
}

int coordinator_end_keep_epoch(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                               bool commit)
{
    int64_t pid_out;
    int16_t epoch_out;
    return end_op(c, id, pid, epoch, commit, false, &pid_out, &epoch_out);
}

/* CO9: the one-round commit. */
int coordinator_commit_one_round(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                                 const struct txn_log_partition *seqs, uint32_t seq_count,
                                 int (*wait_data)(void *ctx, struct shard_request *prep,
                                                  bool *queued),
                                 void *ctx, int64_t *producer_id_out, int16_t *epoch_out,
                                 bool *aborted_out)
{
    *aborted_out = false;
    struct txn_meta *m = meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    pthread_mutex_lock(&m->lock);
    int rc = m->deciding ? error_set(RT_E_CONCURRENT_TRANSACTIONS,
                                     "transactional id '%s' is committing its transaction", id)
                         : fenced(m, pid, epoch);
    bool empty = false;
    if (rc == 0 && m->v.state != TXN_ONGOING) {
        empty = m->v.state == TXN_EMPTY || m->v.state == TXN_COMPLETE_COMMIT ||
                m->v.state == TXN_COMPLETE_ABORT;
        if (!empty)
            rc = error_set(RT_E_CONCURRENT_TRANSACTIONS, "transactional id '%s' is %s", id,
                           txn_state_name(m->v.state));
    }
    if (rc || empty) {
        /* Nothing was joined: an empty transaction ends locally, epoch unchanged. */
        bool unused = false;
        if (rc == 0)
            rc = wait_data(ctx, NULL, &unused);
        if (rc == 0) {
            *producer_id_out = m->v.producer_id;
            *epoch_out = m->v.producer_epoch;
        }
        pthread_mutex_unlock(&m->lock);
        meta_put(c, m);
        return rc;
    }
    int16_t marker_epoch = m->v.producer_epoch;
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    rc = next_identity(c, m, &marker_epoch, &next_pid, &next_epoch);
    struct txn_log_value prep = m->v;
    prep.partitions = NULL;
    if (rc == 0 && m->v.partition_count) {
        prep.partitions = malloc((size_t)m->v.partition_count * sizeof(*prep.partitions));
        if (!prep.partitions)
            rc = -ENOMEM;
    }
    for (uint32_t i = 0; rc == 0 && i < m->v.partition_count; i++) {
        prep.partitions[i] = m->v.partitions[i];
        prep.partitions[i].last_sequence = -1; /* not checked unless the producer names it */
        for (uint32_t k = 0; k < seq_count; k++)
            if (seqs[k].partition == prep.partitions[i].partition &&
                strcmp(seqs[k].topic, prep.partitions[i].topic) == 0)
                prep.partitions[i].last_sequence = seqs[k].last_sequence;
    }
    prep.state = TXN_PREPARE_COMMIT;
    prep.producer_epoch = marker_epoch;
    prep.one_round = true;
    prep.txn_epoch = m->v.producer_epoch;
    prep.last_update_ms = fs_now_ms();
    struct wait_write *w = NULL;
    if (rc == 0)
        rc = log_write_prepare(c, m->id, &prep, &w);
    if (rc) {
        free(prep.partitions);
        pthread_mutex_unlock(&m->lock);
        meta_put(c, m);
        return rc;
    }
    /* The decision round: the producer queues the PrepareCommit together with its last batches
     * (one round on a shard they share, CO9); the lock is dropped meanwhile. */
    m->deciding = true;
    pthread_mutex_unlock(&m->lock);
    bool prep_queued = false;
    int data_rc = wait_data(ctx, &w->req, &prep_queued);
    int prep_rc = 0;
    if (!prep_queued) { /* the producer did not take it: queued alone, a round of its own */
        prep_rc = log_append_async(c->lg, &w->req);
        if (prep_rc)
            log_write_discard(w);
    }
    if (prep_rc == 0)
        prep_rc = log_write_wait(c, w);
    pthread_mutex_lock(&m->lock);
    m->deciding = false;
    pthread_cond_broadcast(&m->decided);
    if (prep_rc) {
        /* Not decided: the engine's write side has failed (sticky); the transaction stays
         * Ongoing and the next open reconciles it (COR3). */
        free(prep.partitions);
        rc = prep_rc;
    } else {
        free(m->v.partitions);
        m->v = prep; /* durable: the outcome is decided by CO10's rule */
        pid_index(c, m);
        if (data_rc == 0) {
            rc = finish_as(c, m, true, next_pid, next_epoch, true, NULL);
        } else {
            /* Some data never landed: CO10 decides abort, and the coordinator writes it down
             * (PrepareAbort) before any marker. */
            struct txn_log_value next = m->v;
            next.state = TXN_PREPARE_ABORT;
            rc = transition(c, m, &next);
            if (rc == 0)
                rc = finish(c, m, false, next_pid, next_epoch);
            if (rc == 0) {
                *aborted_out = true;
                rc = data_rc;
            }
        }
    }
    if (rc == 0 || *aborted_out) {
        *producer_id_out = m->v.producer_id;
        *epoch_out = m->v.producer_epoch;
    }
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

int coordinator_verify(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                       const char *topic, uint32_t partition)
{
    struct txn_meta *m = NULL;
    if (id) {
        m = meta_get(c, id, false);
    } else {
        pthread_mutex_lock(&c->table_lock);
        for (m = c->pid_buckets[pid_bucket_of(pid)]; m && m->pid_key != pid; m = m->pid_next)
            ;
        if (m)
            m->refs++;
        pthread_mutex_unlock(&c->table_lock);
    }
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE,
                         "producer %" PRId64 " holds no transaction: a transactional batch "
                         "needs its partition added first (AddPartitionsToTxn; CO7)",
                         pid);
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (m->removed || m->v.producer_id != pid)
        rc = error_set(id ? RT_E_PRODUCER_FENCED : RT_E_INVALID_TXN_STATE,
                       "transactional id '%s' no longer holds producer %" PRId64, m->id, pid);
    else if (epoch < m->v.producer_epoch)
        /* Asked by producer id (an append): the partition's own answer to an older epoch. */
        rc = error_set(id ? RT_E_PRODUCER_FENCED : RT_E_INVALID_PRODUCER_EPOCH,
                       "transactional id '%s': producer %" PRId64 " epoch %d is fenced by "
                       "epoch %d (CO4)",
                       m->id, pid, epoch, m->v.producer_epoch);
    else if (epoch > m->v.producer_epoch)
        rc = error_set(RT_E_INVALID_PRODUCER_EPOCH,
                       "transactional id '%s': epoch %d is newer than the coordinator's %d", m->id,
                       epoch, m->v.producer_epoch);
    else if (m->v.state != TXN_ONGOING || !holds_partition(m, topic, partition))
        rc = error_set(RT_E_INVALID_TXN_STATE,
                       "transactional id '%s' (%s) has not added %s-%u to its transaction (CO7)",
                       m->id, txn_state_name(m->v.state), topic, partition);
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

void coordinator_release(struct coordinator *c, const char *id)
{
    struct txn_meta *m = meta_get(c, id, false);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->check_fn = NULL;
    m->check_ctx = NULL;
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
}

int coordinator_set_check_handler(struct coordinator *c, rt_txn_check_fn fn, void *ctx)
{
    pthread_mutex_lock(&c->table_lock);
    c->check_fn = fn;
    c->check_ctx = ctx;
    pthread_mutex_unlock(&c->table_lock);
    return 0;
}

int coordinator_abort(struct coordinator *c, const char *id)
{
    struct txn_meta *m = meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_UNKNOWN_PRODUCER_ID, "no transactional id '%s'", id);
    pthread_mutex_lock(&m->lock);
    int rc;
    if (m->v.state == TXN_ONGOING)
        rc = end_locked(c, m, false, true);
    else if (is_prepare(m->v.state))
        rc = end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
    else
        rc = error_set(RT_E_INVALID_TXN_STATE,
                       "transactional id '%s' has no open transaction (%s); a partition still "
                       "pinned by its producer %" PRId64 " is released by "
                       "rt_txn_abort_partition",
                       id, txn_state_name(m->v.state), m->v.producer_id);
    pthread_mutex_unlock(&m->lock);
    meta_put(c, m);
    return rc;
}

/* ---- open transactions in the partitions: reconciliation (COR1-COR6) ---- */

/* The id whose producer id is pid, with a reference (meta_put it), or NULL. O(ids). */
static struct txn_meta *meta_by_producer(struct coordinator *c, int64_t pid)
{
    pthread_mutex_lock(&c->table_lock);
    struct txn_meta *found = NULL;
    for (uint32_t b = 0; !found && b < COORD_BUCKETS; b++)
        for (struct txn_meta *m = c->buckets[b]; m && !found; m = m->next)
            if (!m->removed && m->v.producer_id == pid)
                found = m;
    if (found)
        found->refs++;
    pthread_mutex_unlock(&c->table_lock);
    return found;
}

static bool holds_partition(const struct txn_meta *m, const char *topic, uint32_t partition)
{
    for (uint32_t i = 0; i < m->v.partition_count; i++)
        if (m->v.partitions[i].partition == partition &&
            strcmp(m->v.partitions[i].topic, topic) == 0)
            return true;
    return false;
}

/* COR1: the coordinator holds t open in t's partition (Ongoing at t's epoch, or Prepare* at the
 * epoch its markers carry). Caller holds m->lock. */
static bool is_live(const struct txn_meta *m, const struct log_open_txn *t)
{
    if (!holds_partition(m, t->topic, t->partition))
        return false;
    if (m->v.state == TXN_ONGOING)
        return m->v.producer_epoch == t->producer_epoch;
    if (is_prepare(m->v.state) && m->v.one_round && m->v.kept_epoch) {
        /* COR8: at a kept epoch only the very transaction it recorded (its first offset) */
        for (uint32_t i = 0; i < m->v.partition_count; i++)
            if (m->v.partitions[i].partition == t->partition &&
                strcmp(m->v.partitions[i].topic, t->topic) == 0)
                return m->v.txn_epoch == t->producer_epoch &&
                       m->v.partitions[i].first_offset == t->first_offset;
        return false;
    }
    if (is_prepare(m->v.state) && m->v.one_round)
        return m->v.txn_epoch == t->producer_epoch; /* COR1: the epoch its data carries */
    return is_prepare(m->v.state) && (m->v.producer_epoch == t->producer_epoch ||
                                      m->v.producer_epoch == t->producer_epoch + 1);
}

enum reconcile_outcome { RECONCILE_LEAVE, RECONCILE_COMMIT, RECONCILE_ABORT };

/* What open does with t (COR1-COR4); m is the id holding t's producer id (NULL: none), locked.
 * *marker_epoch_out: the epoch the marker carries. */
static enum reconcile_outcome reconcile_outcome_of(const struct txn_meta *m,
                                                   const struct log_open_txn *t,
                                                   int16_t *marker_epoch_out)
{
    *marker_epoch_out = t->producer_epoch;
    if (t->producer_epoch < 0)
        return RECONCILE_LEAVE; /* the partition's table disagrees with its open list */
    if (m && is_live(m, t))
        return RECONCILE_LEAVE; /* COR1 */
    if (m && (int32_t)m->v.producer_epoch == (int32_t)t->producer_epoch + 1 &&
        (m->v.state == TXN_COMPLETE_COMMIT || m->v.state == TXN_COMPLETE_ABORT)) {
        *marker_epoch_out = m->v.producer_epoch; /* COR2: the bump that ended it (CO3) */
        return m->v.state == TXN_COMPLETE_COMMIT ? RECONCILE_COMMIT : RECONCILE_ABORT;
    }
    return RECONCILE_ABORT; /* COR3 */
}

/* After the marker of producer pid is durable in a __consumer_offsets partition: its pending
 * offsets follow the outcome (GO4), as finish() does for a live transaction. */
static void offsets_follow_marker(struct group_manager *groups, const char *topic,
                                  uint32_t partition, int64_t pid, bool commit)
{
    if (groups && strcmp(topic, GROUP_OFFSETS_TOPIC) == 0)
        group_txn_complete_partition(groups, pid, partition, commit);
}

/* COR5: run by coordinator_open before CO2, before the timer starts and before rt_open returns. */
static int reconcile(struct coordinator *c)
{
    if (__atomic_load_n(&c->log_records, __ATOMIC_RELAXED) == 0)
        return 0; /* COR4: an empty transaction log decides nothing */
    struct log_open_txn *txns = NULL;
    size_t n = 0;
    int rc = log_open_txns(c->lg, NULL, &txns, &n);
    if (rc || n == 0)
        return rc;
    struct marker_spec *specs = calloc(n, sizeof(*specs));
    if (!specs) {
        free(txns);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct log_open_txn *t = &txns[i];
        struct txn_meta *m = meta_by_producer(c, t->producer_id);
        if (m)
            pthread_mutex_lock(&m->lock);
        int16_t marker_epoch = -1;
        enum reconcile_outcome o = reconcile_outcome_of(m, t, &marker_epoch);
        const struct decision *kept = decision_find_kept(c, t);
        const struct decision *d =
            decision_find(c, t->producer_id, t->producer_epoch, t->topic, t->partition);
        if (kept && !(m && m->v.kept_epoch && is_live(m, t))) {
            /* COR8: a kept-epoch decision names this very transaction (its first offset in
             * the partition): its outcome, whatever the id holds now (an Ongoing at the same
             * epoch is a later transaction), unless the id's last value is that record (R1). */
            o = kept->commit ? RECONCILE_COMMIT : RECONCILE_ABORT;
            marker_epoch = kept->marker_epoch;
        } else if (d && o != RECONCILE_LEAVE) {
            /* COR7: a one-round decision names this transaction and the id has moved on
             * since (else COR1 left it to CO10): its outcome stands, whatever came later. */
            o = d->commit ? RECONCILE_COMMIT : RECONCILE_ABORT;
            marker_epoch = d->marker_epoch;
        }
        if (m) {
            pthread_mutex_unlock(&m->lock);
            meta_put(c, m);
        }
        if (o == RECONCILE_LEAVE)
            continue;
        specs[k++] =
            (struct marker_spec){.topic = t->topic,
                                 .partition = t->partition,
                                 .producer_id = t->producer_id,
                                 .producer_epoch = marker_epoch,
                                 .coordinator_epoch = COORDINATOR_EPOCH,
                                 .type = o == RECONCILE_COMMIT ? CONTROL_COMMIT : CONTROL_ABORT};
    }
    rc = k ? log_write_markers(c->lg, specs, k) : 0;
    for (size_t i = 0; i < k; i++) {
        if (specs[i].result == 0)
            offsets_follow_marker(coordinator_groups(c), specs[i].topic, specs[i].partition,
                                  specs[i].producer_id, specs[i].type == CONTROL_COMMIT);
        else if (specs[i].result != RT_E_INVALID_PRODUCER_EPOCH && rc == 0)
            rc = specs[i].result;
    }
    if (rc == RT_E_INVALID_PRODUCER_EPOCH)
        rc = 0; /* only stale markers: a newer epoch already wrote there, nothing is pinned */
    free(specs);
    free(txns);
    return rc;
}

/* R1 for an evicted producer (CO10, format.md G.6): the header of the batch that starts at
 * `offset` in the partition; *found is false when none starts there (the offset below the log
 * start, at or past the high watermark, or inside a batch). One fetch of one batch. */
static int batch_starting_at(struct coordinator *c, const char *topic, uint32_t partition,
                             int64_t offset, struct batch_header *h, bool *found)
{
    *found = false;
    int64_t start = 0, end = 0;
    int rc =
        log_list_offsets(c->lg, topic, partition, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &start);
    if (rc == 0)
        rc = log_list_offsets(c->lg, topic, partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    if (rc || offset < start || offset >= end)
        return rc;
    rt_fetch *f = NULL;
    rc = log_fetch_start(c->lg, topic, partition, offset, 1, RT_READ_UNCOMMITTED, &f);
    if (rc)
        return rc;
    const struct rt_fetch_view *v = rt_fetch_get(f);
    const char *why = NULL;
    if (v->size_bytes > 0 && batch_header_parse(v->data, v->size_bytes, h, &why) == 0)
        *found = h->base_offset == offset;
    else if (v->size_bytes > 0)
        rc = error_set(RT_E_CORRUPT, "%s-%u: batch header at offset %" PRId64 ": %s", topic,
                       partition, offset, why);
    rt_fetch_release(f);
    return rc;
}

/* R1 for an evicted producer at a bumped epoch (0x7202): does the partition hold a
 * transactional data batch of (producer_id, epoch) whose sequence range contains seq (in wrap
 * space, PST4)? A scan of the partition's batch headers from its log start to the high
 * watermark: O(partition bytes / batch), one fetch per MiB, only where the producer was evicted
 * and the id's last value is an undecided one-round PrepareCommit. */
static int batch_with_sequence(struct coordinator *c, const char *topic, uint32_t partition,
                               int64_t producer_id, int16_t epoch, int32_t seq, bool *found)
{
    *found = false;
    int64_t offset = 0, end = 0;
    int rc =
        log_list_offsets(c->lg, topic, partition, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &offset);
    if (rc == 0)
        rc = log_list_offsets(c->lg, topic, partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    while (rc == 0 && !*found && offset < end) {
        rt_fetch *f = NULL;
        rc = log_fetch_start(c->lg, topic, partition, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
        if (rc)
            break;
        const struct rt_fetch_view *v = rt_fetch_get(f);
        int64_t next = offset;
        size_t pos = 0;
        while (rc == 0 && !*found && pos < v->size_bytes) {
            struct batch_header h;
            const char *why = NULL;
            if (batch_header_parse(v->data + pos, v->size_bytes - pos, &h, &why)) {
                rc = error_set(RT_E_CORRUPT, "%s-%u: batch header near offset %" PRId64 ": %s",
                               topic, partition, next, why);
                break;
            }
            int32_t last = (int32_t)(((int64_t)h.base_sequence + h.last_offset_delta) & 0x7FFFFFFF);
            *found = h.producer_id == producer_id && h.producer_epoch == epoch &&
                     batch_is_transactional(&h) && !batch_is_control(&h) && h.base_sequence >= 0 &&
                     producer_seq_reached(seq, h.base_sequence) && producer_seq_reached(last, seq);
            next = batch_last_offset(&h) + 1;
            pos += 12 + (size_t)h.length;
        }
        rt_fetch_release(f);
        if (next <= offset)
            break; /* nothing readable there */
        offset = next;
    }
    return rc;
}

/* CO10 at open: completes m's one-round Prepare* (found as its last durable record). For a
 * PrepareCommit each partition is looked at: its marker already there (the producer's epoch
 * there has moved past the data's, or, at the data's epoch, its transaction is closed with the
 * data up to the recorded sequence in) is skipped; the data up to the recorded sequence with
 * the transaction still open needs its marker; anything else is data that never became
 * durable, and the whole transaction is aborted instead (PrepareAbort first). Caller holds
 * m->lock. */
static int complete_one_round(struct coordinator *c, struct txn_meta *m)
{
    assert(m->v.one_round && is_prepare(m->v.state));
    bool commit = m->v.state == TXN_PREPARE_COMMIT;
    uint32_t n = m->v.partition_count;
    bool *skip = calloc(n ? n : 1, sizeof(*skip));
    if (!skip)
        return -ENOMEM;
    int rc = 0;
    int16_t e = m->v.txn_epoch;
    for (uint32_t i = 0; rc == 0 && commit && i < n; i++) {
        const struct txn_log_partition *tp = &m->v.partitions[i];
        struct partition *p = log_partition(c->lg, tp->topic, tp->partition);
        if (!p)
            continue; /* the marker write reports it */
        struct log_producer_view pv;
        rc = log_producer_state(c->lg, p, m->v.producer_id, &pv);
        if (rc)
            break;
        int32_t seq = tp->last_sequence;
        bool open = pv.known && pv.epoch == e && pv.txn_first_offset >= 0;
        bool upto = pv.known && pv.epoch == e &&
                    (seq < 0 || producer_seq_reached(pv.last_sequence, seq)); /* -1: not checked */
        /* R1(c): a producer unknown in the partition may have been evicted after this
         * decision's marker closed its transaction there (a table evicts only producers with no
         * transaction open, PST: producers_max); its data tells. */
        bool evicted_marked = false;
        if (m->v.kept_epoch) {
            /* CO12 (R1 at a kept epoch): the open transaction is this one only if its first
             * offset is the recorded one; reconciliation (COR8) has closed any other. */
            if (!pv.known && tp->first_offset >= 0) {
                struct batch_header h;
                bool found = false;
                rc = batch_starting_at(c, tp->topic, tp->partition, tp->first_offset, &h, &found);
                if (rc)
                    break;
                evicted_marked = found && h.producer_id == m->v.producer_id &&
                                 h.producer_epoch == e && batch_is_transactional(&h) &&
                                 !batch_is_control(&h);
            }
            if (tp->first_offset < 0)
                skip[i] = true; /* it had no data there: nothing to mark */
            else if (evicted_marked || (pv.known && (pv.epoch > e || (upto && !open))))
                skip[i] = true; /* its marker is there */
            else if (!(open && upto && pv.txn_first_offset == tp->first_offset))
                commit = false; /* data that never became durable: never acknowledged */
            continue;
        }
        if (!pv.known && seq >= 0) {
            rc = batch_with_sequence(c, tp->topic, tp->partition, m->v.producer_id, e, seq,
                                     &evicted_marked);
            if (rc)
                break;
        }
        if (evicted_marked || (pv.known && (pv.epoch > e || (seq >= 0 && upto && !open)))) {
            skip[i] = true; /* its marker is there */
        } else if (seq >= 0 && !(open && upto)) {
            commit = false; /* data that never became durable: never acknowledged */
        }
    }
    if (rc == 0 && !commit && m->v.state == TXN_PREPARE_COMMIT) {
        memset(skip, 0, (n ? n : 1) * sizeof(*skip));
        struct txn_log_value next = m->v;
        next.state = TXN_PREPARE_ABORT;
        rc = transition(c, m, &next);
    }
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    if (rc == 0 && !m->v.kept_epoch && m->v.producer_epoch == m->v.txn_epoch) {
        next_epoch = 0; /* the epoch was exhausted (next_identity): a fresh id takes over */
        rc = producer_registry_allocate(c->producers, &next_pid);
    }
    if (rc == 0)
        rc = finish_as(c, m, commit, next_pid, next_epoch, false, skip);
    free(skip);
    return rc;
}

int coordinator_list_partitions(struct log *lg, struct coordinator *c,
                                int (*fn)(void *ctx, const struct rt_partition_txn *txn), void *ctx)
{
    struct log_open_txn *txns = NULL;
    size_t n = 0;
    int rc = log_open_txns(lg, NULL, &txns, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct log_open_txn *t = &txns[i];
        struct rt_partition_txn info = {.topic = t->topic,
                                        .partition = t->partition,
                                        .producer_id = t->producer_id,
                                        .producer_epoch = t->producer_epoch,
                                        .first_offset = t->first_offset,
                                        .last_stable_offset = -1,
                                        .high_watermark = -1};
        (void)log_list_offsets(lg, t->topic, t->partition, RT_OFFSET_LATEST, RT_READ_COMMITTED,
                               &info.last_stable_offset);
        (void)log_list_offsets(lg, t->topic, t->partition, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED,
                               &info.high_watermark);
        struct txn_meta *m = c ? meta_by_producer(c, t->producer_id) : NULL;
        if (m) {
            pthread_mutex_lock(&m->lock);
            info.transactional_id = m->id; /* the reference keeps it until meta_put */
            info.coordinator_state = txn_state_name(m->v.state);
            info.live = is_live(m, t);
            pthread_mutex_unlock(&m->lock);
        }
        rc = fn(ctx, &info);
        if (m)
            meta_put(c, m);
    }
    free(txns);
    return rc;
}

int coordinator_abort_partition(struct log *lg, struct coordinator *c, struct group_manager *groups,
                                const char *topic, uint32_t partition, int64_t producer_id,
                                int16_t producer_epoch)
{
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION; /* log_partition set the detail */
    struct log_open_txn *txns = NULL;
    size_t n = 0;
    int rc = log_open_txns(lg, p, &txns, &n);
    if (rc)
        return rc;
    struct log_open_txn t = {.producer_epoch = -1};
    bool open = false;
    for (size_t i = 0; i < n && !open; i++) {
        if (txns[i].producer_id == producer_id) {
            t = txns[i];
            open = true;
        }
    }
    free(txns);
    if (!open)
        return error_set(RT_E_INVALID_TXN_STATE,
                         "%s-%" PRIu32 ": producer %" PRId64 " has no open transaction there",
                         topic, partition, producer_id);
    if (t.producer_epoch < 0 || (producer_epoch >= 0 && producer_epoch != t.producer_epoch))
        return error_set(RT_E_INVALID_PRODUCER_EPOCH,
                         "%s-%" PRIu32 ": producer %" PRId64 " is at epoch %d there, not %d", topic,
                         partition, producer_id, (int)t.producer_epoch, (int)producer_epoch);
    struct txn_meta *m = c ? meta_by_producer(c, producer_id) : NULL;
    if (m)
        pthread_mutex_lock(&m->lock);
    if (m && is_live(m, &t)) {
        /* COR6: the coordinator's own transaction ends everywhere at once (all-or-nothing). */
        if (m->v.state == TXN_ONGOING)
            rc = end_locked(c, m, false, true);
        else
            rc = end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
    } else {
        /* COR6: a transaction nobody will end: its ABORT marker at the partition's epoch. The
         * id's lock (when an id holds the producer) keeps the coordinator out meanwhile. */
        struct marker_spec spec = {.topic = p->topic,
                                   .partition = partition,
                                   .producer_id = producer_id,
                                   .producer_epoch = t.producer_epoch,
                                   .coordinator_epoch = COORDINATOR_EPOCH,
                                   .type = CONTROL_ABORT};
        rc = log_write_markers(lg, &spec, 1);
        if (rc == 0)
            offsets_follow_marker(groups, p->topic, partition, producer_id, false);
    }
    if (m) {
        pthread_mutex_unlock(&m->lock);
        meta_put(c, m);
    }
    return rc;
}

/* ---- listing ---- */

struct list_entry {
    struct txn_meta *m;
};

int coordinator_list(struct coordinator *c, int (*fn)(void *ctx, const struct rt_txn_info *txn),
                     void *ctx)
{
    uint32_t n = 0;
    struct txn_meta **all = table_snapshot(c, &n); /* fn runs without the table lock */
    if (!all)
        return -ENOMEM;
    int rc = 0;
    int64_t now = fs_now_ms();
    for (uint32_t i = 0; i < n; i++) {
        struct txn_meta *m = all[i];
        if (rc == 0) {
            pthread_mutex_lock(&m->lock);
            uint32_t pc = m->v.partition_count;
            const char **topics = calloc(pc ? pc : 1, sizeof(*topics));
            uint32_t *ids = calloc(pc ? pc : 1, sizeof(*ids));
            int64_t *pinned = calloc(pc ? pc : 1, sizeof(*pinned));
            if (!topics || !ids || !pinned) {
                rc = -ENOMEM;
            } else {
                bool open = m->v.state == TXN_ONGOING || is_prepare(m->v.state);
                for (uint32_t k = 0; k < pc; k++) {
                    topics[k] = m->v.partitions[k].topic;
                    ids[k] = m->v.partitions[k].partition;
                    pinned[k] = -1;
                    int64_t lso = -1;
                    if (open && log_list_offsets(c->lg, topics[k], ids[k], RT_OFFSET_LATEST,
                                                 RT_READ_COMMITTED, &lso) == 0) {
                        int64_t hw = -1;
                        log_list_offsets(c->lg, topics[k], ids[k], RT_OFFSET_LATEST,
                                         RT_READ_UNCOMMITTED, &hw);
                        pinned[k] = lso < hw ? lso : -1;
                    }
                }
                struct rt_txn_info info = {
                    .transactional_id = m->id,
                    .producer_id = m->v.producer_id,
                    .epoch = m->v.producer_epoch,
                    .state = txn_state_name(m->v.state),
                    .age_ms = m->v.start_ms >= 0 && open ? now - m->v.start_ms : 0,
                    .timeout_ms = m->v.timeout_ms,
                    .check_count = m->v.check_count,
                    .hanging = m->v.hanging,
                    .partition_count = pc,
                    .partition_topics = topics,
                    .partition_ids = ids,
                    .pinned_lso = pinned,
                };
                if (m->v.state != TXN_DEAD)
                    rc = fn(ctx, &info);
            }
            free(topics);
            free(ids);
            free(pinned);
            pthread_mutex_unlock(&m->lock);
        }
        meta_put(c, m);
    }
    free(all);
    return rc;
}

/* ---- the timer: timeouts, check-back, expiry, compaction ---- */

static void tick_one(struct coordinator *c, struct txn_meta *m, int64_t now)
{
    const struct rt_options *o = log_options(c->lg);
    pthread_mutex_lock(&m->lock);
    if (m->removed || m->deciding) { /* CO9: a commit in flight ends it either way */
        pthread_mutex_unlock(&m->lock);
        return;
    }
    if (m->v.state == TXN_ONGOING && !m->v.hanging) {
        rt_txn_check_fn check = m->check_fn ? m->check_fn : c->check_fn;
        void *check_ctx = m->check_fn ? m->check_ctx : c->check_ctx;
        if (check && now - m->v.start_ms >= (int64_t)o->txn_check_interval_ms &&
            now - m->last_check_ms >= (int64_t)o->txn_check_interval_ms) {
            m->last_check_ms = now;
            enum rt_txn_check_result r =
                check(check_ctx, m->id, m->v.producer_id, m->v.producer_epoch);
            if (r == RT_TXN_CHECK_COMMIT) {
                (void)end_locked(c, m, true, false);
            } else if (r == RT_TXN_CHECK_ROLLBACK) {
                (void)end_locked(c, m, false, true);
            } else {
                struct txn_log_value next = m->v;
                next.check_count++;
                bool exhausted = next.check_count >= o->txn_check_max;
                if (exhausted && o->txn_park_hanging)
                    next.hanging = true;
                if (transition(c, m, &next) == 0 && exhausted && !o->txn_park_hanging)
                    (void)end_locked(c, m, false, true);
            }
        } else if (now - m->v.start_ms > m->v.timeout_ms) {
            (void)end_locked(c, m, false, true); /* CO5 */
        }
    } else if (is_prepare(m->v.state)) {
        /* A phase two that failed earlier (e.g. the engine could not write): retry it. */
        (void)end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
    } else if ((m->v.state == TXN_EMPTY || m->v.state == TXN_COMPLETE_COMMIT ||
                m->v.state == TXN_COMPLETE_ABORT) &&
               now - m->v.last_update_ms > o->transactional_id_expiration_ms && !m->check_fn) {
        /* CO11: the id's last markers may still be lazy; make them durable before the record
         * that could repair them goes. */
        if (log_sync_unsynced(c->lg) == 0 && log_write(c, m->id, NULL) == 0) { /* tombstone */
            m->v.state = TXN_DEAD;
            meta_remove(c, m);
        }
    }
    pthread_mutex_unlock(&m->lock);
}

/* CO6: re-append every live value in a fresh segment, then drop everything older. */
static void compact(struct coordinator *c)
{
    pthread_mutex_lock(&c->table_lock); /* live changes under it (meta_get, meta_remove) */
    uint64_t live = c->live;
    pthread_mutex_unlock(&c->table_lock);
    if (__atomic_load_n(&c->log_records, __ATOMIC_RELAXED) <
        COORD_COMPACT_MIN_RECORDS + 2ull * live)
        return;
    if (log_roll(c->lg, c->log) != 0)
        return;
    int64_t checkpoint = -1;
    if (log_list_offsets(c->lg, TXN_LOG_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED,
                         &checkpoint) != 0)
        return;
    uint32_t n = 0;
    struct txn_meta **all = table_snapshot(c, &n);
    if (!all)
        return;
    int rc = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct txn_meta *m = all[i];
        pthread_mutex_lock(&m->lock);
        while (m->deciding) /* its PrepareCommit is queued: re-append what it decided */
            pthread_cond_wait(&m->decided, &m->lock);
        if (rc == 0 && !m->removed)
            rc = log_write(c, m->id, &m->v);
        pthread_mutex_unlock(&m->lock);
        meta_put(c, m);
    }
    free(all);
    /* CO11: every marker of a transaction decided in the records about to go is written
     * (each id was re-appended after its last commit finished); make the lazy ones durable
     * before the records that could repair them are deleted. */
    if (rc == 0)
        rc = log_sync_unsynced(c->lg);
    if (rc == 0 && log_delete_before(c->lg, c->log, checkpoint) >= 0)
        __atomic_store_n(&c->log_records, n, __ATOMIC_RELAXED);
}

void coordinator_tick(struct coordinator *c)
{
    uint32_t n = 0;
    struct txn_meta **all = table_snapshot(c, &n);
    if (!all)
        return;
    int64_t now = fs_now_ms();
    for (uint32_t i = 0; i < n; i++) {
        tick_one(c, all[i], now);
        meta_put(c, all[i]);
    }
    free(all);
    compact(c);
}

static void *timer_main(void *arg)
{
    struct coordinator *c = arg;
    pthread_mutex_lock(&c->timer_lock);
    while (!c->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += COORD_TICK_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->timer_cv, &c->timer_lock, &ts);
        if (c->stopping)
            break;
        pthread_mutex_unlock(&c->timer_lock);
        coordinator_tick(c);
        pthread_mutex_lock(&c->timer_lock);
    }
    pthread_mutex_unlock(&c->timer_lock);
    return NULL;
}

/* ---- open: replay the log, finish what was left ---- */

/* Where a replayed record lies, for the detail of RT_E_CORRUPT: the segment file and the byte
 * position of its batch, as every other damaged batch is reported. */
struct replay_at {
    const struct rt_fetch_view *view;
    const uint8_t *batch;
};

static int replay_corrupt(const struct replay_at *at, const struct rt_record_view *r,
                          const char *what, const char *why)
{
    uint64_t pos = at->view->segment_position;
    if (at->batch && at->batch >= at->view->data)
        pos += (uint64_t)(at->batch - at->view->data);
    return error_set(RT_E_CORRUPT,
                     "%s: offset %" PRIu64 ": %s record at log offset %" PRId64 ": %s: %s",
                     at->view->segment_path, pos, TXN_LOG_TOPIC, r->offset, what, why);
}

/* COR7: keeps a copy of a one-round decision record for reconciliation. */
static int decision_note(struct coordinator *c, const struct txn_log_value *v)
{
    if (c->decision_count == c->decision_capacity) {
        size_t cap = c->decision_capacity ? c->decision_capacity * 2 : 16;
        struct decision *a = realloc(c->decisions, cap * sizeof(*a));
        if (!a)
            return -ENOMEM;
        c->decisions = a;
        c->decision_capacity = cap;
    }
    struct decision d = {.producer_id = v->producer_id,
                         .txn_epoch = v->txn_epoch,
                         .marker_epoch = v->producer_epoch,
                         .commit = v->state == TXN_PREPARE_COMMIT,
                         .kept_epoch = v->kept_epoch,
                         .partition_count = v->partition_count};
    if (v->partition_count) {
        d.partitions = malloc((size_t)v->partition_count * sizeof(*d.partitions));
        if (!d.partitions)
            return -ENOMEM;
        memcpy(d.partitions, v->partitions, (size_t)v->partition_count * sizeof(*d.partitions));
    }
    c->decisions[c->decision_count++] = d;
    return 0;
}

static void decisions_free(struct coordinator *c)
{
    for (size_t i = 0; i < c->decision_count; i++)
        free(c->decisions[i].partitions);
    free(c->decisions);
    c->decisions = NULL;
    c->decision_count = c->decision_capacity = 0;
}

/* COR7: the newest one-round decision of the transaction whose data producer pid wrote at
 * `epoch` into (topic, partition), or NULL. At most one transaction has data at one (pid,
 * epoch) (CO3: the epoch is bumped at every one-round end), so the newest record for the pair
 * is its outcome (a PrepareAbort after its PrepareCommit: CO10). */
static const struct decision *decision_find(const struct coordinator *c, int64_t pid, int16_t epoch,
                                            const char *topic, uint32_t partition)
{
    for (size_t i = c->decision_count; i-- > 0;) {
        const struct decision *d = &c->decisions[i];
        if (d->kept_epoch || d->producer_id != pid || d->txn_epoch != epoch)
            continue; /* a kept-epoch record is found by its first offset only (COR8) */
        for (uint32_t k = 0; k < d->partition_count; k++)
            if (d->partitions[k].partition == partition &&
                strcmp(d->partitions[k].topic, topic) == 0)
                return d;
    }
    return NULL;
}

/* COR8: the newest kept-epoch decision (0x7203) of the transaction open as t: the same producer,
 * its data's epoch, and t's partition with t's first offset. Offsets in a partition are unique
 * but for a tail lost at power loss and written again: a record naming an offset whose data was
 * lost was decided (R1, at the open that truncated it) before anything was written there again,
 * so of two records naming one (P, E, partition, first offset) the newer names the data there
 * now. NULL when none does. */
static const struct decision *decision_find_kept(const struct coordinator *c,
                                                 const struct log_open_txn *t)
{
    if (t->first_offset < 0)
        return NULL;
    for (size_t i = c->decision_count; i-- > 0;) {
        const struct decision *d = &c->decisions[i];
        if (!d->kept_epoch || d->producer_id != t->producer_id || d->txn_epoch != t->producer_epoch)
            continue;
        for (uint32_t k = 0; k < d->partition_count; k++)
            if (d->partitions[k].first_offset == t->first_offset &&
                d->partitions[k].partition == t->partition &&
                strcmp(d->partitions[k].topic, t->topic) == 0)
                return d;
    }
    return NULL;
}

static int replay_record(struct coordinator *c, const struct rt_record_view *r,
                         const struct replay_at *at)
{
    char id[TXN_ID_MAX_BYTES + 1];
    const char *what = NULL, *why = NULL;
    /* The one check rt_verify runs too (txn_log_batch_check), so both judge a record alike. */
    int rc = txn_log_record_check(r->key, r->key_len, r->value, r->value_len, &what, &why);
    if (rc == RT_E_CORRUPT)
        return replay_corrupt(at, r, what, why ? why : "invalid");
    if (rc)
        return rc;
    rc = txn_log_key_decode(r->key, (size_t)r->key_len, id, &why);
    assert(rc == 0);
    __atomic_add_fetch(&c->log_records, 1, __ATOMIC_RELAXED);
    struct txn_meta *m = meta_get(c, id, r->value != NULL);
    if (!r->value) { /* tombstone */
        if (m) {
            meta_remove(c, m);
            meta_put(c, m);
        }
        return 0;
    }
    if (!m)
        return -ENOMEM;
    struct txn_log_value v;
    rc = txn_log_value_decode(r->value, (size_t)r->value_len, &v, &why);
    if (rc) {
        meta_put(c, m);
        if (rc == RT_E_CORRUPT)
            return replay_corrupt(at, r, "bad value", why ? why : rt_strerror(rc));
        return error_set(rc, "%s offset %" PRId64 ": bad value: %s", TXN_LOG_TOPIC, r->offset,
                         why ? why : rt_strerror(rc));
    }
    if (v.one_round && (v.state == TXN_PREPARE_COMMIT || v.state == TXN_PREPARE_ABORT)) {
        rc = decision_note(c, &v);
        if (rc) {
            txn_log_value_free(&v);
            meta_put(c, m);
            return rc;
        }
    }
    free(m->v.partitions);
    m->v = v;
    m->last_check_ms = v.start_ms;
    pid_index(c, m);
    meta_put(c, m);
    return 0;
}

static int replay(struct coordinator *c)
{
    int64_t offset = 0, end = 0;
    int rc =
        log_list_offsets(c->lg, TXN_LOG_TOPIC, 0, RT_OFFSET_EARLIEST, RT_READ_UNCOMMITTED, &offset);
    if (rc == 0)
        rc = log_list_offsets(c->lg, TXN_LOG_TOPIC, 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    while (rc == 0 && offset < end) {
        rt_fetch *f = NULL;
        rc = log_fetch_start(c->lg, TXN_LOG_TOPIC, 0, offset, 1 << 20, RT_READ_UNCOMMITTED, &f);
        if (rc)
            break;
        struct rt_records it;
        struct rt_record_view r;
        records_init(&it, f, offset);
        int64_t before = offset;
        while (rc == 0 && (rc = records_next(&it, &r)) == 0) {
            struct replay_at at = {.view = rt_fetch_get(f), .batch = it.batch};
            rc = replay_record(c, &r, &at);
            offset = r.offset + 1;
        }
        if (rc == RT_E_END)
            rc = 0;
        if (rc == 0 && offset == before) {
            /* Only control records (none are written here) or an empty fetch: step over it. */
            offset = end;
        }
        rt_fetch_release(f);
    }
    return rc;
}

int coordinator_open(struct log *lg, struct producer_registry *producers,
                     struct group_manager *groups, bool create, struct coordinator **out)
{
    struct coordinator *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->lg = lg;
    c->producers = producers;
    atomic_init(&c->groups, groups);
    pthread_mutex_init(&c->table_lock, NULL);
    pthread_mutex_init(&c->timer_lock, NULL);
    pthread_cond_init(&c->timer_cv, NULL);
    int rc = 0;
    if (create) {
        rc = log_internal_topic_create(lg, TXN_LOG_TOPIC, 1);
        if (rc == RT_E_TOPIC_ALREADY_EXISTS)
            rc = 0;
    }
    if (rc == 0) {
        c->log = log_partition(lg, TXN_LOG_TOPIC, 0);
        if (!c->log)
            rc = RT_E_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (rc == 0)
        rc = replay(c);
    /* COR5 before CO2: a stale epoch's transaction in a partition is aborted before a Prepare*
     * completion's marker could close it as that later transaction's (a read-only open writes
     * no marker). */
    bool read_only = log_read_only(lg);
    if (rc == 0 && !read_only)
        rc = reconcile(c);
    decisions_free(c); /* COR7 needs them only for reconciliation */
    /* CO13: a durable Ongoing (a wire transaction's) survives the open only where every
     * acknowledged produce was durable — in the run that wrote it (its acked_durable flag) and
     * in this one; otherwise its data may be gone, so it is fenced. */
    bool run_durable = log_options(lg)->sync_mode == RT_SYNC_ALWAYS;
    /* CO2: finish every transaction a crash left between its phases (not on a read-only engine:
     * it writes nothing, so those stay as they are for rt_txn_list and the next writer). */
    for (uint32_t b = 0; rc == 0 && !read_only && b < COORD_BUCKETS; b++) {
        for (struct txn_meta *m = c->buckets[b]; rc == 0 && m; m = m->next) {
            pthread_mutex_lock(&m->lock);
            if (m->v.state == TXN_PREPARE_EPOCH_FENCE) {
                struct txn_log_value next = m->v;
                next.state = TXN_PREPARE_ABORT;
                rc = transition(c, m, &next);
            }
            if (rc == 0 && is_prepare(m->v.state) && m->v.one_round)
                rc = complete_one_round(c, m);
            else if (rc == 0 && is_prepare(m->v.state))
                rc = end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
            else if (rc == 0 && m->v.state == TXN_ONGOING && !(run_durable && m->v.acked_durable))
                rc = end_locked(c, m, false, true); /* CO13: fenced, aborted */
            pthread_mutex_unlock(&m->lock);
        }
    }
    if (rc == 0 && !read_only) {
        rc = -pthread_create(&c->timer, NULL, timer_main, c);
        c->timer_running = rc == 0;
    }
    if (rc) {
        coordinator_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int64_t coordinator_producer_id_max(struct coordinator *c)
{
    int64_t max = -1;
    pthread_mutex_lock(&c->table_lock);
    for (uint32_t b = 0; b < COORD_BUCKETS; b++)
        for (struct txn_meta *m = c->buckets[b]; m; m = m->next)
            if (m->v.producer_id > max)
                max = m->v.producer_id;
    pthread_mutex_unlock(&c->table_lock);
    return max;
}

void coordinator_close(struct coordinator *c)
{
    if (!c)
        return;
    if (c->timer_running) {
        pthread_mutex_lock(&c->timer_lock);
        c->stopping = true;
        pthread_cond_broadcast(&c->timer_cv);
        pthread_mutex_unlock(&c->timer_lock);
        pthread_join(c->timer, NULL);
    }
    /* Complete* records still queued finish on the shard threads: wait for them (after the
     * timer, which can queue more, has stopped). */
    while (__atomic_load_n(&c->async_in_flight, __ATOMIC_ACQUIRE) > 0)
        usleep(1000);
    for (uint32_t b = 0; b < COORD_BUCKETS; b++) {
        struct txn_meta *m = c->buckets[b];
        while (m) {
            struct txn_meta *next = m->next;
            meta_free(m);
            m = next;
        }
    }
    decisions_free(c);
    pthread_mutex_destroy(&c->table_lock);
    pthread_mutex_destroy(&c->timer_lock);
    pthread_cond_destroy(&c->timer_cv);
    free(c);
}

/* ---- producer state of a partition (rt_partition_producers) ---- */

struct producers_call {
    struct partition *p;
    struct rt_partition_producer *out;
    size_t count, capacity;
};

static int producers_each(void *ctx, const struct producer_entry *e)
{
    struct producers_call *c = ctx;
    if (c->count == c->capacity) {
        size_t cap = c->capacity ? c->capacity * 2 : 16;
        struct rt_partition_producer *b = realloc(c->out, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        c->out = b;
        c->capacity = cap;
    }
    struct rt_partition_producer *o = &c->out[c->count++];
    *o = (struct rt_partition_producer){.producer_id = e->producer_id,
                                        .producer_epoch = e->epoch,
                                        .last_sequence = -1,
                                        .last_timestamp_ms = e->last_timestamp_ms,
                                        .coordinator_epoch = e->coordinator_epoch,
                                        .current_txn_first_offset = e->current_txn_first_offset};
    if (e->batch_count)
        o->last_sequence = e->batches[e->batch_count - 1].last_seq;
    return 0;
}

/* On the partition's shard thread: the table is the shard's alone. Copies, never calls out. */
static int producers_collect(struct shard *s, void *arg)
{
    (void)s;
    struct producers_call *c = arg;
    return producer_table_each(&c->p->producers, producers_each, c);
}

int coordinator_partition_producers(struct log *lg, const char *topic, uint32_t partition,
                                    int (*fn)(void *ctx, const struct rt_partition_producer *pr),
                                    void *ctx)
{
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return error_set(RT_E_UNKNOWN_TOPIC_OR_PARTITION, "no partition %s-%u", topic, partition);
    struct producers_call c = {.p = p};
    int rc;
    if (log_read_only(lg)) { /* no shard thread runs and nothing writes: read in place */
        rc = producers_collect(p->shard, &c);
    } else {
        struct shard_request req = {.kind = SHARD_REQ_CALL, .fn = producers_collect, .arg = &c};
        rc = shard_submit(p->shard, &req);
        if (rc == 0)
            rc = req.result;
    }
    if (rc)
        error_set(rc, "listing the producers of %s-%u: %s", topic, partition, rt_strerror(rc));
    for (size_t i = 0; rc == 0 && i < c.count; i++) /* fn on the caller's thread, no lock */
        rc = fn(ctx, &c.out[i]);
    free(c.out);
    return rc;
}
