/*
 * cmd_consume.c — `ringtail consume DIR TOPIC`: prints the records of one partition or of all
 * partitions in order, from a start offset to the end of what is readable when the command
 * starts (the high watermark, or the last stable offset under read_committed), then exits.
 *
 * Reads go through the zero-copy path an embedder uses: rt_fetch_start, then rt_records_init /
 * rt_records_next over the fetch, which checks every batch's CRC and applies read_committed
 * filtering. A fetch that yields no record (only control batches, or aborted data) still moves
 * the position past the batches it returned.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define FETCH_MAX_BYTES (1u << 20)

enum output_format { FORMAT_VALUE, FORMAT_JSON };

struct consumer {
    rt_engine *engine;
    const char *topic;
    enum rt_isolation isolation;
    enum output_format format;
    uint64_t remaining; /* --max */
    uint64_t printed;
};

static void consume_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ringtail consume DIR TOPIC [-p N] [--from OFFSET|earliest|latest]\n"
        "                        [--isolation read_committed|read_uncommitted]\n"
        "                        [--format value|json] [--max N]\n"
        "\n"
        "Prints the records of TOPIC (all partitions in order, or partition N with -p) from\n"
        "the start offset up to the end of what is readable now, then exits.\n"
        "\n"
        "  -p, --partition N   only partition N\n"
        "  --from WHERE        earliest (the default), latest (prints nothing: the end), or\n"
        "                      an offset, which must lie within every partition read\n"
        "  --isolation LEVEL   read_uncommitted (the default, up to the high watermark) or\n"
        "                      read_committed (up to the last stable offset; records of\n"
        "                      aborted transactions are skipped)\n"
        "  --format FMT        value: the value and a newline per record (a null value\n"
        "                      prints just the newline); json: one object per line,\n"
        "                      {\"topic\",\"partition\",\"offset\",\"timestamp\",\"key\",\"value\","
        "\"headers\":[{\"key\",\"value\"}]}\n"
        "  --max N             stop after N records in total\n"
        "\n"
        "JSON strings: null key or value is null; valid UTF-8 is copied; '\"', '\\' and\n"
        "control characters are escaped; each byte that is not part of valid UTF-8 is\n"
        "written as \\u00XX (the Latin-1 character with that byte's code), so binary\n"
        "payloads stay readable but are not byte-exact when they contain such characters.\n"
        "\n"
        "Exit status: 0 at the end, 1 failure (unknown topic, offset out of range, a\n"
        "damaged batch), 2 usage error.\n");
}

static void print_record(struct consumer *co, uint32_t partition, const struct rt_record_view *r)
{
    if (co->format == FORMAT_VALUE) {
        if (r->value_len > 0)
            fwrite(r->value, 1, (size_t)r->value_len, stdout);
        fputc('\n', stdout);
        return;
    }
    fputs("{\"topic\":", stdout);
    cli_json_string(stdout, (const uint8_t *)co->topic, (int32_t)strlen(co->topic));
    printf(",\"partition\":%" PRIu32 ",\"offset\":%" PRId64 ",\"timestamp\":%" PRId64 ",\"key\":",
           partition, r->offset, r->timestamp_ms);
    cli_json_string(stdout, r->key, r->key_len);
    fputs(",\"value\":", stdout);
    cli_json_string(stdout, r->value, r->value_len);
    fputs(",\"headers\":[", stdout);
    for (uint32_t i = 0; i < r->header_count; i++) {
        struct rt_header h;
        if (rt_record_header(r, i, &h) != 0)
            break; /* the batch CRC passed; a header that does not decode is not printed */
        fputs(i ? ",{\"key\":" : "{\"key\":", stdout);
        cli_json_string(stdout, h.key, h.key_len);
        fputs(",\"value\":", stdout);
        cli_json_string(stdout, h.value, h.value_len);
        fputc('}', stdout);
    }
    fputs("]}\n", stdout);
}

static uint64_t load_be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

/* Last offset of the last whole batch in the fetched bytes, or -1. Reads only the 12-byte log
 * headers and lastOffsetDelta, bounds-checked; the iterator has already validated the rest. */
static int64_t fetched_last_offset(const struct rt_fetch_view *v)
{
    int64_t last = -1;
    size_t pos = 0;
    while (v->size_bytes - pos >= 61 && pos < v->size_bytes) {
        const uint8_t *b = v->data + pos;
        int64_t base = (int64_t)load_be(b, 8);
        uint32_t length = (uint32_t)load_be(b + 8, 4);
        if (length < 49 || length > v->size_bytes - pos - 12)
            break;
        int32_t delta = (int32_t)load_be(b + 23, 4);
        if (delta >= 0)
            last = base + delta;
        pos += 12 + (size_t)length;
    }
    return last;
}

/* Prints partition p from `start` up to `end`. Returns an exit code. */
static int consume_partition(struct consumer *co, uint32_t p, int64_t start, int64_t end)
{
    int64_t offset = start;
    while (offset < end && co->remaining > 0) {
        int64_t before = offset;
        rt_fetch *f = NULL;
        int rc =
            rt_fetch_start(co->engine, co->topic, p, offset, FETCH_MAX_BYTES, co->isolation, &f);
        if (rc != 0)
            return cli_fail_rt("consume", rc, "fetch %s-%" PRIu32 " at offset %" PRId64, co->topic,
                               p, offset);
        const struct rt_fetch_view *v = rt_fetch_get(f);
        if (v->size_bytes == 0) {
            rt_fetch_release(f);
            break;
        }
        struct rt_records it;
        rc = rt_records_init(&it, f, offset);
        if (rc != 0) {
            cli_fail_rt("consume", rc, "%s-%" PRIu32 " at offset %" PRId64, co->topic, p, offset);
            rt_fetch_release(f);
            return CLI_EXIT_FAIL;
        }
        struct rt_record_view r;
        while (co->remaining > 0 && (rc = rt_records_next(&it, &r)) == 0) {
            if (r.offset >= end) {
                rc = RT_E_END;
                offset = end;
                break;
            }
            print_record(co, p, &r);
            co->printed++;
            co->remaining--;
            offset = r.offset + 1;
        }
        if (rc != 0 && rc != RT_E_END) {
            cli_fail_rt(
                "consume", rc, "%s-%" PRIu32 " near offset %" PRId64 " (%s, position %" PRIu64 ")",
                co->topic, p, offset, v->segment_path ? v->segment_path : "?", v->segment_position);
            rt_fetch_release(f);
            return CLI_EXIT_FAIL;
        }
        int64_t last = fetched_last_offset(v);
        if (last + 1 > offset)
            offset = last + 1;
        rt_fetch_release(f);
        if (offset == before) /* the fetch moved us nowhere: never spin */
            return cli_fail("consume",
                            "%s-%" PRIu32 ": no progress past offset %" PRId64
                            " (the fetch returned no batch ending at or after it)",
                            co->topic, p, offset);
    }
    return CLI_EXIT_OK;
}

int cmd_consume(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"partition", required_argument, NULL, 'p'},
        {"from", required_argument, NULL, 'f'},
        {"isolation", required_argument, NULL, 'i'},
        {"format", required_argument, NULL, 'F'},
        {"max", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct consumer co = {
        .isolation = RT_READ_UNCOMMITTED, .format = FORMAT_VALUE, .remaining = UINT64_MAX};
    bool one = false;
    uint32_t only = 0;
    int64_t from = RT_OFFSET_EARLIEST;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!cli_parse_u32(optarg, 0, UINT32_MAX - 1, &only))
                return cli_usage("consume", "-p needs a partition number, not '%s'", optarg);
            one = true;
            break;
        case 'f':
            if (strcmp(optarg, "earliest") == 0)
                from = RT_OFFSET_EARLIEST;
            else if (strcmp(optarg, "latest") == 0)
                from = RT_OFFSET_LATEST;
            else if (!cli_parse_i64(optarg, &from) || from < 0)
                return cli_usage("consume",
                                 "--from must be earliest, latest or an offset >= 0, not '%s'",
                                 optarg);
            break;
        case 'i':
            if (strcmp(optarg, "read_committed") == 0)
                co.isolation = RT_READ_COMMITTED;
            else if (strcmp(optarg, "read_uncommitted") == 0)
                co.isolation = RT_READ_UNCOMMITTED;
            else
                return cli_usage("consume",
                                 "--isolation must be read_committed or read_uncommitted, not "
                                 "'%s'",
                                 optarg);
            break;
        case 'F':
            if (strcmp(optarg, "value") == 0)
                co.format = FORMAT_VALUE;
            else if (strcmp(optarg, "json") == 0)
                co.format = FORMAT_JSON;
            else
                return cli_usage("consume", "--format must be value or json, not '%s'", optarg);
            break;
        case 'm': {
            int64_t m;
            if (!cli_parse_i64(optarg, &m) || m < 0)
                return cli_usage("consume", "--max needs a count >= 0, not '%s'", optarg);
            co.remaining = (uint64_t)m;
            break;
        }
        case 'h':
            consume_usage(stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage("consume", "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage("consume", "unknown option %s", argv[optind - 1]);
        }
    }
    if (argc - optind < 1)
        return cli_usage("consume", "missing DIR");
    if (argc - optind < 2)
        return cli_usage("consume", "missing TOPIC");
    if (argc - optind > 2)
        return cli_usage("consume", "unexpected argument '%s'", argv[optind + 2]);
    const char *dir = argv[optind];
    co.topic = argv[optind + 1];

    int ex = cli_engine_open_read_only("consume", dir, &co.engine);
    if (ex != CLI_EXIT_OK)
        return ex;
    uint32_t partitions = 0;
    int rc = rt_topic_describe(co.engine, co.topic, &partitions);
    if (rc != 0) {
        if (rc == RT_E_UNKNOWN_TOPIC_OR_PARTITION)
            ex = cli_fail("consume", "no topic '%s' in %s", co.topic, dir);
        else
            ex = cli_fail_rt("consume", rc, "topic '%s' in %s", co.topic, dir);
        goto out;
    }
    if (one && only >= partitions) {
        ex = cli_usage("consume",
                       "partition %" PRIu32 " does not exist: %s has %" PRIu32 " partition%s", only,
                       co.topic, partitions, partitions == 1 ? "" : "s");
        goto out;
    }
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    for (uint32_t p = one ? only : 0; p < (one ? only + 1 : partitions); p++) {
        int64_t log_start, end, start;
        rc = rt_list_offsets(co.engine, co.topic, p, RT_OFFSET_EARLIEST, co.isolation, &log_start);
        if (rc == 0)
            rc = rt_list_offsets(co.engine, co.topic, p, RT_OFFSET_LATEST, co.isolation, &end);
        if (rc != 0) {
            ex = cli_fail_rt("consume", rc, "offsets of %s-%" PRIu32, co.topic, p);
            goto out;
        }
        if (from == RT_OFFSET_EARLIEST)
            start = log_start;
        else if (from == RT_OFFSET_LATEST)
            start = end;
        else
            start = from;
        if (start < log_start || start > end) {
            fflush(stdout);
            ex = cli_fail("consume",
                          "offset %" PRId64 " is out of range for %s-%" PRIu32
                          ": valid start offsets are %" PRId64 "..%" PRId64 " (%s)",
                          start, co.topic, p, log_start, end,
                          co.isolation == RT_READ_COMMITTED ? "log start to last stable offset"
                                                            : "log start to high watermark");
            goto out;
        }
        ex = consume_partition(&co, p, start, end);
        if (ex != CLI_EXIT_OK || co.remaining == 0)
            break;
    }
out:
    if (fflush(stdout) != 0 && ex == CLI_EXIT_OK)
        ex = cli_fail("consume", "writing stdout failed");
    {
        int close_ex = cli_engine_close("consume", co.engine);
        if (ex == CLI_EXIT_OK)
            ex = close_ex;
    }
    return ex;
}
