/*
 * cli.c — shared helpers of the `ringtail` CLI (see cli.h): messages and exit codes, strict
 * number parsing, opening an engine without creating directories by accident, removing scratch
 * trees, and the two ways the tools print untrusted bytes (a short preview, a JSON string).
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void vmessage(const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "ringtail%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'ringtail %s --help'.\n", cmd ? cmd : "");
    return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

int cli_fail_rt(const char *cmd, int rc, const char *fmt, ...)
{
    /* Take the detail first: nothing below calls the engine, but be explicit about order. */
    const char *detail = rt_error_detail();
    va_list ap;
    va_start(ap, fmt);
    vmessage(cmd, fmt, ap);
    va_end(ap);
    /* The detail usually names the file and offset; it often already contains the code's
     * name (an -errno detail from the engine repeats strerror), so print that only once. */
    const char *name = rt_strerror(rc);
    if (detail && *detail && strstr(detail, name))
        fprintf(stderr, ": %s", detail);
    else if (detail && *detail)
        fprintf(stderr, ": %s (%s)", name, detail);
    else
        fprintf(stderr, ": %s", name);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

bool cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool cli_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = (int64_t)v;
    return true;
}

int cli_engine_open(const char *cmd, const char *dir, bool create, const struct rt_options *opts,
                    rt_engine **out, bool *created_out)
{
    struct stat st;
    bool created = false;
    if (created_out)
        *created_out = false;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || !create)
            return cli_fail(cmd, "%s: %s", dir, strerror(errno));
        if (mkdir(dir, 0755) != 0)
            return cli_fail(cmd, "%s: cannot create directory: %s", dir, strerror(errno));
        created = true;
    } else if (!S_ISDIR(st.st_mode)) {
        return cli_fail(cmd, "%s: not a directory", dir);
    } else if (!create) {
        char meta[PATH_MAX];
        if (snprintf(meta, sizeof meta, "%s/ringtail.meta", dir) >= (int)sizeof meta)
            return cli_fail(cmd, "%s: path too long", dir);
        if (access(meta, F_OK) != 0)
            return cli_fail(cmd,
                            "%s: not a ringtail data directory (no ringtail.meta); create a "
                            "topic first with 'ringtail topic create'",
                            dir);
    }

    struct rt_options defaults;
    if (!opts) {
        cli_options_init(&defaults);
        opts = &defaults;
    }
    int rc = rt_open(dir, opts, out);
    if (rc != 0) {
        if (created)
            cli_remove_tree(dir);
        if (rc == RT_E_DIRECTORY_LOCKED)
            return cli_fail(cmd,
                            "%s: the directory is locked by a running engine (%s/.lock); stop "
                            "it first",
                            dir, dir);
        return cli_fail_rt(cmd, rc, "%s: cannot open", dir);
    }
    if (created_out)
        *created_out = created;
    if (opts->read_only) {
        struct rt_stats stats;
        if (rt_stats_get(*out, &stats) == 0 && stats.opened_unclean)
            fprintf(stderr,
                    "ringtail %s: warning: %s was not closed cleanly; reading each partition up "
                    "to its last valid batch (%" PRIu64
                    " bytes beyond it ignored), nothing repaired: "
                    "the next writing open recovers it\n",
                    cmd, dir, stats.tail_bytes_ignored);
    }
    return CLI_EXIT_OK;
}

void cli_options_init(struct rt_options *opts)
{
    rt_options_init(opts);
    opts->segment_size_bytes = CLI_SEGMENT_BYTES_DEFAULT;
}

int cli_engine_open_read_only(const char *cmd, const char *dir, rt_engine **out)
{
    struct rt_options opts;
    rt_options_init(&opts);
    opts.read_only = true;
    return cli_engine_open(cmd, dir, false, &opts, out, NULL);
}

int cli_engine_close(const char *cmd, rt_engine *engine)
{
    int rc = rt_close(engine);
    if (rc != 0)
        return cli_fail_rt(cmd, rc, "closing the engine");
    return CLI_EXIT_OK;
}

static int remove_at(int parent_fd, const char *name)
{
    struct stat st;
    if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(parent_fd, name, 0) == 0 ? 0 : -errno;

    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = -errno;
        close(fd);
        return e;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        int r = remove_at(dirfd(d), de->d_name);
        if (r != 0 && rc == 0)
            rc = r;
    }
    closedir(d);
    if (unlinkat(parent_fd, name, AT_REMOVEDIR) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

int cli_remove_tree(const char *path)
{
    return remove_at(AT_FDCWD, path);
}

void cli_preview(FILE *out, const uint8_t *p, int32_t len, size_t max_chars)
{
    if (len < 0 || !p) {
        fputs(len < 0 ? "null" : "\"\"", out);
        return;
    }
    fputc('"', out);
    size_t used = 0;
    int32_t i;
    for (i = 0; i < len; i++) {
        uint8_t c = p[i];
        size_t w = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? 1
                   : (c == '"' || c == '\\')                        ? 2
                                                                    : 4;
        if (used + w > max_chars)
            break;
        if (w == 1)
            fputc(c, out);
        else if (w == 2)
            fprintf(out, "\\%c", c);
        else
            fprintf(out, "\\x%02x", c);
        used += w;
    }
    fputc('"', out);
    if (i < len)
        fputs("...", out);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when the bytes there are not one
 * (overlong forms, surrogates and code points above U+10FFFF are invalid, as RFC 3629 says). */
static int utf8_sequence(const uint8_t *p, size_t left)
{
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    int n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if ((size_t)n > left)
        return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void cli_json_string(FILE *out, const uint8_t *p, int32_t len)
{
    if (len < 0 || (!p && len > 0)) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    size_t n = (size_t)len;
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        switch (c) {
        case '"':
            fputs("\\\"", out);
            i++;
            continue;
        case '\\':
            fputs("\\\\", out);
            i++;
            continue;
        case '\n':
            fputs("\\n", out);
            i++;
            continue;
        case '\r':
            fputs("\\r", out);
            i++;
            continue;
        case '\t':
            fputs("\\t", out);
            i++;
            continue;
        case '\b':
            fputs("\\b", out);
            i++;
            continue;
        case '\f':
            fputs("\\f", out);
            i++;
            continue;
        default:
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            i++;
            continue;
        }
        int seq = utf8_sequence(p + i, n - i);
        if (seq == 0) {
            fprintf(out, "\\u%04x", c);
            i++;
            continue;
        }
        fwrite(p + i, 1, (size_t)seq, out);
        i += (size_t)seq;
    }
    fputc('"', out);
}

const char *cli_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, cap, "%.1f %s", v, units[u]);
    return buf;
}
