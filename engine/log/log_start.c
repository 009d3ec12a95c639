/*
 * log_start.c — the log-start-offset file (log_start.h; docs/format.md A.8, normative). Parses
 * untrusted bytes without reading out of bounds, serialises, stores atomically. Never touches a
 * segment.
 *
 * Layout (all integers big-endian):
 *
 *   offset size field
 *        0    4 magic u32          0x52544c53 ("RTLS")
 *        4    2 version u16        1
 *        6    4 crc u32            CRC-32C of bytes [10, 18)
 *       10    8 log_start i64      the offset DeleteRecords moved the log start to
 *
 * Validity (what log_start_parse enforces; anything else is RT_E_CORRUPT naming the byte offset
 * of the first bad field):
 *   LS1  exactly 18 bytes; magic and version as above; the CRC matches.
 *   LS2  log_start >= 0.
 */
#include "log_start.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "fsutil.h"
#include "index/byte_order.h"
#include "index/crc32c.h"
#include "ringtail.h"

static int bad(const char **why, size_t *bad_offset, const char *what, size_t at)
{
    *why = what;
    *bad_offset = at;
    return RT_E_CORRUPT;
}

int log_start_parse(const uint8_t *buf, size_t len, int64_t *offset_out, const char **why,
                    size_t *bad_offset)
{
    if (len != LOG_START_BYTES) /* LS1 */
        return bad(why, bad_offset, "log-start-offset file is not 18 bytes", len < 18 ? len : 18);
    if (be32_load(buf) != LOG_START_MAGIC)
        return bad(why, bad_offset, "bad magic", 0);
    if (be16_load(buf + 4) != LOG_START_VERSION)
        return bad(why, bad_offset, "unknown version", 4);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, LOG_START_BYTES - 10))
        return bad(why, bad_offset, "CRC mismatch", 6);
    int64_t off = u64_as_i64(be64_load(buf + 10));
    if (off < 0) /* LS2 */
        return bad(why, bad_offset, "negative log start offset", 10);
    *offset_out = off;
    return 0;
}

void log_start_serialise(int64_t offset, uint8_t buf[LOG_START_BYTES])
{
    be32_store(buf, LOG_START_MAGIC);
    be16_store(buf + 4, LOG_START_VERSION);
    be64_store(buf + 10, (uint64_t)offset);
    be32_store(buf + 6, crc32c(0, buf + 10, LOG_START_BYTES - 10));
}

int log_start_load(const char *partition_dir, int64_t *offset_out, const char **why,
                   size_t *bad_offset)
{
    return log_start_load_named(partition_dir, LOG_START_FILE, offset_out, why, bad_offset);
}

int log_start_load_named(const char *partition_dir, const char *name, int64_t *offset_out,
                         const char **why, size_t *bad_offset)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", partition_dir, name) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, &buf, &len, LOG_START_BYTES);
    if (rc == -EFBIG)
        return bad(why, bad_offset, "log-start-offset file is not 18 bytes", LOG_START_BYTES);
    if (rc)
        return rc;
    rc = log_start_parse(buf, len, offset_out, why, bad_offset);
    free(buf);
    return rc;
}

int log_start_store(struct io_fault_plan *faults, const char *partition_dir, int64_t offset)
{
    return log_start_store_named(faults, partition_dir, LOG_START_TMP_FILE, LOG_START_FILE, offset);
}

int log_start_store_named(struct io_fault_plan *faults, const char *partition_dir,
                          const char *tmp_name, const char *name, int64_t offset)
{
    uint8_t buf[LOG_START_BYTES];
    log_start_serialise(offset, buf);
    return fs_replace_file(faults, partition_dir, tmp_name, name, buf, sizeof(buf));
}
