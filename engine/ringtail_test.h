/*
 * ringtail_test.h — hooks into libringtail that exist only for its own tests, fuzz targets,
 * benchmarks and tools that need them. It is never installed (CMakeLists.txt installs
 * ringtail.h alone) and embedders must not include it: nothing here is part of the contract,
 * and any of it may change without notice.
 *
 * What it must never do: declare anything an embedder needs, or change the behaviour of the
 * calls in ringtail.h for a program that does not call what it declares.
 */
#ifndef RINGTAIL_TEST_H
#define RINGTAIL_TEST_H

#include "ringtail.h"

#ifdef __cplusplus
extern "C" {
#endif

struct io_fault_plan; /* io/io.h: which write or fdatasync fails, how, and power loss */

/* rt_open over the fault-injecting io backend: the synchronous backend whose every write and
 * fdatasync first consults `faults` (not owned; it must outlive the engine). opts.io_backend is
 * ignored (the backend is the fault injector's), rt_stats_get reports io_backend "fault". Errors:
 * those of rt_open, and RT_E_INVALID_ARGUMENT for a NULL plan. */
int rt_test_open(const char *dir, const struct rt_options *opts, struct io_fault_plan *faults,
                 rt_engine **out);

/* The verification of transactional batches in rt_append_batch(_async) (ringtail.h) is on from
 * rt_open; tests that write raw transactional batches with no coordinator behind them may turn
 * it off. Errors: RT_E_INVALID_ARGUMENT. */
int rt_txn_verify_set(rt_engine *engine, bool on);

/* The log cleaner calls fn(step, ctx) after each step of a segment swap (docs/format.md A.9: 1
 * the .cleaned files durable, 2 the swap committed, 3 a replaced segment removed, 4 the indexes
 * renamed into place, 5 the log renamed into place, 6 the swap cleared; 7, not a swap step: a
 * group's files sealed on the cleaner's own thread, its swap not asked for yet), on the thread
 * that runs it (1-4 the partition's shard thread, 5-7 the cleaner's; all of them the opening
 * thread when an open finishes a swap), so a crash test can die there. Process-wide; NULL
 * turns it off. */
void rt_test_cleaner_hook_set(void (*fn)(int step, void *ctx), void *ctx);

/* Whether the shards' housekeeping offers compacted partitions to the engine's cleaner thread
 * (on by default): a test that needs a log exactly as its own rt_topic_compact calls left it
 * (test_cleaner's crash template) turns it off, as Kafka's log.cleaner.enable=false would.
 * Process-wide (a forked child inherits it). */
void rt_test_cleaner_background_set(bool on);

/* Moves the log cleaner's clock (its delete horizons, delete.retention.ms, the compaction lags
 * and the due checks) skew_ms ahead of the real one; 0 puts it back. Process-wide. */
void rt_test_cleaner_clock_set(int64_t skew_ms);

#ifdef __cplusplus
}
#endif
#endif /* RINGTAIL_TEST_H */
