/*
 * coordinator.c — the transaction coordinator (see coordinator.h): its state machine, the
 * invariants below and the operations (coordinator_internal.h names the other files). It owns
 * the transactional ids, their state machine, the records of __transaction_state
 * (docs/format.md G) and the order in which a transaction's records, data and markers may become durable. It never writes a
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
 *   CO15. A write that fails for a partition alone (shard.c SH10, SH11: the partition heals in
 *        place) leaves the coordinator's memory what its log says, and what remains to be done
 *        is retried, never dropped: (a) a Prepare*, decision or Ongoing record that could not
 *        be written is not adopted (CO1): the id stays as it was (an in-process Ongoing stays
 *        open, to be aborted by its producer or its timeout); (b) a transaction whose decision
 *        is durable but whose markers could not all be written stays Prepare* — its end is not
 *        reported done (RT_E_IO_FAILED, saying it is decided) — and the timer completes it
 *        each tick until the partitions take writes (coord_complete_prepared: a one-round
 *        Prepare* by CO10's rule from the partitions' state, which a frozen partition does not
 *        give until its recovery reloaded it from the log, so a marker the failed round placed
 *        is never mistaken for a written one); pending offsets are applied only then (GO1);
 *        (c) the retried end of the producer whose end it was (end_retry: that (id, epoch),
 *        held in memory) answers RT_E_CONCURRENT_TRANSACTIONS while the markers are pending
 *        and 0 once the same outcome is complete (its identity then adopted), as Kafka
 *        answers a retried EndTxn; any other producer or epoch meets the fencing rules as
 *        before (a timed-out producer stays fenced);
 *        (d) a Complete* queued without waiting whose write failed is written again by the
 *        timer (coord_rewrite_lost) unless a later record of the id became durable first.
 *        What still needs a reopen is the engine's write side failing (SH10); an id left
 *        Prepare* at close is completed by the next open (CO2).
 *   CO16. Replication (rt_partition_resign / rt_partition_become_leader of __transaction_state-0,
 *        txn.h TX5, coordinator_role.c; docs/format.md A.10 IR5-IR8, G.7): the coordinator
 *        leads from open on, or follows. (a) Every operation on an id (init, add, join, end,
 *        the one-round commit, verify, abort) holds the role lock shared and, while following,
 *        answers RT_E_NOT_COORDINATOR having touched nothing; the timer does nothing while
 *        following (no timeout, expiry or compaction of a followed log). (b) Resign: the log
 *        partition follows first (a write in flight then fails, nothing adopted: CO15(a)),
 *        then, the role lock exclusive (every operation finished), the table of ids is dropped,
 *        CO14's and CO15's memory with it. A follower's log is never replayed or written by
 *        this coordinator. (c) Lead: the log partition is led first, then, exclusive, the table
 *        is rebuilt as open builds it (coord_load): the log replayed from its start to its log
 *        end (past a held high watermark), the producer-id registry raised past every id it
 *        names, reconciliation (COR1-COR9), every Prepare* completed with its outcome (CO2,
 *        CO10: a one-round or kept-epoch decision by G.6 R1 from the partitions' state), and
 *        every Ongoing fenced and aborted (PrepareEpochFence, ABORT markers, the epoch bumped)
 *        whatever CO13 would keep: the old leader's memory of it (in-memory joins, CO9; retries,
 *        CO15) is gone and whether its acknowledged produces reached the partitions' leaders
 *        is not known here, so its producer's next call is RT_E_PRODUCER_FENCED (a zombie
 *        cannot commit). Stricter than Kafka, which resumes such a transaction. A decided
 *        transaction whose marker a partition refuses stays Prepare* and the timer retries it
 *        (CO15(b)); any other failure drops the table again and the partition follows. Only then
 *        are operations answered.
 *   CO17. Markers through the embedder (rt_options.txn_marker_writer; format.md G.8 MW1-MW5):
 *        when given, every marker of a decided transaction (coord_finish_as: an end, a fence, a
 *        timeout, a Prepare* completed at open, at failover or by the timer) goes through it,
 *        one call per marker, once the decision is durable (CO1), and the transaction is
 *        complete only once every call answered 0; a failed call leaves it Prepare* and the timer
 *        calls the writer again each tick (CO15(b)) — for every marker of the transaction, those
 *        already written included unless CO10 finds them in a local partition, so the writer
 *        answers a repeated marker as written (MW3). Reconciliation
 *        (COR1-COR9) and rt_txn_abort_partition still write into local partitions: they repair
 *        what a local partition holds. Without a writer nothing changes.
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

void coordinator_attach_groups(struct coordinator *c, struct group_manager *groups)
{
    assert(groups);
    struct group_manager *expected = NULL;
    bool set = atomic_compare_exchange_strong(&c->groups, &expected, groups);
    assert(set || expected == groups); /* TX1: created once */
    (void)set;
}

/* ---- operations ---- */

bool coord_holds_partition(const struct txn_meta *m, const char *topic, uint32_t partition);

/* CO15: an end whose decision is durable but whose markers could not all be written (a
 * partition that failed to write): the transaction stays Prepare* — not reported ended — and
 * the timer completes it once the partitions recover; the caller may retry the end. */
static int markers_pending(struct txn_meta *m, int rc, int64_t pid, int16_t epoch)
{
    m->end_retry_pid = pid; /* its retry is recognised (end_retry) */
    m->end_retry_epoch = epoch;
    char cause[ERROR_DETAIL_BYTES];
    snprintf(cause, sizeof(cause), "%s", *rt_error_detail() ? rt_error_detail() : rt_strerror(rc));
    return error_set(rc,
                     "transactional id '%s': the %s is decided (durable) but not every marker "
                     "could be written (%s); the coordinator writes them once the partition "
                     "recovers: retry to learn the outcome (CO15)",
                     m->id, m->v.state == TXN_PREPARE_COMMIT ? "commit" : "abort", cause);
}

/* CO15: is (pid, epoch) the producer whose own end was decided but left its markers pending
 * (markers_pending)? 0: not such a retry (the fencing rules answer); 1: its transaction is
 * complete with the outcome asked (answer it with the id's identity); else an error: the
 * markers are still pending, or the outcome was the other one. */
static int end_retry(struct txn_meta *m, int64_t pid, int16_t epoch, bool commit)
{
    if (m->end_retry_pid < 0 || pid != m->end_retry_pid || epoch != m->end_retry_epoch)
        return 0;
    if (m->v.state == TXN_ONGOING || m->v.state == TXN_EMPTY) {
        m->end_retry_pid = -1; /* the id moved on (CO7: maybe at the same epoch) */
        return 0;
    }
    if (coord_is_prepare(m->v.state))
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is writing the markers of its %s (CO15)", m->id,
                         m->v.state == TXN_PREPARE_COMMIT ? "commit" : "abort");
    bool committed = m->v.state == TXN_COMPLETE_COMMIT;
    if (m->v.state != TXN_COMPLETE_COMMIT && m->v.state != TXN_COMPLETE_ABORT)
        return 0; /* the id moved on: the fencing rules answer */
    if (committed != commit)
        return error_set(RT_E_INVALID_TXN_STATE,
                         "transactional id '%s': the transaction was %s, not %s (CO15)%s", m->id,
                         committed ? "committed" : "aborted", commit ? "committed" : "aborted",
                         committed ? "" : "; abort to go on");
    m->end_retry_pid = -1;
    return 1;
}

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
        rc = coord_log_write_prepare(c, m->id, &prep, &w);
    if (rc == 0) {
        rc = log_append_async(c->lg, &w->req);
        if (rc)
            coord_log_write_discard(w);
    }
    if (rc) {
        free(prep.partitions);
        free(dirty);
        return rc;
    }
    /* The decision round: the record's fdatasync and the data's run meanwhile. */
    int data_rc = dirty_count ? log_sync_unsynced_shards(c->lg, dirty, dirty_count) : 0;
    free(dirty);
    rc = coord_log_write_wait(c, w);
    if (rc == 0)
        rc = data_rc;
    if (rc) {
        /* Not decided: nothing is adopted (CO15); the transaction stays Ongoing for a retried
         * EndTxn, or, if the engine's write side failed, the next open decides by R1 from what
         * became durable (CO10, CO12). */
        free(prep.partitions);
        return rc;
    }
    free(m->v.partitions);
    m->v = prep;
    coord_note_durable(m); /* CO15 */
    coord_pid_index(c, m);
    rc = coord_finish_as(c, m, commit, m->v.producer_id, m->v.producer_epoch, true, NULL);
    if (rc) /* the kept epoch (CO7): the client retries at it */
        return markers_pending(m, rc, m->v.producer_id, m->v.producer_epoch);
    return 0;
}

int coord_fenced(const struct txn_meta *m, int64_t pid, int16_t epoch)
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

static int init_expected_op(struct coordinator *c, const char *id, int32_t timeout_ms,
                            rt_txn_check_fn check_fn, void *check_ctx, int64_t expected_pid,
                            int16_t expected_epoch, int64_t *producer_id_out, int16_t *epoch_out)
{
    if (!id || !*id || strlen(id) > TXN_ID_MAX_BYTES)
        return error_set(RT_E_INVALID_ARGUMENT, "transactional ids are 1..%d bytes",
                         TXN_ID_MAX_BYTES);
    struct txn_meta *m = coord_meta_get(c, id, true);
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
        rc = coord_end_locked(c, m, false, true); /* fence the previous instance and abort */
    } else if (rc == 0 && !retry && coord_is_prepare(m->v.state)) {
        rc = coord_complete_prepared(c, m); /* CO15 */
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
            rc = coord_transition(c, m, &next);
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
    coord_meta_put(c, m);
    return rc;
}

int coordinator_init_expected(struct coordinator *c, const char *id, int32_t timeout_ms,
                              rt_txn_check_fn check_fn, void *check_ctx, int64_t expected_pid,
                              int16_t expected_epoch, int64_t *producer_id_out, int16_t *epoch_out)
{
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    rc = init_expected_op(c, id, timeout_ms, check_fn, check_ctx, expected_pid, expected_epoch,
                          producer_id_out, epoch_out);
    coord_leave(c);
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
    if (coord_is_prepare(m->v.state) && pid == m->v.producer_id &&
        (epoch == m->v.producer_epoch || epoch + 1 == m->v.producer_epoch))
        /* The same instance, whose transaction is between its phases (Prepare* carries the
         * bumped epoch): not a zombie, just early (CO4). */
        return error_set(RT_E_CONCURRENT_TRANSACTIONS,
                         "transactional id '%s' is completing its previous transaction", m->id);
    rc = coord_fenced(m, pid, epoch);
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
        rc = coord_transition(c, m, &next);
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
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    struct txn_meta *m = coord_meta_get(c, id, false);
    if (!m) {
        coord_leave(c);
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    }
    pthread_mutex_lock(&m->lock);
    rc = add_locked(c, m, pid, epoch, parts, count, durable);
    pthread_mutex_unlock(&m->lock);
    coord_meta_put(c, m);
    coord_leave(c);
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

static int end_op_led(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                      bool commit, bool bump, int64_t *producer_id_out, int16_t *epoch_out)
{
    struct txn_meta *m = coord_meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    pthread_mutex_lock(&m->lock);
    int retry = m->deciding ? 0 : end_retry(m, pid, epoch, commit); /* CO15 */
    int rc = retry < 0 ? retry : retry ? 0 : coord_fenced(m, pid, epoch);
    if (rc == 0 && !retry) {
        switch (m->v.state) {
        case TXN_ONGOING:
            rc = bump ? coord_end_locked_as(c, m, commit, false, true)
                      : end_wire_locked(c, m, commit);
            if (rc && bump && coord_is_prepare(m->v.state))
                rc = markers_pending(m, rc, pid, epoch); /* CO15 */
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
    coord_meta_put(c, m);
    return rc;
}

static int end_op(struct coordinator *c, const char *id, int64_t pid, int16_t epoch, bool commit,
                  bool bump, int64_t *producer_id_out, int16_t *epoch_out)
{
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    rc = end_op_led(c, id, pid, epoch, commit, bump, producer_id_out, epoch_out);
    coord_leave(c);
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
static int commit_one_round_op(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                               const struct txn_log_partition *seqs, uint32_t seq_count,
                               coordinator_wait_data_fn wait_data, void *ctx,
                               int64_t *producer_id_out, int16_t *epoch_out, bool *aborted_out)
{
    *aborted_out = false;
    struct txn_meta *m = coord_meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_INVALID_TXN_STATE, "transactional id '%s' is not initialised", id);
    pthread_mutex_lock(&m->lock);
    int retry = m->deciding ? 0 : end_retry(m, pid, epoch, true); /* CO15 */
    int rc = m->deciding ? error_set(RT_E_CONCURRENT_TRANSACTIONS,
                                     "transactional id '%s' is committing its transaction", id)
             : retry < 0 ? retry
             : retry     ? 0
                         : coord_fenced(m, pid, epoch);
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
        coord_meta_put(c, m);
        return rc;
    }
    int16_t marker_epoch = m->v.producer_epoch;
    int64_t next_pid = m->v.producer_id;
    int16_t next_epoch = m->v.producer_epoch;
    rc = coord_next_identity(c, m, &marker_epoch, &next_pid, &next_epoch);
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
        rc = coord_log_write_prepare(c, m->id, &prep, &w);
    if (rc) {
        free(prep.partitions);
        pthread_mutex_unlock(&m->lock);
        coord_meta_put(c, m);
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
            coord_log_write_discard(w);
    }
    if (prep_rc == 0)
        prep_rc = coord_log_write_wait(c, w);
    pthread_mutex_lock(&m->lock);
    m->deciding = false;
    pthread_cond_broadcast(&m->decided);
    if (prep_rc) {
        /* Not decided: the transaction stays Ongoing, as the log says (CO15); it is aborted
         * (by its producer, or its timeout) once __transaction_state recovers (SH11), or the
         * next open reconciles it (COR3) if the engine's write side failed. */
        free(prep.partitions);
        rc = error_set(prep_rc,
                       "transactional id '%s': its PrepareCommit could not be written to %s "
                       "(%s): nothing was decided and the transaction stays open; abort it",
                       m->id, TXN_LOG_TOPIC, rt_strerror(prep_rc));
    } else {
        free(m->v.partitions);
        m->v = prep;           /* durable: the outcome is decided by CO10's rule */
        coord_note_durable(m); /* CO15 */
        coord_pid_index(c, m);
        if (data_rc == 0) {
            rc = coord_finish_as(c, m, true, next_pid, next_epoch, true, NULL);
            if (rc)
                rc = markers_pending(m, rc, pid, epoch);
        } else {
            /* Some data never landed: CO10 decides abort, and the coordinator writes it down
             * (PrepareAbort) before any marker. */
            struct txn_log_value next = m->v;
            next.state = TXN_PREPARE_ABORT;
            rc = coord_transition(c, m, &next);
            if (rc == 0)
                rc = coord_finish(c, m, false, next_pid, next_epoch);
            if (rc == 0) {
                *aborted_out = true;
                rc = data_rc;
            } else {
                /* CO15: decided (the durable PrepareCommit resolves to abort by CO10's rule, or
                 * the PrepareAbort is durable), its end pending: the timer completes it, and
                 * the producer's abort learns it (end_retry). */
                m->end_retry_pid = pid;
                m->end_retry_epoch = epoch;
                char cause[ERROR_DETAIL_BYTES];
                snprintf(cause, sizeof(cause), "%s", rt_error_detail());
                rc = error_set(rc,
                               "transactional id '%s': a record of the transaction failed (%s) "
                               "and its abort could not be written yet (%s); the coordinator "
                               "aborts it once the partitions recover: abort to go on (CO15)",
                               m->id, rt_strerror(data_rc), cause);
            }
        }
    }
    if (rc == 0 || *aborted_out) {
        *producer_id_out = m->v.producer_id;
        *epoch_out = m->v.producer_epoch;
    }
    pthread_mutex_unlock(&m->lock);
    coord_meta_put(c, m);
    return rc;
}

int coordinator_commit_one_round(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                                 const struct txn_log_partition *seqs, uint32_t seq_count,
                                 coordinator_wait_data_fn wait_data, void *ctx,
                                 int64_t *producer_id_out, int16_t *epoch_out, bool *aborted_out)
{
    *aborted_out = false;
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    rc = commit_one_round_op(c, id, pid, epoch, seqs, seq_count, wait_data, ctx, producer_id_out,
                             epoch_out, aborted_out);
    coord_leave(c);
    return rc;
}

static int verify_op(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                     const char *topic, uint32_t partition)
{
    struct txn_meta *m = NULL;
    if (id) {
        m = coord_meta_get(c, id, false);
    } else {
        pthread_mutex_lock(&c->table_lock);
        for (m = c->pid_buckets[coord_pid_bucket_of(pid)]; m && m->pid_key != pid; m = m->pid_next)
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
    else if (m->v.state != TXN_ONGOING || !coord_holds_partition(m, topic, partition))
        rc = error_set(RT_E_INVALID_TXN_STATE,
                       "transactional id '%s' (%s) has not added %s-%u to its transaction (CO7)",
                       m->id, txn_state_name(m->v.state), topic, partition);
    pthread_mutex_unlock(&m->lock);
    coord_meta_put(c, m);
    return rc;
}

int coordinator_verify(struct coordinator *c, const char *id, int64_t pid, int16_t epoch,
                       const char *topic, uint32_t partition)
{
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    rc = verify_op(c, id, pid, epoch, topic, partition);
    coord_leave(c);
    return rc;
}

void coordinator_release(struct coordinator *c, const char *id)
{
    struct txn_meta *m = coord_meta_get(c, id, false);
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->check_fn = NULL;
    m->check_ctx = NULL;
    pthread_mutex_unlock(&m->lock);
    coord_meta_put(c, m);
}

int coordinator_set_check_handler(struct coordinator *c, rt_txn_check_fn fn, void *ctx)
{
    pthread_mutex_lock(&c->table_lock);
    c->check_fn = fn;
    c->check_ctx = ctx;
    pthread_mutex_unlock(&c->table_lock);
    return 0;
}

static int abort_op(struct coordinator *c, const char *id)
{
    struct txn_meta *m = coord_meta_get(c, id, false);
    if (!m)
        return error_set(RT_E_UNKNOWN_PRODUCER_ID, "no transactional id '%s'", id);
    pthread_mutex_lock(&m->lock);
    int rc;
    if (m->v.state == TXN_ONGOING)
        rc = coord_end_locked(c, m, false, true);
    else if (coord_is_prepare(m->v.state))
        rc = coord_complete_prepared(c, m); /* CO15 */
    else
        rc = error_set(RT_E_INVALID_TXN_STATE,
                       "transactional id '%s' has no open transaction (%s); a partition still "
                       "pinned by its producer %" PRId64 " is released by "
                       "rt_txn_abort_partition",
                       id, txn_state_name(m->v.state), m->v.producer_id);
    pthread_mutex_unlock(&m->lock);
    coord_meta_put(c, m);
    return rc;
}

int coordinator_abort(struct coordinator *c, const char *id)
{
    int rc = coord_enter(c, id); /* CO16 */
    if (rc)
        return rc;
    rc = abort_op(c, id);
    coord_leave(c);
    return rc;
}
