/*
 * ringtail.h — the whole public contract of libringtail.
 *
 * ringtail is an embeddable storage engine for partitioned, transactional message logs. The
 * bytes it keeps on disk are Kafka's RecordBatch v2 (docs/format.md is the normative copy).
 *
 * Conventions (as in LMDB):
 *   - Handles are opaque (rt_engine, rt_producer, rt_consumer, rt_fetch); options and values
 *     are plain structs. Options structs are filled with defaults by their _init call, so new
 *     fields never break callers.
 *   - Every function that acts returns int: 0 on success, a negative code on failure. OS
 *     failures pass through as -errno; engine conditions use the RT_E_* codes below, which live
 *     in their own range (-10000 and below) so they never collide with errno values.
 *     rt_strerror() names every code. rt_error_detail() gives the calling thread's last
 *     detailed message (which file, which offset, which rule) after a failure.
 *   - Predicates return bool. Nothing returns "1 for success".
 *
 * Threads (each call below adds its own rules where it has any):
 *   - An rt_engine is shared by all threads of a process; every rt_* call on it is thread-safe,
 *     except rt_close, which must not overlap any other call on the engine or on its handles.
 *   - An rt_producer: rt_producer_send and rt_producer_flush of an anonymous or named producer
 *     may run on any number of threads at once (they serialise on the producer's lock; each
 *     thread's records keep their order within a partition, and a flush reports a failed batch
 *     to only one of the threads flushing at the time). Every other call — rt_producer_close,
 *     and all calls of a transactional producer (init_transactions, begin, send, send_offsets,
 *     commit, abort) — is one thread at a time with no other call on that producer running.
 *     A producer has no thread of its own: its batches are sealed and handed over, its linger
 *     timers run and its delivery callbacks (rt_delivery_fn, rt_batch_delivery_fn) run on the
 *     engine's sender pool, a few threads shared by every producer of the engine (2 while there
 *     is work, more only to stand in for ones blocked in a durable coordinator write or in a
 *     callback's call into another producer; at most 256; none before the first producer
 *     sends). A producer's callbacks run one at a time, in offset order per partition, outside
 *     the producer's lock, on whichever pool thread runs its turn. They may call
 *     rt_producer_send and rt_producer_flush of another producer (and the engine's calls but
 *     rt_close); a call back into their own producer (send, flush, close, and commit, which
 *     flushes) returns RT_E_INVALID_ARGUMENT, since it would wait for the turn running the
 *     callback (no other call on their own producer may be made from them either). They
 *     should not block: the pool's other producers wait for the threads they hold.
 *   - An rt_consumer is used by one thread at a time (any thread, but calls must not overlap);
 *     it runs no callbacks and no thread of its own.
 *   - rt_options.on_fault runs on the thread that ran the write round (an engine shard thread,
 *     or an appending thread running its own round), once when a partition fails and once when
 *     it is recovered in place; it must not block and must not call the engine.
 *   - An rt_fetch (and an rt_records iterator over it) belongs to the thread that made it until
 *     it is released. A check-back handler (rt_txn_check_fn) runs on the coordinator's timer
 *     thread; rt_topic_list, rt_txn_list, rt_txn_list_partitions and rt_verify call their fn on
 *     the caller's thread, before they return.
 *   - Only one process may open a data directory for writing at a time (read-only handles,
 *     opts.read_only, share it with each other).
 *
 * Lifetimes: rt_close refuses (RT_E_HANDLES_OPEN, nothing closed) while producers or consumers
 * of the engine are open; a fetch may outlive rt_close (it keeps its segment mapped until
 * rt_fetch_release). A handle used after its close is undefined behaviour, as in LMDB.
 *
 * Caveats:
 *   - Pointers handed out by rt_fetch point into read-only memory maps of segment files; they
 *     are valid until rt_fetch_release() and must never be written through — except keys,
 *     values and headers of compressed batches, which live only until the next rt_records_next
 *     (see there).
 *   - A failed write or fdatasync fails the partitions it concerns (RT_E_IO_FAILED for their
 *     appends, the detail naming the cause; the other partitions keep writing) until each is
 *     recovered in place: once the disk takes writes again (retried from
 *     rt_options.fault_recovery_ms after the fault, doubling up to a second) its tail past the
 *     last acknowledged batch is erased and synced anew and its producer state reloaded as a
 *     reopen would, so acknowledged records stay, failed ones never appear, and an idempotent
 *     retry of the failed sequence is appended once. Transaction markers and the internal
 *     topics heal the same way: a transaction whose decision is durable but whose marker could
 *     not be written stays pending and the coordinator writes the marker once the partition
 *     recovers; a record of __transaction_state or __consumer_offsets that could not be
 *     written is not applied. A failed fdatasync of published bytes not yet synced puts the
 *     whole engine's write side into a sticky error state (RT_E_IO_FAILED) until it is closed
 *     and reopened. ringtail never retries an fsync and assumes durability: only
 *     fdatasyncs made after a failure are trusted (docs/architecture.md, "Disk faults that
 *     heal").
 */
#ifndef RINGTAIL_H
#define RINGTAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden: what this header declares, and nothing else,
 * is exported from libringtail.so (tests/cli_layers.sh checks that only rt_* symbols are). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

enum rt_error {
    RT_OK = 0,
    RT_E_FIRST = -10000,
    RT_E_CORRUPT = -10000,          /* bytes failed a CRC or structural check */
    RT_E_INVALID_ARGUMENT = -10001, /* a caller passed a value outside its contract */
    RT_E_INVALID_TOPIC = -10002,    /* topic name empty, too long, or bad characters */
    RT_E_UNKNOWN_TOPIC_OR_PARTITION = -10003,
    RT_E_TOPIC_ALREADY_EXISTS = -10004,
    RT_E_DIRECTORY_LOCKED = -10005, /* another process (or handle) has the directory open */
    RT_E_OFFSET_OUT_OF_RANGE = -10006,
    RT_E_RECORD_TOO_LARGE = -10007, /* a batch or record larger than the configured maximum */
    RT_E_IO_FAILED = -10008,        /* a write/fsync failed: the partition's (recovered in
                                       place) or the engine's (sticky: reopen); see Caveats */
    RT_E_CLOSED = -10009,           /* the engine is closing or closed */
    RT_E_END = -10010,              /* not an error: an iterator has no more items */
    /* -10011 (RT_E_QUEUE_FULL), -10012 (RT_E_LIMIT) and -10015 (RT_E_DUPLICATE_SEQUENCE) are
     * retired: no call returned them (full queues block; duplicates are acknowledged), and each
     * limit has its own code below. The numbers stay unused; rt_strerror calls them unknown. */
    RT_E_UNSUPPORTED = -10013, /* a record type or format version this build does not know;
                                * returned by no public call today (see docs/limits.md) */
    RT_E_OUT_OF_ORDER_SEQUENCE = -10014,
    RT_E_INVALID_PRODUCER_EPOCH = -10016,
    RT_E_PRODUCER_FENCED = -10017,
    RT_E_UNKNOWN_PRODUCER_ID = -10018,
    RT_E_INVALID_TXN_STATE = -10019,
    RT_E_CONCURRENT_TRANSACTIONS = -10020,
    RT_E_INVALID_TRANSACTION_TIMEOUT = -10021,
    RT_E_UNSTABLE_OFFSET_COMMIT = -10022,
    RT_E_UNSUPPORTED_COMPRESSION = -10023, /* a compression codec other than 0-4 (internal codec
                                            * calls; a batch carrying one is RT_E_CORRUPT) */
    RT_E_TIMED_OUT = -10024,
    RT_E_INTERNAL_TOPIC = -10025, /* names beginning with "__" are the engine's; clients may not
                                   * create them or write to them (Kafka's "Cannot append to
                                   * internal topic") */
    RT_E_READ_ONLY = -10026,      /* a write to an engine opened with opts.read_only */
    /* One code per limit (as LMDB's MDB_MAP_FULL, MDB_READERS_FULL): */
    RT_E_TOPICS_FULL = -10027,              /* opts.topics_max user topics exist */
    RT_E_PRODUCERS_FULL = -10028,           /* a partition's producer table (opts.producers_max)
                                             * holds only producers it may not evict */
    RT_E_PRODUCER_IDS_EXHAUSTED = -10029,   /* the 63-bit producer id space is used up */
    RT_E_TXN_PARTITIONS_FULL = -10030,      /* a transaction spans 100000 partitions */
    RT_E_PRODUCER_PARTITIONS_FULL = -10031, /* a producer handle writes to 4096 partitions */
    RT_E_CONSUMER_PARTITIONS_FULL = -10032, /* a consumer handle is assigned 65536 partitions */
    RT_E_BUFFER_TOO_SMALL = -10033,         /* a caller's output array is shorter than the answer */
    RT_E_HANDLES_OPEN = -10034,             /* rt_close while producers or consumers are open */
    RT_E_FETCHES_FULL = -10035,             /* opts.fetches_max fetches are open */
    RT_E_INVALID_CONFIG = -10036,  /* a topic config name that is not Kafka's, or a value its
                                   * rule refuses (rt_error_detail names the key) */
    RT_E_NOT_COORDINATOR = -10037, /* the group's `__consumer_offsets` partition, or (for a
                                    * transactional call) `__transaction_state`, is not led by
                                    * this engine (rt_partition_resign; Kafka's NOT_COORDINATOR) */
    RT_E_LAST = -10037,
};

/* Names any code: RT_E_*, -errno, or 0. Never NULL. */
const char *rt_strerror(int code);

/* The calling thread's message for its most recent failed rt_* call ("" if none). The text
 * names the file and byte offset for RT_E_CORRUPT, the rule for protocol errors. Valid until
 * the thread's next rt_* call. */
const char *rt_error_detail(void);

/* ---------------------------------------------------------------------------------------- */
/* Engine life cycle                                                                         */
/* ---------------------------------------------------------------------------------------- */

typedef struct rt_engine rt_engine;

enum rt_sync_mode {
    RT_SYNC_ALWAYS = 0,   /* acknowledge after fdatasync (group-committed); the default */
    RT_SYNC_INTERVAL = 1, /* fdatasync every sync_interval_ms or sync_interval_bytes */
    RT_SYNC_NONE = 2,     /* page cache only; the OS flushes when it likes */
};

enum rt_io_backend {
    RT_IO_AUTO = 0,  /* io_uring, falling back to sync when it cannot be set up */
    RT_IO_URING = 1, /* io_uring or fail */
    RT_IO_SYNC = 2,  /* pwritev + fdatasync on the shard thread */
};

/* Which time a batch's maxTimestamp (and the time index, and timestamp lookups) carries:
 * Kafka's message.timestamp.type. Appends from outside the engine are held to Kafka's
 * LogValidator either way (see rt_append_batch). */
enum rt_timestamp_type {
    RT_TIMESTAMP_CREATE_TIME = 0,     /* the records' own timestamps; maxTimestamp = their max */
    RT_TIMESTAMP_LOG_APPEND_TIME = 1, /* the engine's clock at append (attribute bit 3 set) */
};

/* One transaction marker the coordinator asks an embedder to write (rt_options.txn_marker_writer;
 * docs/format.md G.8): a COMMIT or ABORT control batch of producer_id at producer_epoch into
 * topic-partition (Kafka's WriteTxnMarkers entry for one partition). */
struct rt_txn_marker {
    const char *topic;
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
    bool commit;
};

/* The marker writer (docs/format.md G.8 MW1-MW5): writes `marker` where the partition's leader
 * is — rt_txn_write_marker for a local one, WriteTxnMarkers to another node — and returns 0 once
 * it is written, else an error (RT_E_* or -errno) and the coordinator calls it again later for
 * that marker (the transaction stays decided and pending; its LSO stays pinned). Called on an
 * engine thread with the transactional id's state locked: it may block (a network round) and
 * may call rt_txn_write_marker, but no other transactional call. */
typedef int (*rt_txn_marker_writer_fn)(void *ctx, const struct rt_txn_marker *marker);

/* The transactional-batch verifier (rt_options.txn_verifier; docs/format.md G.9 TV1-TV5): may
 * producer (producer_id, producer_epoch) append a transactional batch to topic-partition now,
 * i.e. is the partition in that producer's ongoing transaction at its coordinator? 0 accepts;
 * an error (RT_E_INVALID_TXN_STATE, RT_E_INVALID_PRODUCER_EPOCH, RT_E_NOT_COORDINATOR for
 * "could not ask", ...) refuses the batch with that error, nothing appended. Called on
 * the appending thread (rt_append_batch, rt_append_batch_async's caller) before the batch is
 * queued, with no engine lock held: it must not block (an embedder that must ask another node
 * does so before the append and answers here from what it learnt) and may call rt_txn_verify
 * but no call that appends. */
typedef int (*rt_txn_verifier_fn)(void *ctx, const char *topic, uint32_t partition,
                                  int64_t producer_id, int16_t producer_epoch);

/* A partition's write side failed, or recovered in place (docs/architecture.md, "Disk faults
 * that heal"). Told through rt_options.on_fault on the thread that ran the round (an engine
 * shard thread, or an appending thread running its own round): the callback must not block and
 * must not call the engine; every pointer is valid only during the call. */
struct rt_partition_fault {
    const char *topic;
    uint32_t partition;
    int error;          /* what froze it: -ENOSPC, -EIO, ... (also on recovery) */
    bool recovered;     /* false: it failed now; true: it was recovered in place */
    bool engine_wide;   /* the failure also failed the engine's write side: every later write
                           fails with RT_E_IO_FAILED until rt_close and rt_open (below) */
    uint32_t attempts;  /* on recovery: the attempts it took (the last one succeeded) */
    const char *detail; /* the file, the operation and the error, for a log line */
};
typedef void (*rt_fault_fn)(void *ctx, const struct rt_partition_fault *fault);

struct rt_options {
    uint64_t segment_size_bytes;       /* roll when the next batch would not fit (1 GiB; 14 ..
                                          2^31-1, as Kafka's segment.bytes: a larger batch is
                                          refused with RT_E_RECORD_TOO_LARGE; sparse on disk) */
    int64_t segment_ms;                /* roll when the active segment is older (7 days) */
    uint32_t index_size_max_bytes;     /* offset/time index capacity; roll when full (10 MiB) */
    uint32_t index_interval_bytes;     /* one offset-index entry per this many log bytes (4096) */
    int64_t retention_bytes;           /* per partition; -1 = unlimited (default) */
    int64_t retention_ms;              /* -1 = unlimited; default 7 days */
    uint32_t batch_size_max_bytes;     /* largest batch accepted (1 MiB + 12, as Kafka) */
    enum rt_sync_mode sync_mode;       /* RT_SYNC_ALWAYS */
    uint32_t sync_interval_ms;         /* for RT_SYNC_INTERVAL (1000) */
    uint64_t sync_interval_bytes;      /* for RT_SYNC_INTERVAL (0 = by time only) */
    enum rt_io_backend io_backend;     /* RT_IO_AUTO */
    uint32_t io_queue_depth;           /* io_uring submission queue entries per shard (256) */
    uint32_t shard_count;              /* writer threads; 0 = two per core, capped (0) */
    uint32_t request_queue_depth;      /* appends waiting per shard before callers block (1024) */
    uint32_t topics_max;               /* (1024) */
    uint32_t partitions_max;           /* per topic (1024) */
    uint32_t producers_max;            /* producer ids tracked per partition; the least recently
                                          written one is evicted beyond this (65536) */
    int64_t producer_id_expiration_ms; /* idle producers without an open transaction are
                                          forgotten after this (24 h) */
    int32_t
        transaction_timeout_max_ms; /* largest transaction timeout a producer may ask (15 min) */
    int64_t transactional_id_expiration_ms; /* idle transactional ids expire (7 days) */
    uint32_t txn_check_interval_ms;         /* check-back an Ongoing transaction this old (60 s) */
    uint32_t txn_check_max;                 /* unknown answers before rollback (15) */
    bool txn_park_hanging; /* after check_max: park and report instead of rollback */
    bool read_only;        /* open for reading only (false); see rt_open */
    uint32_t fetches_max;  /* rt_fetch handles open at once, consumers' included; beyond it
                              rt_fetch_start fails with RT_E_FETCHES_FULL (4096; 0 = the default) */
    enum rt_timestamp_type message_timestamp_type; /* every user topic's (CREATE_TIME) */
    rt_fault_fn on_fault;      /* told when a partition fails and when it recovers (NULL) */
    int32_t fault_recovery_ms; /* a failed partition's first recovery attempt comes this long
                                  after its fault; each failed attempt doubles the wait, up to
                                  max(1000, this) ms (100; -1: never, a failed partition then
                                  waits for a reopen as a failed engine does) */
    void *on_fault_ctx;
    uint32_t open_segments_max;    /* segments holding file descriptors at once (4 each: an active
                                   segment's .log and three indexes; a sealed one holds none):
                                   beyond it the least recently written idle partitions are
                                   sealed and closed, and reopened at their next append (0:
                                   RLIMIT_NOFILE / 9, leaving half the limit and at least
                                   64 descriptors to the rest, within 8 .. 16384; else
                                   1 .. 2^20) */
    uint64_t cleaner_buffer_bytes; /* the log cleaner's key map per clean (24 bytes a key;
                                      Kafka's log.cleaner.dedupe.buffer.size): a dirty part
                                      with more keys is cleaned in several passes (16 MiB;
                                      at least 1024) */
    uint32_t mapped_segments_max;  /* sealed segments holding their memory mappings at once (3
                                      each: .log, .index, .timeindex; active ones are bounded by
                                      open_segments_max): beyond it the least recently read
                                      are unmapped, never while a fetch holds them, and mapped
                                      again by their next reader (0: vm.max_map_count / 12,
                                      within 16 .. 65536; else 1 .. 2^20) */
    bool producer_ids_granted;     /* producer ids come only from blocks given by
                                  rt_producer_id_grant (a cluster's controller hands them out,
                                  KIP-730), never from the engine's own blocks (false) */
    rt_txn_marker_writer_fn txn_marker_writer; /* writes the markers of the transactions this
                                  engine coordinates (docs/format.md G.8; NULL: into the local
                                  partitions, as a single engine does) */
    void *txn_marker_writer_ctx;
    rt_txn_verifier_fn txn_verifier; /* decides whether a client's transactional batch may be
                                  appended (docs/format.md G.9; NULL: this engine's own
                                  coordinator decides, as a single engine does) */
    void *txn_verifier_ctx;
    bool txn_coordinator_follows; /* open with `__transaction_state` followed: the coordinator
                                  loads nothing and writes nothing at open (no replay, no
                                  reconciliation, no Prepare* completed, no Ongoing fenced) and
                                  answers RT_E_NOT_COORDINATOR until
                                  rt_partition_become_leader (a cluster node: its copy of the
                                  log may lag the coordinator's; docs/format.md G.7 CM7) */
    bool partitions_elsewhere;    /* a cluster node: a transaction's partitions
                                  (rt_txn_add_partitions) and a group's committed offsets
                                  (rt_group_commit_offsets, rt_txn_commit_offsets) may name
                                  partitions only other nodes hold; the embedder checks them
                                  against the cluster's metadata, the engine does not require
                                  them locally (false: RT_E_UNKNOWN_TOPIC_OR_PARTITION) */
};

/* Fills *opts with the defaults shown above. */
void rt_options_init(struct rt_options *opts);

/* Opens (creating if needed) the data directory `dir`. Takes an exclusive lock on
 * `dir/.lock`; a second open from any process or thread fails with RT_E_DIRECTORY_LOCKED.
 * Without a clean-shutdown marker, recovers: each partition's newest segment is scanned, a torn
 * or corrupt tail is truncated at the last valid batch, indexes are rebuilt.
 *
 * opts.read_only: nothing in `dir` is created, written, truncated, preallocated or removed —
 * not the directory, the lock file, the clean-shutdown marker, ringtail.meta, producers.meta,
 * snapshots, segments or indexes (indexes that need rebuilding are rebuilt in memory), and no
 * writer thread runs (no retention, no transaction timeouts). It takes a shared flock on
 * `dir/.lock`, so any number of read-only handles coexist, while a writer holding the
 * directory makes it fail with RT_E_DIRECTORY_LOCKED (and a read-only handle makes a writer's
 * open fail the same way); a directory without a lock file (never opened for writing) is read
 * unlocked. A missing `dir` is -ENOENT. Without a clean-shutdown marker (a crash, or a writer
 * that is still running) every newest segment is read up to its last valid batch, exactly as
 * recovery would keep it, and nothing is cut: rt_stats_get reports it (opened_unclean,
 * tail_bytes_ignored).
 * Transactions a crash left in PrepareCommit/PrepareAbort stay as they are (they are completed
 * by the next writable open). On a read-only engine these return RT_E_READ_ONLY: rt_topic_create,
 * rt_append, rt_append_batch, rt_producer_open, rt_txn_abort, rt_txn_set_check_handler,
 * rt_group_commit_offsets, rt_consumer_commit; reads (rt_fetch*, rt_list_offsets, records,
 * consumers without commits, rt_topic_*, rt_txn_list, rt_group_fetch_offsets, rt_stats_get)
 * work as usual, and rt_close writes nothing.
 * Errors: RT_E_INVALID_ARGUMENT (NULL or empty dir, NULL out, an option out of bounds: see
 * docs/limits.md), RT_E_DIRECTORY_LOCKED, RT_E_CORRUPT (the catalogue, producers.meta, a segment
 * or an internal topic's records fail their checks; the detail names the file and offset),
 * RT_E_TOPICS_FULL (the catalogue holds more user topics than topics_max), -ENAMETOOLONG,
 * -ENOENT (read-only, no such dir), -ENOMEM, -errno. */
int rt_open(const char *dir, const struct rt_options *opts, rt_engine **out);

/* Flushes, trims the active segments and indexes, writes the clean-shutdown marker, releases
 * the lock and frees the engine. Waits for appends in flight; must not overlap any other call on
 * the engine or its handles.
 * Open handles: the engine counts its producers and consumers. While any is open rt_close does
 * nothing and returns RT_E_HANDLES_OPEN (the detail counts them): the engine, the handles and
 * their views stay usable; close them and call rt_close again. (Closing them for the caller
 * would leave its pointers dangling; freeing the engine under them was a use-after-free.) Only
 * a refused rt_close may overlap other calls: an rt_producer_open or rt_consumer_open that
 * overlaps it may fail with RT_E_CLOSED, and nothing else notices it. Fetches are
 * not counted: one still held keeps its segment mapped, and its view and records stay readable
 * until rt_fetch_release, which may come after rt_close.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_HANDLES_OPEN, RT_E_IO_FAILED (the engine's sticky
 * write error, if there was one, or a partition still failed — not recovered in place — at the
 * close: no clean-shutdown marker is written, the directory is still left consistent and the
 * next open recovers; a partition recovered in place before the close leaves it clean),
 * -errno (trimming the active segments, writing the clean-shutdown marker or syncing the
 * directory); on every return but RT_E_INVALID_ARGUMENT and RT_E_HANDLES_OPEN the engine is
 * freed. */
int rt_close(rt_engine *engine);

/* Engine-wide counters for tests, tools and benchmarks. */
struct rt_stats {
    uint64_t rounds; /* group-commit rounds completed */
    uint64_t batches_appended;
    uint64_t bytes_appended;
    uint64_t fdatasyncs;
    uint64_t segments_rolled;
    uint64_t segments_deleted;
    uint64_t duplicates; /* producer batches acknowledged as duplicates, not appended */
    uint64_t producers_expired;
    uint64_t snapshots_written;
    uint64_t snapshots_rejected; /* corrupt snapshot files found at open, removed */
    uint32_t shard_count;
    const char *io_backend; /* "io_uring", "sync" (or "fault" under the test-only injector) */
    bool read_only;         /* opened with opts.read_only */
    bool opened_unclean;    /* no clean-shutdown marker at open: newest segments were scanned */
    uint64_t tail_bytes_ignored; /* non-zero bytes past the last valid batch of newest segments:
                                    cut at open, or, read-only, left on disk and never served */
    /* Pre-writing (docs/format.md A.6): zeros written ahead of the writers by the engine's
     * pre-writer thread, fdatasynced except under sync=none (not counted in fdatasyncs), the
     * appended bytes that still landed in blocks nobody pre-wrote (a new partition's first
     * segment, a writer faster than the pre-writer), and rolls that reused a segment file
     * retention let go instead of creating one. */
    uint64_t prewrite_bytes;
    uint64_t prewrite_fdatasyncs;
    uint64_t prewrite_missed_bytes;
    uint64_t segments_recycled;
    uint64_t rounds_inline; /* of `rounds`, those run on the appending thread: an append that
                               found its shard idle (rt_append, a producer's batch) is written
                               by the caller, without waking the shard thread (sync=none and
                               sync=always; never under sync=interval) */
    /* Disk faults (docs/architecture.md, "Disk faults that heal"): partitions whose write side
     * failed (a write, fdatasync or roll: -ENOSPC, -EIO, ...), those recovered in place since,
     * and those failed now (a gauge); write_error is the engine's own sticky error (0 while
     * every failure stayed with its partitions). */
    uint64_t partition_faults;
    uint64_t partition_recoveries;
    uint64_t partitions_failed;
    int write_error;
};
/* Errors: RT_E_INVALID_ARGUMENT (NULL). */
int rt_stats_get(rt_engine *engine, struct rt_stats *out);

/* ---------------------------------------------------------------------------------------- */
/* Topics                                                                                    */
/* ---------------------------------------------------------------------------------------- */

#define RT_TOPIC_NAME_MAX 249 /* as Kafka: [a-zA-Z0-9._-], not "." or ".." */

/* Creates a topic with `partitions` partitions (1..partitions_max), persisted before return.
 * Names beginning with "__" are reserved for the engine's internal topics (__transaction_state,
 * __consumer_offsets), which it creates itself and which do not count against topics_max.
 * Errors: RT_E_INVALID_TOPIC (NULL included), RT_E_INTERNAL_TOPIC (a reserved name),
 * RT_E_INVALID_ARGUMENT (NULL engine; partitions 0 or above partitions_max),
 * RT_E_TOPIC_ALREADY_EXISTS, RT_E_TOPICS_FULL (topics_max user topics exist), RT_E_READ_ONLY,
 * RT_E_CLOSED, -errno (creating the partitions' directories and first segments, e.g. -ENOSPC
 * from preallocation or -EMFILE, or storing the catalogue; a catalogue that cannot be stored
 * also fails the engine's write side: RT_E_IO_FAILED for later appends). */
int rt_topic_create(rt_engine *engine, const char *name, uint32_t partitions);

/* ---- Topic configs (Kafka's topic-level configs) ----
 *
 * A topic may override Kafka's topic configs by name ("retention.ms", "cleanup.policy", ...).
 * Every name Kafka 3.x knows for a topic is accepted and checked by Kafka's rule for it (type
 * and range; a value is at most 255 bytes here), and kept durably in the catalogue beside the
 * topic (docs/format.md A.2), so it survives restarts and is reported by rt_topic_config_get.
 * The engine acts on these:
 *   retention.ms, retention.bytes   the topic's retention (applied at once)
 *   max.message.bytes               the largest batch rt_append / rt_append_batch accept for it
 *                                   (applied at once; in-process producers keep
 *                                   batch_size_max_bytes)
 *   message.timestamp.type          CreateTime or LogAppendTime (applied at once)
 *   segment.bytes                   the size of its segments (from the next rt_open)
 *   segment.ms                      an append rolls an active segment older than this; a
 *                                   compacted partition's idle one is rolled by
 *                                   min(segment.ms, max.compaction.lag.ms) (applied at once)
 *   cleanup.policy                  "delete", "compact" or "compact,delete" (the log cleaner),
 *                                   with min.cleanable.dirty.ratio, min.compaction.lag.ms,
 *                                   max.compaction.lag.ms and delete.retention.ms
 * The others (compression.type, min.insync.replicas, flush.ms, ...) are checked and kept but
 * change nothing (a single node without recompression). */
struct rt_topic_config {
    const char *name;
    const char *value; /* rt_topic_config_alter: NULL removes the override */
};

/* Where a config's value comes from (rt_topic_config_get). */
enum rt_config_source {
    RT_CONFIG_DEFAULT = 0,         /* Kafka's default, or rt_options_init's */
    RT_CONFIG_ENGINE = 1,          /* an rt_options field the embedder set away from its default */
    RT_CONFIG_TOPIC = 2,           /* the topic's own override */
    RT_CONFIG_DYNAMIC_DEFAULT = 3, /* rt_topic_config_defaults_alter's run-time default */
};

/* Checks one config as a create or alter would, without an engine (value NULL: the name
 * alone, as a removal is checked). Thread-safe.
 * Errors: RT_E_INVALID_CONFIG (unknown name, or a value its rule refuses; rt_error_detail
 * names the key and the rule). */
int rt_topic_config_check(const char *name, const char *value);

/* rt_topic_create with configs: the topic exists with them, or not at all (one atomic catalogue
 * replace). Errors: as rt_topic_create, plus RT_E_INVALID_CONFIG (a config fails
 * rt_topic_config_check, or a name is given twice; nothing is created), RT_E_INVALID_ARGUMENT
 * (configs NULL with count > 0). */
int rt_topic_create_with_configs(rt_engine *engine, const char *name, uint32_t partitions,
                                 const struct rt_topic_config *configs, size_t count);

/* Changes a topic's overrides: with replace_all, the topic's overrides become exactly
 * `configs` (Kafka's AlterConfigs); without, each entry sets (value non-NULL) or removes
 * (value NULL) one override and the others stay (IncrementalAlterConfigs). Every entry is
 * checked before anything changes; then the catalogue is replaced atomically (durable before
 * return: a crash leaves the old or the new overrides) and the honoured ones are applied.
 * Serialised with topic creation; appends and fetches run on.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine or topic; configs NULL with count > 0),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_INVALID_CONFIG (nothing changed), RT_E_READ_ONLY,
 * RT_E_CLOSED, RT_E_IO_FAILED, -errno (storing the catalogue: nothing applied). */
int rt_topic_config_alter(rt_engine *engine, const char *topic,
                          const struct rt_topic_config *configs, size_t count, bool replace_all);

/* Changes, at run time, the default a user topic without its own override of a config uses
 * (a Kafka broker's dynamic log configs: log.retention.ms for retention.ms, ...): the value in
 * effect for a topic is its own override, else this default, else the engine's option (or
 * Kafka's default). Names and values are topic-level and checked as rt_topic_config_check
 * checks them; each entry sets (value non-NULL) or removes (value NULL: back to the engine's
 * option) one default, the others stay. Applied at once to every user topic lacking the
 * override, as rt_topic_config_alter applies a topic's own (retention, max.message.bytes,
 * message.timestamp.type, segment.ms, cleanup.policy and the compaction configs;
 * segment.bytes only for topics created afterwards); internal topics are not affected. Kept
 * in memory only: nothing is stored, and a new rt_open starts without dynamic defaults (the
 * embedder re-applies its own). rt_topic_config_get reports such a value as
 * RT_CONFIG_DYNAMIC_DEFAULT. Thread-safe; serialised with topic creation and config alters;
 * appends and fetches run on.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine; configs NULL with count > 0),
 * RT_E_INVALID_CONFIG (an entry fails the check, or a name is given twice: nothing changed),
 * RT_E_CLOSED, -ENOMEM. */
int rt_topic_config_defaults_alter(rt_engine *engine, const struct rt_topic_config *configs,
                                   size_t count);

/* Calls fn for every topic config name Kafka knows, in name order, with the value in effect
 * for the topic, where it comes from, and whether the engine acts on it; on the caller's
 * thread, before it returns; stops at fn's first non-zero return (returned). The strings are
 * valid during the call. Works on read-only engines.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_UNKNOWN_TOPIC_OR_PARTITION, -ENOMEM, fn's value. */
typedef int (*rt_topic_config_fn)(void *ctx, const char *name, const char *value,
                                  enum rt_config_source source, bool honoured);
int rt_topic_config_get(rt_engine *engine, const char *topic, rt_topic_config_fn fn, void *ctx);

/* Raises a topic's partition count to `count` (Kafka's CreatePartitions): the new partitions
 * (empty) exist durably before return, or none of them (a crash in between leaves what the next
 * rt_open removes). Existing partitions, their records and their readers are untouched; the
 * new ones are visible to lookups once whole. Serialised with topic creation.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine; count not above the current count, or above
 * partitions_max), RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_INTERNAL_TOPIC,
 * RT_E_READ_ONLY, RT_E_CLOSED, RT_E_IO_FAILED, -errno (the new directories, first segments or
 * the catalogue; one that cannot be stored also fails the engine's write side). */
int rt_topic_add_partitions(rt_engine *engine, const char *name, uint32_t count);

/* Deletes a topic: durable before return (the catalogue no longer names it; a crash after
 * that leaves what the next rt_open finishes removing). Its partition directories are renamed
 * aside (`<topic>-<p>.<id>-delete`, as Kafka does) and removed by a background thread; a fetch
 * that holds its segments keeps reading them until rt_fetch_release, and appends already
 * accepted finish. From return, every call naming the topic gets
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, and a topic created again under the name starts empty.
 * Caveats: the deleted topic's open files and memory are released at rt_close (its disk
 * space with them); at most 1024 topics may be deleted between two opens (then
 * RT_E_TOPICS_FULL for creates until the next open). Offsets committed for it in consumer
 * groups are kept. Serialised with topic creation and config changes.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine), RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic
 * included), RT_E_INTERNAL_TOPIC, RT_E_READ_ONLY, RT_E_CLOSED, RT_E_IO_FAILED, -ENOMEM,
 * -errno (writing the deletion intent or the catalogue: nothing deleted). */
int rt_topic_delete(rt_engine *engine, const char *name);

/* Kafka's DeleteRecords: moves the partition's log start offset to `offset` (-1: the high
 * watermark), so no fetch, rt_fetch_start or earliest lookup goes below it from return on
 * (RT_E_OFFSET_OUT_OF_RANGE there). The new log start is stored durably before return, so it
 * survives a crash and a power loss (docs/format.md A.8); segments wholly below it are deleted
 * (the rest of the oldest segment stays on disk, unserved, until retention deletes it whole).
 * An offset at or below the current log start changes nothing. *low_watermark_out: the log
 * start after the call. Runs on the partition's shard thread between write rounds; callable
 * from any thread, blocks until done.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine or low_watermark_out),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_INTERNAL_TOPIC,
 * RT_E_OFFSET_OUT_OF_RANGE (offset above the high watermark, or below -1), RT_E_READ_ONLY,
 * RT_E_CLOSED, RT_E_IO_FAILED (the partition or the write side failed), -errno (storing the
 * new log start: nothing changed). */
int rt_partition_delete_records(rt_engine *engine, const char *topic, uint32_t partition,
                                int64_t offset, int64_t *low_watermark_out);

/* ---- Replication: the engine's side of Kafka's ISR (issue 24; docs/format.md A.10) ----
 * A broker that replicates a partition drives it with these calls; an engine whose caller never
 * makes them behaves exactly as before. Each runs on the partition's shard thread between write
 * rounds; callable from any thread, blocks until done. Common errors: RT_E_INVALID_ARGUMENT (NULL
 * engine or output), RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_INTERNAL_TOPIC
 * (an internal topic other than `__consumer_offsets` and `__transaction_state`: not replicated
 * this way), RT_E_READ_ONLY, RT_E_CLOSED, RT_E_IO_FAILED (the partition or the write side failed).
 *
 * Internal partitions (`__consumer_offsets`, `__transaction_state`; docs/format.md A.10
 * "Internal partitions", G.7): as
 * Kafka's, a follower's copy is only a log. An engine leads every partition of
 * `__consumer_offsets` from open on (a single broker never changes that); rt_partition_resign
 * makes one a follower: the committed offsets and group metadata of the groups that hash to it
 * are dropped from memory, requests for those groups answer RT_E_NOT_COORDINATOR, and the
 * partition takes only replica appends (rt_partition_append_replica, rt_partition_truncate,
 * rt_partition_restart_at),
 * whose records are never applied while it follows. rt_partition_become_leader rebuilds that
 * state from the partition's log (to its log end, as an open replays it) and takes the groups
 * back. rt_partition_append_replica and rt_partition_truncate on an internal partition this
 * engine leads are refused (RT_E_INVALID_ARGUMENT: resign first); set_leader_epoch,
 * end_offset_for_epoch and set_high_watermark work in either role. The role is not stored: an
 * open leads every internal partition again.
 *
 * `__transaction_state` has one partition, 0, whose leader is the transaction coordinator of
 * every transactional id. Resigning it makes every transactional call (rt_txn_*, the in-process
 * producer's init, commit and abort, the check of a client's transactional batch) answer
 * RT_E_NOT_COORDINATOR; becoming its leader rebuilds the coordinator from the log as an open
 * does, completes every decided transaction and fences and aborts every open one (its producer's
 * epoch bumped: RT_E_PRODUCER_FENCED for the old instance). docs/format.md G.7. */

/* Makes this engine the leader of the partition (Kafka's onElection for a coordinator
 * partition): for a partition of `__consumer_offsets` that it follows, replays the partition's
 * log from its start to its log end into the group state — committed offsets, group metadata,
 * transactional offsets pending until their marker (a transaction with no marker in the log stays
 * pending until its coordinator writes one, as after an open) — and answers the partition's
 * groups from then on; a partition already led is left as is. On a user topic's partition
 * (its producer state is already the replayed one, RL3) it only makes the engine refuse replica
 * appends, truncations and restarts (RT_E_INVALID_ARGUMENT) until rt_partition_resign, so a
 * replica fetch decided while this node followed never writes a log it now leads
 * (docs/format.md A.10 "Replica appends"; not stored: an open takes replica appends again).
 * For `__transaction_state` (partition 0 only) it rebuilds the transaction coordinator from the
 * log (to its log end), reconciles the local partitions' open transactions, completes every
 * decided transaction (markers, then Complete*) and fences and aborts every open one, before any
 * transactional call is answered (docs/format.md G.7). Creates `__consumer_offsets` (or
 * `__transaction_state`) if it does not exist. Errors: as above, plus RT_E_CORRUPT (a record
 * that does not parse; the partition stays a follower), -ENOMEM. */
int rt_partition_become_leader(rt_engine *engine, const char *topic, uint32_t partition);

/* Makes this engine a follower of the partition: for a partition of `__consumer_offsets`, no
 * more local writes reach it (RT_E_NOT_COORDINATOR for a commit, a metadata store, a
 * deletion, a marker), its groups' state is dropped from memory (a commit in flight finishes or
 * fails first) and their requests answer RT_E_NOT_COORDINATOR; the partition then takes replica
 * appends. Resigning a partition already followed is a no-op; a user topic's partition takes
 * replica appends, truncations and restarts again. For `__transaction_state` (partition 0 only), every transactional call waits for
 * those in flight, then the coordinator's state is dropped and those calls answer
 * RT_E_NOT_COORDINATOR. Creates `__consumer_offsets` (or `__transaction_state`) if it does not
 * exist (a new follower). Errors: as above. */
int rt_partition_resign(rt_engine *engine, const char *topic, uint32_t partition);

/* The number of partitions of `__consumer_offsets` (Kafka's offsets.topic.num.partitions; the
 * engine's is fixed). */
#define RT_GROUP_OFFSETS_PARTITIONS 4

/* The partition of `__consumer_offsets` that holds `group`'s offsets and metadata, as the engine
 * places them: Kafka's abs(groupId.hashCode()) % RT_GROUP_OFFSETS_PARTITIONS (Java's String
 * hashCode over the name's UTF-16 units, computed from its UTF-8 bytes). A broker uses it to find
 * the group's coordinator (the partition's leader). `len` bytes of `group`, no NUL needed. */
uint32_t rt_group_partition(const char *group, size_t len);

/* Sets the partition's leader epoch (Kafka's partitionLeaderEpoch): from return on, every batch
 * an append places (rt_append, rt_append_batch, producers, markers) carries it in bytes 12..15
 * (outside the CRC, so nothing else changes), and an epoch above the latest is recorded in the
 * partition's leader-epoch checkpoint as starting at the log end, stored durably before return.
 * Until the first call the epoch is unset and appends leave those bytes as before (the engine's
 * own batches 0, a client's what it sent); once set it survives a reopen (the checkpoint's latest
 * epoch). Setting the latest again is a no-op. Errors: as above, plus RT_E_INVALID_ARGUMENT (a
 * negative epoch, or one below the latest), -errno storing the checkpoint (nothing changed). */
int rt_partition_set_leader_epoch(rt_engine *engine, const char *topic, uint32_t partition,
                                  int32_t epoch);

/* Kafka's OffsetsForLeaderEpoch answer (KIP-101/279) from the leader-epoch checkpoint: the
 * largest epoch <= `epoch` the partition knows (*found_epoch_out) and the start offset of the next
 * higher epoch, or the log end when it is the latest (*end_offset_out). An epoch below the
 * earliest answers (epoch, the earliest epoch's start); an epoch above the latest, a negative
 * one, or a partition without epochs answers (-1, -1) (UNDEFINED_EPOCH_OFFSET). */
int rt_partition_end_offset_for_epoch(rt_engine *engine, const char *topic, uint32_t partition,
                                      int32_t epoch, int64_t *end_offset_out,
                                      int32_t *found_epoch_out);

/* Kafka's truncateTo: removes every batch whose last offset is >= `offset` (so the log ends at
 * `offset` when it is a batch boundary, else at the base of the batch holding it) and the
 * epochs starting at or past the new end; the producer state, open transactions, aborted-
 * transaction index and indexes are rebuilt to match (each producer keeps the batches of its
 * dedup window of 5 that lie below the cut, so a retry of one of them is still a duplicate),
 * the high watermark stays. An offset at or
 * past the log end changes only the epochs that start there. Refused below the high watermark
 * (nothing a consumer may have read, nor a marker of a transaction decided below the LSO, is
 * ever removed: a follower truncates only what its leader never acknowledged, so the broker holds
 * the high watermark, rt_partition_set_high_watermark, before it truncates) and below the log
 * start. Crash-safe: an intent is stored first, and a power loss at any step leaves the old log
 * or (once the intent is durable) the truncated one, which the next open finishes; never a
 * partial batch. *log_end_out (may be NULL): the log end after the call. A fetch started before
 * the call that holds bytes past the cut may see them zeroed.
 * Errors: as above, plus RT_E_OFFSET_OUT_OF_RANGE (negative, below the high watermark or the log
 * start), RT_E_CORRUPT (a batch header in the way), RT_E_INVALID_ARGUMENT (a partition this
 * engine leads: rt_partition_become_leader, until rt_partition_resign), -errno before the intent
 * was stored (nothing changed); a failure after it fails the engine's write side
 * (RT_E_IO_FAILED) until a reopen, which finishes the truncation. */
int rt_partition_truncate(rt_engine *engine, const char *topic, uint32_t partition, int64_t offset,
                          int64_t *log_end_out);

/* Kafka's truncateFullyAndStartAt, for a follower whose log end is below its leader's log start
 * (the leader deleted, by retention, DeleteRecords or compaction, what the follower lacks): the
 * whole log is removed and an empty one starts at `offset` — log start = log end = offset, no
 * producer state, no open transactions, no leader epochs (the next replica append brings them), a
 * held high watermark set to `offset`. Any offset >= 0 is taken, below or past the log end; the
 * caller makes it only on a partition it follows. Refused on a partition this engine leads (an
 * internal one, or a user one after rt_partition_become_leader; RT_E_INVALID_ARGUMENT: resign
 * first). Crash-safe (docs/format.md A.11): an intent is
 * stored first, and a power loss leaves the old log or (once the intent is durable) the empty
 * one, which the next open finishes. A fetch started before the call keeps reading the old
 * segments it holds. Errors: as above, plus RT_E_OFFSET_OUT_OF_RANGE (negative), -errno before
 * the intent was stored (nothing changed); a failure after it fails the engine's write side
 * (RT_E_IO_FAILED) until a reopen, which finishes the restart. */
int rt_partition_restart_at(rt_engine *engine, const char *topic, uint32_t partition,
                            int64_t offset);

/* Appends a follower's copy of its leader's batches (`len` bytes of whole RecordBatch v2
 * batches, as a replica fetch returns them) exactly as the leader wrote them: base offsets,
 * leader epochs, producer ids, epochs and sequences, control batches (transaction markers) all
 * kept, nothing rewritten (the buffer is only read). Each batch is validated as stored batches
 * are (lengths, magic, CRC, records; V1-V15, or V10c/V13c/V15c for a batch the leader's
 * cleaner rewrote) before any is appended; each base offset must be at or past the log end and
 * the previous batch's end. A base offset past it is a gap a compacted leader log has (Kafka's
 * follower appends at the leader's offsets): the cleaner checkpoint's cleaned_end is raised past
 * the call's batches and stored first, so open and rt_verify accept the gap (docs/format.md
 * A.10 "Replica appends"). Refused on a partition this engine leads (rt_partition_become_leader;
 * RT_E_INVALID_ARGUMENT until rt_partition_resign). The producer state and open transactions change as a
 * replay of those batches at open would (no sequence rule is checked: the leader checked them),
 * so a follower that becomes leader fences duplicates and keeps its LSO; an ABORT marker adds
 * its aborted-transaction entry. A batch epoch above the latest is recorded in the leader-epoch
 * checkpoint before the batch is written. Durable as any append under the engine's sync mode.
 * *log_end_out (may be NULL): the log end after the batches. Errors: as above, plus
 * RT_E_CORRUPT (a batch fails validation; nothing appended), RT_E_RECORD_TOO_LARGE,
 * RT_E_INVALID_ARGUMENT (a batch that begins below the log end or 2^31 offsets or more past it,
 * or whose epoch is below one the log already holds batches of: the logs diverged, truncate
 * first; or the partition is led here), -errno storing the cleaner checkpoint for a gap; batches
 * before the first refused one are appended. */
int rt_partition_append_replica(rt_engine *engine, const char *topic, uint32_t partition,
                                const void *batches, size_t len, int64_t *log_end_out);

/* Hands the partition's high watermark to the caller (Kafka's leader: the minimum log end over
 * the in-sync replicas; a follower: the leader's, capped at its own log end). From the first call
 * on, rt_fetch_start (RT_READ_UNCOMMITTED) and rt_list_offsets read up to it, the last stable
 * offset is min(first open transaction, it), DeleteRecords and retention stay below it, and a
 * fetch between it and the log end is empty rather than out of range; RT_READ_REPLICA fetches
 * read to the log end. `hw` is clamped to the log end and taken down to the start of the batch
 * holding it; a lower value than the current one changes nothing (monotonic; only a truncation
 * lowers it). Not stored: after a reopen the high watermark is the log end until the next call.
 * *hw_out (may be NULL): the high watermark after the call.
 * Errors: as above, plus RT_E_INVALID_ARGUMENT (hw < 0), RT_E_CORRUPT (a batch header in the
 * way). */
int rt_partition_set_high_watermark(rt_engine *engine, const char *topic, uint32_t partition,
                                    int64_t hw, int64_t *hw_out);

/* Log compaction now (Kafka's LogCleaner, as the background cleaner runs it when
 * min.cleanable.dirty.ratio or max.compaction.lag.ms says so): every partition of a topic whose
 * cleanup.policy holds "compact" is cleaned, on the calling thread (appends go on meanwhile; only
 * each segment swap runs on the partition's shard thread, between rounds) — the latest record of each key
 * kept, records of aborted transactions, tombstones and markers older than delete.retention.ms
 * dropped, each producer's last batch kept — over its sealed segments below the last stable
 * offset and older than min.compaction.lag.ms; the active segment is never touched. Offsets are
 * kept (a compacted log skips offsets). Readers holding fetches keep the old segments until they
 * release. Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_UNKNOWN_TOPIC_OR_PARTITION,
 * RT_E_INVALID_CONFIG (the topic is not compacted), RT_E_READ_ONLY, RT_E_CLOSED,
 * RT_E_IO_FAILED, -ENOBUFS (one batch has more keys than opts.cleaner_buffer_bytes takes),
 * -errno of a file step (a crash or failure leaves the old segments or the new ones,
 * docs/format.md A.9). */
int rt_topic_compact(rt_engine *engine, const char *topic);

/* Partition count of a topic. Errors: RT_E_INVALID_ARGUMENT (NULL),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION. */
int rt_topic_describe(rt_engine *engine, const char *name, uint32_t *partitions_out);

/* Calls fn once per user topic (internal topics are not listed), in creation order, on the
 * caller's thread. Stops early (returning fn's value) if fn returns non-zero. Errors:
 * RT_E_INVALID_ARGUMENT (NULL engine or fn), or fn's value. */
int rt_topic_list(rt_engine *engine, int (*fn)(void *ctx, const char *name, uint32_t partitions),
                  void *ctx);

/* ---------------------------------------------------------------------------------------- */
/* Appending                                                                                 */
/* ---------------------------------------------------------------------------------------- */

struct rt_header {
    const void *key;
    int32_t key_len; /* bytes; headers keys are never null */
    const void *value;
    int32_t value_len; /* -1 = null */
};

struct rt_record {
    const void *key;
    int32_t key_len; /* -1 = null key */
    const void *value;
    int32_t value_len;    /* -1 = null value */
    int64_t timestamp_ms; /* CreateTime; -1 = now */
    const struct rt_header *headers;
    uint32_t header_count;
};

/* Encodes `count` records as one RecordBatch v2 without a producer id (producerId -1) and
 * appends it to the partition. Returns once the batch is acknowledged under the engine's sync
 * mode (durable under RT_SYNC_ALWAYS); *base_offset_out (may be NULL) receives the first
 * record's offset. Appends from many threads are group-committed. An append that finds its
 * partition's shard idle (no round running, none queued) is written on the calling thread, with
 * no hand-over to the shard thread and back (not under RT_SYNC_INTERVAL; rt_stats.rounds_inline
 * counts such rounds); appends arriving meanwhile queue for the shard thread as usual. That
 * thread then also pays what falls in its round, a segment roll included (which fdatasyncs the
 * sealed segment).
 * Internal topics (names beginning with "__") are written only by the engine: RT_E_INTERNAL_TOPIC
 * (also for rt_append_batch and rt_producer_send).
 * Errors: RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_INTERNAL_TOPIC,
 * RT_E_INVALID_ARGUMENT (NULL engine or records, count 0 or above INT32_MAX, bad lengths or
 * pointers, a timestamp below -1), RT_E_RECORD_TOO_LARGE (above batch_size_max_bytes, or
 * larger than the partition's segment), RT_E_READ_ONLY, RT_E_IO_FAILED,
 * RT_E_CLOSED, -ENOMEM, -errno (a segment roll that cannot open its files: -EMFILE, -ENOSPC;
 * see docs/limits.md for which of them leave the write side failed). */
int rt_append(rt_engine *engine, const char *topic, uint32_t partition,
              const struct rt_record *records, size_t count, int64_t *base_offset_out);

/* RecordBatch v2 framing (docs/format.md B.2), for programs that walk raw batches — what they
 * hand to rt_append_batch, what rt_fetch_view.data holds. Big-endian fields at these byte
 * offsets; a batch spans RT_BATCH_LOG_OVERHEAD_BYTES plus its int32 length and is at least
 * RT_BATCH_HEADER_BYTES. The engine's codec (engine/log/batch.h) takes its names from these. */
#define RT_BATCH_HEADER_BYTES          61
#define RT_BATCH_LOG_OVERHEAD_BYTES    12 /* baseOffset + length: the bytes `length` does not count */
#define RT_BATCH_OFF_BASE_OFFSET       0  /* int64 */
#define RT_BATCH_OFF_LENGTH            8  /* int32 */
#define RT_BATCH_OFF_LEADER_EPOCH      12 /* int32, outside the CRC */
#define RT_BATCH_OFF_MAGIC             16 /* int8: 2 */
#define RT_BATCH_OFF_ATTRIBUTES        21 /* int16 */
#define RT_BATCH_OFF_LAST_OFFSET_DELTA 23 /* int32 */
#define RT_BATCH_OFF_MAX_TIMESTAMP     35 /* int64 */
#define RT_BATCH_ATTR_LOG_APPEND_TIME  0x08

/* Appends an already-encoded RecordBatch v2 (`len` bytes). The batch is validated as Kafka's
 * LogValidator validates a produce (lengths, magic, CRC, records — a compressed batch's
 * records are decompressed and held to the same rules: recordCount records, offset deltas
 * 0..n-1, lastOffsetDelta = recordCount - 1, representable timestamps) and rejected with
 * RT_E_CORRUPT if it fails. The engine writes into the caller's buffer, not a copy: the
 * assigned base offset into bytes 0..7 (the CRC does not cover them) and, where they are not
 * already right, the timestamp fields with the CRC recomputed (docs/format.md B.7, V16-V17):
 * under RT_TIMESTAMP_CREATE_TIME maxTimestamp becomes the largest record timestamp (a client's
 * -1 or understated maximum is accepted and corrected, as Kafka does) and attribute bit 3 is
 * cleared; under RT_TIMESTAMP_LOG_APPEND_TIME maxTimestamp becomes the engine's clock and bit 3
 * is set. A batch whose header is already right is not rewritten and costs one CRC pass. So
 * the caller's buffer must be writable and stay untouched until the call returns (for
 * rt_append_batch_async: until its callback), and may differ from what was passed in bytes
 * 0..7, 17..22 and 35..42 afterwards (and 12..15, the leader epoch, once
 * rt_partition_set_leader_epoch was called for the partition). A batch with a
 * producer id (>= 0) is held to the producer rules (see "Producers" below); an exact duplicate
 * returns 0 with the original base offset and appends nothing.
 * Control batches (attribute bit 5: COMMIT/ABORT markers) are written only by the transaction
 * coordinator: RT_E_INVALID_ARGUMENT, as Kafka refuses them from clients. A transactional batch
 * (bit 4) needs a producer id, an epoch and a base sequence >= 0 (else RT_E_INVALID_ARGUMENT);
 * it is accepted only for a partition its producer's transactional id has added to its
 * ongoing transaction (rt_txn_add_partitions, or a transactional rt_producer; see
 * "Transactions over the wire"), else RT_E_INVALID_TXN_STATE — or, with
 * rt_options.txn_verifier, only when that verifier answers 0 (its error otherwise; G.9); it is then appended under the
 * producer rules like any producer batch and opens a transaction for its producer in that
 * partition, which pins the partition's last stable offset until the coordinator's marker ends
 * it (or an operator releases it with rt_txn_abort_partition).
 * Errors: as rt_append (RT_E_INVALID_ARGUMENT for a NULL batch), plus RT_E_CORRUPT (the batch
 * fails validation; rt_error_detail names the rule), RT_E_OUT_OF_ORDER_SEQUENCE,
 * RT_E_INVALID_PRODUCER_EPOCH, RT_E_UNKNOWN_PRODUCER_ID, RT_E_INVALID_TXN_STATE, RT_E_PRODUCERS_FULL (the partition
 * tracks producers_max producers, none of which it may evict), -ENOMEM (checking a compressed
 * batch's records). */
int rt_append_batch(rt_engine *engine, const char *topic, uint32_t partition, void *batch,
                    size_t len, int64_t *base_offset_out);

/* ---- Kafka message sets of formats v0 and v1 (docs/format.md B.9) ---- */

/* Converts a Kafka message set of format v0 or v1 (what Produce v0-2 carries, and clients that
 * still write "magic 0/1" at later versions) into one RecordBatch v2, as Kafka's broker
 * up-converts it: CRC-32 of every message checked, compressed wrappers (gzip, snappy, lz4)
 * decompressed and their inner messages taken in order, the batch recompressed with the first
 * wrapper's codec (uncompressed when none was), producer id, epoch and base sequence -1,
 * offsets 0..n-1, record timestamps the messages' (v1) or -1 (v0). Pass the result to
 * rt_append_batch, which validates and stamps it like any batch. Needs no engine; thread-safe
 * (each thread keeps its own working memory: the decompressed set, at most 64 MiB, kept
 * between calls only while it is below 4 MiB). *batch_out is malloc'd: free() it after the
 * append (for rt_append_batch_async: in or after its callback). *magic_out (may be NULL): 0 or 1.
 * Errors: RT_E_INVALID_ARGUMENT (NULL out), RT_E_CORRUPT (the set fails a rule MS1-MS7;
 * rt_error_detail names it), RT_E_UNSUPPORTED_COMPRESSION (a codec other than gzip, snappy,
 * lz4), RT_E_RECORD_TOO_LARGE (the batch would exceed batch_max_bytes, or its records 64 MiB),
 * -ENOMEM. */
int rt_message_set_upconvert(const void *set, size_t len, size_t batch_max_bytes, void **batch_out,
                             size_t *batch_len_out, int8_t *magic_out);

struct rt_downconvert_result {
    size_t size_bytes;     /* written to out */
    size_t needed_bytes;   /* when nothing was written: what the first batch needs; else 0 */
    uint32_t batches;      /* v2 batches converted */
    uint64_t messages;     /* legacy messages written */
    size_t consumed_bytes; /* input up to the end of the last batch converted or skipped: a
                              call from batches + consumed_bytes goes on where this one
                              stopped (streamed conversion) */
    size_t first_bytes;    /* the first converted batch's size in out (0: none) */
};

/* The reverse, for consumers that read message format v0 (Fetch v0-1) or v1 (Fetch v2-3), as
 * Kafka's broker down-converts: the whole, valid RecordBatch v2 batches in [batches, +len)
 * (what rt_fetch_get returns) become messages of format `magic` in out[0, cap). Control batches
 * are dropped (old consumers do not know them), record headers dropped, records below
 * fetch_offset skipped; aborted transactional data is kept, as Kafka keeps it (these fetch
 * versions read uncommitted). An uncompressed batch becomes plain messages, a compressed one
 * one wrapper message of the same codec. Batches are converted whole while they fit: the first
 * batch that does not fit ends the output, and when it is the first, result->needed_bytes says
 * how much it needs. A partial batch at the end of the input is left alone. Thread-safe as
 * rt_message_set_upconvert. Errors: RT_E_INVALID_ARGUMENT (magic not 0 or 1, NULL pointers),
 * RT_E_CORRUPT (the first batch converted does not decode), RT_E_UNSUPPORTED_COMPRESSION (a
 * zstd batch first: message formats 0/1 have no zstd), -ENOMEM; damage or zstd after some
 * output ends the output there with 0. */
int rt_message_set_downconvert(const void *batches, size_t len, int64_t fetch_offset, int8_t magic,
                               void *out, size_t cap, struct rt_downconvert_result *result);

/* ---------------------------------------------------------------------------------------- */
/* Producers: idempotent (Kafka) and named (Pulsar)                                          */
/* ---------------------------------------------------------------------------------------- */

/*
 * A producer batches records per partition on the client side (as a Kafka producer does) and
 * hands whole RecordBatch v2 batches to the partitions, stamped with its producer id, epoch and
 * per-partition sequence numbers. Each partition keeps, per producer id, the epoch and the
 * metadata of its last 5 batches and applies Kafka's rules:
 *   - same epoch, firstSeq == lastSeq + 1: appended;
 *   - same epoch, exactly the (firstSeq, lastSeq) of one of the last 5 batches: a duplicate —
 *     the original offsets are returned and nothing is appended;
 *   - an older epoch: RT_E_INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0;
 *   - a producer id the partition does not know must start at 0 (RT_E_UNKNOWN_PRODUCER_ID);
 *   - anything else: RT_E_OUT_OF_ORDER_SEQUENCE.
 * Producer ids are allocated durably and never reused. Producer state survives restarts
 * through `<offset>.snapshot` files plus a replay of the log after them.
 *
 * A *named* producer (opts.name != NULL) keeps one producer id for its name across process and
 * engine restarts (Pulsar's producer-name deduplication). Its sequences are monotonic rather
 * than contiguous: a batch whose sequences are all at or below the highest sequence the
 * partition has persisted for that name is acknowledged as a duplicate without being appended;
 * a batch starting above it is appended (gaps allowed); a batch straddling it is
 * RT_E_OUT_OF_ORDER_SEQUENCE. (A Kafka batch header implies contiguous sequences; a named
 * producer stamps each batch so that it ends at its highest id, the only one the rule needs.)
 * Opening a name bumps its epoch durably, fencing an older
 * instance (RT_E_INVALID_PRODUCER_EPOCH for its later writes). With user-supplied sequence ids
 * (rt_producer_message.sequence >= 0; e.g. the line number of an input file), a process that
 * crashes and reruns the same input appends every record exactly once.
 */
typedef struct rt_producer rt_producer;

/* What a check-back handler answers about a transaction still Ongoing past check_interval_ms
 * (RocketMQ's half-message back-check). */
enum rt_txn_check_result {
    RT_TXN_CHECK_COMMIT = 0,
    RT_TXN_CHECK_ROLLBACK = 1,
    RT_TXN_CHECK_UNKNOWN = 2,
};

typedef enum rt_txn_check_result (*rt_txn_check_fn)(void *ctx, const char *transactional_id,
                                                    int64_t producer_id, int16_t epoch);

/* Called once per batch after its records' delivery callbacks, on the same thread: the batch's
 * outcome, its base offset (-1 when unknown), its record count, and the ctx of its first and
 * last records. For tools that report per batch. */
typedef void (*rt_batch_delivery_fn)(void *ctx, int err, int64_t base_offset, uint32_t records,
                                     bool duplicate, void *first_record_ctx, void *last_record_ctx);

struct rt_producer_options {
    const char *name;               /* NULL: anonymous idempotent producer; else a stable name */
    const char *transactional_id;   /* non-NULL: a transactional producer (see Transactions) */
    int32_t transaction_timeout_ms; /* 0: 60 s; else 1..the engine's max; < 0 refused */
    rt_txn_check_fn check_fn; /* optional check-back handler for this producer's transactions */
    void *check_ctx;
    rt_batch_delivery_fn on_batch; /* optional */
    void *on_batch_ctx;
    uint32_t batch_size_bytes; /* close a partition's batch at this size (16 KiB; capped at the
                                  engine's batch_size_max_bytes) */
    uint32_t linger_ms;        /* ... or when its oldest record is this old (5 ms) */
    uint32_t max_in_flight;    /* batches per partition handed over and not yet acked (5; 1..5) */
    uint32_t buffer_memory_bytes; /* bound on batches built but not acked; send blocks (32 MiB) */
    uint32_t batch_records_max;   /* ... or when it holds this many records (0: no count limit) */
};
void rt_producer_options_init(struct rt_producer_options *opts);

/* Opens a producer. Allocates a producer id (anonymous) or recovers the name's id and bumps
 * its epoch durably (named); a transactional producer gets its id from
 * rt_producer_init_transactions. Starts no thread (the engine's sender pool does its sending,
 * see Threads at the top). The engine counts the
 * producer until rt_producer_close (rt_close refuses while it is open).
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine or out; an option out of range; both name and
 * transactional_id; a name over 249 bytes or not printable; a transactional_id empty, over 1024
 * bytes or not valid UTF-8), RT_E_INVALID_TRANSACTION_TIMEOUT (transaction_timeout_ms negative;
 * one above transaction_timeout_max_ms fails at rt_producer_init_transactions), RT_E_READ_ONLY,
 * RT_E_CLOSED (overlapping an rt_close), RT_E_PRODUCER_IDS_EXHAUSTED, -ENOMEM, -errno (storing
 * producers.meta durably when a new block of ids or a name's epoch is taken). */
int rt_producer_open(rt_engine *engine, const struct rt_producer_options *opts, rt_producer **out);

/* The producer's id and epoch (for tools and tests; -1 and -1 for a transactional producer
 * before rt_producer_init_transactions). Either output may be NULL. Errors:
 * RT_E_INVALID_ARGUMENT (NULL producer). */
int rt_producer_id(const rt_producer *p, int64_t *producer_id_out, int16_t *epoch_out);

/* Outcome of one record, delivered once: err 0 with its offset (offset -1 for a named
 * producer's duplicate whose original offset is no longer known), or a negative code. */
typedef void (*rt_delivery_fn)(void *ctx, int err, int64_t offset, bool duplicate);

struct rt_producer_message {
    struct rt_record record;
    int64_t sequence; /* named producers only: the record's own sequence id (>= 0, <= INT32_MAX,
                         increasing per partition), or -1 to let the producer number it */
};

/* A named producer's null-key record sent with partition -1 and its own sequence id goes to
 * partition (sequence / RT_NAMED_NULL_KEY_SPAN) % partitions: ids 0..999 to partition 0, 1000..
 * 1999 to partition 1, and so on round the partitions. Placement is a pure function of the id
 * (never of timing or batching), so a rerun puts every record where the first run did and the
 * partition's dedup recognises it. The record keeps its id as its sequence in that partition
 * (a partition's named sequences increase with gaps: any other numbering would collide with the
 * ids of keyed records sent to the same partition). A batch never spans two spans. */
#define RT_NAMED_NULL_KEY_SPAN 1000

/* Queues one record for `partition` (or -1: murmur2 of the key as Kafka's default partitioner;
 * a null key goes round-robin per batch, except for a named producer's record with its own
 * sequence id, placed by RT_NAMED_NULL_KEY_SPAN). Copies the record into the partition's open
 * batch, and hands a batch it fills over to the partition's shard on the calling thread; never
 * waits for the disk, but blocks while buffer_memory_bytes are in use or the shard's request
 * queue is full (back-pressure). on_delivery (may be NULL) runs later on a sender-pool thread (see Threads at
 * the top) and must not block. A named producer's record whose sequence is at or
 * below one already sent or persisted for that partition is not an error: it is acknowledged as
 * a duplicate (on_delivery's duplicate true) and not appended. Errors that arrive later (the
 * batch's append failed: RT_E_IO_FAILED, RT_E_CLOSED, RT_E_OUT_OF_ORDER_SEQUENCE, fencing, ...)
 * go to on_delivery and rt_producer_flush/commit, and make the producer's error sticky —
 * except a partition fault that heals in place (RT_E_IO_FAILED with the engine's write side up)
 * for an anonymous non-transactional producer: sends to that partition answer RT_E_IO_FAILED
 * until its batches in flight are back, then go on (send the failed records again: none of
 * them was stored).
 * Errors (immediate): RT_E_UNKNOWN_TOPIC_OR_PARTITION (no such topic, or partition >= its
 * count), RT_E_INTERNAL_TOPIC, RT_E_INVALID_ARGUMENT (from one of the producer's own delivery
 * callbacks; NULL producer, topic or msg; partition <
 * -1, bad record lengths, pointers or timestamp; a sequence below -1 or above INT32_MAX, or one
 * from an anonymous or transactional producer), RT_E_RECORD_TOO_LARGE (one record alone
 * exceeds batch_size_max_bytes), RT_E_INVALID_TXN_STATE (a transactional producer outside a
 * transaction), RT_E_PRODUCER_PARTITIONS_FULL (a producer writes to at most 4096 partitions),
 * -ENOMEM, or the producer's sticky error after a failed batch (which code the batch failed
 * with, e.g. RT_E_IO_FAILED or RT_E_PRODUCER_FENCED). */
int rt_producer_send(rt_producer *p, const char *topic, int32_t partition,
                     const struct rt_producer_message *msg, rt_delivery_fn on_delivery, void *ctx);

/* Hands every open batch over and waits until every record sent before the call is
 * acknowledged and its delivery callback has run (or timeout_ms, -1 = no limit:
 * RT_E_TIMED_OUT). As Kafka's flush and librdkafka's rd_kafka_flush: records that other threads
 * send while it waits are not waited for, so it returns while they keep sending. Returns the
 * first delivery error since the last flush, if any (which may be a later record's).
 * Errors: RT_E_INVALID_ARGUMENT (NULL; called from one of the producer's own delivery
 * callbacks), RT_E_TIMED_OUT (batches are still outstanding; they go
 * on and a later flush waits for them), or the first batch error since the last flush (any code
 * an append returns: RT_E_IO_FAILED, RT_E_CLOSED, RT_E_OUT_OF_ORDER_SEQUENCE,
 * RT_E_INVALID_PRODUCER_EPOCH, RT_E_PRODUCERS_FULL, RT_E_PRODUCER_FENCED or
 * RT_E_INVALID_TXN_STATE from the coordinator for a transactional producer, -errno, ...). */
int rt_producer_flush(rt_producer *p, int32_t timeout_ms);

/* For a named producer: the highest sequence the partition has persisted for it (-1: none).
 * What a restarted process uses to skip what is already stored. (For an anonymous producer: the
 * last sequence the partition holds for its id.) Errors: RT_E_INVALID_ARGUMENT (NULL),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_CLOSED. */
int rt_producer_last_sequence(rt_producer *p, const char *topic, uint32_t partition,
                              int64_t *sequence_out);

/* Flushes every batch (waiting without a time limit), takes the producer off the sender pool
 * and frees it; a transactional producer's id is released by the coordinator, and an open
 * transaction is left to its timeout (or to the next instance's rt_producer_init_transactions).
 * Must not run while any other call on the producer runs, nor from one of its callbacks
 * (refused there with RT_E_INVALID_ARGUMENT, nothing freed). The producer is freed whatever the
 * result otherwise.
 * Errors: RT_E_INVALID_ARGUMENT (NULL; from its own callback), or what the final flush returned
 * (see rt_producer_flush; never RT_E_TIMED_OUT). */
int rt_producer_close(rt_producer *p);

/* ---------------------------------------------------------------------------------------- */
/* Zero-copy reads                                                                           */
/* ---------------------------------------------------------------------------------------- */

enum rt_isolation {
    RT_READ_UNCOMMITTED = 0, /* up to the high watermark */
    RT_READ_COMMITTED = 1,   /* up to the last stable offset, with the aborted list */
    /* rt_fetch_start only: up to the log end, past a high watermark the caller holds
     * (rt_partition_set_high_watermark): a follower's replica fetch. Without a held high
     * watermark the same as RT_READ_UNCOMMITTED. */
    RT_READ_REPLICA = 2,
};

struct rt_aborted_txn {
    int64_t producer_id;
    int64_t first_offset;
};

typedef struct rt_fetch rt_fetch;

struct rt_fetch_view {
    const uint8_t *data; /* whole record batches, pointing into the segment mapping */
    size_t size_bytes;   /* 0 when the fetch offset is at the end of what is readable */
    int64_t high_watermark;
    int64_t last_stable_offset;
    int64_t log_start_offset;
    const struct rt_aborted_txn *aborted; /* read_committed only; sorted by first_offset */
    size_t aborted_count;
    const char *segment_path;    /* the file `data` maps, for error messages */
    uint64_t segment_position;   /* byte position of data[0] in that file */
    enum rt_isolation isolation; /* what the fetch was made with; the iterator filters by it */
};

/* Reads whole batches starting at the batch containing `offset`, bounded by `max_bytes`
 * (but always at least one whole batch, as Kafka does) and by the high watermark (or the LSO
 * under read_committed). At most one segment is returned per call; call again from the next
 * offset. The segment stays mapped until rt_fetch_release(), even if retention deletes it or
 * the engine is closed first (a fetch may outlive rt_close). rt_fetch_get returns the view
 * (NULL for a NULL fetch); rt_fetch_release(NULL) does nothing. A handle is recycled at
 * rt_fetch_release, so a warm fetch allocates nothing.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine or out, an unknown isolation),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_OFFSET_OUT_OF_RANGE (below the log
 * start or above the bound), RT_E_CORRUPT (a batch header in the way is damaged),
 * RT_E_FETCHES_FULL (opts.fetches_max fetches are open: release one), -ENOMEM. */
int rt_fetch_start(rt_engine *engine, const char *topic, uint32_t partition, int64_t offset,
                   size_t max_bytes, enum rt_isolation isolation, rt_fetch **out);
const struct rt_fetch_view *rt_fetch_get(const rt_fetch *fetch);
void rt_fetch_release(rt_fetch *fetch);

#define RT_OFFSET_EARLIEST (-2)
#define RT_OFFSET_LATEST   (-1)

/* spec = RT_OFFSET_EARLIEST (log start), RT_OFFSET_LATEST (high watermark, or LSO under
 * read_committed), or a timestamp in ms >= 0: the first offset whose record timestamp is >= it,
 * or the latest offset if none is.
 * Errors: RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_INVALID_ARGUMENT (NULL, an unknown isolation, a
 * spec below -2), RT_E_CORRUPT (a batch header in the way of a timestamp lookup is damaged). */
int rt_list_offsets(rt_engine *engine, const char *topic, uint32_t partition, int64_t spec,
                    enum rt_isolation isolation, int64_t *offset_out);

/* What Kafka's ListOffsets answers for a timestamp (its fetchOffsetByTimestamp): the first
 * record whose timestamp is >= timestamp_ms, below the high watermark (the LSO under
 * read_committed): *offset_out is its offset and *timestamp_out its timestamp (a LogAppendTime
 * batch's records carry the batch's max timestamp; a compressed batch is decompressed to find
 * the record). When no record is, both are -1 and the call returns 0 (rt_list_offsets answers
 * the bound instead). Cost: the time index narrows the search to one index interval of a
 * segment; a compressed batch in the way is decompressed into a buffer allocated for the call.
 * Errors: RT_E_UNKNOWN_TOPIC_OR_PARTITION (NULL topic included), RT_E_INVALID_ARGUMENT (NULL
 * engine or outputs, an unknown isolation, timestamp_ms < 0), RT_E_CORRUPT (a batch in the way
 * is damaged), -ENOMEM. */
int rt_list_offsets_by_timestamp(rt_engine *engine, const char *topic, uint32_t partition,
                                 int64_t timestamp_ms, enum rt_isolation isolation,
                                 int64_t *offset_out, int64_t *timestamp_out);

/* ---------------------------------------------------------------------------------------- */
/* Record iteration over a fetch                                                             */
/* ---------------------------------------------------------------------------------------- */

struct rt_record_view {
    int64_t offset;
    int64_t timestamp_ms;
    const uint8_t *key;   /* NULL when null */
    int32_t key_len;      /* -1 when null */
    const uint8_t *value; /* NULL when null */
    int32_t value_len;    /* -1 when null */
    uint32_t header_count;
    const uint8_t *headers; /* encoded headers; walk with rt_record_header() */
    size_t headers_size_bytes;
    int64_t producer_id;
    int16_t producer_epoch;
    bool transactional;
};

/* Iterator state; plain so it can live on the stack. Fields are private. */
struct rt_records {
    const uint8_t *pos;
    const uint8_t *end;
    int64_t start_offset;
    int64_t bound_offset;
    const uint8_t *batch;   /* current batch, or NULL between batches */
    const uint8_t *rec_pos; /* next record within the current batch */
    const uint8_t *rec_end;
    int32_t rec_left;
    const struct rt_fetch_view *view;
    int64_t next_offset;
    uint64_t reserved[7];
};

/* Starts iterating `fetch` at the first record with offset >= start_offset and resets the
 * fetch's filtering state. Although the handle is const, iterating writes scratch state kept in
 * the fetch (the read_committed aborted-producer set and the decompression buffer): use one
 * iterator per fetch at a time; a second rt_records_init on the same fetch restarts from scratch
 * and invalidates the first iterator. Errors: RT_E_INVALID_ARGUMENT. */
int rt_records_init(struct rt_records *it, const rt_fetch *fetch, int64_t start_offset);

/* Yields the next record: 0 with *out filled, RT_E_END when the fetch is exhausted, or an error.
 * Control records (COMMIT/ABORT markers) are never returned. Under RT_READ_COMMITTED the fetch's
 * aborted list filters as Kafka's consumer does (architecture.md, Rules of the protocol): every transactional batch of an
 * aborted transaction is skipped; non-transactional batches are always returned. Every batch is
 * checked (CRC, header, every record) before any of its records is returned; compressed batches
 * (gzip, snappy, lz4, zstd) are decompressed and their records checked the same way.
 * Lifetime: key, value and headers of an uncompressed batch point into the fetch's read-only
 * mapping and stay valid until rt_fetch_release(). Those of a compressed batch point into a
 * buffer owned by the fetch and stay valid only until the next rt_records_next() or
 * rt_records_init() on that fetch, or rt_fetch_release(); copy them to keep them.
 * Errors: RT_E_CORRUPT (rt_error_detail names the segment file and byte position of the damaged
 * batch, none of whose records is returned; a compressed records section expanding beyond 64 MiB
 * counts as damage), RT_E_INVALID_ARGUMENT, -ENOMEM (growing the decompression buffer or the
 * aborted-producer set; once warm the iterator allocates nothing). */
int rt_records_next(struct rt_records *it, struct rt_record_view *out);

/* The offset to fetch from next (Kafka's nextFetchOffset): past every batch the iterator has
 * walked, including markers and skipped aborted batches, so a consumer never stalls behind them.
 * -1 for a NULL iterator. */
int64_t rt_records_next_offset(const struct rt_records *it);

/* Decodes header `index` (< header_count) of a record view. Errors: RT_E_INVALID_ARGUMENT
 * (NULL, index out of range), RT_E_CORRUPT (the headers do not decode). */
int rt_record_header(const struct rt_record_view *rec, uint32_t index, struct rt_header *out);

/* ---------------------------------------------------------------------------------------- */
/* Transactions (Kafka KIP-98, with RocketMQ-style check-back)                               */
/* ---------------------------------------------------------------------------------------- */

/*
 * A producer opened with opts.transactional_id writes atomically across partitions and consumer
 * offsets. The coordinator keeps each transactional id's state in the internal compacted topic
 * `__transaction_state` and drives two-phase commit:
 *     Empty -> Ongoing (first partition added) -> PrepareCommit -> markers -> CompleteCommit
 *                                              -> PrepareAbort  -> markers -> CompleteAbort
 *     Ongoing -> PrepareEpochFence -> PrepareAbort (fenced by a newer instance or timed out)
 * rt_producer_commit decides in one durable round (the PrepareCommit beside the transaction's
 * last data) and returns once every COMMIT marker is visible — written without an fdatasync of
 * its own, durable with its file's next one, rewritten at the next open from the decision
 * record if lost — so any read_committed reader sees the whole transaction after it returns
 * (rt_producer_commit below; the wire's rt_txn_end alike). The producer epoch is bumped
 * at every transaction end (KIP-890), so a late write from a finished transaction can never join
 * the next one; a write, marker or offset commit from an older epoch is rejected.
 *
 * rt_open reconciles the partitions with the coordinator (COR1-COR6 in
 * engine/txn/coordinator_reconcile.c): a transaction still open in a partition (its marker lost,
 * e.g. a torn tail) whose producer the coordinator
 * last completed gets that outcome's marker again (COMMIT for CompleteCommit, ABORT for
 * CompleteAbort); one the coordinator does not hold open there (no id holds the producer id, or
 * the id has moved on to a later epoch) is aborted; one it holds open is left to its producer
 * and its timeout. An empty transaction log decides nothing: such transactions stay open, are
 * listed by rt_txn_list_partitions and are released by rt_txn_abort_partition.
 * Caveat: a committed transaction whose COMMIT marker is lost AND whose id has since moved on
 * (a later transaction or init) can no longer be told from an aborted one; it is aborted.
 */

/* rt_txn_check_fn (declared with the producer options) is called on the coordinator's timer
 * thread; it must not block for long and must not call the producer.
 *
 * Writes the calls below make (transaction-log records, markers, offsets) fail as appends do:
 * RT_E_IO_FAILED (the write side failed), RT_E_CLOSED (the engine is closing), -ENOMEM, -errno;
 * "write errors" below means these. A call that needs the transaction coordinator or the group
 * offsets and finds none creates them on first use, with their internal topics; that creation
 * fails the same way (the real cause, never a blanket -EIO). */

struct rt_offset {
    const char *topic;
    uint32_t partition;
    int64_t offset;       /* the next offset to consume, as Kafka commits it */
    const char *metadata; /* may be NULL */
};

/* Finds or creates the transactional id's producer id, bumps its epoch (fencing any older
 * instance), and finishes what a previous instance left: a Prepare* transaction is completed,
 * an Ongoing one is aborted. Needs opts.transactional_id. Flushes first. timeout_ms is not
 * used by this version: the call waits as long as the flush and the coordinator's writes take.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_INVALID_TXN_STATE (not a transactional producer,
 * or a transaction of this producer is open: commit or abort it first; nothing is aborted),
 * RT_E_INVALID_TRANSACTION_TIMEOUT (transaction_timeout_ms above transaction_timeout_max_ms),
 * RT_E_PRODUCER_IDS_EXHAUSTED, a batch error the flush returned, write errors.
 */
int rt_producer_init_transactions(rt_producer *p, int32_t timeout_ms);

/* Starts a transaction (local: the coordinator hears of it with the first partition). Sends
 * inside it note their partitions; the coordinator records every partition noted so far in one
 * durable write just before their first batches are handed over, so a fencing or state error
 * from it arrives through the delivery callbacks and rt_producer_flush/commit. Writes nothing.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_INVALID_TXN_STATE (not a transactional producer,
 * not initialised, or one already open), RT_E_PRODUCER_FENCED (an earlier call found the
 * producer fenced: close it). */
int rt_producer_begin(rt_producer *p);

/* Adds consumer offsets of `group` to the open transaction: they become visible (to
 * rt_group_fetch_offsets) only if it commits. The group's `__consumer_offsets` partition joins
 * the transaction (in memory: no coordinator write), then the offsets are written durably,
 * pending.
 * Errors: RT_E_INVALID_ARGUMENT (NULL producer or offsets, no offsets, a group empty, over 1024
 * bytes or not valid UTF-8; an offset below 0, a topic NULL, empty or over 249 bytes, metadata over
 * its maximum), RT_E_UNKNOWN_TOPIC_OR_PARTITION (an offset for a topic or partition that does not
 * exist; nothing is added, the transaction stays open), RT_E_INVALID_TXN_STATE (not transactional,
 * no transaction open, or the producer was fenced earlier), from the coordinator
 * RT_E_PRODUCER_FENCED, RT_E_INVALID_PRODUCER_EPOCH, RT_E_CONCURRENT_TRANSACTIONS and
 * RT_E_TXN_PARTITIONS_FULL, write errors. */
int rt_producer_send_offsets(rt_producer *p, const char *group, const struct rt_offset *offsets,
                             size_t count);

/* Commits in one durable round (docs/format.md G.6): the transaction's last batches and a
 * PrepareCommit naming each partition's last sequence go out together; once both are durable,
 * COMMIT markers go into every partition (pending offsets applied) without an fdatasync of their
 * own, and the call returns once they are visible to read_committed readers; CompleteCommit
 * follows. timeout_ms (-1: no limit) bounds the wait for the last batches.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_INVALID_TXN_STATE (not transactional, or no
 * transaction open), RT_E_PRODUCER_FENCED (a newer instance or the coordinator's timeout or
 * check-back fenced it: close the producer), a delivery error of a record that failed before
 * the commit (nothing committed, the transaction stays open: abort it), RT_E_TIMED_OUT or a
 * delivery error of one of the last batches (they failed or did not finish in time after the
 * PrepareCommit went out: the transaction is aborted, the producer is ready for the next one,
 * and a batch still in flight fails), RT_E_CONCURRENT_TRANSACTIONS (the id's previous
 * transaction is still between its phases), RT_E_INVALID_PRODUCER_EPOCH,
 * RT_E_PRODUCER_IDS_EXHAUSTED (a new id for the next transaction when the epoch runs out),
 * write errors: RT_E_IO_FAILED for a PrepareCommit that could not be written (nothing decided:
 * the transaction stays open; abort it), or for markers that could not all be written (the
 * commit is decided, the detail says so: the coordinator writes them once the partition
 * recovers, and a retried rt_producer_commit answers RT_E_CONCURRENT_TRANSACTIONS meanwhile and
 * 0 once it is complete). */
int rt_producer_commit(rt_producer *p, int32_t timeout_ms);

/* Aborts: records already handed over are written and then aborted (ABORT markers and .txnindex
 * entries); pending offsets are dropped. A delivery error of the transaction's records does not
 * stop an abort. timeout_ms bounds the flush only, as for rt_producer_commit.
 * Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_INVALID_TXN_STATE (not transactional, or no
 * transaction open), RT_E_PRODUCER_FENCED, RT_E_TIMED_OUT (the flush did not finish: the
 * transaction stays open; abort again), RT_E_CONCURRENT_TRANSACTIONS,
 * RT_E_INVALID_PRODUCER_EPOCH, RT_E_PRODUCER_IDS_EXHAUSTED, write errors. */
int rt_producer_abort(rt_producer *p, int32_t timeout_ms);

/* Registers a check-back handler for transactions of this engine whose producer is gone or does
 * not answer (e.g. after a restart). A producer's own opts.check_fn takes precedence for its
 * transactional id while it is open. NULL removes it. fn runs on the coordinator's timer thread.
 * Creates the transaction coordinator (and `__transaction_state`) if the engine has none yet.
 * Errors: RT_E_INVALID_ARGUMENT (NULL engine), RT_E_READ_ONLY, and creating the coordinator's
 * write errors. */
int rt_txn_set_check_handler(rt_engine *engine, rt_txn_check_fn fn, void *ctx);

/* One transactional id as the coordinator sees it (rt_txn_list). */
struct rt_txn_info {
    const char *transactional_id;
    int64_t producer_id;
    int16_t epoch;
    const char *state; /* "Empty", "Ongoing", "PrepareCommit", ... */
    int64_t age_ms;    /* since the transaction started (0 when none is open) */
    int32_t timeout_ms;
    uint32_t check_count; /* check-back answers "unknown" so far */
    bool hanging;         /* parked after check_max unknown answers */
    uint32_t partition_count;
    const char *const *partition_topics; /* partition_count entries */
    const uint32_t *partition_ids;
    const int64_t *pinned_lso; /* per partition: the LSO this transaction pins (-1: none) */
};

/* Calls fn for every transactional id that is not Dead, on the caller's thread; stops on a
 * non-zero return. fn runs while that id is locked: it must not call rt_txn_abort or a producer
 * of the same id. An engine without a transaction log lists nothing. Errors:
 * RT_E_INVALID_ARGUMENT (NULL engine or fn), -ENOMEM, or fn's value. */
int rt_txn_list(rt_engine *engine, int (*fn)(void *ctx, const struct rt_txn_info *txn), void *ctx);

/* Aborts the transactional id's open transaction now (operator tooling for hanging
 * transactions): fences its producer (epoch bump) and writes ABORT markers; a transaction
 * between its phases (PrepareCommit/PrepareAbort) is completed as it was decided. Errors:
 * RT_E_INVALID_ARGUMENT (NULL), RT_E_READ_ONLY, RT_E_INVALID_TXN_STATE (nothing open; the detail
 * names the producer id for rt_txn_abort_partition), RT_E_UNKNOWN_PRODUCER_ID (no such id),
 * RT_E_PRODUCER_IDS_EXHAUSTED, write errors. */
int rt_txn_abort(rt_engine *engine, const char *transactional_id);

/* One transaction open in one partition (rt_txn_list_partitions), as the partition's producer
 * state holds it: the partition's LSO stays at or before first_offset until a COMMIT or ABORT
 * marker of that producer ends it. */
struct rt_partition_txn {
    const char *topic;
    uint32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;        /* the producer's epoch in this partition */
    int64_t first_offset;          /* the transaction's first offset */
    int64_t last_stable_offset;    /* the partition's LSO now */
    int64_t high_watermark;        /* the partition's high watermark now */
    const char *transactional_id;  /* the coordinator's id holding this producer id, or NULL */
    const char *coordinator_state; /* that id's state ("Ongoing", "CompleteAbort", ...) or NULL */
    bool live; /* the coordinator holds this transaction open here: its producer, its timeout or
                  rt_txn_abort ends it. Otherwise nothing will end it but
                  rt_txn_abort_partition. */
};

/* Calls fn for every transaction open in any partition (internal topics included); stops on a
 * non-zero return and returns it. fn runs with no engine lock held; the strings are valid until
 * it returns. rt_open already ended what the coordinator could decide (see the start of this
 * section), so what remains is live or undecided. Errors: RT_E_INVALID_ARGUMENT, RT_E_CLOSED,
 * -ENOMEM. */
int rt_txn_list_partitions(rt_engine *engine,
                           int (*fn)(void *ctx, const struct rt_partition_txn *txn), void *ctx);

/* Releases a partition's LSO held by producer_id's open transaction there (operator tooling,
 * like Kafka's `kafka-transactions.sh abort --topic --partition --producer-id
 * --producer-epoch`). If the coordinator holds that transaction open (rt_partition_txn.live),
 * it is aborted through the coordinator in every one of its partitions, as rt_txn_abort does,
 * so it stays all-or-nothing; otherwise an ABORT marker of the producer is written into that
 * partition alone (durably, with its .txnindex entry, so read_committed readers skip its
 * records) and its pending consumer offsets, in a __consumer_offsets partition, are dropped.
 * producer_epoch is the producer's epoch in the partition (rt_partition_txn.producer_epoch), or
 * -1 for "whatever it is". Errors: RT_E_INVALID_ARGUMENT (NULL, producer_id < 0, epoch < -1),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_INVALID_TXN_STATE (the producer has no open transaction
 * in the partition), RT_E_INVALID_PRODUCER_EPOCH (its epoch there is not producer_epoch),
 * RT_E_CONCURRENT_TRANSACTIONS, RT_E_IO_FAILED, RT_E_CLOSED, -errno. */
int rt_txn_abort_partition(rt_engine *engine, const char *topic, uint32_t partition,
                           int64_t producer_id, int16_t producer_epoch);

/* The receiving side of WriteTxnMarkers for one local partition (and what a marker writer calls
 * for a partition this engine holds, docs/format.md G.8): appends a COMMIT (commit true) or
 * ABORT marker of producer_id at producer_epoch, durably (an ABORT with its .txnindex entry),
 * and in a __consumer_offsets partition applies or drops the producer's pending offsets.
 * Errors: RT_E_INVALID_ARGUMENT (NULL, producer_id < 0, producer_epoch < 0),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_INVALID_PRODUCER_EPOCH (the partition holds a newer
 * epoch of the producer: the marker is stale), RT_E_NOT_COORDINATOR (an internal partition this
 * engine follows), RT_E_READ_ONLY, RT_E_IO_FAILED, RT_E_CLOSED, -errno. */
int rt_txn_write_marker(rt_engine *engine, const char *topic, uint32_t partition,
                        int64_t producer_id, int16_t producer_epoch, bool commit);

/* KIP-890 part 1's check, asked of this engine's coordinator without appending anything
 * (docs/format.md G.9 TV3): 0 when the transactional id (or, NULL, whichever id holds
 * producer_id) is Ongoing at producer_epoch with topic-partition added; the partition need not
 * exist here (the coordinator of a cluster answers for partitions other nodes lead). Changes no
 * state. Errors: RT_E_INVALID_ARGUMENT (NULL engine or topic, an id not 1..1024 bytes, a
 * negative producer id or epoch), RT_E_INVALID_TXN_STATE (not added, nothing open, no such id
 * or producer; asked by producer id, also another id now holding it), RT_E_PRODUCER_FENCED
 * (asked by id: an older epoch, or the id holds another producer id),
 * RT_E_INVALID_PRODUCER_EPOCH (a newer epoch than the coordinator's; asked by producer id, also
 * an older one), RT_E_NOT_COORDINATOR (this engine follows `__transaction_state`-0). */
int rt_txn_verify(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                  int16_t producer_epoch, const char *topic, uint32_t partition);

/* One producer a partition's producer state holds (rt_partition_producers; what Kafka's
 * DescribeProducers answers). */
struct rt_partition_producer {
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t last_sequence;            /* of its newest batch (-1: none kept) */
    int64_t last_timestamp_ms;        /* its newest batch's max timestamp */
    int32_t coordinator_epoch;        /* of its last marker */
    int64_t current_txn_first_offset; /* its open transaction's first offset (-1: none) */
};

/* Calls fn for every producer the partition's state holds (idempotent, transactional and named
 * producers alike, until they expire or are evicted), in no particular order, on the caller's
 * thread with no engine lock held; stops on a non-zero return and returns it. The table is
 * copied on the partition's shard thread first (one shard call: it waits behind the shard's
 * current round). Errors: RT_E_INVALID_ARGUMENT (NULL), RT_E_UNKNOWN_TOPIC_OR_PARTITION,
 * RT_E_CLOSED, -ENOMEM, or fn's value. */
int rt_partition_producers(rt_engine *engine, const char *topic, uint32_t partition,
                           int (*fn)(void *ctx, const struct rt_partition_producer *producer),
                           void *ctx);

/* ---------------------------------------------------------------------------------------- */
/* Consumer groups                                                                           */
/* ---------------------------------------------------------------------------------------- */

/* Commits offsets for a group (not transactional), durably, in `__consumer_offsets`. Any
 * offset >= 0 of an existing partition is stored (as Kafka does). Creates `__consumer_offsets`
 * on first use. Errors: RT_E_INVALID_ARGUMENT (NULL engine; a group NULL, empty, over 1024
 * bytes or not valid UTF-8; no offsets; an offset below 0, a topic NULL, empty or over 249 bytes,
 * metadata over 4096 bytes), RT_E_UNKNOWN_TOPIC_OR_PARTITION (an offset for a topic or partition
 * that does not exist; nothing is committed), RT_E_READ_ONLY, write errors (see Transactions). */
int rt_group_commit_offsets(rt_engine *engine, const char *group, const struct rt_offset *offsets,
                            size_t count);

/* The committed offset of (group, topic, partition), or -1 when none (also for an unknown
 * topic or partition, and before anything was ever committed). With require_stable, a
 * transactional commit still pending for it returns RT_E_UNSTABLE_OFFSET_COMMIT. Errors:
 * RT_E_INVALID_ARGUMENT (NULL), RT_E_UNSTABLE_OFFSET_COMMIT. */
int rt_group_fetch_offsets(rt_engine *engine, const char *group, const char *topic,
                           uint32_t partition, bool require_stable, int64_t *offset_out);

/* Kafka's offset.metadata.max.bytes default: the longest metadata a commit may carry. */
#define RT_OFFSET_METADATA_MAX_BYTES 4096

/* A committed offset as OffsetFetch answers it. */
struct rt_committed_offset {
    int64_t offset;              /* -1 when nothing is committed */
    int32_t leader_epoch;        /* -1: not kept */
    int64_t commit_timestamp_ms; /* -1 when nothing is committed */
    bool pending;                /* a transactional commit for it is pending */
    size_t metadata_len;
    char metadata[RT_OFFSET_METADATA_MAX_BYTES + 1]; /* NUL-terminated; "" for none */
};

/* rt_group_fetch_offsets with the committed value's metadata (what the commit's
 * rt_offset.metadata held; "" for NULL), leader epoch and commit time. Metadata a record
 * written by another broker holds beyond RT_OFFSET_METADATA_MAX_BYTES is cut there. Errors:
 * RT_E_INVALID_ARGUMENT (NULL), RT_E_UNSTABLE_OFFSET_COMMIT (require_stable; out->pending). */
int rt_group_fetch_offset(rt_engine *engine, const char *group, const char *topic,
                          uint32_t partition, bool require_stable, struct rt_committed_offset *out);

/* Calls fn for every committed offset of `group` (any order; a key with only a transactional
 * commit pending is not one), on the caller's thread, under the group manager's lock: fn must
 * not call the engine and must not block. fn returns 0 to go on; anything else stops the walk and
 * is returned. Costs O(every key of every group). Errors: RT_E_INVALID_ARGUMENT (NULL), -ENOMEM,
 * fn's. */
typedef int (*rt_group_offset_fn)(void *ctx, const char *topic, uint32_t partition,
                                  const struct rt_committed_offset *offset);
int rt_group_list_offsets(rt_engine *engine, const char *group, rt_group_offset_fn fn, void *ctx);

/* Calls fn once for every group with a committed offset, in byte order of the names, under the
 * same rules as rt_group_list_offsets. O(keys log keys). Errors: RT_E_INVALID_ARGUMENT (NULL),
 * -ENOMEM, fn's. */
typedef int (*rt_group_name_fn)(void *ctx, const char *group);
int rt_group_list(rt_engine *engine, rt_group_name_fn fn, void *ctx);

/* A group's membership as Kafka's group coordinator persists it (GroupMetadataValue,
 * docs/format.md H.6), so a broker restart keeps its generation and assignments. */
struct rt_group_member {
    const char *member_id;
    const char *group_instance_id; /* KIP-345 static membership; NULL: dynamic */
    const char *client_id;
    const char *client_host;
    int32_t rebalance_timeout_ms;
    int32_t session_timeout_ms;
    const void *subscription; /* the member's metadata for the chosen protocol */
    size_t subscription_len;
    const void *assignment; /* what the leader assigned it */
    size_t assignment_len;
};

struct rt_group_metadata {
    const char *protocol_type; /* "" for none */
    int32_t generation;
    const char *protocol; /* NULL while none is chosen */
    const char *leader;   /* NULL when none */
    int64_t current_state_timestamp_ms;
    const struct rt_group_member *members;
    size_t members_count; /* 0: the group is Empty */
};

/* Writes the group's metadata into `__consumer_offsets` (one record, durable before this
 * returns; the latest per group is what a reopen replays). Strings are NUL-terminated, at most
 * 32767 bytes each (NULL only where marked). Errors: RT_E_INVALID_ARGUMENT (NULL, a group
 * name as rt_group_commit_offsets refuses it, a string too long, too many members for one
 * record), RT_E_RECORD_TOO_LARGE (over the engine's batch_size_max_bytes), RT_E_READ_ONLY,
 * write errors. */
int rt_group_store_metadata(rt_engine *engine, const char *group,
                            const struct rt_group_metadata *metadata);

/* Calls fn with every group's latest stored metadata (any order), under the same rules as
 * rt_group_list_offsets; pointers are valid during the call only. A record another broker wrote
 * whose strings hold a NUL byte is skipped. Errors: RT_E_INVALID_ARGUMENT (NULL), -ENOMEM,
 * fn's. */
typedef int (*rt_group_metadata_fn)(void *ctx, const char *group,
                                    const struct rt_group_metadata *metadata);
int rt_group_list_metadata(rt_engine *engine, rt_group_metadata_fn fn, void *ctx);

/* Deletes committed offsets of `group` from `__consumer_offsets` as Kafka's OffsetDelete and
 * DeleteGroups do: with `count` partitions, the group's committed offsets of those partitions
 * (a partition with none is skipped); with count 0 (partitions may be NULL), every committed
 * offset of the group and its stored metadata (rt_group_store_metadata). One batch of
 * tombstones, durable before this returns; a reopen does not bring the keys back. A
 * transactional commit still pending is not deleted (its marker decides it). The broker checks
 * the group's membership first (Kafka refuses a group with members: NON_EMPTY_GROUP); the
 * engine does not know of members. *deleted_out (may be NULL): how many keys were deleted (0:
 * nothing was stored, nothing written). Errors: RT_E_INVALID_ARGUMENT (NULL engine or group,
 * partitions NULL with count > 0, a group name as rt_group_commit_offsets refuses it, a topic
 * NULL, empty or over 249 bytes), RT_E_RECORD_TOO_LARGE (more tombstones than one batch of
 * batch_size_max_bytes holds), RT_E_READ_ONLY, -ENOMEM, write errors (see Transactions). */
struct rt_topic_partition; /* declared with the transactional calls below */
int rt_group_delete_offsets(rt_engine *engine, const char *group,
                            const struct rt_topic_partition *partitions, size_t count,
                            size_t *deleted_out);

/* The asynchronous forms of rt_group_commit_offsets, rt_group_store_metadata and
 * rt_group_delete_offsets, for a broker's
 * network thread, which must not wait for the disk. They run on the engine's transaction lanes
 * (as rt_txn_<call>_async, below), keyed by the group: the calls naming one group run one at a
 * time in submission order (so the latest metadata stored is the latest submitted), others in
 * parallel. `done` reports the outcome exactly once, on a lane thread, with the error the
 * synchronous call would have returned and (delete) the keys deleted; it must not block and
 * may free the op. rt_group_store_metadata_async encodes `metadata` and copies `group` before
 * it returns (neither need outlive the call); rt_group_delete_offsets_async needs `group` and
 * `partitions` (and their topic names) valid until done has run, rt_group_commit_offsets_async
 * `group` and `offsets` (and their strings); a commit reports deleted 0. Returns 0 (done will be
 * called), or without calling done: RT_E_INVALID_ARGUMENT (a NULL argument; for the store, a
 * metadata rt_group_store_metadata refuses), RT_E_CLOSED, -ENOMEM, -errno (a lane thread could
 * not start). A call still queued when rt_close begins is reported RT_E_CLOSED. */
struct rt_group_op {
    uint64_t opaque[16];
};
typedef void (*rt_group_done_fn)(void *ctx, int err, size_t deleted);
int rt_group_store_metadata_async(rt_engine *engine, const char *group,
                                  const struct rt_group_metadata *metadata, struct rt_group_op *op,
                                  rt_group_done_fn done, void *ctx);
int rt_group_delete_offsets_async(rt_engine *engine, const char *group,
                                  const struct rt_topic_partition *partitions, size_t count,
                                  struct rt_group_op *op, rt_group_done_fn done, void *ctx);
int rt_group_commit_offsets_async(rt_engine *engine, const char *group,
                                  const struct rt_offset *offsets, size_t count,
                                  struct rt_group_op *op, rt_group_done_fn done, void *ctx);

/* TxnOffsetCommit on the group coordinator's node (docs/format.md H.7 TXO1-TXO5), where the
 * transaction's coordinator may be another node: writes the offsets into the group's
 * `__consumer_offsets` partition as one transactional batch of producer_id at producer_epoch
 * (durable under the sync mode before it returns) without consulting this engine's transaction
 * coordinator. They stay pending for that producer — invisible to rt_group_fetch_offsets and
 * rt_group_list_offsets, RT_E_UNSTABLE_OFFSET_COMMIT with require_stable — until a marker of the
 * producer lands in that partition: rt_txn_write_marker (the WriteTxnMarkers the transaction's
 * coordinator sends) with commit applies them, an abort drops them; a reopen or
 * rt_partition_become_leader rebuilds those still pending from the log (TXO4). A later commit of
 * the same producer replaces its pending offset for the same key. The caller (a broker) has
 * checked that it coordinates the group; the transaction coordinator added the partition to
 * the transaction (AddOffsetsToTxn) — the engine cannot check that here. Errors: as
 * rt_group_commit_offsets, plus RT_E_INVALID_ARGUMENT (producer_id or producer_epoch < 0),
 * RT_E_NOT_COORDINATOR (the group's partition is followed: rt_partition_resign; nothing
 * written), RT_E_INVALID_PRODUCER_EPOCH (the partition holds a newer epoch of the producer: a
 * fenced instance; nothing written). */
int rt_group_commit_txn_offsets(rt_engine *engine, const char *group, int64_t producer_id,
                                int16_t producer_epoch, const struct rt_offset *offsets,
                                size_t count);
/* Its asynchronous form, on the group's lane as rt_group_commit_offsets_async (in order with
 * the group's other calls), under the same rules; `group` and `offsets` (and their strings)
 * valid until done has run; reports deleted 0. Also RT_E_INVALID_ARGUMENT without calling done
 * for a negative producer id or epoch. */
int rt_group_commit_txn_offsets_async(rt_engine *engine, const char *group, int64_t producer_id,
                                      int16_t producer_epoch, const struct rt_offset *offsets,
                                      size_t count, struct rt_group_op *op, rt_group_done_fn done,
                                      void *ctx);

typedef struct rt_consumer rt_consumer;

struct rt_consumer_options {
    const char *group;           /* required for commits; NULL = no group */
    enum rt_isolation isolation; /* RT_READ_COMMITTED by default */
    bool auto_commit;            /* false by default */
    uint32_t fetch_max_bytes;    /* per fetch (1 MiB) */
};
void rt_consumer_options_init(struct rt_consumer_options *opts);

/* Opens a consumer with no partitions assigned (opts NULL: the defaults). With auto_commit and a
 * group, positions are committed every 5 s from rt_consumer_poll and once more by
 * rt_consumer_close. The engine counts the consumer until rt_consumer_close (rt_close refuses
 * while it is open). Errors: RT_E_INVALID_ARGUMENT (NULL engine or out, an unknown isolation, a
 * group empty or over 1024 bytes), RT_E_READ_ONLY (auto_commit with a group on a read-only
 * engine), RT_E_CLOSED (overlapping an rt_close), -ENOMEM. */
int rt_consumer_open(rt_engine *engine, const struct rt_consumer_options *opts, rt_consumer **out);

/* Assigns partitions (adding to those already assigned; one assigned again starts over); each
 * starts at the group's committed offset (stable: a pending transactional commit is waited for
 * up to 2 s), else the log start. Every partition is resolved before anything changes, so an
 * error leaves the assignment as it was (-ENOMEM aside, which may leave some added).
 * Errors: RT_E_INVALID_ARGUMENT (NULL consumer or topic, NULL partitions with count > 0),
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_CONSUMER_PARTITIONS_FULL (more than 65536 partitions
 * in all), RT_E_UNSTABLE_OFFSET_COMMIT (still pending after 2 s), -ENOMEM. */
int rt_consumer_assign(rt_consumer *c, const char *topic, const uint32_t *partitions, size_t count);

/* The next record of the assigned partitions (round-robin over partitions with data), or
 * RT_E_END when none arrives within timeout_ms. The view stays valid until the next poll or
 * close. Records of aborted or open transactions are never returned under read_committed.
 * A position below the log start (retention removed it) is reset to the log start (Kafka's
 * auto.offset.reset=earliest). A position above the high watermark (a seek, or a committed
 * offset, beyond the end) is RT_E_OFFSET_OUT_OF_RANGE, with the partition, position and high
 * watermark in rt_error_detail(): Kafka's auto.offset.reset=none. The position is left as it is;
 * seek (e.g. to RT_OFFSET_LATEST) to go on. timeout_ms < 0 waits without a limit; a consumer
 * with nothing assigned waits out its timeout. topic_out and partition_out may be NULL.
 * Errors: RT_E_INVALID_ARGUMENT (NULL consumer or out), RT_E_END (nothing within timeout_ms),
 * RT_E_OFFSET_OUT_OF_RANGE, RT_E_CORRUPT (a damaged batch: none of its records is returned and
 * the position stays before it; the detail names the file and byte position), -ENOMEM, or an
 * auto-commit's error (see rt_consumer_commit) when one was due. */
int rt_consumer_poll(rt_consumer *c, struct rt_record_view *out, const char **topic_out,
                     uint32_t *partition_out, int32_t timeout_ms);

/* Sets the position of an assigned partition: an offset >= 0, RT_OFFSET_EARLIEST or
 * RT_OFFSET_LATEST. Any offset is accepted here (as Kafka's seek); one above the high watermark
 * makes the next poll return RT_E_OFFSET_OUT_OF_RANGE and rt_consumer_commit refuse it.
 * Errors: RT_E_INVALID_ARGUMENT (NULL, not assigned, an offset below -2). */
int rt_consumer_seek(rt_consumer *c, const char *topic, uint32_t partition, int64_t offset);

/* The position (the next offset poll returns from) of an assigned partition. Errors:
 * RT_E_INVALID_ARGUMENT (NULL, not assigned). */
int rt_consumer_position(rt_consumer *c, const char *topic, uint32_t partition,
                         int64_t *offset_out);

/* Rewinds every assigned partition to the group's committed offset (what a consume-transform-
 * produce loop does after rt_producer_abort); a partition without a committed offset goes to
 * the log start. All positions are resolved first: an error changes none. Errors:
 * RT_E_INVALID_ARGUMENT (NULL), RT_E_UNSTABLE_OFFSET_COMMIT (still pending after 2 s),
 * -ENOMEM. */
int rt_consumer_rewind_to_committed(rt_consumer *c);

/* Commits the current positions for the group (non-transactional). A position is never
 * committed above its partition's high watermark: RT_E_OFFSET_OUT_OF_RANGE, nothing committed.
 * With nothing assigned it commits nothing and returns 0. Creates `__consumer_offsets` on first
 * use. Errors: RT_E_INVALID_ARGUMENT (NULL, no group), RT_E_READ_ONLY, RT_E_OFFSET_OUT_OF_RANGE,
 * write errors (see Transactions). */
int rt_consumer_commit(rt_consumer *c);

/* Current positions as rt_offset entries (for rt_producer_send_offsets), in assignment order.
 * Writes up to max; returns the count written in *count_out. Topic pointers stay valid until
 * close. Errors: RT_E_INVALID_ARGUMENT (NULL consumer or count_out, NULL out with max > 0),
 * RT_E_BUFFER_TOO_SMALL (more partitions are assigned than max: the first max were written). */
int rt_consumer_positions(rt_consumer *c, struct rt_offset *out, size_t max, size_t *count_out);

/* Commits the positions once more if auto_commit is on, releases the consumer's fetches (the
 * last polled view is invalid from here on) and frees it, whatever the commit returned.
 * rt_consumer_close(NULL) returns 0. Errors: the final auto-commit's (see rt_consumer_commit). */
int rt_consumer_close(rt_consumer *c);

/* ---------------------------------------------------------------------------------------- */
/* Offline checks                                                                            */
/* ---------------------------------------------------------------------------------------- */

/* Checks every CRC, index and invariant in a data directory that is not open, reporting each
 * problem through fn (which may be NULL). Changes nothing. Returns 0 when healthy,
 * RT_E_CORRUPT when any problem was found, RT_E_DIRECTORY_LOCKED when the directory is open
 * for writing elsewhere (it takes the lock shared, as a read-only rt_open), or -errno. */
int rt_verify(const char *dir, void (*fn)(void *ctx, const char *problem), void *ctx);

/* What rt_verify_with_counts looked at. */
struct rt_verify_counts {
    uint64_t topics;
    uint64_t partitions;
    uint64_t segments;
    uint64_t batches;
    uint64_t records;
    uint64_t bytes;    /* log and index bytes read and checked */
    uint64_t problems; /* reports that make the directory unhealthy */
    uint64_t warnings; /* reports prefixed "warning: " (stray files); they do not fail */
};

/* rt_verify plus counts (out may be NULL). Same returns as rt_verify. */
int rt_verify_with_counts(const char *dir, void (*fn)(void *ctx, const char *problem), void *ctx,
                          struct rt_verify_counts *out);

/* ---------------------------------------------------------------------------------------- */
/* Broker support (what `ringtail serve` needs: tools/kafka)                                 */
/* ---------------------------------------------------------------------------------------- */

/* Allocates a fresh producer id (durably: ids are never reused, across restarts too) with epoch
 * 0, for an idempotent producer that keeps its own sequences (Kafka's InitProducerId without a
 * transactional id). Batches stamped with it are held to the producer rules by
 * rt_append_batch. Thread-safe. Errors: RT_E_INVALID_ARGUMENT, RT_E_READ_ONLY,
 * RT_E_PRODUCER_IDS_EXHAUSTED (the id space is exhausted), -errno (writing the allocation block).
 */
int rt_producer_id_allocate(rt_engine *engine, int64_t *producer_id_out, int16_t *epoch_out);

/* Producer-id blocks from outside (a cluster node's controller, Kafka's AllocateProducerIds,
 * KIP-730), for an engine opened with opts.producer_ids_granted. Every producer id the engine
 * hands out then (rt_producer_id_allocate, the transaction coordinator's, a named producer's)
 * comes from the blocks granted, in order, skipping any id below one the engine already knows
 * (from its logs or producers.meta), so a grant can never make an id repeat on this engine.
 * The engine holds at most two blocks (the one in use and the next); the blocks live in memory
 * only, and producers.meta records the end of each (an id below it may have been handed out),
 * so after a restart the engine needs a fresh grant and the unused rest of the old blocks is
 * never used. With no id left, allocation fails with RT_E_PRODUCER_IDS_EXHAUSTED until the next
 * grant. rt_producer_id_grant: 0; RT_E_INVALID_ARGUMENT (not opened so, first < 0, end <=
 * first, two blocks held already), RT_E_READ_ONLY, -errno (writing producers.meta).
 * rt_producer_id_available: the ids left in the blocks held. Thread-safe. */
int rt_producer_id_grant(rt_engine *engine, int64_t first, int64_t end);
int rt_producer_id_available(rt_engine *engine, int64_t *available_out);

/* Registers fn to be called after every group-commit round that published new high watermarks
 * (and so LSOs) — appends, transaction markers, any partition, any shard. One watch per engine:
 * a later call replaces it; fn NULL removes it. fn runs on a shard thread, once per round (not
 * per batch), and must not block or call back into the engine: a broker writes an eventfd there
 * and re-runs its parked long-poll fetches on its own threads (no thread per waiting fetch).
 * Calls are serialised with rt_append_watch_set: once it returns, no call of the previous fn is
 * running, so its ctx may be freed. Errors: RT_E_INVALID_ARGUMENT. */
int rt_append_watch_set(rt_engine *engine, void (*fn)(void *ctx), void *ctx);

/* Storage for one rt_append_batch_async in flight, owned by the caller (no allocation per
 * append): it must stay valid and untouched from the call until its completion has been called. */
struct rt_append_op {
    uint64_t opaque[64];
};

/* The outcome of an rt_append_batch_async: err 0 with the batch's base offset (for a duplicate,
 * the original one, or -1 when no longer known, with duplicate set), or a negative code
 * (RT_E_OUT_OF_ORDER_SEQUENCE, RT_E_INVALID_PRODUCER_EPOCH, RT_E_UNKNOWN_PRODUCER_ID,
 * RT_E_UNSUPPORTED, RT_E_IO_FAILED, RT_E_CLOSED, RT_E_READ_ONLY). Runs on a shard thread once
 * the round holding the batch is acknowledged under the engine's sync mode; it must not block.
 * The op and the batch may be reused or freed inside it. */
typedef void (*rt_append_done_fn)(void *ctx, int err, int64_t base_offset, bool duplicate);

/* rt_append_batch without waiting: the batch is checked on the calling thread exactly as
 * rt_append_batch checks it (errors returned at once, done not called), then queued to its
 * partition's shard and the call returns; done reports the outcome later. The call blocks only
 * while the shard's request queue is full (request_queue_depth; back-pressure). `batch` must
 * stay writable and untouched until done runs (the shard stamps the base offset into it).
 * Returns 0 (done will be called exactly once) or an immediate error: those of
 * rt_append_batch's checks (RT_E_CORRUPT, RT_E_INVALID_ARGUMENT, RT_E_RECORD_TOO_LARGE,
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION, RT_E_INTERNAL_TOPIC, RT_E_READ_ONLY, ...), RT_E_CLOSED,
 * RT_E_IO_FAILED (sticky). */
int rt_append_batch_async(rt_engine *engine, const char *topic, uint32_t partition, void *batch,
                          size_t len, struct rt_append_op *op, rt_append_done_fn done, void *ctx);

/* ---------------------------------------------------------------------------------------- */
/* Transactions over the wire (what `ringtail serve` needs for Kafka's transactional APIs)   */
/* ---------------------------------------------------------------------------------------- */

/*
 * The coordinator behind rt_producer_* (see Transactions), driven by a remote producer that
 * keeps its own sequences: Kafka's InitProducerId (with a transactional id), AddPartitionsToTxn,
 * AddOffsetsToTxn, TxnOffsetCommit and EndTxn. As Kafka clients before KIP-890 part 2 expect,
 * the producer keeps its id and epoch from one transaction to the next (only InitProducerId, a
 * fence and a timeout bump it), and every transactional batch handed to rt_append_batch(_async)
 * is verified instead (KIP-890 part 1): its producer's transactional id must be Ongoing at the
 * batch's epoch with the partition added, else RT_E_INVALID_TXN_STATE
 * (RT_E_INVALID_PRODUCER_EPOCH for an older or a newer epoch, as the partition answers).
 * Transactions past their timeout are aborted by the coordinator's timer, which bumps the epoch:
 * the producer is then fenced. All calls are thread-safe; the (pid, epoch) pair is the one
 * rt_txn_init_producer returned. Common errors: RT_E_INVALID_ARGUMENT (NULL, an id empty or over
 * 1024 bytes), RT_E_READ_ONLY, RT_E_CLOSED, RT_E_IO_FAILED, -errno.
 */

/* A partition named in rt_txn_add_partitions. */
struct rt_topic_partition {
    const char *topic;
    uint32_t partition;
};

/* InitProducerId: finds or creates the id's producer id, bumps its epoch (fencing any older
 * instance: its requests get RT_E_PRODUCER_FENCED), completes a Prepare* transaction and aborts
 * an Ongoing one (markers durable before it returns). timeout_ms is the transaction timeout:
 * 1..opts.transaction_timeout_max_ms, else RT_E_INVALID_TRANSACTION_TIMEOUT. Errors also
 * RT_E_CONCURRENT_TRANSACTIONS, RT_E_PRODUCER_IDS_EXHAUSTED. */
int rt_txn_init_producer(rt_engine *engine, const char *transactional_id, int32_t timeout_ms,
                         int64_t *producer_id_out, int16_t *epoch_out);

/* AddPartitionsToTxn: the transaction becomes (or stays) Ongoing with these partitions added,
 * durably, before this returns. Every partition must exist (RT_E_UNKNOWN_TOPIC_OR_PARTITION
 * naming the first that does not; nothing is added) and be a client topic
 * (RT_E_INTERNAL_TOPIC). Errors also RT_E_INVALID_TXN_STATE (not initialised),
 * RT_E_PRODUCER_FENCED, RT_E_INVALID_PRODUCER_EPOCH, RT_E_CONCURRENT_TRANSACTIONS (the previous
 * transaction is still completing), RT_E_TXN_PARTITIONS_FULL (more partitions than a transaction
 * holds). */
int rt_txn_add_partitions(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                          int16_t epoch, const struct rt_topic_partition *partitions, size_t count);

/* AddOffsetsToTxn: adds the group's `__consumer_offsets` partition to the transaction (so
 * rt_txn_commit_offsets may follow). Errors as rt_txn_add_partitions; RT_E_INVALID_ARGUMENT for
 * an empty group name or one over 1024 bytes. */
int rt_txn_add_offsets(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                       int16_t epoch, const char *group);

/* TxnOffsetCommit: the group's offsets written into the transaction, pending (invisible to
 * rt_group_fetch_offsets, RT_E_UNSTABLE_OFFSET_COMMIT with require_stable) until its COMMIT
 * marker; dropped by an abort. The group must have been added (rt_txn_add_offsets), else
 * RT_E_INVALID_TXN_STATE. Errors also RT_E_PRODUCER_FENCED, RT_E_INVALID_PRODUCER_EPOCH,
 * RT_E_UNKNOWN_TOPIC_OR_PARTITION (an offset for a partition that does not exist; nothing is
 * written). */
int rt_txn_commit_offsets(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                          int16_t epoch, const char *group, const struct rt_offset *offsets,
                          size_t count);

/* EndTxn: commits or aborts the open transaction in one durable round: the decision record
 * (with, for a commit, any not yet fdatasynced data of the transaction) durable, then a COMMIT or
 * ABORT marker into every partition added (pending offsets applied or dropped), visible to
 * read_committed before this returns (durable with its file's next fdatasync; a lost one is
 * rewritten at the next open from the decision record); the producer keeps its id and epoch. With nothing open (nothing added since the last
 * end, or a retried EndTxn) it returns 0 and writes nothing — unless the last end had the other
 * outcome: RT_E_INVALID_TXN_STATE (an abort retried after its commit went through is never
 * answered as aborted). Errors: RT_E_INVALID_TXN_STATE (not initialised), RT_E_PRODUCER_FENCED (an
 * older epoch: fenced by a newer instance, or the transaction timed out and was aborted),
 * RT_E_INVALID_PRODUCER_EPOCH, RT_E_CONCURRENT_TRANSACTIONS. */
int rt_txn_end(rt_engine *engine, const char *transactional_id, int64_t producer_id, int16_t epoch,
               bool commit);

/* InitProducerId v3+ (KIP-360): rt_txn_init_producer for a producer that names the identity it
 * holds, to recover from a fenced or failed transaction by an epoch bump instead of being
 * fenced. expected_producer_id and expected_epoch are both -1 (expect nothing: exactly
 * rt_txn_init_producer) or both >= 0. The epoch is bumped (an Ongoing transaction aborted, a
 * Prepare* completed, as rt_txn_init_producer does) when the id holds exactly that identity or
 * has never been given one; when it names the identity the id's last init (in this process)
 * bumped from, with nothing done since, it is a retry of that init: the same identity is
 * answered, nothing is bumped again. Anything else is RT_E_PRODUCER_FENCED and changes nothing.
 * Errors also those of rt_txn_init_producer, RT_E_INVALID_ARGUMENT (one of the pair -1 and not
 * the other). */
int rt_txn_init_producer_expected(rt_engine *engine, const char *transactional_id,
                                  int32_t timeout_ms, int64_t expected_producer_id,
                                  int16_t expected_epoch, int64_t *producer_id_out,
                                  int16_t *epoch_out);

/*
 * The asynchronous forms. Each call above writes durably (one group-commit round or more) and
 * so waits for the disk; a broker's network thread must not. rt_txn_<call>_async queues the call
 * and returns at once; `done` reports its outcome later, exactly once, with the error the
 * synchronous call would have returned (rt_error_detail() inside done names the cause). The
 * synchronous calls are these, waited for.
 *
 * Order: calls naming one transactional id run one at a time, in the order they were submitted
 * (so a client's pipelined requests keep their order); calls on different ids run in parallel,
 * and their writes share group-commit rounds. Threads: done runs on an engine thread (one of 16
 * transaction lanes, picked by the id); it must not block, and must not make a transactional
 * call of the engine's and wait for it (the lane would wait on itself); it may submit another
 * asynchronous call and may free the op. Lifetimes: the op, the transactional id, and whatever
 * the call points to (partitions and their topic names, group, offsets and their strings)
 * must stay valid and untouched from the call until done has run. Back-pressure: at most 65 536
 * calls wait over all lanes; beyond that the call blocks until one starts.
 * Returns 0 (done will be called), or without calling done: RT_E_INVALID_ARGUMENT (NULL engine,
 * id, op or done), RT_E_CLOSED (rt_close has begun), -errno (a lane thread could not start).
 * Everything else, argument checks included, arrives through done. A call still queued when
 * rt_close begins is reported RT_E_CLOSED without running; rt_close waits for the running ones.
 */

/* Storage for one asynchronous transactional call in flight, owned by the caller. */
struct rt_txn_op {
    uint64_t opaque[24];
};

/* The outcome of an asynchronous transactional call: err (0 or what its synchronous form
 * returns); producer_id and epoch are the identity rt_txn_init_producer_async handed out (-1,
 * -1 when it failed), for the other calls the request's. */
typedef void (*rt_txn_done_fn)(void *ctx, int err, int64_t producer_id, int16_t epoch);

/* rt_txn_init_producer_expected (expected -1, -1: rt_txn_init_producer), not waited for. */
int rt_txn_init_producer_async(rt_engine *engine, const char *transactional_id, int32_t timeout_ms,
                               int64_t expected_producer_id, int16_t expected_epoch,
                               struct rt_txn_op *op, rt_txn_done_fn done, void *ctx);
/* rt_txn_add_partitions, not waited for. */
int rt_txn_add_partitions_async(rt_engine *engine, const char *transactional_id,
                                int64_t producer_id, int16_t epoch,
                                const struct rt_topic_partition *partitions, size_t count,
                                struct rt_txn_op *op, rt_txn_done_fn done, void *ctx);
/* rt_txn_add_offsets, not waited for. */
int rt_txn_add_offsets_async(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                             int16_t epoch, const char *group, struct rt_txn_op *op,
                             rt_txn_done_fn done, void *ctx);
/* rt_txn_commit_offsets, not waited for. */
int rt_txn_commit_offsets_async(rt_engine *engine, const char *transactional_id,
                                int64_t producer_id, int16_t epoch, const char *group,
                                const struct rt_offset *offsets, size_t count, struct rt_txn_op *op,
                                rt_txn_done_fn done, void *ctx);
/* rt_txn_end, not waited for: done runs once the markers are visible (as rt_txn_end returns). */
int rt_txn_end_async(rt_engine *engine, const char *transactional_id, int64_t producer_id,
                     int16_t epoch, bool commit, struct rt_txn_op *op, rt_txn_done_fn done,
                     void *ctx);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* RINGTAIL_H */
