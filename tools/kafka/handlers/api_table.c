/*
 * api_table.c — the one table of Kafka APIs this broker knows: per API its key, name, the
 * versions its descriptions cover, the versions advertised, the first flexible version, its
 * request and response descriptions (kmsg_*.c) and its handler (handle_*.c). It sits above the
 * codecs and the handlers and owns nothing else; api.c reads it for every lookup, the server
 * dispatches by it, ApiVersions and the README's version table are made from it. It must never
 * advertise an API the server has no handler for.
 *
 * Invariants:
 *   KA1  Entries are ordered by key, keys unique; adv_min..adv_max lies inside
 *        codec_min..codec_max, so whatever is advertised can be decoded.
 *   KA2  first_flexible is taken from Kafka's "flexibleVersions" of the request JSON (request and
 *        response agree for every API here).
 *   KA3  Only APIs with a working handler are advertised: issue 12's, and of issue 13's the
 *        transactional ones (handle_txn.c), OffsetFetch v0-8 and OffsetCommit v0-8
 *        (handle_offsets.c), the group APIs: membership, DeleteGroups and OffsetDelete
 *        (handle_group.c, group_coord.c), KIP-664's operator APIs (handle_ops.c), and topic
 *        administration (handle_admin.c: AlterConfigs, IncrementalAlterConfigs,
 *        CreatePartitions; DeleteRecords is described but not advertised until the engine moves
 *        a log start offset), and issue 23's ACL APIs (handle_acl.c: DescribeAcls, CreateAcls,
 *        DeleteAcls; SECURITY_DISABLED without --authorizer).
 *        An advertised row has a handler (test_kafka_kdesc walks the table).
 *   KA4  Produce is advertised from v0, though only record format v2 (magic 2) is accepted:
 *        librdkafka up to 2.11 (Debian's 2.0.2 included) sends gzip, snappy and lz4 batches
 *        uncompressed unless the broker's Produce range reaches down to v0 (its codec check
 *        asks "is Produce v0..0 supported?" for those three; zstd asks for v7). Clients still
 *        pick v7 (librdkafka: the highest both have; kafkajs: min(its max, ours)); a v0-2
 *        request decodes (no transactional_id) and its non-v2 batches are refused by the
 *        server's batch validation (CORRUPT_MESSAGE), as Kafka 4 refuses message formats 0-1.
 *   KA5  codec_min..codec_max and first_flexible are the request and response descriptions'
 *        own min..max and flex_min (test_kafka_kdesc checks every row).
 *   KA6  The server dispatches by the row: decode the body by the request description (unless
 *        decodes_itself), then call the row's handler. Adding an API is its two descriptions
 *        (kmsg_*.c), its row here and its handler.
 *   KA7  A row whose handler may wait for the disk — a topic created (Metadata's and
 *        CreateTopics' auto-creation too), deleted, altered, given partitions, or its log start
 *        moved, each durable before the answer — is ROW_OFF_LOOP: the server runs it on its
 *        admin thread (server.c KS4), so no loop thread waits for the disk. A Produce goes
 *        there only when it names a topic auto-creation must create
 *        (kafka_produce_creates_topic); every other produce stays on its loop.
 *   KA8  BrokerRegistration (62), BrokerHeartbeat (63) and AllocateProducerIds (67), KRaft's
 *        broker-to-controller APIs,
 *        are ROW_INTERNAL: never advertised (ApiVersions and the README's table stay as they
 *        are), and the server handles them only on a cluster node (--voters); a single broker
 *        refuses them as any unknown version (server.c KS1). OffsetForLeaderEpoch (23) is
 *        internal too (handle_epoch.c): a follower asks its leader before it fetches. Kafka 3.x
 *        advertises it, but librdkafka 2.0.2 (Debian's) never sends it (it has no KIP-320
 *        offset validation; the name is only in its table of API names), and a single broker
 *        has no replicas whose epochs a client could validate against, so ApiVersions, the
 *        goldens and the README's table stay as they are. WriteTxnMarkers (27,
 *        handle_txn_markers.c) is internal too: Kafka's broker lists it in ApiVersions (its
 *        listeners are "broker"), but only a transaction coordinator sends it (and KIP-664's
 *        operator abort: `ringtail txn abort --bootstrap --topic ...`, cmd_txn_cluster.c, sends
 *        it to a cluster node); a single broker writes its
 *        markers itself, so its ApiVersions stays byte for byte what it was.
 *   KA9  An advertised row may describe versions above the advertised ones (codec_max >
 *        adv_max): those are broker-to-broker forms, served only on a cluster node
 *        (kafka_api_internal) and never advertised. AddPartitionsToTxn v4 (KIP-890's batched
 *        VerifyOnly, which a partition leader sends the transaction coordinator; txn_verify.c
 *        KTV5) is one: Kafka 3.6+ advertises 0-4 (clients build v3 at most, forClient), but
 *        ringtail's nodes know each other's versions, so a single broker's ApiVersions, the
 *        goldens and the README's table stay byte-identical.
 */
#include <stddef.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/handlers/handle.h"
#include "tools/kafka/handlers/handle_offsets.h"
#include "tools/kafka/handlers/handle_txn.h"
#include "tools/kafka/handlers/handle_txn_markers.h"
#include "tools/kafka/handlers/txn_verify.h"
#include "tools/kafka/proto/kmsg_int.h"

/* The handlers whose signature is not (slot, body_at) yet. */
#define H(name, call)                                                                              \
    static int h_##name(struct kafka_slot *s, size_t body_at)                                      \
    {                                                                                              \
        (void)body_at;                                                                             \
        return (int)(call);                                                                        \
    }
H(produce, kafka_handle_produce(s))
H(fetch, kafka_handle_fetch(s, false, false))
H(list_offsets, kafka_handle_list_offsets(s))
H(metadata, kafka_handle_metadata(s))
H(find_coordinator, kafka_handle_find_coordinator(s))
H(join_group, kafka_handle_join_group(s))
H(heartbeat, kafka_handle_heartbeat(s))
H(leave_group, kafka_handle_leave_group(s))
H(sync_group, kafka_handle_sync_group(s))
H(describe_groups, kafka_handle_describe_groups(s))
H(delete_groups, kafka_handle_delete_groups(s))
H(offset_delete, kafka_handle_offset_delete(s))
H(api_versions, kafka_handle_api_versions(s))
H(create_topics, kafka_handle_create_topics(s))
H(delete_topics, kafka_handle_delete_topics(s))
H(init_producer_id, kafka_handle_init_producer_id(s))
H(describe_configs, kafka_handle_describe_configs(s))
H(alter_configs, kafka_handle_alter_configs(s))
H(create_partitions, kafka_handle_create_partitions(s))
H(delete_records, kafka_handle_delete_records(s))
H(incremental_alter_configs, kafka_handle_incremental_alter_configs(s))
H(describe_producers, kafka_handle_describe_producers(s))
H(allocate_producer_ids, kafka_handle_allocate_producer_ids(s))
H(broker_registration, kafka_handle_broker_registration(s))
H(broker_heartbeat, kafka_handle_broker_heartbeat(s))
H(alter_partition, kafka_handle_alter_partition(s))
H(offset_for_leader_epoch, kafka_handle_offset_for_leader_epoch(s))
H(describe_transactions, kafka_handle_describe_transactions(s))
H(list_transactions, kafka_handle_list_transactions(s))
/* v4 is a partition leader's VerifyOnly question (KA9; txn_verify.c KTV5) */
H(add_partitions_to_txn, s->header.api_version >= 4 ? kafka_handle_add_partitions_to_txn_v4(s)
                                                    : kafka_handle_add_partitions_to_txn(s))
H(add_offsets_to_txn, kafka_handle_add_offsets_to_txn(s))
H(end_txn, kafka_handle_end_txn(s))
H(write_txn_markers, kafka_handle_write_txn_markers(s))
H(txn_offset_commit, kafka_handle_txn_offset_commit(s))
H(describe_acls, kafka_handle_describe_acls(s))
H(create_acls, kafka_handle_create_acls(s))
H(delete_acls, kafka_handle_delete_acls(s))
H(sasl_handshake, kafka_handle_sasl_handshake(s))
H(sasl_authenticate, kafka_handle_sasl_authenticate(s))
H(describe_user_scram_credentials, kafka_handle_describe_user_scram_credentials(s))
H(alter_user_scram_credentials, kafka_handle_alter_user_scram_credentials(s))
#undef H

static int h_offset_fetch(struct kafka_slot *s, size_t body_at)
{
    return (int)kafka_handle_offset_fetch(s, body_at);
}

static int h_list_groups(struct kafka_slot *s, size_t body_at)
{
    return (int)kafka_handle_list_groups(s, body_at);
}

static int h_offset_commit(struct kafka_slot *s, size_t body_at)
{
    return (int)kafka_handle_offset_commit(s, body_at);
}

/* key, name, codec min/max, advertised min/max, first flexible, advertised, descriptions,
 * handler, decodes itself */
#define ROW(key, name, cmin, cmax, amin, amax, flex, adv, api, handler, self)                      \
    {                                                                                              \
        key, name, cmin, cmax, amin, amax, flex, adv, &kd_##api##_request, &kd_##api##_response,   \
            handler, self, api##_note, false, false                                                \
    }
/* The same, for an API whose handler may wait for the disk (KA7): run off the loop threads. */
#define ROW_OFF_LOOP(key, name, cmin, cmax, amin, amax, flex, adv, api, handler, self)             \
    {                                                                                              \
        key, name, cmin, cmax, amin, amax, flex, adv, &kd_##api##_request, &kd_##api##_response,   \
            handler, self, api##_note, true, false                                                 \
    }

/* A broker-to-controller API (KA8): described, never advertised, served by a cluster node. */
#define ROW_INTERNAL(key, name, cmin, cmax, flex, api, handler, off)                               \
    {                                                                                              \
        key, name, cmin, cmax, cmin, cmax, flex, false, &kd_##api##_request, &kd_##api##_response, \
            handler, false, NULL, off, true                                                        \
    }

/* The README's words on a row's versions (kafka_api_markdown), NULL for none. */
#define produce_note                                                                               \
    "message formats 0/1 (v0-2, and old clients at v3+) are up-converted to v2 on append; "        \
    "the range starts at 0 because librdkafka up to 2.11 sends gzip, snappy and lz4 uncompressed " \
    "otherwise"
#define fetch_note                                                                                 \
    "no incremental fetch sessions: session id 0; v0-3 down-convert to message formats 0/1, "      \
    "streamed in 128 KiB chunks (copied, not zero copy)"
#define list_offsets_note "v0 answers one old-style offset; v7 answers the max timestamp (-3)"
#define metadata_note     "topic ids (v10+) are the zero UUID"
#define offset_commit_note                                                                         \
    "a member's generation is checked against its group; generation −1 for consumers without "   \
    "membership"
#define offset_fetch_note     NULL
#define find_coordinator_note NULL
#define join_group_note                                                                            \
    "MEMBER_ID_REQUIRED from v4; static membership (KIP-345) from v5; a static leader's rejoin "   \
    "skips the assignment (KIP-814 at v9)"
#define heartbeat_note       NULL
#define leave_group_note     NULL
#define sync_group_note      NULL
#define describe_groups_note NULL
#define list_groups_note     NULL
#define delete_groups_note   NULL
#define offset_delete_note   NULL
#define api_versions_note    NULL
#define create_topics_note   NULL
#define delete_topics_note   "v6: no topic has an id, so one named by id alone is unknown"
#define init_producer_id_note                                                                      \
    "idempotent producer ids; with a transactional id, the coordinator's; v3+ recovers a fenced "  \
    "or failed transaction by an epoch bump (KIP-360)"
#define add_partitions_to_txn_note                                                                 \
    "v4 (KIP-890's broker-to-broker verification) only between cluster nodes, not advertised; "    \
    "PRODUCER_FENCED from v2"
#define add_offsets_to_txn_note "PRODUCER_FENCED from v2"
#define end_txn_note            "PRODUCER_FENCED from v2"
#define txn_offset_commit_note  "v3 checks the consumer's generation and member (KIP-447)"
#define describe_acls_note      "with --authorizer on; SECURITY_DISABLED otherwise"
#define create_acls_note        "saved in the data directory before the answer"
#define delete_acls_note        "saved in the data directory before the answer"

#define describe_configs_note                                                                      \
    "a topic's every config with its source; the broker's, with Kafka's dynamic ones and their "   \
    "levels"
#define alter_configs_note                                                                         \
    "topics; the broker: Kafka's dynamic broker configs, per broker or cluster default, kept in "  \
    "broker-configs.meta; the honoured log configs applied as the topics' defaults, the others "   \
    "stored only; static ones INVALID_REQUEST"
#define incremental_alter_configs_note                                                             \
    "topics (APPEND/SUBTRACT on list configs); the broker's dynamic configs, as AlterConfigs"
#define describe_producers_note    NULL
#define delete_records_note        "the log start moves inside a segment; durable before the answer"
#define create_partitions_note     "new partitions on this broker; counts only rise"
#define describe_transactions_note NULL
#define list_transactions_note     NULL
#define sasl_handshake_note                                                                        \
    "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (--sasl-mechanisms); v0: raw SASL tokens follow"
#define sasl_authenticate_note               "session_lifetime_ms (v1+) from --connections-max-reauth-ms"
#define describe_user_scram_credentials_note NULL
#define alter_user_scram_credentials_note    "durable before the answer"

const struct kafka_api kafka_api_rows[] = {
    ROW(KAFKA_PRODUCE, "Produce", 0, 9, 0, 9, 9, true, produce, h_produce, false), /* KA4 */
    ROW(KAFKA_FETCH, "Fetch", 0, 12, 0, 12, 12, true, fetch, h_fetch, false),
    ROW(KAFKA_LIST_OFFSETS, "ListOffsets", 0, 7, 0, 7, 6, true, list_offsets, h_list_offsets,
        false),
    ROW_OFF_LOOP(KAFKA_METADATA, "Metadata", 0, 12, 0, 12, 9, true, metadata, h_metadata, false),
    ROW(KAFKA_OFFSET_COMMIT, "OffsetCommit", 0, 8, 0, 8, 8, true, offset_commit, h_offset_commit,
        true),
    ROW(KAFKA_OFFSET_FETCH, "OffsetFetch", 0, 8, 0, 8, 6, true, offset_fetch, h_offset_fetch, true),
    ROW(KAFKA_FIND_COORDINATOR, "FindCoordinator", 0, 4, 0, 4, 3, true, find_coordinator,
        h_find_coordinator, false),
    ROW(KAFKA_JOIN_GROUP, "JoinGroup", 0, 9, 0, 9, 6, true, join_group, h_join_group, false),
    ROW(KAFKA_HEARTBEAT, "Heartbeat", 0, 4, 0, 4, 4, true, heartbeat, h_heartbeat, false),
    ROW(KAFKA_LEAVE_GROUP, "LeaveGroup", 0, 5, 0, 5, 4, true, leave_group, h_leave_group, false),
    ROW(KAFKA_SYNC_GROUP, "SyncGroup", 0, 5, 0, 5, 4, true, sync_group, h_sync_group, false),
    ROW(KAFKA_DESCRIBE_GROUPS, "DescribeGroups", 0, 5, 0, 5, 5, true, describe_groups,
        h_describe_groups, false),
    ROW(KAFKA_LIST_GROUPS, "ListGroups", 0, 4, 0, 4, 3, true, list_groups, h_list_groups,
        true), /* handle_group.c KH6 */
    ROW(KAFKA_SASL_HANDSHAKE, "SaslHandshake", 0, 1, 0, 1, -1, true, sasl_handshake,
        h_sasl_handshake, false),
    ROW(KAFKA_API_VERSIONS, "ApiVersions", 0, 3, 0, 3, 3, true, api_versions, h_api_versions,
        false),
    ROW_OFF_LOOP(KAFKA_CREATE_TOPICS, "CreateTopics", 0, 7, 0, 7, 5, true, create_topics,
                 h_create_topics, false),
    ROW_OFF_LOOP(KAFKA_DELETE_TOPICS, "DeleteTopics", 0, 6, 0, 6, 4, true, delete_topics,
                 h_delete_topics, false),
    ROW_OFF_LOOP(KAFKA_DELETE_RECORDS, "DeleteRecords", 0, 2, 0, 2, 2, true, delete_records,
                 h_delete_records, false),
    ROW(KAFKA_INIT_PRODUCER_ID, "InitProducerId", 0, 4, 0, 4, 2, true, init_producer_id,
        h_init_producer_id, false),
    /* internal (KA8): the engine call waits for the partition's shard thread, which may be in
     * a durable write round, so it runs off the loops (KA7) */
    ROW_INTERNAL(KAFKA_OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 0, 4, 4,
                 offset_for_leader_epoch, h_offset_for_leader_epoch, true),
    /* v4 described and served on a cluster node, not advertised (KA9) */
    ROW(KAFKA_ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 4, 0, 3, 3, true,
        add_partitions_to_txn, h_add_partitions_to_txn, false),
    ROW(KAFKA_ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 3, 0, 3, 3, true, add_offsets_to_txn,
        h_add_offsets_to_txn, false),
    ROW(KAFKA_END_TXN, "EndTxn", 0, 3, 0, 3, 3, true, end_txn, h_end_txn, false),
    /* internal (KA8): a coordinator's markers to this partition leader (handle_txn_markers.c);
     * rt_txn_write_marker waits for the disk, so it runs off the loops (KA7) */
    ROW_INTERNAL(KAFKA_WRITE_TXN_MARKERS, "WriteTxnMarkers", 0, 1, 1, write_txn_markers,
                 h_write_txn_markers, true),
    ROW(KAFKA_TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 3, 0, 3, 3, true, txn_offset_commit,
        h_txn_offset_commit, false),
    /* ACLs (handle_acl.c); Create and Delete save acls.meta before they answer (KA7) */
    ROW(KAFKA_DESCRIBE_ACLS, "DescribeAcls", 0, 3, 0, 3, 2, true, describe_acls, h_describe_acls,
        false),
    ROW_OFF_LOOP(KAFKA_CREATE_ACLS, "CreateAcls", 0, 3, 0, 3, 2, true, create_acls, h_create_acls,
                 false),
    ROW_OFF_LOOP(KAFKA_DELETE_ACLS, "DeleteAcls", 0, 3, 0, 3, 2, true, delete_acls, h_delete_acls,
                 false),
    ROW(KAFKA_DESCRIBE_CONFIGS, "DescribeConfigs", 0, 4, 0, 4, 4, true, describe_configs,
        h_describe_configs, false),
    ROW_OFF_LOOP(KAFKA_ALTER_CONFIGS, "AlterConfigs", 0, 2, 0, 2, 2, true, alter_configs,
                 h_alter_configs, false),
    ROW(KAFKA_SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, 0, 2, 2, true, sasl_authenticate,
        h_sasl_authenticate, false),
    ROW_OFF_LOOP(KAFKA_CREATE_PARTITIONS, "CreatePartitions", 0, 3, 0, 3, 2, true,
                 create_partitions, h_create_partitions, false),
    ROW(KAFKA_DELETE_GROUPS, "DeleteGroups", 0, 2, 0, 2, 2, true, delete_groups, h_delete_groups,
        false),
    ROW_OFF_LOOP(KAFKA_INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1, 0, 1, 1, true,
                 incremental_alter_configs, h_incremental_alter_configs, false),
    ROW(KAFKA_OFFSET_DELETE, "OffsetDelete", 0, 0, 0, 0, -1, true, offset_delete, h_offset_delete,
        false),
    ROW(KAFKA_DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0, 0, 0, 0, true,
        describe_user_scram_credentials, h_describe_user_scram_credentials, false),
    ROW_OFF_LOOP(KAFKA_ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0, 0, 0, 0,
                 true, alter_user_scram_credentials, h_alter_user_scram_credentials, false),
    /* KRaft's AlterPartition (KA8): handle_cluster.c */
    ROW_INTERNAL(KAFKA_ALTER_PARTITION, "AlterPartition", 0, 0, 0, alter_partition,
                 h_alter_partition, true), /* waits for its commit: off the loops (KA7) */
    /* KIP-664 operator APIs: flexible from v0; handlers in handle_ops.c */
    ROW(KAFKA_DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0, 0, 0, 0, true, describe_producers,
        h_describe_producers, false),
    /* KRaft's broker-to-controller APIs (KA8): handle_cluster.c */
    ROW_INTERNAL(KAFKA_BROKER_REGISTRATION, "BrokerRegistration", 0, 0, 0, broker_registration,
                 h_broker_registration, true), /* waits for its commit: off the loops (KA7) */
    ROW_INTERNAL(KAFKA_BROKER_HEARTBEAT, "BrokerHeartbeat", 0, 0, 0, broker_heartbeat,
                 h_broker_heartbeat, false), /* never waits */
    ROW(KAFKA_DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0, 0, 0, 0, true,
        describe_transactions, h_describe_transactions, false),
    ROW(KAFKA_LIST_TRANSACTIONS, "ListTransactions", 0, 1, 0, 1, 0, true, list_transactions,
        h_list_transactions, false),
    /* KIP-730's producer-id blocks, from the controller (KA8): handle_cluster.c */
    ROW_INTERNAL(KAFKA_ALLOCATE_PRODUCER_IDS, "AllocateProducerIds", 0, 0, 0, allocate_producer_ids,
                 h_allocate_producer_ids, true), /* waits for its commit: off the loops (KA7) */
};
#undef ROW

const size_t kafka_api_rows_count = sizeof kafka_api_rows / sizeof kafka_api_rows[0];
