/*
 * cmd_dump.c — `ringtail dump FILE...`: a readable listing of the files in a data directory.
 *
 * One function per file kind, chosen by name in `kinds[]`; adding a kind is one function and
 * one table row. Each file is mapped read-only and treated as untrusted: only batch.h's
 * validated accessors and the index/meta checkers read it, every length is checked before use.
 * Damage is printed in place as "!! FILE: offset N: what", counted, and makes the exit status 1;
 * the listing goes on wherever the next position is still known (a batch with a bad CRC but a
 * sane length is skipped over; a bad length ends the file).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"
#include "index/crc32c.h"
#include "index/offset_index.h"
#include "index/producer_snapshot.h"
#include "index/time_index.h"
#include "index/txn_index.h"
#include "meta.h"
#include "producer_registry.h"

#define PREVIEW_CHARS 40

struct dump_file {
    const char *path;
    const uint8_t *buf;
    size_t len;
    int64_t base_offset; /* from a 20-digit file name, or -1 */
    bool records;        /* list records, not just batches */
    unsigned problems;
};

static void problem(struct dump_file *f, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(struct dump_file *f, uint64_t offset, const char *fmt, ...)
{
    va_list ap;
    printf("!! %s: offset %" PRIu64 ": ", f->path, offset);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    f->problems++;
}

static bool all_zero(const uint8_t *p, size_t n, size_t *first_nonzero)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            if (first_nonzero)
                *first_nonzero = i;
            return false;
        }
    }
    return true;
}

static const char *compression_name(int c)
{
    static const char *names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
    return c >= 0 && c <= 4 ? names[c] : "unknown";
}

/* ---- .log ---------------------------------------------------------------------------- */

/* Lists the records of the batch at pos. Damage inside a batch has already been reported by
 * the caller (CRC or batch_validate); here a record that does not decode only ends the list,
 * with a note saying where. */
static void dump_records(struct dump_file *f, size_t pos, const struct batch_header *h)
{
    const uint8_t *p = f->buf + pos + BATCH_HEADER_BYTES;
    const uint8_t *end = f->buf + pos + BATCH_LOG_OVERHEAD_BYTES + (size_t)h->length;
    int compression = h->attributes & BATCH_ATTR_COMPRESSION_MASK;
    if (compression != BATCH_COMPRESSION_NONE) {
        printf("    records compressed with %s: not decoded\n", compression_name(compression));
        return;
    }
    for (int32_t i = 0; i < h->record_count; i++) {
        struct record_view r;
        const char *why = "truncated";
        int n = p < end ? record_decode(p, end, &r, &why) : RT_E_CORRUPT;
        if (n <= 0) {
            printf("    (record %d of %d at position %zu does not decode: %s)\n", i,
                   h->record_count, (size_t)(p - f->buf), why);
            return;
        }
        int64_t offset = h->base_offset + r.offset_delta;
        if (batch_is_control(h)) {
            enum control_type type;
            int32_t epoch = 0;
            if (control_record_parse(r.key, r.key_len, r.value, r.value_len, &type, &epoch, &why) ==
                0)
                printf("    offset %" PRId64 ": control %s coordinatorEpoch %" PRId32 "\n", offset,
                       type == CONTROL_COMMIT ? "COMMIT" : "ABORT", epoch);
            else
                printf("    offset %" PRId64 ": control record does not parse: %s\n", offset, why);
        } else if (f->records) {
            printf("    offset %" PRId64 " ts %" PRId64 " key ", offset,
                   h->base_timestamp + r.timestamp_delta);
            if (r.key_len >= 0)
                printf("%" PRId32 "B ", r.key_len);
            cli_preview(stdout, r.key, r.key_len, PREVIEW_CHARS);
            fputs(" value ", stdout);
            if (r.value_len >= 0)
                printf("%" PRId32 "B ", r.value_len);
            cli_preview(stdout, r.value, r.value_len, PREVIEW_CHARS);
            if (r.header_count > 0)
                printf(" headers %" PRId32, r.header_count);
            putchar('\n');
        }
        p += n;
    }
}

static int dump_log(struct dump_file *f)
{
    size_t pos = 0;
    uint64_t batches = 0, records = 0;
    int64_t expected = -1;
    printf("%s: log segment", f->path);
    if (f->base_offset >= 0)
        printf(", base offset %" PRId64, f->base_offset);
    printf(", %zu bytes\n", f->len);
    while (pos < f->len) {
        size_t left = f->len - pos;
        size_t bad_at = 0;
        if (left < BATCH_LOG_OVERHEAD_BYTES ||
            all_zero(f->buf + pos, BATCH_LOG_OVERHEAD_BYTES, NULL)) {
            if (all_zero(f->buf + pos, left, &bad_at)) {
                printf("zero-filled tail (preallocated, unused) from position %zu: %zu bytes\n",
                       pos, left);
            } else if (left < BATCH_LOG_OVERHEAD_BYTES) {
                problem(f, pos, "%zu trailing bytes, too few for a batch header", left);
            } else {
                problem(f, pos + bad_at,
                        "non-zero byte after a zero-filled gap that starts at %zu: the rest of "
                        "the file is not listed",
                        pos);
            }
            break;
        }
        const char *why = NULL;
        int64_t size = batch_size_at(f->buf + pos, left, &why);
        if (size < 0) {
            problem(f, pos, "%s: the rest of the file (%zu bytes) is not listed", why, left);
            break;
        }
        struct batch_header h;
        if (batch_header_parse(f->buf + pos, (size_t)size, &h, &why) != 0) {
            problem(f, pos, "batch header: %s (skipping %" PRId64 " bytes by its length)", why,
                    size);
            pos += (size_t)size;
            continue;
        }
        uint32_t crc = crc32c(0, f->buf + pos + BATCH_CRC_START, (size_t)size - BATCH_CRC_START);
        bool crc_ok = crc == h.crc;
        printf("batch @%zu baseOffset %" PRId64 " lastOffset %" PRId64 " count %" PRId32
               " size %" PRId64 " crc 0x%08" PRIx32 " %s\n",
               pos, h.base_offset, batch_last_offset(&h), h.record_count, size, h.crc,
               crc_ok ? "ok" : "BAD");
        printf("    attributes 0x%04x: compression %s, %s, %s, %s%s\n",
               (unsigned)h.attributes & 0xffff,
               compression_name(h.attributes & BATCH_ATTR_COMPRESSION_MASK),
               (h.attributes & BATCH_ATTR_LOG_APPEND_TIME) ? "LogAppendTime" : "CreateTime",
               batch_is_transactional(&h) ? "transactional" : "non-transactional",
               batch_is_control(&h) ? "control" : "data",
               (h.attributes & BATCH_ATTR_DELETE_HORIZON) ? ", delete horizon" : "");
        printf("    producerId %" PRId64 " epoch %d baseSequence %" PRId32 " leaderEpoch %" PRId32
               " timestamps base %" PRId64 " max %" PRId64 "\n",
               h.producer_id, h.producer_epoch, h.base_sequence, h.partition_leader_epoch,
               h.base_timestamp, h.max_timestamp);
        if (!crc_ok)
            problem(f, pos, "crc mismatch: stored 0x%08" PRIx32 ", computed 0x%08" PRIx32, h.crc,
                    crc);
        struct batch_header checked;
        bool valid = batch_validate(f->buf + pos, (size_t)size, 0, &checked, &why) == 0;
        if (!valid && crc_ok)
            problem(f, pos, "%s", why);
        if (expected >= 0 && h.base_offset != expected)
            problem(f, pos,
                    "baseOffset %" PRId64 " does not follow the previous batch (expected %" PRId64
                    ")",
                    h.base_offset, expected);
        if (expected < 0 && f->base_offset >= 0 && h.base_offset != f->base_offset)
            problem(f, pos, "first baseOffset %" PRId64 " differs from the file name's %" PRId64,
                    h.base_offset, f->base_offset);
        expected = batch_last_offset(&h) + 1;
        dump_records(f, pos, &h);
        batches++;
        records += (uint64_t)(h.record_count > 0 ? h.record_count : 0);
        pos += (size_t)size;
    }
    printf("%s: %" PRIu64 " batch%s, %" PRIu64 " record%s, %u problem%s\n", f->path, batches,
           batches == 1 ? "" : "es", records, records == 1 ? "" : "s", f->problems,
           f->problems == 1 ? "" : "s");
    return 0;
}

/* ---- .index / .timeindex ----------------------------------------------------------------- */

/* Entries before a run of all-zero entries at the end (a preallocated, untrimmed index). */
static size_t live_entries(const uint8_t *buf, size_t entries, size_t entry_bytes)
{
    while (entries > 0 && all_zero(buf + (entries - 1) * entry_bytes, entry_bytes, NULL))
        entries--;
    return entries;
}

static int dump_offset_index(struct dump_file *f)
{
    int64_t base = f->base_offset >= 0 ? f->base_offset : 0;
    printf("%s: offset index, %zu bytes%s\n", f->path, f->len,
           f->base_offset >= 0 ? "" : " (no base offset in the file name: offsets are relative)");
    if (f->len % OFFSET_INDEX_ENTRY_BYTES)
        problem(f, f->len - f->len % OFFSET_INDEX_ENTRY_BYTES,
                "size %zu is not a multiple of %d; the partial entry is ignored", f->len,
                OFFSET_INDEX_ENTRY_BYTES);
    size_t total = f->len / OFFSET_INDEX_ENTRY_BYTES;
    size_t live = live_entries(f->buf, total, OFFSET_INDEX_ENTRY_BYTES);
    for (size_t i = 0; i < live; i++) {
        const uint8_t *e = f->buf + i * OFFSET_INDEX_ENTRY_BYTES;
        int32_t rel = (int32_t)be32_load(e);
        uint32_t position = be32_load(e + 4);
        printf("entry %zu: offset %" PRId64 " (relative %" PRId32 ") position %" PRIu32 "\n", i,
               base + rel, rel, position);
    }
    if (live < total)
        printf("%zu zero-filled entries after them (preallocated, unused)\n", total - live);
    const char *why = NULL;
    uint32_t bad = 0;
    if (offset_index_check(f->buf, live * OFFSET_INDEX_ENTRY_BYTES, 0, &why, &bad) != 0)
        problem(f, (uint64_t)bad * OFFSET_INDEX_ENTRY_BYTES, "entry %" PRIu32 ": %s", bad, why);
    printf("%s: %zu entr%s, %u problem%s\n", f->path, live, live == 1 ? "y" : "ies", f->problems,
           f->problems == 1 ? "" : "s");
    return 0;
}

static int dump_time_index(struct dump_file *f)
{
    int64_t base = f->base_offset >= 0 ? f->base_offset : 0;
    printf("%s: time index, %zu bytes%s\n", f->path, f->len,
           f->base_offset >= 0 ? "" : " (no base offset in the file name: offsets are relative)");
    if (f->len % TIME_INDEX_ENTRY_BYTES)
        problem(f, f->len - f->len % TIME_INDEX_ENTRY_BYTES,
                "size %zu is not a multiple of %d; the partial entry is ignored", f->len,
                TIME_INDEX_ENTRY_BYTES);
    size_t total = f->len / TIME_INDEX_ENTRY_BYTES;
    /* Verify's rule (time_index_live_entries): a file without a zero tail was trimmed, and its
     * all-zero entry 0 is the entry (timestamp 0, base offset); in an untrimmed one it is fill. */
    size_t live = live_entries(f->buf, total, TIME_INDEX_ENTRY_BYTES);
    if (total <= UINT32_MAX) {
        live = time_index_live_entries(f->buf, (uint32_t)total, true);
        if (live < total)
            live = time_index_live_entries(f->buf, (uint32_t)total, false);
    }
    for (size_t i = 0; i < live; i++) {
        const uint8_t *e = f->buf + i * TIME_INDEX_ENTRY_BYTES;
        int64_t ts = (int64_t)be64_load(e);
        int32_t rel = (int32_t)be32_load(e + 8);
        printf("entry %zu: timestamp %" PRId64 " offset %" PRId64 " (relative %" PRId32 ")\n", i,
               ts, base + rel, rel);
    }
    if (live < total)
        printf("%zu zero-filled entries after them (preallocated, unused)\n", total - live);
    const char *why = NULL;
    uint32_t bad = 0;
    if (time_index_check(f->buf, live * TIME_INDEX_ENTRY_BYTES, &why, &bad) != 0)
        problem(f, (uint64_t)bad * TIME_INDEX_ENTRY_BYTES, "entry %" PRIu32 ": %s", bad, why);
    printf("%s: %zu entr%s, %u problem%s\n", f->path, live, live == 1 ? "y" : "ies", f->problems,
           f->problems == 1 ? "" : "s");
    return 0;
}

/* ---- ringtail.meta ------------------------------------------------------------------------ */

static int dump_meta(struct dump_file *f)
{
    printf("%s: topic catalogue, %zu bytes\n", f->path, f->len);
    if (f->len >= META_HEADER_BYTES) {
        uint32_t magic = be32_load(f->buf);
        printf("magic 0x%08" PRIx32 " (%s) version %u crc 0x%08" PRIx32 " topics %" PRIu32 "\n",
               magic, magic == META_MAGIC ? "ok" : "BAD", (unsigned)be16_load(f->buf + 4),
               be32_load(f->buf + 6), be32_load(f->buf + 10));
    }
    struct meta_catalogue cat = {0};
    const char *why = NULL;
    size_t bad = 0;
    int rc = meta_parse(f->buf, f->len, &cat, &why, &bad);
    if (rc == -ENOMEM) {
        problem(f, 0, "out of memory");
        return 0;
    }
    if (rc != 0) {
        problem(f, bad, "%s", why ? why : "corrupt");
        return 0;
    }
    for (uint32_t i = 0; i < cat.count; i++)
        printf("topic %s partitions %" PRIu32 "\n", cat.topics[i].name, cat.topics[i].partitions);
    printf("%s: %" PRIu32 " topic%s, %u problem%s\n", f->path, cat.count, cat.count == 1 ? "" : "s",
           f->problems, f->problems == 1 ? "" : "s");
    meta_catalogue_free(&cat);
    return 0;
}

/* ---- <offset>.snapshot and producers.meta ---------------------------------------------- */

static int print_snapshot_entry(void *ctx, const struct producer_snapshot_entry *e)
{
    (void)ctx;
    printf("producer %" PRId64 " epoch %d last_sequence %" PRId32 " last_offset %" PRId64
           " offset_delta %" PRId32 " timestamp %" PRId64 " coordinator_epoch %" PRId32
           " txn_first_offset %" PRId64 "\n",
           e->producer_id, e->epoch, e->last_sequence, e->last_offset, e->offset_delta,
           e->timestamp_ms, e->coordinator_epoch, e->current_txn_first_offset);
    return 0;
}

static int dump_snapshot(struct dump_file *f)
{
    printf("%s: producer-state snapshot, %zu bytes\n", f->path, f->len);
    const char *why = NULL;
    size_t bad = 0;
    int rc = producer_snapshot_decode(f->buf, f->len, print_snapshot_entry, NULL, &why, &bad);
    if (rc == -EBADMSG)
        problem(f, bad, "%s", why ? why : "corrupt");
    else if (rc != 0)
        problem(f, 0, "%s", strerror(-rc));
    printf("%s: %u problem%s\n", f->path, f->problems, f->problems == 1 ? "" : "s");
    return 0;
}

static int dump_producers(struct dump_file *f)
{
    printf("%s: producer ids and named producers, %zu bytes\n", f->path, f->len);
    int64_t block_end = 0;
    struct producer_name *names = NULL;
    uint32_t n = 0;
    const char *why = NULL;
    size_t bad = 0;
    int rc = producer_registry_parse(f->buf, f->len, &block_end, &names, &n, &why, &bad);
    if (rc == RT_E_CORRUPT) {
        problem(f, bad, "%s", why);
    } else if (rc != 0) {
        problem(f, 0, "%s", rt_strerror(rc));
    } else {
        printf("producer ids handed out below %" PRId64 "\n", block_end);
        for (uint32_t i = 0; i < n; i++)
            printf("name %s producer %" PRId64 " epoch %d\n", names[i].name, names[i].producer_id,
                   names[i].epoch);
    }
    free(names);
    printf("%s: %u problem%s\n", f->path, f->problems, f->problems == 1 ? "" : "s");
    return 0;
}

/* ---- .txnindex ------------------------------------------------------------------------- */

/* Every whole entry as stored (Kafka's AbortedTxn: absolute offsets), then txn_index_check's
 * verdict (X1-X8, docs/format.md §E.2) at the first bad entry. Entries after a bad one are
 * still listed: the file is not preallocated, so each is what some append wrote. */
static int dump_txn_index(struct dump_file *f)
{
    printf("%s: aborted-transaction index, %zu bytes%s\n", f->path, f->len,
           f->base_offset >= 0 ? "" : " (no base offset in the file name: taken as 0)");
    size_t entries = f->len / TXN_INDEX_ENTRY_BYTES;
    for (size_t i = 0; i < entries; i++) {
        const uint8_t *e = f->buf + i * TXN_INDEX_ENTRY_BYTES;
        int16_t version = (int16_t)be16_load(e);
        printf("entry %zu: producer %" PRId64 " firstOffset %" PRId64 " lastOffset %" PRId64
               " lastStableOffset %" PRId64,
               i, (int64_t)be64_load(e + 2), (int64_t)be64_load(e + 10), (int64_t)be64_load(e + 18),
               (int64_t)be64_load(e + 26));
        if (version != TXN_INDEX_VERSION)
            printf(" version %d", version);
        putchar('\n');
    }
    const char *why = NULL;
    uint32_t bad = 0;
    int64_t base = f->base_offset >= 0 ? f->base_offset : 0;
    if (txn_index_check(f->buf, f->len, base, &why, &bad) != 0)
        problem(f, (uint64_t)bad * TXN_INDEX_ENTRY_BYTES, "entry %" PRIu32 ": %s", bad,
                why ? why : "invalid");
    else
        bad = (uint32_t)entries;
    /* The check names only the first problem; a torn tail after an earlier bad entry too. */
    if (f->len % TXN_INDEX_ENTRY_BYTES && bad < entries)
        problem(f, entries * TXN_INDEX_ENTRY_BYTES,
                "%zu trailing bytes: a partial entry (torn append)",
                f->len % TXN_INDEX_ENTRY_BYTES);
    printf("%s: %zu entr%s, %u problem%s\n", f->path, entries, entries == 1 ? "y" : "ies",
           f->problems, f->problems == 1 ? "" : "s");
    return 0;
}

/* ---- dispatch -------------------------------------------------------------------------- */

struct dump_kind {
    const char *suffix; /* matched against the end of the file name */
    int (*dump)(struct dump_file *f);
};

static const struct dump_kind kinds[] = {
    {"/" META_FILE, dump_meta},
    {".log", dump_log},
    {".timeindex", dump_time_index},
    {".index", dump_offset_index},
    {".txnindex", dump_txn_index},
    {".snapshot", dump_snapshot},
    {"/" PRODUCER_REGISTRY_FILE, dump_producers},
};

static const struct dump_kind *kind_of(const char *path)
{
    size_t n = strlen(path);
    if (strcmp(path, META_FILE) == 0)
        return &kinds[0];
    if (strcmp(path, PRODUCER_REGISTRY_FILE) == 0)
        return &kinds[sizeof kinds / sizeof kinds[0] - 1];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t s = strlen(kinds[i].suffix);
        if (n >= s && strcmp(path + n - s, kinds[i].suffix) == 0)
            return &kinds[i];
    }
    return NULL;
}

/* Base offset from "<20 digits>.<ext>", or -1. */
static int64_t base_from_name(const char *path)
{
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9')
            return -1;
        int d = name[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    return name[20] == '.' ? v : -1;
}

static void dump_usage(FILE *out)
{
    fprintf(out, "usage: ringtail dump [--no-records] FILE...\n"
                 "\n"
                 "Lists the contents of data-directory files, chosen by name:\n"
                 "  *.log          each batch (position, offsets, count, size, attributes,\n"
                 "                 producer, timestamps, CRC ok/BAD) and each record (offset,\n"
                 "                 timestamp, key and value sizes and a preview); control\n"
                 "                 records as COMMIT/ABORT; stops at a zero-filled tail\n"
                 "  *.index        offset index entries as absolute offsets and positions\n"
                 "  *.timeindex    time index entries as timestamps and absolute offsets\n"
                 "  ringtail.meta  the topic catalogue\n"
                 "  *.snapshot     producer-state snapshot entries\n"
                 "  producers.meta the producer-id block and named producers\n"
                 "  *.txnindex     aborted transactions: producer, firstOffset, lastOffset\n"
                 "                 (the ABORT marker) and lastStableOffset, as absolute offsets\n"
                 "\n"
                 "  --no-records   list batches only\n"
                 "\n"
                 "Damage is shown in place as '!! FILE: offset N: what'; the listing continues\n"
                 "where the next position is still known. Exit status: 0 when every file is\n"
                 "intact, 1 when any is damaged or unreadable, 2 usage error.\n");
}

int cmd_dump(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"no-records", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool records = true;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            records = false;
            break;
        case 'h':
            dump_usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_usage("dump", "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage("dump", "missing FILE");
    for (int i = optind; i < argc; i++) {
        if (!kind_of(argv[i]))
            return cli_usage("dump",
                             "%s: unknown kind of file (expected .log, .index, .timeindex, "
                             ".txnindex, .snapshot or ringtail.meta)",
                             argv[i]);
    }

    int ex = CLI_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const char *path = argv[i];
        if (i > optind)
            putchar('\n');
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            ex = cli_fail("dump", "%s: %s", path, strerror(errno));
            continue;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            ex = cli_fail("dump", "%s: %s", path, strerror(errno));
            close(fd);
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            ex = cli_fail("dump", "%s: not a regular file", path);
            close(fd);
            continue;
        }
        struct dump_file f = {.path = path,
                              .len = (size_t)st.st_size,
                              .base_offset = base_from_name(path),
                              .records = records};
        void *map = NULL;
        if (f.len > 0) {
            map = mmap(NULL, f.len, PROT_READ, MAP_PRIVATE, fd, 0);
            if (map == MAP_FAILED) {
                ex = cli_fail("dump", "%s: mmap: %s", path, strerror(errno));
                close(fd);
                continue;
            }
            f.buf = map;
        } else {
            static const uint8_t empty[1];
            f.buf = empty;
        }
        close(fd);
        fflush(stdout);
        kind_of(path)->dump(&f);
        if (map)
            munmap(map, f.len);
        if (f.problems) {
            fflush(stdout);
            fprintf(stderr, "ringtail dump: %s: %u problem%s found\n", path, f.problems,
                    f.problems == 1 ? "" : "s");
            ex = CLI_EXIT_FAIL;
        }
    }
    fflush(stdout);
    return ex;
}
