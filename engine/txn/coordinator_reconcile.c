/*
 * coordinator_reconcile.c — the transactions open in the partitions, reconciled with the
 * coordinator at open (COR1-COR8), a one-round Prepare* completed from the partitions' state
 * (CO10), and the operator's view and release of them (rt_txn_list_partitions,
 * rt_txn_abort_partition, COR6).
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
 *   COR9. A new leader's reconciliation (CO16(c)) writes no marker into an internal partition
 *         this node follows (RL6 refuses it: RT_E_NOT_COORDINATOR); that marker is skipped, not
 *         an error, and the transaction stays open there until a marker reaches that partition's
 *         leader (issue 25 item 2: the marker writer, docs/format.md G.8). At open nothing is
 *         followed, so it never applies there.
 *
 * Costs of reconciliation: one shard call per shard to collect the open transactions, a scan of
 * the ids per open transaction (O(open x ids)) and of the one-round decisions replayed
 * (O(open x decisions)), at open only; one marker round per shard; for each one-round Prepare*
 * left at open, one shard call per partition (log_producer_state), and where the partition no
 * longer knows the producer (evicted, CO10) one batch read at a kept epoch, or at a bumped
 * epoch a scan of the partition's batch headers (O(partition bytes / batch)).
 *
 */
#include "coordinator_internal.h"

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

bool coord_holds_partition(const struct txn_meta *m, const char *topic, uint32_t partition)
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
    if (!coord_holds_partition(m, t->topic, t->partition))
        return false;
    if (m->v.state == TXN_ONGOING)
        return m->v.producer_epoch == t->producer_epoch;
    if (coord_is_prepare(m->v.state) && m->v.one_round && m->v.kept_epoch) {
        /* COR8: at a kept epoch only the very transaction it recorded (its first offset) */
        for (uint32_t i = 0; i < m->v.partition_count; i++)
            if (m->v.partitions[i].partition == t->partition &&
                strcmp(m->v.partitions[i].topic, t->topic) == 0)
                return m->v.txn_epoch == t->producer_epoch &&
                       m->v.partitions[i].first_offset == t->first_offset;
        return false;
    }
    if (coord_is_prepare(m->v.state) && m->v.one_round)
        return m->v.txn_epoch == t->producer_epoch; /* COR1: the epoch its data carries */
    return coord_is_prepare(m->v.state) && (m->v.producer_epoch == t->producer_epoch ||
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
 * offsets follow the outcome (GO4), as coord_finish() does for a live transaction. */
static void offsets_follow_marker(struct group_manager *groups, const char *topic,
                                  uint32_t partition, int64_t pid, bool commit)
{
    if (groups && strcmp(topic, GROUP_OFFSETS_TOPIC) == 0)
        group_txn_complete_partition(groups, pid, partition, commit);
}

/* COR5: run by coordinator_open before CO2, before the timer starts and before rt_open returns. */
int coord_reconcile(struct coordinator *c, bool failover)
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
        const struct decision *kept = coord_decision_find_kept(c, t);
        const struct decision *d =
            coord_decision_find(c, t->producer_id, t->producer_epoch, t->topic, t->partition);
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
            coord_meta_put(c, m);
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
    if (failover && rc == RT_E_NOT_COORDINATOR)
        rc = 0; /* COR9: judged per marker below */
    for (size_t i = 0; i < k; i++) {
        if (specs[i].result == 0)
            offsets_follow_marker(coord_groups(c), specs[i].topic, specs[i].partition,
                                  specs[i].producer_id, specs[i].type == CONTROL_COMMIT);
        else if (specs[i].result != RT_E_INVALID_PRODUCER_EPOCH && rc == 0 &&
                 !(failover && specs[i].result == RT_E_NOT_COORDINATOR))
            rc = specs[i].result; /* COR9: a new leader skips a partition another node leads */
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
int coord_complete_one_round(struct coordinator *c, struct txn_meta *m)
{
    assert(m->v.one_round && coord_is_prepare(m->v.state));
    bool commit = m->v.state == TXN_PREPARE_COMMIT;
    uint32_t n = m->v.partition_count;
    bool *skip = calloc(n ? n : 1, sizeof(*skip));
    if (!skip)
        return -ENOMEM;
    int rc = 0;
    int16_t e = m->v.txn_epoch;
    /* G.7 CM8: with an embedder's marker writer (a cluster) the partitions are other nodes' and
     * this node's copies of them may lag: the decision, replicated before any marker (G.8 MW2),
     * is final, and its markers go to every partition it names, none judged or skipped here. */
    bool judge = !log_options(c->lg)->txn_marker_writer;
    for (uint32_t i = 0; rc == 0 && judge && commit && i < n; i++) {
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
        rc = coord_transition(c, m, &next);
    }
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    if (rc == 0 && !m->v.kept_epoch && m->v.producer_epoch == m->v.txn_epoch) {
        next_epoch = 0; /* the epoch was exhausted (next_identity): a fresh id takes over */
        rc = producer_registry_allocate(c->producers, &next_pid);
    }
    if (rc == 0)
        rc = coord_finish_as(c, m, commit, next_pid, next_epoch, false, skip);
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
            coord_meta_put(c, m);
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
            rc = coord_end_locked(c, m, false, true);
        else
            rc = coord_end_locked(c, m, m->v.state == TXN_PREPARE_COMMIT, false);
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
        coord_meta_put(c, m);
    }
    return rc;
}

int coordinator_write_marker(struct log *lg, struct group_manager *groups, const char *topic,
                             uint32_t partition, int64_t producer_id, int16_t producer_epoch,
                             bool commit)
{
    struct partition *p = log_partition(lg, topic, partition);
    if (!p)
        return RT_E_UNKNOWN_TOPIC_OR_PARTITION; /* log_partition set the detail */
    struct marker_spec spec = {.topic = p->topic,
                               .partition = partition,
                               .producer_id = producer_id,
                               .producer_epoch = producer_epoch,
                               .coordinator_epoch = COORDINATOR_EPOCH,
                               .type = commit ? CONTROL_COMMIT : CONTROL_ABORT};
    int rc = log_write_markers(lg, &spec, 1);
    if (rc == 0)
        offsets_follow_marker(groups, p->topic, partition, producer_id, commit);
    return rc;
}
