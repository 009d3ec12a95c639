/*
 * hw_checkpoint.c — the `replication-offset-checkpoint` text format (hw_checkpoint.h HC1-HC3,
 * docs/format.md M): a strict parser, its formatter and the durable file replacement.
 */
#include "tools/kafka/cluster/hw_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/ringtail.h"

void hw_checkpoint_free(struct hw_checkpoint *c)
{
    free(c->entries);
    c->entries = NULL;
    c->count = 0;
}

int hw_checkpoint_add(struct hw_checkpoint *c, const char *topic, int32_t partition, int64_t offset)
{
    size_t n = strlen(topic);
    if (n == 0 || n > HW_CHECKPOINT_TOPIC_MAX || partition < 0 || offset < 0)
        return -EINVAL;
    struct hw_entry *e = realloc(c->entries, (c->count + 1) * sizeof(*e));
    if (!e)
        return -ENOMEM;
    c->entries = e;
    memcpy(e[c->count].topic, topic, n + 1);
    e[c->count].partition = partition;
    e[c->count].offset = offset;
    c->count++;
    return 0;
}

int64_t hw_checkpoint_get(const struct hw_checkpoint *c, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < c->count; i++)
        if (c->entries[i].partition == partition && strcmp(c->entries[i].topic, topic) == 0)
            return c->entries[i].offset;
    return -1;
}

/* One line [p, end): its text without the "\n"; false when no "\n" ends it. */
static bool next_line(const char **p, const char *end, const char **s, size_t *n)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (!nl)
        return false;
    *s = *p;
    *n = (size_t)(nl - *p);
    *p = nl + 1;
    return true;
}

/* Plain decimal (HC1): digits only, no leading zero (but "0"), at most max. */
static bool decimal(const char *s, size_t n, int64_t max, int64_t *out)
{
    if (n == 0 || n > 19 || (n > 1 && s[0] == '0'))
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        int d = s[i] - '0';
        if (v > (max - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool topic_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

int hw_checkpoint_parse(const char *buf, size_t len, struct hw_checkpoint *out, size_t *bad_line)
{
    *out = (struct hw_checkpoint){0};
    *bad_line = 0;
    const char *p = buf, *end = buf + len, *s;
    size_t n;
    int64_t count;
    *bad_line = 1;
    if (!next_line(&p, end, &s, &n) || n != 1 || s[0] != '0') /* version 0 */
        return RT_E_CORRUPT;
    *bad_line = 2;
    if (!next_line(&p, end, &s, &n) || !decimal(s, n, INT32_MAX, &count))
        return RT_E_CORRUPT;
    for (int64_t i = 0; i < count; i++) {
        *bad_line = (size_t)i + 3;
        if (!next_line(&p, end, &s,
                       &n)) /* the count exceeds the lines: nothing allocated past them */
            goto corrupt;
        const char *sp1 = memchr(s, ' ', n);
        if (!sp1)
            goto corrupt;
        size_t tn = (size_t)(sp1 - s);
        const char *rest = sp1 + 1;
        size_t rn = n - tn - 1;
        const char *sp2 = memchr(rest, ' ', rn);
        if (!sp2 || tn == 0 || tn > HW_CHECKPOINT_TOPIC_MAX)
            goto corrupt;
        for (size_t k = 0; k < tn; k++)
            if (!topic_char(s[k]))
                goto corrupt;
        if ((tn == 1 && s[0] == '.') || (tn == 2 && s[0] == '.' && s[1] == '.'))
            goto corrupt;
        int64_t part, off;
        if (!decimal(rest, (size_t)(sp2 - rest), INT32_MAX, &part) ||
            !decimal(sp2 + 1, rn - (size_t)(sp2 - rest) - 1, INT64_MAX, &off))
            goto corrupt;
        char topic[HW_CHECKPOINT_TOPIC_MAX + 1];
        memcpy(topic, s, tn);
        topic[tn] = '\0';
        int rc = hw_checkpoint_add(out, topic, (int32_t)part, off);
        if (rc) {
            hw_checkpoint_free(out);
            return rc;
        }
    }
    *bad_line = (size_t)count + 3;
    if (p != end)
        goto corrupt;
    *bad_line = 0;
    return 0;
corrupt:
    hw_checkpoint_free(out);
    return RT_E_CORRUPT;
}

int hw_checkpoint_format(const struct hw_checkpoint *c, char **buf, size_t *len)
{
    size_t cap = 32 + c->count * (HW_CHECKPOINT_TOPIC_MAX + 40);
    char *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    size_t n = (size_t)snprintf(b, cap, "0\n%zu\n", c->count);
    for (size_t i = 0; i < c->count; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s %" PRId32 " %" PRId64 "\n", c->entries[i].topic,
                              c->entries[i].partition, c->entries[i].offset);
    *buf = b;
    *len = n;
    return 0;
}

int hw_checkpoint_load(const char *dir, struct hw_checkpoint *out, size_t *bad_line)
{
    *out = (struct hw_checkpoint){0};
    *bad_line = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, HW_CHECKPOINT_FILE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno; /* HC3 */
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size > (64 << 20)) {
        int rc = errno ? -errno : -EFBIG;
        close(fd);
        return rc;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
        if (k <= 0) {
            int rc = k < 0 ? -errno : -EIO;
            free(buf);
            close(fd);
            return rc;
        }
        got += (size_t)k;
    }
    close(fd);
    int rc = hw_checkpoint_parse(buf, got, out, bad_line);
    free(buf);
    return rc;
}

int hw_checkpoint_store(const char *dir, const struct hw_checkpoint *c)
{
    char *buf;
    size_t len;
    int rc = hw_checkpoint_format(c, &buf, &len);
    if (rc)
        return rc;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, HW_CHECKPOINT_FILE);
    snprintf(path, sizeof path, "%s/%s", dir, HW_CHECKPOINT_FILE);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(buf);
        return -errno;
    }
    size_t done = 0;
    while (done < len && rc == 0) {
        ssize_t k = write(fd, buf + done, len - done);
        if (k < 0 && errno != EINTR)
            rc = -errno;
        else if (k > 0)
            done += (size_t)k;
    }
    free(buf);
    if (rc == 0 && fsync(fd) != 0) /* HC2: the bytes before the name */
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return rc;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    if (fsync(dfd) != 0) /* HC2: the rename itself */
        rc = -errno;
    close(dfd);
    return rc;
}
