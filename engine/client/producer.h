/*
 * producer.h — the client layer's producer (producer.c) as the composition root opens it:
 * rt_producer_open (engine.c) validates nothing of its own and hands over here. Every other
 * rt_producer_* call is defined in producer.c on the producer's handle. Internal.
 */
#ifndef RT_PRODUCER_H
#define RT_PRODUCER_H

#include <stdint.h>

#include "ringtail.h"

struct log;
struct txn;
struct sender_pool;

/* rt_producer_open's contract (ringtail.h), on the log and transaction layer it writes
 * through; its send-side work runs on `senders`, the engine's sender pool. `open_count` is the engine's census of open producers (EN1 in engine.c): counted by the
 * caller before the call, decremented by the close as its very last step. The caller's error
 * detail is not cleared. */
int producer_open(struct log *lg, struct txn *t, struct sender_pool *senders,
                  const struct rt_producer_options *opts, _Atomic uint32_t *open_count,
                  rt_producer **out);

#endif /* RT_PRODUCER_H */
