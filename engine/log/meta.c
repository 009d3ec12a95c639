/*
 * meta.c — the topic catalogue file `ringtail.meta` (layout in meta.h and docs/format.md) and
 * path naming for partition directories and segment files. Parses untrusted bytes without
 * reading out of bounds; replaces the file atomically. Never touches segments or indexes.
 */
#include "meta.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "index/crc32c.h"
#include "error.h"
#include "fsutil.h"

_Static_assert(META_HEADER_BYTES == 14, "meta header is 14 bytes");

bool meta_topic_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t n = strlen(name);
    if (n == 0 || n > RT_TOPIC_NAME_MAX)
        return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

bool meta_topic_name_internal(const char *name)
{
    return name && name[0] == '_' && name[1] == '_';
}

static int catalogue_reserve(struct meta_catalogue *cat, uint32_t want)
{
    if (want <= cat->capacity)
        return 0;
    uint32_t cap = cat->capacity ? cat->capacity * 2 : 8;
    while (cap < want)
        cap *= 2;
    struct meta_topic *t = realloc(cat->topics, (size_t)cap * sizeof(*t));
    if (!t)
        return -ENOMEM;
    cat->topics = t;
    cat->capacity = cap;
    return 0;
}

struct meta_topic *meta_find_mut(struct meta_catalogue *cat, const char *name)
{
    for (uint32_t i = 0; i < cat->count; i++)
        if (strcmp(cat->topics[i].name, name) == 0)
            return &cat->topics[i];
    return NULL;
}

const struct meta_topic *meta_find(const struct meta_catalogue *cat, const char *name)
{
    for (uint32_t i = 0; i < cat->count; i++)
        if (strcmp(cat->topics[i].name, name) == 0)
            return &cat->topics[i];
    return NULL;
}

int meta_add_topic(struct meta_catalogue *cat, const char *name, uint32_t partitions)
{
    if (!meta_topic_name_valid(name))
        return RT_E_INVALID_TOPIC;
    if (partitions == 0)
        return RT_E_INVALID_ARGUMENT;
    if (meta_find(cat, name))
        return RT_E_TOPIC_ALREADY_EXISTS;
    int rc = catalogue_reserve(cat, cat->count + 1);
    if (rc)
        return rc;
    struct meta_topic *t = &cat->topics[cat->count++];
    memset(t, 0, sizeof(*t));
    memcpy(t->name, name, strlen(name) + 1);
    t->partitions = partitions;
    return 0;
}

int meta_remove_topic(struct meta_catalogue *cat, const char *name, struct meta_topic *out,
                      uint32_t *index_out)
{
    for (uint32_t i = 0; i < cat->count; i++) {
        if (strcmp(cat->topics[i].name, name) != 0)
            continue;
        *out = cat->topics[i];
        *index_out = i;
        memmove(&cat->topics[i], &cat->topics[i + 1],
                (size_t)(cat->count - i - 1) * sizeof(cat->topics[0]));
        cat->count--;
        return 0;
    }
    return RT_E_UNKNOWN_TOPIC_OR_PARTITION;
}

void meta_insert_topic(struct meta_catalogue *cat, const struct meta_topic *t, uint32_t index)
{
    assert(index <= cat->count && cat->count < cat->capacity);
    memmove(&cat->topics[index + 1], &cat->topics[index],
            (size_t)(cat->count - index) * sizeof(cat->topics[0]));
    cat->topics[index] = *t;
    cat->count++;
}

void meta_catalogue_free(struct meta_catalogue *cat)
{
    for (uint32_t i = 0; i < cat->count; i++)
        topic_config_free(&cat->topics[i].config);
    free(cat->topics);
    memset(cat, 0, sizeof(*cat));
}

/* A version-2 entry's configs at *pos (M5): count u8, then (key_len u8, key, value_len u8,
 * value) with known keys in ascending order, each value in its one spelling (TC2). */
static int configs_parse(const uint8_t *buf, size_t len, size_t *pos, struct topic_config *c,
                         const char **why, size_t *bad)
{
    size_t at = *pos;
    if (len - at < 1) {
        *why = "truncated topic configs";
        *bad = at;
        return RT_E_CORRUPT;
    }
    uint8_t count = buf[at++];
    int last = -1;
    for (uint8_t i = 0; i < count; i++) {
        size_t entry = at;
        char key[256], value[256], canon[TOPIC_CONFIG_VALUE_MAX + 1];
        if (len - at < 1 || len - at - 1 < buf[at]) {
            *why = "truncated topic config";
            *bad = entry;
            return RT_E_CORRUPT;
        }
        size_t key_len = buf[at];
        memcpy(key, buf + at + 1, key_len);
        key[key_len] = 0;
        at += 1 + key_len;
        if (len - at < 1 || len - at - 1 < buf[at]) {
            *why = "truncated topic config";
            *bad = entry;
            return RT_E_CORRUPT;
        }
        size_t value_len = buf[at];
        memcpy(value, buf + at + 1, value_len);
        value[value_len] = 0;
        at += 1 + value_len;
        int k = -1;
        if (strlen(key) != key_len || strlen(value) != value_len ||
            topic_config_check(key, value, &k, canon) != 0) {
            *why = "unknown topic config or invalid value";
            *bad = entry;
            return RT_E_CORRUPT;
        }
        if (k <= last) {
            *why = "topic configs not in ascending key order, or repeated";
            *bad = entry;
            return RT_E_CORRUPT;
        }
        if (strcmp(canon, value) != 0) {
            *why = "topic config value not in its canonical spelling";
            *bad = entry;
            return RT_E_CORRUPT;
        }
        last = k;
        if (topic_config_set(c, (enum topic_config_key)k, value) != 0)
            return -ENOMEM;
    }
    *pos = at;
    return 0;
}

#define PARSE_FAIL(reason, off)                                                                    \
    do {                                                                                           \
        *why = (reason);                                                                           \
        *bad_offset = (off);                                                                       \
        meta_catalogue_free(out);                                                                  \
        return RT_E_CORRUPT;                                                                       \
    } while (0)

int meta_parse(const uint8_t *buf, size_t len, struct meta_catalogue *out, const char **why,
               size_t *bad_offset)
{
    memset(out, 0, sizeof(*out));
    if (len < META_HEADER_BYTES)
        PARSE_FAIL("file shorter than the 14-byte header", len);
    if (be32_load(buf) != META_MAGIC)
        PARSE_FAIL("bad magic", 0);
    uint16_t version = be16_load(buf + 4);
    if (version != META_VERSION && version != META_VERSION_CONFIGS)
        PARSE_FAIL("unsupported version", 4);
    if (be32_load(buf + 6) != crc32c(0, buf + 10, len - 10))
        PARSE_FAIL("crc mismatch", 6);
    uint32_t count = be32_load(buf + 10);
    /* Each entry takes at least 2 + 1 + 4 bytes: bound the count before allocating. */
    if ((uint64_t)count * 7 > len - META_HEADER_BYTES)
        PARSE_FAIL("topic count larger than the file can hold", 10);
    size_t pos = META_HEADER_BYTES;
    uint64_t configs_total = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (len - pos < 2)
            PARSE_FAIL("truncated topic entry", pos);
        uint16_t name_len = be16_load(buf + pos);
        if (name_len == 0 || name_len > RT_TOPIC_NAME_MAX)
            PARSE_FAIL("topic name length out of range", pos);
        if (len - pos - 2 < (size_t)name_len + 4)
            PARSE_FAIL("truncated topic entry", pos);
        char name[RT_TOPIC_NAME_MAX + 1];
        memcpy(name, buf + pos + 2, name_len);
        name[name_len] = '\0';
        if (!meta_topic_name_valid(name) || strlen(name) != name_len)
            PARSE_FAIL("invalid topic name", pos + 2);
        uint32_t partitions = be32_load(buf + pos + 2 + name_len);
        if (partitions == 0)
            PARSE_FAIL("topic with zero partitions", pos + 2 + name_len);
        int rc = meta_add_topic(out, name, partitions);
        if (rc == RT_E_TOPIC_ALREADY_EXISTS)
            PARSE_FAIL("duplicate topic name", pos + 2);
        if (rc) {
            meta_catalogue_free(out);
            return rc;
        }
        pos += 2 + (size_t)name_len + 4;
        if (version == META_VERSION_CONFIGS) {
            const char *cwhy = NULL;
            size_t cbad = 0;
            rc = configs_parse(buf, len, &pos, &out->topics[out->count - 1].config, &cwhy, &cbad);
            if (rc == RT_E_CORRUPT)
                PARSE_FAIL(cwhy, cbad);
            if (rc) {
                meta_catalogue_free(out);
                return rc;
            }
            configs_total += topic_config_count(&out->topics[out->count - 1].config);
        }
    }
    if (pos != len)
        PARSE_FAIL("trailing bytes after the last topic", pos);
    if (version == META_VERSION_CONFIGS && configs_total == 0)
        PARSE_FAIL("version 2 without a topic config (written as version 1)", 4);
    return 0;
}

int meta_serialise(const struct meta_catalogue *cat, uint8_t **buf_out, size_t *len_out)
{
    size_t len = META_HEADER_BYTES;
    bool configs = false;
    for (uint32_t i = 0; i < cat->count; i++) {
        len += 2 + strlen(cat->topics[i].name) + 4;
        configs = configs || topic_config_count(&cat->topics[i].config) > 0;
    }
    if (configs)
        for (uint32_t i = 0; i < cat->count; i++) {
            len += 1;
            for (int k = 0; k < TC_KEYS; k++)
                if (cat->topics[i].config.value[k])
                    len += 2 + strlen(topic_config_name((enum topic_config_key)k)) +
                           strlen(cat->topics[i].config.value[k]);
        }
    uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    be32_store(buf, META_MAGIC);
    be16_store(buf + 4, configs ? META_VERSION_CONFIGS : META_VERSION);
    be32_store(buf + 10, cat->count);
    size_t pos = META_HEADER_BYTES;
    for (uint32_t i = 0; i < cat->count; i++) {
        size_t n = strlen(cat->topics[i].name);
        be16_store(buf + pos, (uint16_t)n);
        memcpy(buf + pos + 2, cat->topics[i].name, n);
        be32_store(buf + pos + 2 + n, cat->topics[i].partitions);
        pos += 2 + n + 4;
        if (!configs)
            continue;
        const struct topic_config *c = &cat->topics[i].config;
        assert(topic_config_count(c) <= UINT8_MAX);
        buf[pos++] = (uint8_t)topic_config_count(c);
        for (int k = 0; k < TC_KEYS; k++) {
            if (!c->value[k])
                continue;
            const char *key = topic_config_name((enum topic_config_key)k);
            size_t kl = strlen(key), vl = strlen(c->value[k]);
            assert(kl <= UINT8_MAX && vl <= TOPIC_CONFIG_VALUE_MAX);
            buf[pos++] = (uint8_t)kl;
            memcpy(buf + pos, key, kl);
            pos += kl;
            buf[pos++] = (uint8_t)vl;
            memcpy(buf + pos, c->value[k], vl);
            pos += vl;
        }
    }
    assert(pos == len);
    be32_store(buf + 6, crc32c(0, buf + 10, len - 10));
    *buf_out = buf;
    *len_out = len;
    return 0;
}

bool meta_orphan_partition(const char *dir, char *name_out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        const char *dash = strrchr(de->d_name, '-');
        if (!dash || dash == de->d_name || dash[1] == '\0')
            continue;
        bool digits = true;
        for (const char *c = dash + 1; *c; c++)
            digits = digits && *c >= '0' && *c <= '9';
        char path[4096];
        struct stat st;
        if (!digits ||
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        snprintf(name_out, cap, "%s", de->d_name);
        found = true;
    }
    closedir(d);
    return found;
}

int meta_load(const char *dir, struct meta_catalogue *out)
{
    memset(out, 0, sizeof(*out));
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, META_FILE) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = fs_read_file(path, &buf, &len, 64u << 20);
    char orphan[256];
    if (rc == -ENOENT && meta_orphan_partition(dir, orphan, sizeof(orphan)))
        return error_set(RT_E_CORRUPT,
                         "%s: missing, but the directory holds partition data (%s/): the "
                         "catalogue was lost; not opened as an empty directory",
                         path, orphan);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return error_set(rc, "%s: cannot read: %s", path, strerror(-rc));
    const char *why = NULL;
    size_t bad = 0;
    rc = meta_parse(buf, len, out, &why, &bad);
    free(buf);
    if (rc == RT_E_CORRUPT)
        return error_set(rc, "%s: offset %zu: %s", path, bad, why);
    return rc;
}

int meta_store(struct io_fault_plan *faults, const char *dir, const struct meta_catalogue *cat)
{
    bool renamed = false;
    return meta_store_renamed(faults, dir, cat, &renamed);
}

int meta_store_renamed(struct io_fault_plan *faults, const char *dir,
                       const struct meta_catalogue *cat, bool *renamed)
{
    *renamed = false;
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = meta_serialise(cat, &buf, &len);
    if (rc)
        return rc;
    rc = fs_replace_file_renamed(faults, dir, META_TMP_FILE, META_FILE, buf, len, renamed);
    free(buf);
    return rc;
}

int meta_partition_dir(char *buf, size_t cap, const char *dir, const char *topic,
                       uint32_t partition)
{
    int n = snprintf(buf, cap, "%s/%s-%" PRIu32, dir, topic, partition);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

int meta_segment_file(char *buf, size_t cap, const char *partition_dir, int64_t base_offset,
                      const char *ext)
{
    int n = snprintf(buf, cap, "%s/%020" PRId64 ".%s", partition_dir, base_offset, ext);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}
