/*
 * producer_registry.c — `<dir>/producers.meta`: the producer-id block and named producers.
 *
 *   offset  size  field (big-endian)
 *   0       4     magic 0x52545052 ("RTPR")
 *   4       2     version (1)
 *   6       4     crc: CRC-32C over bytes [10, end)
 *   10      8     block_end i64: every producer id below it may have been handed out
 *   18      4     name_count u32
 *   22      ...   name_count entries: name_len u16 (1..249), name, producer_id i64, epoch i16
 * Rules: magic, version, CRC; block_end >= 0; count * 13 <= remaining bytes; names valid
 * (printable, no NUL), unique; producer_id in [0, block_end); epoch >= 0; no trailing bytes.
 * Replaced atomically (tmp, fdatasync, rename, fsync dir) on every change.
 */
#include "producer_registry.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "error.h"
#include "fsutil.h"
#include "index/crc32c.h"

static bool name_valid(const uint8_t *p, size_t n)
{
    if (n == 0 || n > PRODUCER_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] == 0x7f)
            return false;
    return true;
}

#define FAIL(reason, off)                                                                          \
    do {                                                                                           \
        *why = (reason);                                                                           \
        *bad_offset = (off);                                                                       \
        free(list);                                                                                \
        return RT_E_CORRUPT;                                                                       \
    } while (0)

int producer_registry_parse(const uint8_t *buf, size_t len, int64_t *block_end,
                            struct producer_name **names, uint32_t *count, const char **why,
                            size_t *bad_offset)
{
    struct producer_name *list = NULL;
    if (len < PRODUCER_REGISTRY_HEADER_BYTES)
        FAIL("file shorter than the 22-byte header", len);
    if (be32_load(buf) != PRODUCER_REGISTRY_MAGIC)
        FAIL("bad magic", 0);
    if (be16_load(buf + 4) != PRODUCER_REGISTRY_VERSION)
        FAIL("unsupported version", 4);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, len - 10))
        FAIL("crc mismatch", 6);
    int64_t end = (int64_t)be64_load(buf + 10);
    if (end < 0)
        FAIL("negative producer id block", 10);
    uint32_t n = be32_load(buf + 18);
    if ((uint64_t)n * 13 > len - PRODUCER_REGISTRY_HEADER_BYTES)
        FAIL("name count larger than the file can hold", 18);
    list = calloc(n ? n : 1, sizeof(*list));
    if (!list)
        return -ENOMEM;
    size_t pos = PRODUCER_REGISTRY_HEADER_BYTES;
    for (uint32_t i = 0; i < n; i++) {
        if (len - pos < 2)
            FAIL("truncated entry", pos);
        uint16_t nl = be16_load(buf + pos);
        if (len - pos - 2 < (size_t)nl + 10)
            FAIL("truncated entry", pos);
        if (!name_valid(buf + pos + 2, nl))
            FAIL("invalid producer name", pos + 2);
        memcpy(list[i].name, buf + pos + 2, nl);
        list[i].name[nl] = '\0';
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(list[k].name, list[i].name) == 0)
                FAIL("duplicate producer name", pos + 2);
        list[i].producer_id = (int64_t)be64_load(buf + pos + 2 + nl);
        list[i].epoch = (int16_t)be16_load(buf + pos + 2 + nl + 8);
        if (list[i].producer_id < 0 || list[i].producer_id >= end)
            FAIL("producer id outside the allocated range", pos + 2 + nl);
        if (list[i].epoch < 0)
            FAIL("negative epoch", pos + 2 + nl + 8);
        pos += 2 + (size_t)nl + 10;
    }
    if (pos != len)
        FAIL("trailing bytes after the last entry", pos);
    *block_end = end;
    *names = list;
    *count = n;
    return 0;
}
#undef FAIL

static int registry_store(struct producer_registry *r, int64_t block_end)
{
    size_t len = PRODUCER_REGISTRY_HEADER_BYTES;
    for (uint32_t i = 0; i < r->name_count; i++)
        len += 2 + strlen(r->names[i].name) + 10;
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    be32_store(buf, PRODUCER_REGISTRY_MAGIC);
    be16_store(buf + 4, PRODUCER_REGISTRY_VERSION);
    be64_store(buf + 10, (uint64_t)block_end);
    be32_store(buf + 18, r->name_count);
    size_t pos = PRODUCER_REGISTRY_HEADER_BYTES;
    for (uint32_t i = 0; i < r->name_count; i++) {
        size_t nl = strlen(r->names[i].name);
        be16_store(buf + pos, (uint16_t)nl);
        memcpy(buf + pos + 2, r->names[i].name, nl);
        be64_store(buf + pos + 2 + nl, (uint64_t)r->names[i].producer_id);
        be16_store(buf + pos + 2 + nl + 8, (uint16_t)r->names[i].epoch);
        pos += 2 + nl + 10;
    }
    assert(pos == len);
    be32_store(buf + 6, crc32c(0, buf + 10, len - 10));
    int rc =
        fs_replace_file(r->faults, r->dir, PRODUCER_REGISTRY_TMP, PRODUCER_REGISTRY_FILE, buf, len);
    free(buf);
    if (rc)
        return error_set(rc, "%s/%s: cannot store: %s", r->dir, PRODUCER_REGISTRY_FILE,
                         strerror(-rc));
    r->block_end = block_end;
    return 0;
}

int producer_registry_open(struct producer_registry *r, const char *dir,
                           struct io_fault_plan *faults)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "%s", dir);
    r->faults = faults;
    pthread_mutex_init(&r->lock, NULL);
    char path[4096 + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, PRODUCER_REGISTRY_FILE);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, &buf, &len, 64u << 20);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return error_set(rc, "%s: cannot read: %s", path, strerror(-rc));
    const char *why = NULL;
    size_t bad = 0;
    r->found = true;
    rc = producer_registry_parse(buf, len, &r->block_end, &r->names, &r->name_count, &why, &bad);
    free(buf);
    if (rc == RT_E_CORRUPT)
        return error_set(rc, "%s: offset %zu: %s", path, bad, why);
    if (rc)
        return rc;
    r->name_capacity = r->name_count;
    /* Resume past the whole recorded block: ids of it may have been used before the stop. */
    r->next_id = r->block_end;
    return 0;
}

void producer_registry_close(struct producer_registry *r)
{
    free(r->names);
    r->names = NULL;
    pthread_mutex_destroy(&r->lock);
}

/* The granted blocks (ringtail.h rt_producer_id_grant): the spare block moves in when the one
 * in use is spent; ids below next_id (known to the engine already) are skipped. */
static int allocate_granted_locked(struct producer_registry *r, int64_t *out)
{
    if (r->grant_next < r->next_id)
        r->grant_next = r->next_id;
    if (r->grant_next >= r->grant_end && r->spare_end > r->spare_first) {
        r->grant_next = r->spare_first > r->next_id ? r->spare_first : r->next_id;
        r->grant_end = r->spare_end;
        r->spare_first = r->spare_end = 0;
    }
    if (r->grant_next >= r->grant_end)
        return error_set(RT_E_PRODUCER_IDS_EXHAUSTED,
                         "no producer id left in the granted blocks (the next block is asked of "
                         "the cluster's controller)");
    *out = r->grant_next++;
    r->next_id = r->grant_next;
    return 0;
}

static int allocate_locked(struct producer_registry *r, int64_t *out)
{
    if (r->granted)
        return allocate_granted_locked(r, out);
    if (r->next_id >= r->block_end) {
        if (r->block_end > INT64_MAX - PRODUCER_ID_BLOCK)
            return error_set(RT_E_PRODUCER_IDS_EXHAUSTED, "producer ids exhausted");
        int rc = registry_store(r, r->next_id + PRODUCER_ID_BLOCK);
        if (rc)
            return rc;
    }
    *out = r->next_id++;
    return 0;
}

int producer_registry_allocate(struct producer_registry *r, int64_t *producer_id_out)
{
    pthread_mutex_lock(&r->lock);
    int rc = allocate_locked(r, producer_id_out);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int producer_registry_open_name(struct producer_registry *r, const char *name,
                                int64_t *producer_id_out, int16_t *epoch_out)
{
    if (!name || !name_valid((const uint8_t *)name, strlen(name)))
        return error_set(RT_E_INVALID_ARGUMENT, "producer names are 1-249 printable characters");
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    struct producer_name *n = NULL;
    for (uint32_t i = 0; i < r->name_count; i++)
        if (strcmp(r->names[i].name, name) == 0)
            n = &r->names[i];
    struct producer_name saved = {0};
    bool added = false;
    if (!n) {
        if (r->name_count == r->name_capacity) {
            uint32_t cap = r->name_capacity ? r->name_capacity * 2 : 8;
            struct producer_name *a = realloc(r->names, (size_t)cap * sizeof(*a));
            if (!a) {
                rc = -ENOMEM;
                goto out;
            }
            r->names = a;
            r->name_capacity = cap;
        }
        n = &r->names[r->name_count];
        memset(n, 0, sizeof(*n));
        snprintf(n->name, sizeof(n->name), "%s", name);
        rc = allocate_locked(r, &n->producer_id);
        if (rc)
            goto out;
        n->epoch = 0;
        r->name_count++;
        added = true;
    } else {
        saved = *n;
        if (n->epoch == INT16_MAX) {
            /* As Kafka: an exhausted epoch moves the name to a fresh producer id. */
            rc = allocate_locked(r, &n->producer_id);
            if (rc)
                goto out;
            n->epoch = 0;
        } else {
            n->epoch++;
        }
    }
    rc = registry_store(r, r->block_end);
    if (rc) {
        if (added)
            r->name_count--;
        else
            *n = saved;
        goto out;
    }
    *producer_id_out = n->producer_id;
    *epoch_out = n->epoch;
out:
    pthread_mutex_unlock(&r->lock);
    return rc;
}

bool producer_registry_is_named(void *registry, int64_t producer_id)
{
    struct producer_registry *r = registry;
    bool named = false;
    pthread_mutex_lock(&r->lock);
    for (uint32_t i = 0; i < r->name_count && !named; i++)
        named = r->names[i].producer_id == producer_id;
    pthread_mutex_unlock(&r->lock);
    return named;
}

bool producer_registry_found(const struct producer_registry *r)
{
    return r->found;
}

int producer_registry_raise(struct producer_registry *r, int64_t floor)
{
    assert(floor >= 0);
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (floor > r->next_id)
        r->next_id = floor;
    if (!r->found || r->next_id > r->block_end) {
        /* A block_end of next_id: the next allocation starts a fresh block past it. */
        rc = registry_store(r, r->next_id > r->block_end ? r->next_id : r->block_end);
        if (rc == 0)
            r->found = true;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void producer_registry_set_granted(struct producer_registry *r)
{
    pthread_mutex_lock(&r->lock);
    r->granted = true;
    pthread_mutex_unlock(&r->lock);
}

int producer_registry_grant(struct producer_registry *r, int64_t first, int64_t end)
{
    if (first < 0 || end <= first)
        return error_set(RT_E_INVALID_ARGUMENT, "a producer-id block [%lld, %lld) is empty",
                         (long long)first, (long long)end);
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    bool in_use = r->grant_next < r->grant_end && r->grant_next >= r->next_id;
    if (!r->granted)
        rc = error_set(RT_E_INVALID_ARGUMENT, "producer-id blocks need opts.producer_ids_granted");
    else if (in_use && r->spare_end > r->spare_first)
        rc = error_set(RT_E_INVALID_ARGUMENT, "two producer-id blocks are held already");
    /* producers.meta's block_end covers every id granted: named producers' ids stay below it
     * (the file's rule), and a later open without grants resumes past them. */
    if (rc == 0 && end > r->block_end)
        rc = registry_store(r, end);
    if (rc == 0 && in_use) {
        r->spare_first = first;
        r->spare_end = end;
    } else if (rc == 0) {
        r->grant_next = first > r->next_id ? first : r->next_id;
        r->grant_end = end;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int64_t producer_registry_available(struct producer_registry *r)
{
    pthread_mutex_lock(&r->lock);
    int64_t n = 0;
    int64_t from = r->grant_next > r->next_id ? r->grant_next : r->next_id;
    if (r->granted && r->grant_end > from)
        n += r->grant_end - from;
    from = r->spare_first > r->next_id ? r->spare_first : r->next_id;
    if (r->granted && r->spare_end > from)
        n += r->spare_end - from;
    pthread_mutex_unlock(&r->lock);
    return n;
}
