/*
 * engine.h — the engine object behind rt_engine: the directory lock, the log layer and the
 * transaction layer it composes (engine.c). Internal; the public face is ringtail.h.
 *
 * Only the composition root and tests include this header: nothing in log/, txn/, client/ or
 * check/ may (the build's include paths refuse it). Tests reach the layers through
 * engine_log() and engine_txn().
 */
#ifndef RT_ENGINE_H
#define RT_ENGINE_H

#include "log.h"
#include "ringtail.h"
#include "sender_pool.h"
#include "txn.h"

struct rt_engine {
    int lock_fd;
    bool log_open;
    struct log log;
    struct txn txn;
    struct sender_pool senders; /* the producers' send-side threads (sender_pool.c) */
    /* Client handles open on this engine (EN1 in engine.c): rt_close refuses while any is
     * open, and clients_stopping turns new opens away while rt_close looks. */
    _Atomic uint32_t producers_open_count;
    _Atomic uint32_t consumers_open_count;
    _Atomic bool clients_stopping;
};

/* The layers of an open engine. */
struct log *engine_log(rt_engine *e);
struct txn *engine_txn(rt_engine *e);

#endif /* RT_ENGINE_H */
