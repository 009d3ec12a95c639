/*
 * consumer.h — the client layer's consumer (consumer.c) as the composition root opens it:
 * rt_consumer_open (engine.c) hands over here. Every other rt_consumer_* call is defined in
 * consumer.c on the consumer's handle. Internal.
 */
#ifndef RT_CONSUMER_H
#define RT_CONSUMER_H

#include "ringtail.h"

struct log;
struct txn;

/* rt_consumer_open's contract (ringtail.h), on the log it reads and the transaction layer its
 * group offsets go through. The caller's error detail is not cleared. */
int consumer_open(struct log *lg, struct txn *t, const struct rt_consumer_options *opts,
                  rt_consumer **out);

#endif /* RT_CONSUMER_H */
