/*
 * cmd_user.c — `ringtail user add|list|remove DIR`: the SCRAM credentials of a data directory
 * (tools/kafka/sasl/cred_store.h; docs/format.md section S), the users `ringtail serve`
 * authenticates with SASL PLAIN and SCRAM. Kafka's `kafka-configs --alter --add-config
 * 'SCRAM-SHA-512=[password=...]' --entity-type users` in a command of its own. It stores what
 * Kafka stores (salt, iterations, StoredKey, ServerKey) and never the password; it reads the
 * password from a file so it never appears in a process list. It works while a broker serves
 * the directory (cred_store.h CS2, CS3): the broker sees a change at its next authentication.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tools/kafka/sasl/cred_store.h"
#include "tools/kafka/sasl/scram.h"

static void user_usage(FILE *out)
{
    fprintf(out,
            "usage: ringtail user add DIR --name NAME --mechanism M --password-file FILE\n"
            "                         [--iterations N]\n"
            "       ringtail user list DIR\n"
            "       ringtail user remove DIR --name NAME [--mechanism M]\n"
            "\n"
            "The SCRAM credentials of data directory DIR (DIR/scram-credentials), which\n"
            "`ringtail serve` checks SASL PLAIN and SCRAM-SHA-256/512 against. Stored as Kafka\n"
            "stores them: a random 32-byte salt, the iterations, StoredKey and ServerKey; never\n"
            "the password. A running broker sees a change at its next authentication.\n"
            "\n"
            "  --name NAME          the user (1..255 bytes); its principal is User:NAME\n"
            "  --mechanism M        SCRAM-SHA-256 or SCRAM-SHA-512 (add: SCRAM-SHA-512;\n"
            "                       remove: every mechanism of the user when not given)\n"
            "  --password-file FILE the password: the file's first line ('-': stdin)\n"
            "  --iterations N       PBKDF2 iterations, 4096..16384 (4096, Kafka's default)\n"
            "\n"
            "list prints one line per credential: NAME MECHANISM iterations=N.\n"
            "Exit status: 0 success, 1 failure (remove: no such credential), 2 usage error.\n");
}

static int read_password(const char *file, char *out, size_t cap, size_t *len)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!f)
        return -errno;
    int rc = 0;
    if (!fgets(out, (int)cap, f))
        rc = ferror(f) ? -EIO : -ENODATA;
    if (f != stdin)
        fclose(f);
    if (rc)
        return rc;
    size_t n = strlen(out);
    if (n + 1 == cap && out[n - 1] != '\n')
        return -E2BIG;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    *len = n;
    return n ? 0 : -ENODATA;
}

static int print_one(void *ctx, const char *user, const struct scram_credential *c)
{
    (void)ctx;
    printf("%s %s iterations=%" PRIu32 "\n", user, scram_mech_name(c->mech), c->iterations);
    return 0;
}

int cmd_user(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        user_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *verb = argv[1];
    bool add = strcmp(verb, "add") == 0, list = strcmp(verb, "list") == 0,
         remove = strcmp(verb, "remove") == 0;
    if (!add && !list && !remove)
        return cli_usage("user", "unknown verb '%s' (add, list, remove)", verb);
    const char *dir = NULL, *name = NULL, *mech_s = NULL, *pw_file = NULL;
    uint32_t iterations = SCRAM_ITERATIONS_MIN;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            user_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (a[0] == '-' && a[1] == '-') {
            if (i + 1 >= argc)
                return cli_usage("user", "%s needs a value", a);
            const char *v = argv[++i];
            if (strcmp(a, "--name") == 0 && !list)
                name = v;
            else if (strcmp(a, "--mechanism") == 0 && !list)
                mech_s = v;
            else if (strcmp(a, "--password-file") == 0 && add)
                pw_file = v;
            else if (strcmp(a, "--iterations") == 0 && add) {
                if (!cli_parse_u32(v, SCRAM_ITERATIONS_MIN, SCRAM_ITERATIONS_MAX, &iterations))
                    return cli_usage("user", "--iterations must be %d..%d", SCRAM_ITERATIONS_MIN,
                                     SCRAM_ITERATIONS_MAX);
            } else
                return cli_usage("user", "unknown option %s for user %s", a, verb);
            continue;
        }
        if (dir)
            return cli_usage("user", "unexpected argument '%s'", a);
        dir = a;
    }
    if (!dir)
        return cli_usage("user", "missing DIR");
    if (!list && !name)
        return cli_usage("user", "missing --name");
    if (name && (name[0] == '\0' || strlen(name) > SCRAM_USER_MAX))
        return cli_usage("user", "--name must be 1..%d bytes", SCRAM_USER_MAX);
    enum scram_mech mech = SCRAM_SHA_512;
    if (mech_s && !scram_mech_parse(mech_s, strlen(mech_s), &mech))
        return cli_usage("user", "--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512, not '%s'",
                         mech_s);
    if (add && !pw_file)
        return cli_usage("user", "missing --password-file");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_fail("user", "%s: not a directory", dir);

    char err[CRED_ERROR_MAX] = "";
    struct cred_store *cs = NULL;
    int rc = cred_store_open(dir, &cs, err, sizeof(err));
    if (rc)
        return cli_fail("user", "%s", rc == RT_E_CORRUPT ? err : rt_strerror(rc));
    int code = CLI_EXIT_OK;
    if (list) {
        rc = cred_store_list(cs, print_one, NULL);
        if (rc)
            code = cli_fail("user", "%s: %s", dir, rt_strerror(rc));
    } else if (add) {
        char pw[1024];
        size_t pl = 0;
        rc = read_password(pw_file, pw, sizeof(pw), &pl);
        struct scram_credential c;
        if (rc)
            code = cli_fail("user", "--password-file %s: %s", pw_file,
                            rc == -ENODATA ? "no password in it (an empty first line)"
                            : rc == -E2BIG ? "password longer than 1022 bytes"
                                           : strerror(-rc));
        else if ((rc = scram_credential_make(mech, pw, pl, iterations, NULL, 0, &c)) != 0 ||
                 (rc = cred_store_upsert(cs, name, &c)) != 0)
            code = cli_fail("user", "%s: cannot store the credential: %s", dir, rt_strerror(rc));
        else
            printf("%s %s iterations=%" PRIu32 " stored\n", name, scram_mech_name(mech),
                   iterations);
        OPENSSL_cleanse(pw, sizeof(pw));
        OPENSSL_cleanse(&c, sizeof(c));
    } else {
        rc = cred_store_remove(cs, name, mech_s ? (int)mech : 0);
        if (rc == -ENOENT)
            code = cli_fail("user", "%s: no credential for '%s'%s%s", dir, name,
                            mech_s ? " with " : "", mech_s ? mech_s : "");
        else if (rc)
            code = cli_fail("user", "%s: %s", dir, rt_strerror(rc));
        else
            printf("%s%s%s removed\n", name, mech_s ? " " : "", mech_s ? mech_s : "");
    }
    cred_store_close(cs);
    return code;
}
