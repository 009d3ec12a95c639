/*
 * cli.h — what the `ringtail` subcommands share: the command table, exit codes, error printing
 * (every message names the command and, where there is one, the file), argument parsing, opening
 * an engine without leaving debris behind, byte previews and JSON string escaping.
 *
 * Exit codes are the same for every command: 0 success, 1 failure (the engine, a file or the
 * data said no), 2 usage (the command line itself is wrong; nothing was touched).
 */
#ifndef RT_TOOLS_CLI_H
#define RT_TOOLS_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ringtail.h"

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

/* One subcommand: argv[0] is the command's own name ("produce"), options follow. */
struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

int cmd_topic(int argc, char **argv);
int cmd_produce(int argc, char **argv);
int cmd_consume(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_murmur2(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_txn(int argc, char **argv);
/* `ringtail txn list/abort --bootstrap HOST:PORT[,...]` (cmd_txn_cluster.c): over the wire. */
bool txn_cluster_bootstrap_valid(const char *list);
int txn_cluster_list(const char *bootstrap, bool all, int timeout_ms);
int txn_cluster_abort_id(const char *bootstrap, const char *id, int timeout_ms);
int txn_cluster_abort_partition(const char *bootstrap, const char *topic, uint32_t partition,
                                int64_t producer_id, int16_t epoch, bool force, int timeout_ms);
int cmd_serve(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
/* `ringtail cluster check DIR DIR...` (cmd_cluster_check.c): replicas compared offline. */
int cmd_cluster_check(int argc, char **argv);
int cmd_acl(int argc, char **argv);
int cmd_user(int argc, char **argv);

/* Prints "ringtail CMD: <msg>" and a hint to stderr; returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "ringtail CMD: <msg>" to stderr; returns CLI_EXIT_FAIL. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* As cli_fail, then ": <rt_strerror(rc)>" and the engine's detail when it has one. */
int cli_fail_rt(const char *cmd, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Strict decimal parsing: the whole string, no sign for unsigned, range-checked. */
bool cli_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out);
bool cli_parse_i64(const char *s, int64_t *out);

/* Opens the engine on dir. When `create` is false the directory must already hold a catalogue
 * (ringtail.meta), so a mistyped path is an error instead of a fresh empty directory. When
 * `create` is true a missing directory is made and *created_out tells the caller so it can
 * remove it again if the command fails. Prints its own message; returns an exit code. */
int cli_engine_open(const char *cmd, const char *dir, bool create, const struct rt_options *opts,
                    rt_engine **out, bool *created_out);

/* Segment size of the CLI's writing commands (topic create, produce, txn abort): 64 MiB, not the
 * engine's 1 GiB default, because every partition's active segment is preallocated. */
#define CLI_SEGMENT_BYTES_DEFAULT (64u << 20)

/* rt_options_init plus the CLI's segment size. */
void cli_options_init(struct rt_options *opts);

/* For the reading commands (consume, txn list, topic list): opens dir with opts.read_only, so
 * nothing is preallocated or written and a running writer makes it fail (RT_E_DIRECTORY_LOCKED)
 * instead of being raced. Warns on stderr when the directory was not closed cleanly (reads stop
 * at each partition's last valid batch; nothing is repaired). Returns an exit code. */
int cli_engine_open_read_only(const char *cmd, const char *dir, rt_engine **out);
/* rt_close with a message on failure; returns an exit code. */
int cli_engine_close(const char *cmd, rt_engine *engine);

/* rm -rf of a tree this process made (demo scratch dirs, a directory a failed command created).
 * Does not follow symlinks. Returns 0 or -errno. */
int cli_remove_tree(const char *path);

/* Writes at most max_chars characters of p as a quoted preview: printable ASCII as is, other
 * bytes as \xNN, "..." when cut. len -1 prints `null`. */
void cli_preview(FILE *out, const uint8_t *p, int32_t len, size_t max_chars);

/* Writes p as a JSON string with quotes. The rule (documented in `consume --help`): valid UTF-8
 * is copied, except '"', '\\' and control characters, which are escaped (\n \r \t \b \f, else
 * \u00XX); every byte that is not part of a valid UTF-8 sequence is written as \u00XX, i.e. as
 * the Latin-1 character with that code. len -1 writes `null`. */
void cli_json_string(FILE *out, const uint8_t *p, int32_t len);

/* Human-readable byte count ("1.5 MiB") into buf. */
const char *cli_bytes(char *buf, size_t cap, uint64_t bytes);

#endif /* RT_TOOLS_CLI_H */
