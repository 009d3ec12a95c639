/*
 * consumer.h — the client layer's consumer (consumer.c) as the composition root opens it:
 * rt_consumer_open (engine.c) hands over here. Every other rt_consumer_* call is defined in
 * consumer.c on the consumer's handle. Internal.
 */
#ifndef RT_CONSUMER_H
#define RT_CONSUMER_H

#include <stdint.h>

#include "ringtail.h"

struct log;
struct txn;

/* rt_consumer_open's contract (ringtail.h), on the log it reads and the transaction layer its
 * group offsets go through. `open_count` is the engine's census of open consumers (EN1 in
 * engine.c): counted by the caller before the call, decremented by the close as its very last
 * step. The caller's error detail is not cleared. */
int consumer_open(struct log *lg, struct txn *t, const struct rt_consumer_options *opts,
                  _Atomic uint32_t *open_count, rt_consumer **out);

#endif /* RT_CONSUMER_H */
