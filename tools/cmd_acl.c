/*
 * cmd_acl.c — `ringtail acl add|list|remove DIR --principal User:alice --operation READ
 * (--topic T | --group G | --transactional-id X | --cluster) [--pattern literal|prefixed]
 * [--deny] [--host H]`: the ACLs of a data directory (DIR/acls.meta, docs/format.md J), as
 * Kafka's kafka-acls.sh edits them. A broker running over DIR with `--authorizer on` picks a
 * change up by the file's mtime within a second (authorizer.h AZ4); the file is replaced
 * atomically (acl_store.h AS2). Everything is checked before the file is touched; a corrupt
 * file is reported with its offset and never rewritten.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "tools/kafka/auth/acl_store.h"

static void acl_usage(FILE *out)
{
    fprintf(
        out,
        "usage: ringtail acl add DIR --principal P --operation OP RESOURCE [OPTIONS]\n"
        "       ringtail acl list DIR [--principal P] [--operation OP] [RESOURCE] [OPTIONS]\n"
        "       ringtail acl remove DIR [--principal P] [--operation OP] [RESOURCE] [OPTIONS]\n"
        "\n"
        "RESOURCE is one of --topic T, --group G, --transactional-id X, --cluster.\n"
        "  --principal P     Type:name, e.g. User:alice; User:* is every user\n"
        "  --operation OP    ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,\n"
        "                    CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,\n"
        "                    IDEMPOTENT_WRITE\n"
        "  --pattern P       literal (the default for add) or prefixed; T, G or X '*' with\n"
        "                    literal is every resource of the type\n"
        "  --deny            a DENY entry (default ALLOW); DENY wins over ALLOW\n"
        "  --host H          the client address it applies to (default *)\n"
        "\n"
        "add     adds the ACL to DIR/acls.meta (nothing if it is there).\n"
        "list    prints the matching ACLs, one a line:\n"
        "        PRINCIPAL<TAB>HOST<TAB>PERMISSION<TAB>OPERATION<TAB>TYPE<TAB>PATTERN<TAB>NAME\n"
        "        (a missing option matches any; a name without --pattern matches it in\n"
        "        either pattern).\n"
        "remove  removes the matching ACLs (at least one option needed) and prints how many.\n"
        "A broker running over DIR with --authorizer on applies a change within a second.\n"
        "\n"
        "Exit status: 0 success, 1 failure (DIR missing, acls.meta corrupt or not\n"
        "writable), 2 usage error.\n");
}

int cmd_acl(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        acl_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc < 3)
        return cli_usage("acl", "usage: ringtail acl add|list|remove DIR [OPTIONS]");
    const char *sub = argv[1], *dir = argv[2];
    bool add = strcmp(sub, "add") == 0, list = strcmp(sub, "list") == 0,
         remove = strcmp(sub, "remove") == 0;
    if (!add && !list && !remove)
        return cli_usage("acl", "unknown subcommand '%s' (add, list, remove)", sub);
    static const struct option longs[] = {
        {"principal", required_argument, NULL, 'p'},
        {"operation", required_argument, NULL, 'o'},
        {"topic", required_argument, NULL, 't'},
        {"group", required_argument, NULL, 'g'},
        {"transactional-id", required_argument, NULL, 'x'},
        {"cluster", no_argument, NULL, 'c'},
        {"pattern", required_argument, NULL, 'P'},
        {"deny", no_argument, NULL, 'd'},
        {"host", required_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct acl_filter f = {
        ACL_RESOURCE_ANY, ACL_PATTERN_ANY, ACL_OP_ANY, ACL_PERM_ANY, NULL, NULL, NULL};
    bool deny = false, given = false;
    int resources = 0, opt;
    optind = 3;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        given = true;
        switch (opt) {
        case 'p':
            f.principal = optarg;
            break;
        case 'o':
            if (!(f.operation = acl_operation_parse(optarg)) || f.operation == ACL_OP_ANY)
                return cli_usage("acl", "unknown --operation '%s'", optarg);
            break;
        case 't':
        case 'g':
        case 'x':
        case 'c':
            resources++;
            f.resource_type = opt == 't'   ? ACL_RESOURCE_TOPIC
                              : opt == 'g' ? ACL_RESOURCE_GROUP
                              : opt == 'x' ? ACL_RESOURCE_TRANSACTIONAL_ID
                                           : ACL_RESOURCE_CLUSTER;
            f.name = opt == 'c' ? ACL_CLUSTER_NAME : optarg;
            break;
        case 'P':
            f.pattern_type = acl_pattern_type_parse(optarg);
            if (f.pattern_type != ACL_PATTERN_LITERAL && f.pattern_type != ACL_PATTERN_PREFIXED)
                return cli_usage("acl", "--pattern is literal or prefixed, not '%s'", optarg);
            break;
        case 'd':
            deny = true;
            break;
        case 'H':
            f.host = optarg;
            break;
        case 'h':
            acl_usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_usage("acl", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_usage("acl", "unexpected argument '%s'", argv[optind]);
    if (resources > 1)
        return cli_usage("acl", "name one resource (--topic, --group, --transactional-id or "
                                "--cluster)");
    if (deny)
        f.permission = ACL_PERM_DENY;
    struct acl_binding b = {0};
    if (add) {
        if (!f.principal || f.operation == ACL_OP_ANY || resources != 1)
            return cli_usage("acl", "add needs --principal, --operation and a resource");
        b = (struct acl_binding){f.resource_type,
                                 f.pattern_type == ACL_PATTERN_ANY ? ACL_PATTERN_LITERAL
                                                                   : f.pattern_type,
                                 f.operation,
                                 deny ? ACL_PERM_DENY : ACL_PERM_ALLOW,
                                 (char *)f.name,
                                 (char *)f.principal,
                                 (char *)(f.host ? f.host : ACL_WILDCARD)};
        const char *why = acl_binding_invalid(&b);
        if (why)
            return cli_usage("acl", "%s", why);
    }
    if (remove && !given)
        return cli_usage("acl", "remove needs at least one option (it would remove every ACL)");
    struct stat st;
    if (add && stat(dir, &st) != 0 && errno == ENOENT && mkdir(dir, 0755) != 0)
        return cli_fail("acl", "%s: cannot create: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_fail("acl", "%s: not a directory", dir);
    struct acl_set set;
    char err[600];
    int rc = acl_store_load(dir, &set, err, sizeof(err));
    if (rc)
        return cli_fail("acl", "%s", err);
    int code = CLI_EXIT_OK;
    if (add) {
        rc = acl_set_add(&set, &b);
        if (rc > 0 && acl_store_save(dir, &set, err, sizeof(err)) != 0)
            code = cli_fail("acl", "%s", err);
        else if (rc < 0)
            code = cli_fail("acl", "out of memory");
        else
            printf("%s\n", rc > 0 ? "added" : "already there");
    } else {
        struct acl_set matched;
        acl_set_init(&matched);
        int n = acl_set_remove(&set, &f, &matched);
        if (n < 0) {
            code = cli_fail("acl", "out of memory");
        } else if (list) {
            for (uint32_t i = 0; i < matched.count; i++) {
                const struct acl_binding *m = &matched.v[i];
                printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m->principal, m->host,
                       acl_permission_name(m->permission), acl_operation_name(m->operation),
                       acl_resource_type_name(m->resource_type),
                       acl_pattern_type_name(m->pattern_type), m->name);
            }
        } else if (n > 0 && acl_store_save(dir, &set, err, sizeof(err)) != 0) {
            code = cli_fail("acl", "%s", err);
        } else {
            printf("removed %d\n", n);
        }
        acl_set_free(&matched);
    }
    acl_set_free(&set);
    return code;
}
