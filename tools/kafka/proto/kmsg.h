/*
 * kmsg.h — Kafka request and response codecs, both directions (issue 12's APIs; issue 13's
 * below them): every message is described once as data (kdesc.h; the descriptions live in
 * kmsg_*.c) and these entry points run the interpreter over it. Field names follow Kafka's
 * message definitions (snake_case of the JSON names); a field a version lacks decodes as Kafka's
 * default for it and is not written at that version. Fields added for newer versions sit at the
 * end of their struct; those a handler does not fill and whose Kafka default is not 0 are
 * written as that default when left 0 (kdesc.h, KDF_ZERO_IS_DEFAULT).
 *
 * Decoders: `int kmsg_<api>_request_decode(struct kp_reader *, int16_t version,
 * struct kp_arena *, struct kmsg_<api>_request *)`. The reader is positioned after the request
 * header; the whole rest of the frame must be the body (trailing bytes are RT_E_CORRUPT).
 * Strings and bytes point into the request buffer, arrays into the arena (valid until the
 * arena is reset). Returns 0, RT_E_CORRUPT (malformed: truncated, a length that lies, a null
 * where none is allowed), KP_E_LIMIT (the arena is too small for the arrays) or RT_E_UNSUPPORTED
 * (a version outside the codec's range, api.h codec_min..codec_max). A decoder never allocates.
 *
 * Encoders: `int kmsg_<api>_response_encode(struct kp_writer *, int16_t version,
 * const struct kmsg_<api>_response *)` write the body only (after kafka_response_header_encode).
 * Returns 0, RT_E_UNSUPPORTED (version), RT_E_INVALID_ARGUMENT (a string over 32767 bytes),
 * KP_E_LIMIT (hole table full) or -ENOMEM.
 *
 * The other direction: `kmsg_<api>_request_encode` (a client's request) and
 * `kmsg_<api>_response_decode` (an answer read back), with the same rules and errors.
 *
 * A whole response frame: `size_t at = kafka_frame_begin(w); kafka_response_header_encode(...);
 * kmsg_..._response_encode(...); kafka_frame_end(w, at);`, then send writer bytes with the holes
 * filled in order (kp_hole.at says where each goes).
 */
#ifndef RT_KAFKA_KMSG_H
#define RT_KAFKA_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/proto/api.h"
#include "tools/kafka/proto/proto.h"

/* ---- headers and framing ---- */

struct kafka_request_header {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    struct kp_str client_id; /* nullable */
    int header_version;      /* 1 or 2 (from api.h); 1 for an unknown key */
};

/* Decodes a request header from the start of a frame (after its 4-byte size). Returns 0 or
 * RT_E_CORRUPT. On RT_E_CORRUPT, api_key/api_version/correlation_id hold whatever of them was
 * read (each -1 when not), so the server can still answer with the correlation id. */
int kafka_request_header_decode(struct kp_reader *r, struct kafka_request_header *h);
/* Writes the response header v0 or v1 that (api_key, api_version) need. */
int kafka_response_header_encode(struct kp_writer *w, int16_t api_key, int16_t api_version,
                                 int32_t correlation_id);
/* Reserves the 4-byte frame size; returns its position for kafka_frame_end. */
size_t kafka_frame_begin(struct kp_writer *w);
/* Patches the frame size (writer bytes and holes after `at`). Returns 0, KP_E_LIMIT if the frame
 * exceeds INT32_MAX, or the writer's sticky error. */
int kafka_frame_end(struct kp_writer *w, size_t at);

/* ---- ApiVersions (18), v0-3; v3 flexible (its response header stays v0) ---- */

struct kmsg_api_versions_request {
    struct kp_str client_software_name;    /* v3+ */
    struct kp_str client_software_version; /* v3+ */
};

struct kmsg_api_version_range {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
};

struct kmsg_api_versions_response {
    int16_t error_code;
    const struct kmsg_api_version_range *api_keys;
    int32_t api_keys_count;
    int32_t throttle_time_ms; /* v1+ */
};

int kmsg_api_versions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_api_versions_request *out);
int kmsg_api_versions_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_api_versions_response *m);
/* Fills `out` (room for `max`) with the advertised table; returns the count written. */
size_t kmsg_api_versions_fill(struct kmsg_api_version_range *out, size_t max);
/* The version to answer an ApiVersions request of `requested` at, and the error to put in it:
 * a version we advertise is answered as asked with NONE; any other is answered at v0 with
 * UNSUPPORTED_VERSION (the client then retries with a version from the table), as Kafka does.
 * The server skips the body decode in the second case (a newer body may not parse). */
int16_t kmsg_api_versions_response_version(int16_t requested, int16_t *error_code);

/* ---- Metadata (3), v0-12; v9+ flexible ---- */

struct kmsg_metadata_request_topic {
    uint8_t topic_id[16]; /* v10+; zero = by name */
    struct kp_str name;   /* nullable v10+ (a topic asked by id only) */
};

struct kmsg_metadata_request {
    struct kmsg_metadata_request_topic *topics;
    int32_t topics_count;           /* -1 = all topics (v1+ null; v0's empty array means all) */
    bool allow_auto_topic_creation; /* v4+; true before v4 */
    bool include_cluster_authorized_operations; /* v8-10 */
    bool include_topic_authorized_operations;   /* v8+ */
};

struct kmsg_metadata_broker {
    int32_t node_id;
    struct kp_str host;
    int32_t port;
    struct kp_str rack; /* v1+, nullable */
};

struct kmsg_metadata_partition {
    int16_t error_code;
    int32_t partition_index;
    int32_t leader_id;
    const int32_t *replica_nodes;
    int32_t replica_nodes_count;
    const int32_t *isr_nodes;
    int32_t isr_nodes_count;
    int32_t leader_epoch;            /* v7+; -1: unknown (a single broker's answer) */
    const int32_t *offline_replicas; /* v5+ */
    int32_t offline_replicas_count;
};

struct kmsg_metadata_topic {
    int16_t error_code;
    struct kp_str name; /* nullable v12+ (a topic asked by an unknown id) */
    bool is_internal;   /* v1+ */
    const struct kmsg_metadata_partition *partitions;
    int32_t partitions_count;
    int32_t topic_authorized_operations; /* v8+; a handler's 0 is written as INT32_MIN */
    uint8_t topic_id[16];                /* v10+ (on the wire after name); zero: none (KM3) */
};

struct kmsg_metadata_response {
    int32_t throttle_time_ms; /* v3+ */
    const struct kmsg_metadata_broker *brokers;
    int32_t brokers_count;
    struct kp_str cluster_id; /* v2+, nullable */
    int32_t controller_id;    /* v1+ */
    const struct kmsg_metadata_topic *topics;
    int32_t topics_count;
    int32_t cluster_authorized_operations; /* v8-10; a handler's 0 is written as INT32_MIN */
};

int kmsg_metadata_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                 struct kmsg_metadata_request *out);
int kmsg_metadata_response_encode(struct kp_writer *w, int16_t version,
                                  const struct kmsg_metadata_response *m);

/* ---- Produce (0), v0-9 (v9+ flexible): advertised from v0 for librdkafka's codec check
 * (api.c KA4); message formats 0/1 are up-converted on append ---- */

struct kmsg_produce_partition {
    int32_t index;
    struct kp_bytes records; /* the client's RecordBatch bytes, into the request; may be null */
};

struct kmsg_produce_topic {
    struct kp_str name;
    struct kmsg_produce_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_produce_request {
    struct kp_str transactional_id; /* v3+, nullable; null before */
    int16_t acks;
    int32_t timeout_ms;
    struct kmsg_produce_topic *topics;
    int32_t topics_count;
};

/* KIP-467: which batch of a partition's records failed, and why (v8+). */
struct kmsg_produce_record_error {
    int32_t batch_index;
    struct kp_str batch_index_error_message; /* nullable */
};

struct kmsg_produce_partition_response {
    int32_t index;
    int16_t error_code;
    int64_t base_offset;
    int64_t log_append_time_ms;                            /* v2+; -1 unless LogAppendTime */
    int64_t log_start_offset;                              /* v5+ */
    const struct kmsg_produce_record_error *record_errors; /* v8+ */
    int32_t record_errors_count;
    struct kp_str error_message; /* v8+, nullable: a handler's {NULL, 0} is written null */
};

struct kmsg_produce_topic_response {
    struct kp_str name;
    const struct kmsg_produce_partition_response *partitions;
    int32_t partitions_count;
};

struct kmsg_produce_response {
    const struct kmsg_produce_topic_response *responses;
    int32_t responses_count;
    int32_t throttle_time_ms; /* v1+ */
};

int kmsg_produce_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                struct kmsg_produce_request *out);
int kmsg_produce_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_produce_response *m);

/* ---- Fetch (1), v0-12 (v0-3: message formats 0/1, handle_fetch.c KF5; v12+ flexible) ---- */

struct kmsg_fetch_partition {
    int32_t partition;
    int32_t current_leader_epoch; /* v9+; -1 before */
    int64_t fetch_offset;
    int64_t log_start_offset; /* v5+; -1 before */
    int32_t partition_max_bytes;
    int32_t last_fetched_epoch; /* v12+; -1 before */
};

struct kmsg_fetch_topic {
    struct kp_str topic;
    struct kmsg_fetch_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_fetch_forgotten {
    struct kp_str topic;
    int32_t *partitions;
    int32_t partitions_count;
};

struct kmsg_fetch_request {
    int32_t replica_id;
    int32_t max_wait_ms;
    int32_t min_bytes;
    int32_t max_bytes;
    int8_t isolation_level; /* 0 read_uncommitted, 1 read_committed */
    int32_t session_id;     /* v7+; 0 before */
    int32_t session_epoch;  /* v7+; -1 before */
    struct kmsg_fetch_topic *topics;
    int32_t topics_count;
    struct kmsg_fetch_forgotten *forgotten_topics_data; /* v7+ */
    int32_t forgotten_topics_data_count;
    struct kp_str rack_id;    /* v11+; empty before */
    struct kp_str cluster_id; /* v12+ tagged (0), nullable; null when absent */
};

struct kmsg_fetch_aborted {
    int64_t producer_id;
    int64_t first_offset;
};

struct kmsg_fetch_partition_response {
    int32_t partition_index;
    int16_t error_code;
    int64_t high_watermark;
    int64_t last_stable_offset; /* v4+ */
    int64_t log_start_offset;   /* v5+ */
    const struct kmsg_fetch_aborted *aborted_transactions;
    int32_t aborted_transactions_count; /* -1 writes null (read_uncommitted) */
    int32_t preferred_read_replica;     /* v11+; -1 */
    /* The records: records_len bytes (-1 = null). When `records` is non-NULL they are copied
     * into the writer; otherwise the encoder leaves a hole of records_len bytes carrying
     * records_ref, and the server sends its segment slices there (zero copy). */
    int32_t records_len;
    const uint8_t *records;
    void *records_ref;
};

struct kmsg_fetch_topic_response {
    struct kp_str topic;
    const struct kmsg_fetch_partition_response *partitions;
    int32_t partitions_count;
};

struct kmsg_fetch_response {
    int32_t throttle_time_ms;
    int16_t error_code; /* v7+ */
    int32_t session_id; /* v7+ */
    const struct kmsg_fetch_topic_response *responses;
    int32_t responses_count;
};

int kmsg_fetch_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                              struct kmsg_fetch_request *out);
int kmsg_fetch_response_encode(struct kp_writer *w, int16_t version,
                               const struct kmsg_fetch_response *m);

/* ---- ListOffsets (2), v0-7 (v6+ flexible) ---- */

/* ListOffsets v7 (KIP-734): the offset of the record with the largest timestamp. */
#define KAFKA_LIST_OFFSETS_MAX_TIMESTAMP (-3)

struct kmsg_list_offsets_partition {
    int32_t partition_index;
    int32_t current_leader_epoch; /* v4+; -1 */
    int64_t timestamp;            /* -1 latest, -2 earliest, -3 max timestamp (v7), else a time */
    int32_t max_num_offsets;      /* v0 only; 1 after */
};

struct kmsg_list_offsets_topic {
    struct kp_str name;
    struct kmsg_list_offsets_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_list_offsets_request {
    int32_t replica_id;
    int8_t isolation_level; /* v2+; 0 before */
    struct kmsg_list_offsets_topic *topics;
    int32_t topics_count;
};

struct kmsg_list_offsets_partition_response {
    int32_t partition_index;
    int16_t error_code;
    int64_t timestamp;                /* v1+ */
    int64_t offset;                   /* v1+ */
    const int64_t *old_style_offsets; /* v0 only: the offsets found (at most max_num_offsets) */
    int32_t old_style_offsets_count;
    int32_t leader_epoch; /* v4+; a handler's 0 is written as Kafka's default -1 */
};

struct kmsg_list_offsets_topic_response {
    struct kp_str name;
    const struct kmsg_list_offsets_partition_response *partitions;
    int32_t partitions_count;
};

struct kmsg_list_offsets_response {
    int32_t throttle_time_ms; /* v2+ */
    const struct kmsg_list_offsets_topic_response *topics;
    int32_t topics_count;
};

int kmsg_list_offsets_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_list_offsets_request *out);
int kmsg_list_offsets_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_list_offsets_response *m);

/* ---- FindCoordinator (10), v0-4; v3+ flexible; v4 batches keys (KIP-699) ---- */

struct kmsg_find_coordinator_request {
    struct kp_str key;               /* v0-3 */
    int8_t key_type;                 /* v1+: 0 group, 1 transaction; 0 before */
    struct kp_str *coordinator_keys; /* v4+ */
    int32_t coordinator_keys_count;
};

struct kmsg_find_coordinator_coordinator {
    struct kp_str key;
    int32_t node_id;
    struct kp_str host;
    int32_t port;
    int16_t error_code;
    struct kp_str error_message; /* nullable: a handler's {NULL, 0} is written null */
};

struct kmsg_find_coordinator_response {
    int32_t throttle_time_ms;                                     /* v1+ */
    int16_t error_code;                                           /* v0-3 */
    struct kp_str error_message;                                  /* v1-3, nullable */
    int32_t node_id;                                              /* v0-3 */
    struct kp_str host;                                           /* v0-3 */
    int32_t port;                                                 /* v0-3 */
    const struct kmsg_find_coordinator_coordinator *coordinators; /* v4+ */
    int32_t coordinators_count;
};

int kmsg_find_coordinator_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                         struct kmsg_find_coordinator_request *out);
int kmsg_find_coordinator_response_encode(struct kp_writer *w, int16_t version,
                                          const struct kmsg_find_coordinator_response *m);

/* ---- InitProducerId (22), v0-4; v2+ flexible ---- */

struct kmsg_init_producer_id_request {
    struct kp_str transactional_id; /* nullable */
    int32_t transaction_timeout_ms;
    int64_t producer_id;    /* v3+; -1 before */
    int16_t producer_epoch; /* v3+; -1 before */
};

struct kmsg_init_producer_id_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    int64_t producer_id;
    int16_t producer_epoch;
};

int kmsg_init_producer_id_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                         struct kmsg_init_producer_id_request *out);
int kmsg_init_producer_id_response_encode(struct kp_writer *w, int16_t version,
                                          const struct kmsg_init_producer_id_response *m);

/* ---- CreateTopics (19), v0-7; v5+ flexible ---- */

struct kmsg_create_topics_assignment {
    int32_t partition_index;
    int32_t *broker_ids;
    int32_t broker_ids_count;
};

struct kmsg_create_topics_config {
    struct kp_str name;
    struct kp_str value; /* nullable */
};

struct kmsg_create_topics_topic {
    struct kp_str name;
    int32_t num_partitions;     /* -1 = broker default (v4+) */
    int16_t replication_factor; /* -1 = broker default (v4+) */
    struct kmsg_create_topics_assignment *assignments;
    int32_t assignments_count;
    struct kmsg_create_topics_config *configs;
    int32_t configs_count;
};

struct kmsg_create_topics_request {
    struct kmsg_create_topics_topic *topics;
    int32_t topics_count;
    int32_t timeout_ms;
    bool validate_only; /* v1+ */
};

struct kmsg_create_topics_config_result {
    struct kp_str name;
    struct kp_str value; /* nullable */
    bool read_only;
    int8_t config_source; /* a handler's 0 is written as Kafka's default -1 */
    bool is_sensitive;
};

struct kmsg_create_topics_topic_response {
    struct kp_str name;
    int16_t error_code;
    struct kp_str error_message;     /* v1+, nullable */
    uint8_t topic_id[16];            /* v7+; zero: none */
    int16_t topic_config_error_code; /* v5+, tagged (tag 0), written only when not 0 */
    int32_t num_partitions;          /* v5+; a handler's 0 is written as Kafka's default -1 */
    int16_t replication_factor;      /* v5+; a handler's 0 is written as -1 */
    const struct kmsg_create_topics_config_result *configs; /* v5+, nullable */
    int32_t configs_count;
};

struct kmsg_create_topics_response {
    int32_t throttle_time_ms; /* v2+ */
    const struct kmsg_create_topics_topic_response *topics;
    int32_t topics_count;
};

int kmsg_create_topics_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_create_topics_request *out);
int kmsg_create_topics_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_create_topics_response *m);

/* ---- DeleteTopics (20), v0-6; v4+ flexible ---- */

/* v6: a topic by name or by id (KIP-516). */
struct kmsg_delete_topics_state {
    struct kp_str name;   /* nullable */
    uint8_t topic_id[16]; /* zero: by name */
};

struct kmsg_delete_topics_request {
    /* v0-5 on the wire; at v6 decode also fills it from topics[].name (a topic named by id only
     * gives a null name, {NULL, -1}), so a handler reads one list at every version (KMA1). */
    struct kp_str *topic_names;
    int32_t topic_names_count;
    int32_t timeout_ms;
    struct kmsg_delete_topics_state *topics; /* v6+ */
    int32_t topics_count;
};

struct kmsg_delete_topics_topic_response {
    struct kp_str name; /* nullable v6+ */
    int16_t error_code;
    struct kp_str error_message; /* v5+, nullable: a handler's {NULL, 0} is written null */
    uint8_t topic_id[16];        /* v6+; zero: the broker keeps no topic ids */
};

struct kmsg_delete_topics_response {
    int32_t throttle_time_ms; /* v1+ */
    const struct kmsg_delete_topics_topic_response *responses;
    int32_t responses_count;
};

int kmsg_delete_topics_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_delete_topics_request *out);
int kmsg_delete_topics_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_delete_topics_response *m);

/* ---- DescribeConfigs (32), v0-4; v4+ flexible ---- */

enum kafka_resource_type {
    KAFKA_RESOURCE_UNKNOWN = 0,
    KAFKA_RESOURCE_ANY = 1,
    KAFKA_RESOURCE_TOPIC = 2,
    KAFKA_RESOURCE_GROUP = 3,
    KAFKA_RESOURCE_BROKER = 4,
};

struct kmsg_describe_configs_resource {
    int8_t resource_type;
    struct kp_str resource_name;
    struct kp_str *configuration_keys; /* names */
    int32_t configuration_keys_count;  /* -1 = all */
};

struct kmsg_describe_configs_request {
    struct kmsg_describe_configs_resource *resources;
    int32_t resources_count;
    bool include_synonyms;      /* v1+ */
    bool include_documentation; /* v3+ */
};

struct kmsg_describe_configs_synonym {
    struct kp_str name;
    struct kp_str value; /* nullable */
    int8_t source;
};

/* Config sources (v1+): 1 dynamic topic, 2 dynamic broker, 3 dynamic default broker,
 * 4 static broker, 5 default, 6 dynamic broker logger. */
struct kmsg_describe_configs_entry {
    struct kp_str name;
    struct kp_str value; /* nullable */
    bool read_only;
    bool is_default;      /* v0 only */
    int8_t config_source; /* v1+ */
    bool is_sensitive;
    const struct kmsg_describe_configs_synonym *synonyms; /* v1+ */
    int32_t synonyms_count;
    int8_t config_type; /* v3+: 0 UNKNOWN, 1 BOOLEAN, 2 STRING, 3 INT, 4 SHORT, 5 LONG, ... */
    struct kp_str documentation; /* v3+, nullable: a handler's {NULL, 0} is written null */
};

struct kmsg_describe_configs_result {
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    int8_t resource_type;
    struct kp_str resource_name;
    const struct kmsg_describe_configs_entry *configs;
    int32_t configs_count;
};

struct kmsg_describe_configs_response {
    int32_t throttle_time_ms;
    const struct kmsg_describe_configs_result *results;
    int32_t results_count;
};

int kmsg_describe_configs_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                         struct kmsg_describe_configs_request *out);
int kmsg_describe_configs_response_encode(struct kp_writer *w, int16_t version,
                                          const struct kmsg_describe_configs_response *m);

/* ---- AlterConfigs (33), v0-2; v2+ flexible ---- */

struct kmsg_alter_configs_config {
    struct kp_str name;
    struct kp_str value;     /* nullable */
    int8_t config_operation; /* IncrementalAlterConfigs only: 0 SET, 1 DELETE, 2 APPEND,
                                3 SUBTRACT */
};

struct kmsg_alter_configs_resource {
    int8_t resource_type;
    struct kp_str resource_name;
    struct kmsg_alter_configs_config *configs;
    int32_t configs_count;
};

struct kmsg_alter_configs_request {
    struct kmsg_alter_configs_resource *resources;
    int32_t resources_count;
    bool validate_only;
};

struct kmsg_alter_configs_resource_response {
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    int8_t resource_type;
    struct kp_str resource_name;
};

struct kmsg_alter_configs_response {
    int32_t throttle_time_ms;
    const struct kmsg_alter_configs_resource_response *responses;
    int32_t responses_count;
};

int kmsg_alter_configs_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_alter_configs_request *out);
int kmsg_alter_configs_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_alter_configs_response *m);

/* ---- IncrementalAlterConfigs (44), v0-1; v1+ flexible: AlterConfigs' structs, with each
 * config's config_operation ---- */

int kmsg_incremental_alter_configs_request_decode(struct kp_reader *r, int16_t version,
                                                  struct kp_arena *a,
                                                  struct kmsg_alter_configs_request *out);
int kmsg_incremental_alter_configs_response_encode(struct kp_writer *w, int16_t version,
                                                   const struct kmsg_alter_configs_response *m);

/* ---- CreatePartitions (37), v0-3; v2+ flexible ---- */

struct kmsg_create_partitions_assignment {
    int32_t *broker_ids;
    int32_t broker_ids_count;
};

struct kmsg_create_partitions_topic {
    struct kp_str name;
    int32_t count;
    struct kmsg_create_partitions_assignment *assignments; /* nullable */
    int32_t assignments_count;
};

struct kmsg_create_partitions_request {
    struct kmsg_create_partitions_topic *topics;
    int32_t topics_count;
    int32_t timeout_ms;
    bool validate_only;
};

struct kmsg_create_partitions_result {
    struct kp_str name;
    int16_t error_code;
    struct kp_str error_message; /* nullable */
};

struct kmsg_create_partitions_response {
    int32_t throttle_time_ms;
    const struct kmsg_create_partitions_result *results;
    int32_t results_count;
};

int kmsg_create_partitions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_create_partitions_request *out);
int kmsg_create_partitions_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_create_partitions_response *m);

/* ---- DeleteRecords (21), v0-2; v2+ flexible ---- */

struct kmsg_delete_records_partition {
    int32_t partition_index;
    int64_t offset; /* -1: the high watermark */
};

struct kmsg_delete_records_topic {
    struct kp_str name;
    struct kmsg_delete_records_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_delete_records_request {
    struct kmsg_delete_records_topic *topics;
    int32_t topics_count;
    int32_t timeout_ms;
};

struct kmsg_delete_records_partition_result {
    int32_t partition_index;
    int64_t low_watermark;
    int16_t error_code;
};

struct kmsg_delete_records_topic_result {
    struct kp_str name;
    const struct kmsg_delete_records_partition_result *partitions;
    int32_t partitions_count;
};

struct kmsg_delete_records_response {
    int32_t throttle_time_ms;
    const struct kmsg_delete_records_topic_result *topics;
    int32_t topics_count;
};

int kmsg_delete_records_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                       struct kmsg_delete_records_request *out);
int kmsg_delete_records_response_encode(struct kp_writer *w, int16_t version,
                                        const struct kmsg_delete_records_response *m);

/* ==== issue 13: transactions and groups over the wire (api_table.c advertises them). The
 * transactional APIs are flexible from v3, OffsetFetch from v6. ==== */

/* ---- AddPartitionsToTxn (24), v0-4 (flexible from v3; v4 is KIP-890's broker-to-broker
 * form, never advertised: api_table.c KA9) ---- */

struct kmsg_txn_topic {
    struct kp_str name;
    int32_t *partitions;
    int32_t partitions_count;
};

/* v4+: one transaction of the batch (a partition leader's verification, KIP-890 part 1). */
struct kmsg_add_partitions_to_txn_transaction {
    struct kp_str transactional_id;
    int64_t producer_id;
    int16_t producer_epoch;
    bool verify_only; /* only ask whether the partitions are in the transaction */
    struct kmsg_txn_topic *topics;
    int32_t topics_count;
};

struct kmsg_add_partitions_to_txn_request {
    struct kmsg_add_partitions_to_txn_transaction *transactions; /* v4+ */
    int32_t transactions_count;
    struct kp_str transactional_id; /* v0-3, as the three below */
    int64_t producer_id;
    int16_t producer_epoch;
    struct kmsg_txn_topic *topics;
    int32_t topics_count;
};

/* A partition and its error: the answer shape of AddPartitionsToTxn, TxnOffsetCommit and
 * OffsetCommit. */
struct kmsg_partition_error {
    int32_t partition_index;
    int16_t error_code;
};

struct kmsg_topic_errors {
    struct kp_str name;
    const struct kmsg_partition_error *partitions;
    int32_t partitions_count;
};

/* v4+: one transaction's answer. */
struct kmsg_add_partitions_to_txn_result {
    struct kp_str transactional_id;
    const struct kmsg_topic_errors *topic_results;
    int32_t topic_results_count;
};

struct kmsg_add_partitions_to_txn_response {
    int32_t throttle_time_ms;
    int16_t error_code; /* v4+: the request's as a whole */
    const struct kmsg_add_partitions_to_txn_result *results_by_transaction; /* v4+ */
    int32_t results_by_transaction_count;
    const struct kmsg_topic_errors *results; /* v0-3 */
    int32_t results_count;
};

int kmsg_add_partitions_to_txn_request_decode(struct kp_reader *r, int16_t version,
                                              struct kp_arena *a,
                                              struct kmsg_add_partitions_to_txn_request *out);
int kmsg_add_partitions_to_txn_response_encode(struct kp_writer *w, int16_t version,
                                               const struct kmsg_add_partitions_to_txn_response *m);

/* ---- AddOffsetsToTxn (25), v0-3 (flexible from v3) ---- */

struct kmsg_add_offsets_to_txn_request {
    struct kp_str transactional_id;
    int64_t producer_id;
    int16_t producer_epoch;
    struct kp_str group_id;
};

/* throttle + error: the answer shape of AddOffsetsToTxn, EndTxn, Heartbeat. */
struct kmsg_error_response {
    int32_t throttle_time_ms;
    int16_t error_code;
};

int kmsg_add_offsets_to_txn_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                           struct kmsg_add_offsets_to_txn_request *out);
int kmsg_add_offsets_to_txn_response_encode(struct kp_writer *w, int16_t version,
                                            const struct kmsg_error_response *m);

/* ---- EndTxn (26), v0-3 (flexible from v3) ---- */

struct kmsg_end_txn_request {
    struct kp_str transactional_id;
    int64_t producer_id;
    int16_t producer_epoch;
    bool committed;
};

int kmsg_end_txn_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                struct kmsg_end_txn_request *out);
int kmsg_end_txn_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_error_response *m);

/* ---- TxnOffsetCommit (28), v0-3 (flexible from v3), and OffsetCommit (8), v0-8 (v8+ flexible) ---- */

struct kmsg_commit_partition {
    int32_t partition_index;
    int64_t committed_offset;
    int32_t committed_leader_epoch;   /* TxnOffsetCommit v2+, OffsetCommit v6+; -1 before */
    struct kp_str committed_metadata; /* nullable */
    int64_t commit_timestamp;         /* OffsetCommit v1 only; -1 otherwise */
};

struct kmsg_commit_topic {
    struct kp_str name;
    struct kmsg_commit_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_txn_offset_commit_request {
    struct kp_str transactional_id;
    struct kp_str group_id;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t generation_id;           /* v3+ (KIP-447); -1 before */
    struct kp_str member_id;         /* v3+; "" before */
    struct kp_str group_instance_id; /* v3+, nullable; null before */
    struct kmsg_commit_topic *topics;
    int32_t topics_count;
};

/* The answer of TxnOffsetCommit and OffsetCommit: throttle (TxnOffsetCommit always,
 * OffsetCommit v3+), topics of partition errors. */
struct kmsg_commit_response {
    int32_t throttle_time_ms;
    const struct kmsg_topic_errors *topics;
    int32_t topics_count;
};

int kmsg_txn_offset_commit_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_txn_offset_commit_request *out);
int kmsg_txn_offset_commit_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_commit_response *m);

struct kmsg_offset_commit_request {
    struct kp_str group_id;
    int32_t generation_id;           /* v1+; -1 before */
    struct kp_str member_id;         /* v1+; "" before */
    struct kp_str group_instance_id; /* v7+, nullable; null before */
    int64_t retention_time_ms;       /* v2-4; -1 after */
    struct kmsg_commit_topic *topics;
    int32_t topics_count;
};

int kmsg_offset_commit_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_offset_commit_request *out);
int kmsg_offset_commit_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_commit_response *m);

/* ---- OffsetFetch (9), v0-8; v6+ flexible; v8 batches groups (KIP-709) ---- */

/* One group of a v8 request. */
struct kmsg_offset_fetch_group_request {
    struct kp_str group_id;
    struct kmsg_txn_topic *topics; /* name + partition indexes */
    int32_t topics_count;          /* -1 = all the group's offsets */
};

struct kmsg_offset_fetch_request {
    struct kp_str group_id;                         /* v0-7 */
    struct kmsg_txn_topic *topics;                  /* v0-7: name + partition indexes */
    int32_t topics_count;                           /* -1 = all the group's offsets (v2-7 null) */
    bool require_stable;                            /* v7+ */
    struct kmsg_offset_fetch_group_request *groups; /* v8+ */
    int32_t groups_count;
};

struct kmsg_offset_fetch_partition {
    int32_t partition_index;
    int64_t committed_offset;
    int32_t committed_leader_epoch; /* v5+ */
    struct kp_str metadata;         /* nullable */
    int16_t error_code;
};

struct kmsg_offset_fetch_topic {
    struct kp_str name;
    const struct kmsg_offset_fetch_partition *partitions;
    int32_t partitions_count;
};

/* One group of a v8 answer. */
struct kmsg_offset_fetch_group {
    struct kp_str group_id;
    const struct kmsg_offset_fetch_topic *topics;
    int32_t topics_count;
    int16_t error_code;
};

struct kmsg_offset_fetch_response {
    int32_t throttle_time_ms;                     /* v3+ */
    const struct kmsg_offset_fetch_topic *topics; /* v0-7 */
    int32_t topics_count;
    int16_t error_code;                           /* v2-7 */
    const struct kmsg_offset_fetch_group *groups; /* v8+ */
    int32_t groups_count;
};

int kmsg_offset_fetch_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                     struct kmsg_offset_fetch_request *out);
int kmsg_offset_fetch_response_encode(struct kp_writer *w, int16_t version,
                                      const struct kmsg_offset_fetch_response *m);

/* ---- JoinGroup (11), v0-9; v6+ flexible ---- */

struct kmsg_join_group_protocol {
    struct kp_str name;
    struct kp_bytes metadata;
};

struct kmsg_join_group_request {
    struct kp_str group_id;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms; /* v1+; = session_timeout_ms before */
    struct kp_str member_id;
    struct kp_str group_instance_id; /* v5+, nullable */
    struct kp_str protocol_type;
    struct kmsg_join_group_protocol *protocols;
    int32_t protocols_count;
    struct kp_str reason; /* v8+, nullable (KIP-800) */
};

struct kmsg_join_group_member {
    struct kp_str member_id;
    struct kp_str group_instance_id; /* v5+, nullable */
    struct kp_bytes metadata;
};

struct kmsg_join_group_response {
    int32_t throttle_time_ms; /* v2+ */
    int16_t error_code;
    int32_t generation_id;
    struct kp_str protocol_name; /* nullable v7+ (null written "" before) */
    struct kp_str leader;
    struct kp_str member_id;
    const struct kmsg_join_group_member *members;
    int32_t members_count;
    struct kp_str protocol_type; /* v7+, nullable (KIP-559) */
    bool skip_assignment;        /* v9+ (KIP-814) */
};

int kmsg_join_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                   struct kmsg_join_group_request *out);
int kmsg_join_group_response_encode(struct kp_writer *w, int16_t version,
                                    const struct kmsg_join_group_response *m);

/* ---- SyncGroup (14), v0-5; v4+ flexible ---- */

struct kmsg_sync_group_assignment {
    struct kp_str member_id;
    struct kp_bytes assignment;
};

struct kmsg_sync_group_request {
    struct kp_str group_id;
    int32_t generation_id;
    struct kp_str member_id;
    struct kp_str group_instance_id; /* v3+, nullable */
    struct kmsg_sync_group_assignment *assignments;
    int32_t assignments_count;
    struct kp_str protocol_type; /* v5+, nullable (KIP-559) */
    struct kp_str protocol_name; /* v5+, nullable */
};

struct kmsg_sync_group_response {
    int32_t throttle_time_ms; /* v1+ */
    int16_t error_code;
    struct kp_bytes assignment;
    struct kp_str protocol_type; /* v5+, nullable: a handler's {NULL, 0} is written null */
    struct kp_str protocol_name; /* v5+, nullable: likewise */
};

int kmsg_sync_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                   struct kmsg_sync_group_request *out);
int kmsg_sync_group_response_encode(struct kp_writer *w, int16_t version,
                                    const struct kmsg_sync_group_response *m);

/* ---- Heartbeat (12), v0-4 and LeaveGroup (13), v0-5; v4+ flexible ---- */

struct kmsg_heartbeat_request {
    struct kp_str group_id;
    int32_t generation_id;
    struct kp_str member_id;
    struct kp_str group_instance_id; /* v3+, nullable */
};

int kmsg_heartbeat_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                  struct kmsg_heartbeat_request *out);
/* Heartbeat and LeaveGroup answers: throttle (v1+), error_code. */
int kmsg_heartbeat_response_encode(struct kp_writer *w, int16_t version,
                                   const struct kmsg_error_response *m);

/* A leaving member (v3+, KIP-345's batch). */
struct kmsg_leave_group_member {
    struct kp_str member_id;
    struct kp_str group_instance_id; /* nullable */
    struct kp_str reason;            /* v5+, nullable (KIP-800) */
};

struct kmsg_leave_group_request {
    struct kp_str group_id;
    struct kp_str member_id;                 /* v0-2 */
    struct kmsg_leave_group_member *members; /* v3+ */
    int32_t members_count;
};

struct kmsg_leave_group_member_response {
    struct kp_str member_id;
    struct kp_str group_instance_id; /* nullable */
    int16_t error_code;
};

struct kmsg_leave_group_response {
    int32_t throttle_time_ms; /* v1+ */
    int16_t error_code;
    const struct kmsg_leave_group_member_response *members; /* v3+ */
    int32_t members_count;
};

int kmsg_leave_group_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_leave_group_request *out);
int kmsg_leave_group_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_leave_group_response *m);

/* ---- ListGroups (16), v0-4 (v3+ flexible) and DescribeGroups (15), v0-5 (v5+ flexible) ---- */

struct kmsg_list_groups_request {
    struct kp_str *states_filter; /* v4+ (KIP-518); empty: every state */
    int32_t states_filter_count;
};

struct kmsg_list_groups_group {
    struct kp_str group_id;
    struct kp_str protocol_type;
    struct kp_str group_state; /* v4+ */
};

struct kmsg_list_groups_response {
    int32_t throttle_time_ms; /* v1+ */
    int16_t error_code;
    const struct kmsg_list_groups_group *groups;
    int32_t groups_count;
};

int kmsg_list_groups_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_list_groups_request *out);
int kmsg_list_groups_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_list_groups_response *m);

struct kmsg_describe_groups_request {
    struct kp_str *groups;
    int32_t groups_count;
    bool include_authorized_operations; /* v3+ */
};

struct kmsg_describe_groups_member {
    struct kp_str member_id;
    struct kp_str client_id;
    struct kp_str client_host;
    struct kp_bytes member_metadata;
    struct kp_bytes member_assignment;
    struct kp_str group_instance_id; /* v4+, nullable: a handler's {NULL, 0} is written null */
};

struct kmsg_describe_groups_group {
    int16_t error_code;
    struct kp_str group_id;
    struct kp_str group_state;
    struct kp_str protocol_type;
    struct kp_str protocol_data;
    const struct kmsg_describe_groups_member *members;
    int32_t members_count;
    int32_t authorized_operations; /* v3+; a handler's 0 is written as INT32_MIN (not asked) */
};

struct kmsg_describe_groups_response {
    int32_t throttle_time_ms; /* v1+ */
    const struct kmsg_describe_groups_group *groups;
    int32_t groups_count;
};

int kmsg_describe_groups_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                        struct kmsg_describe_groups_request *out);
int kmsg_describe_groups_response_encode(struct kp_writer *w, int16_t version,
                                         const struct kmsg_describe_groups_response *m);

/* ---- DeleteGroups (42), v0-2 (v2+ flexible) and OffsetDelete (47), v0 ---- */

struct kmsg_delete_groups_request {
    struct kp_str *groups_names;
    int32_t groups_names_count;
};

struct kmsg_delete_groups_result {
    struct kp_str group_id;
    int16_t error_code;
};

struct kmsg_delete_groups_response {
    int32_t throttle_time_ms;
    const struct kmsg_delete_groups_result *results;
    int32_t results_count;
};

struct kmsg_offset_delete_partition {
    int32_t partition_index;
};

struct kmsg_offset_delete_topic {
    struct kp_str name;
    struct kmsg_offset_delete_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_offset_delete_request {
    struct kp_str group_id;
    struct kmsg_offset_delete_topic *topics;
    int32_t topics_count;
};

/* The answer: error_code (top level), throttle, topics of partition errors. */
struct kmsg_offset_delete_response {
    int16_t error_code;
    int32_t throttle_time_ms;
    const struct kmsg_topic_errors *topics;
    int32_t topics_count;
};

int kmsg_delete_groups_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_delete_groups_request *out);
int kmsg_delete_groups_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_delete_groups_response *m);
int kmsg_offset_delete_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_offset_delete_request *out);
int kmsg_offset_delete_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_offset_delete_response *m);

/* ---- KRaft broker-to-controller APIs: BrokerRegistration (62) v0, BrokerHeartbeat (63) v0;
 * flexible; never advertised (api_table.c KA8) ---- */

struct kmsg_broker_listener {
    struct kp_str name, host;
    int16_t port; /* Kafka's uint16: the bits of the port */
    int16_t security_protocol;
};

struct kmsg_broker_feature {
    struct kp_str name;
    int16_t min_supported_version, max_supported_version;
};

struct kmsg_broker_registration_request {
    int32_t broker_id;
    struct kp_str cluster_id;
    uint8_t incarnation_id[16];
    const struct kmsg_broker_listener *listeners;
    int32_t listeners_count;
    const struct kmsg_broker_feature *features;
    int32_t features_count;
    struct kp_str rack; /* nullable */
};

struct kmsg_broker_registration_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    int64_t broker_epoch;
};

struct kmsg_broker_heartbeat_request {
    int32_t broker_id;
    int64_t broker_epoch;
    int64_t current_metadata_offset;
    bool want_fence, want_shut_down;
};

struct kmsg_broker_heartbeat_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    bool is_caught_up, is_fenced, should_shut_down;
};

/* AllocateProducerIds (67) v0 (KIP-730): a node's next producer-id block from the controller. */
struct kmsg_allocate_producer_ids_request {
    int32_t broker_id;
    int64_t broker_epoch;
};

struct kmsg_allocate_producer_ids_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    int64_t producer_id_start;
    int32_t producer_id_len;
};

int kmsg_allocate_producer_ids_request_decode(struct kp_reader *r, int16_t version,
                                              struct kp_arena *a,
                                              struct kmsg_allocate_producer_ids_request *out);
int kmsg_allocate_producer_ids_response_encode(struct kp_writer *w, int16_t version,
                                               const struct kmsg_allocate_producer_ids_response *m);

int kmsg_broker_registration_request_decode(struct kp_reader *r, int16_t version,
                                            struct kp_arena *a,
                                            struct kmsg_broker_registration_request *out);
int kmsg_broker_registration_response_encode(struct kp_writer *w, int16_t version,
                                             const struct kmsg_broker_registration_response *m);
int kmsg_broker_heartbeat_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                         struct kmsg_broker_heartbeat_request *out);
int kmsg_broker_heartbeat_response_encode(struct kp_writer *w, int16_t version,
                                          const struct kmsg_broker_heartbeat_response *m);

/* AlterPartition (56) v0: a partition leader's ISR change to the active controller. */
struct kmsg_alter_partition_partition {
    int32_t partition_index, leader_epoch;
    int32_t *new_isr;
    int32_t new_isr_count;
    int32_t partition_epoch;
};

struct kmsg_alter_partition_topic {
    struct kp_str topic_name;
    struct kmsg_alter_partition_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_alter_partition_request {
    int32_t broker_id;
    int64_t broker_epoch;
    struct kmsg_alter_partition_topic *topics;
    int32_t topics_count;
};

struct kmsg_alter_partition_partition_response {
    int32_t partition_index;
    int16_t error_code;
    int32_t leader_id, leader_epoch;
    int32_t *isr;
    int32_t isr_count;
    int32_t partition_epoch;
};

struct kmsg_alter_partition_topic_response {
    struct kp_str topic_name;
    struct kmsg_alter_partition_partition_response *partitions;
    int32_t partitions_count;
};

struct kmsg_alter_partition_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    struct kmsg_alter_partition_topic_response *topics;
    int32_t topics_count;
};

int kmsg_alter_partition_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                        struct kmsg_alter_partition_request *out);
int kmsg_alter_partition_response_encode(struct kp_writer *w, int16_t version,
                                         const struct kmsg_alter_partition_response *m);

/* ---- KIP-664 operator APIs: DescribeProducers (61) v0, DescribeTransactions (65) v0,
 * ListTransactions (66) v0-1; all flexible (compact forms, tagged fields) ---- */

struct kmsg_describe_producers_request {
    struct kmsg_txn_topic *topics; /* name + partition indexes */
    int32_t topics_count;
};

struct kmsg_producer_state {
    int64_t producer_id;
    int32_t producer_epoch; /* int32 on this wire */
    int32_t last_sequence;
    int64_t last_timestamp;
    int32_t coordinator_epoch;
    int64_t current_txn_start_offset; /* -1: no open transaction */
};

struct kmsg_describe_producers_partition {
    int32_t partition_index;
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    const struct kmsg_producer_state *active_producers;
    int32_t active_producers_count;
};

struct kmsg_describe_producers_topic {
    struct kp_str name;
    const struct kmsg_describe_producers_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_describe_producers_response {
    int32_t throttle_time_ms;
    const struct kmsg_describe_producers_topic *topics;
    int32_t topics_count;
};

int kmsg_describe_producers_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                           struct kmsg_describe_producers_request *out);
int kmsg_describe_producers_response_encode(struct kp_writer *w, int16_t version,
                                            const struct kmsg_describe_producers_response *m);

struct kmsg_describe_transactions_request {
    struct kp_str *transactional_ids;
    int32_t transactional_ids_count;
};

struct kmsg_transaction_partitions {
    struct kp_str name;
    const int32_t *partition_indexes;
    int32_t partition_indexes_count;
};

struct kmsg_transaction_state {
    int16_t error_code;
    struct kp_str transactional_id;
    struct kp_str transaction_state; /* "Ongoing", "PrepareCommit", ... (Kafka's names) */
    int32_t transaction_timeout_ms;
    int64_t transaction_start_time_ms;
    int64_t producer_id;
    int16_t producer_epoch;
    const struct kmsg_transaction_partitions *topic_partitions;
    int32_t topic_partitions_count;
};

struct kmsg_describe_transactions_response {
    int32_t throttle_time_ms;
    const struct kmsg_transaction_state *transaction_states;
    int32_t transaction_states_count;
};

int kmsg_describe_transactions_request_decode(struct kp_reader *r, int16_t version,
                                              struct kp_arena *a,
                                              struct kmsg_describe_transactions_request *out);
int kmsg_describe_transactions_response_encode(struct kp_writer *w, int16_t version,
                                               const struct kmsg_describe_transactions_response *m);

struct kmsg_list_transactions_request {
    struct kp_str *state_filters;
    int32_t state_filters_count;
    int64_t *producer_id_filters;
    int32_t producer_id_filters_count;
    int64_t duration_filter_ms; /* v1+; -1 before */
};

struct kmsg_listed_transaction {
    struct kp_str transactional_id;
    int64_t producer_id;
    struct kp_str transaction_state;
};

struct kmsg_list_transactions_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    const struct kp_str *unknown_state_filters; /* the request's filters no state is named */
    int32_t unknown_state_filters_count;
    const struct kmsg_listed_transaction *transaction_states;
    int32_t transaction_states_count;
};

int kmsg_list_transactions_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_list_transactions_request *out);
int kmsg_list_transactions_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_list_transactions_response *m);

/* ---- ACLs (kmsg_acl.c): DescribeAcls (29), CreateAcls (30), DeleteAcls (31), v0-3,
 * flexible from v2. Types, operations and permissions are Kafka's numbers (auth/acl.h). ---- */

/* A filter (DescribeAcls request body; DeleteAcls filters[]). Strings nullable: null = any. */
struct kmsg_acl_filter {
    int8_t resource_type_filter;
    struct kp_str resource_name_filter;
    int8_t pattern_type_filter; /* v1+ (LITERAL 3 before) */
    struct kp_str principal_filter;
    struct kp_str host_filter;
    int8_t operation;
    int8_t permission_type;
};
struct kmsg_describe_acls_request {
    struct kmsg_acl_filter f;
};

struct kmsg_acl_description {
    struct kp_str principal;
    struct kp_str host;
    int8_t operation;
    int8_t permission_type;
};

struct kmsg_acl_resource {
    int8_t resource_type;
    struct kp_str resource_name;
    int8_t pattern_type; /* v1+ */
    const struct kmsg_acl_description *acls;
    int32_t acls_count;
};

struct kmsg_describe_acls_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    struct kp_str error_message;
    const struct kmsg_acl_resource *resources;
    int32_t resources_count;
};

struct kmsg_acl_creation {
    int8_t resource_type;
    struct kp_str resource_name;
    int8_t resource_pattern_type; /* v1+ (LITERAL 3 before) */
    struct kp_str principal;
    struct kp_str host;
    int8_t operation;
    int8_t permission_type;
};

struct kmsg_create_acls_request {
    const struct kmsg_acl_creation *creations;
    int32_t creations_count;
};

struct kmsg_acl_creation_result {
    int16_t error_code;
    struct kp_str error_message;
};

struct kmsg_create_acls_response {
    int32_t throttle_time_ms;
    const struct kmsg_acl_creation_result *results;
    int32_t results_count;
};

struct kmsg_delete_acls_request {
    const struct kmsg_acl_filter *filters;
    int32_t filters_count;
};

struct kmsg_delete_acls_matching_acl {
    int16_t error_code;
    struct kp_str error_message;
    int8_t resource_type;
    struct kp_str resource_name;
    int8_t pattern_type; /* v1+ */
    struct kp_str principal;
    struct kp_str host;
    int8_t operation;
    int8_t permission_type;
};

struct kmsg_delete_acls_filter_result {
    int16_t error_code;
    struct kp_str error_message;
    const struct kmsg_delete_acls_matching_acl *matching_acls;
    int32_t matching_acls_count;
};

struct kmsg_delete_acls_response {
    int32_t throttle_time_ms;
    const struct kmsg_delete_acls_filter_result *filter_results;
    int32_t filter_results_count;
};

int kmsg_describe_acls_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                      struct kmsg_describe_acls_request *out);
int kmsg_describe_acls_response_encode(struct kp_writer *w, int16_t version,
                                       const struct kmsg_describe_acls_response *m);
int kmsg_create_acls_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_create_acls_request *out);
int kmsg_create_acls_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_create_acls_response *m);
int kmsg_delete_acls_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                    struct kmsg_delete_acls_request *out);
int kmsg_delete_acls_response_encode(struct kp_writer *w, int16_t version,
                                     const struct kmsg_delete_acls_response *m);
/* ---- SASL (issue 23): SaslHandshake (17) v0-1, SaslAuthenticate (36) v0-2 (flexible v2),
 * DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51) v0 (flexible) ---- */

struct kmsg_sasl_handshake_request {
    struct kp_str mechanism;
};

struct kmsg_sasl_handshake_response {
    int16_t error_code;
    const struct kp_str *mechanisms; /* the enabled ones */
    int32_t mechanisms_count;
};

struct kmsg_sasl_authenticate_request {
    struct kp_bytes auth_bytes;
};

struct kmsg_sasl_authenticate_response {
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    struct kp_bytes auth_bytes;
    int64_t session_lifetime_ms; /* v1+: KIP-368, 0 = none */
};

struct kmsg_scram_user_name {
    struct kp_str name;
};

struct kmsg_describe_user_scram_credentials_request {
    struct kmsg_scram_user_name *users; /* null (count -1): every user */
    int32_t users_count;
};

struct kmsg_scram_credential_info {
    int8_t mechanism; /* 1 SCRAM-SHA-256, 2 SCRAM-SHA-512 */
    int32_t iterations;
};

struct kmsg_describe_user_scram_result {
    struct kp_str user;
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    const struct kmsg_scram_credential_info *credential_infos;
    int32_t credential_infos_count;
};

struct kmsg_describe_user_scram_credentials_response {
    int32_t throttle_time_ms;
    int16_t error_code;
    struct kp_str error_message; /* nullable */
    const struct kmsg_describe_user_scram_result *results;
    int32_t results_count;
};

struct kmsg_scram_deletion {
    struct kp_str name;
    int8_t mechanism;
};

struct kmsg_scram_upsertion {
    struct kp_str name;
    int8_t mechanism;
    int32_t iterations;
    struct kp_bytes salt;
    struct kp_bytes salted_password; /* Hi(password, salt, iterations), as the AdminClient sends */
};

struct kmsg_alter_user_scram_credentials_request {
    struct kmsg_scram_deletion *deletions;
    int32_t deletions_count;
    struct kmsg_scram_upsertion *upsertions;
    int32_t upsertions_count;
};

struct kmsg_alter_user_scram_result {
    struct kp_str user;
    int16_t error_code;
    struct kp_str error_message; /* nullable */
};

struct kmsg_alter_user_scram_credentials_response {
    int32_t throttle_time_ms;
    const struct kmsg_alter_user_scram_result *results;
    int32_t results_count;
};

int kmsg_sasl_handshake_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                       struct kmsg_sasl_handshake_request *out);
int kmsg_sasl_handshake_response_encode(struct kp_writer *w, int16_t version,
                                        const struct kmsg_sasl_handshake_response *m);
int kmsg_sasl_authenticate_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_sasl_authenticate_request *out);
int kmsg_sasl_authenticate_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_sasl_authenticate_response *m);
int kmsg_describe_user_scram_credentials_request_decode(
    struct kp_reader *r, int16_t version, struct kp_arena *a,
    struct kmsg_describe_user_scram_credentials_request *out);
int kmsg_describe_user_scram_credentials_response_encode(
    struct kp_writer *w, int16_t version,
    const struct kmsg_describe_user_scram_credentials_response *m);
int kmsg_alter_user_scram_credentials_request_decode(
    struct kp_reader *r, int16_t version, struct kp_arena *a,
    struct kmsg_alter_user_scram_credentials_request *out);
int kmsg_alter_user_scram_credentials_response_encode(
    struct kp_writer *w, int16_t version,
    const struct kmsg_alter_user_scram_credentials_response *m);

/* ---- OffsetForLeaderEpoch (23), v0-4 (v4+ flexible; KIP-101/279/320): a follower's (or a
 * KIP-320 consumer's) question "where does epoch E end in your log?" (kmsg_epoch.c) ---- */

struct kmsg_epoch_partition {
    int32_t partition;
    int32_t current_leader_epoch; /* v2+; -1 before (no fencing check) */
    int32_t leader_epoch;
};

struct kmsg_epoch_topic {
    struct kp_str topic;
    struct kmsg_epoch_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_offset_for_leader_epoch_request {
    int32_t replica_id; /* v3+; -2 (debugging) before, -1 a consumer, >= 0 a follower */
    struct kmsg_epoch_topic *topics;
    int32_t topics_count;
};

struct kmsg_epoch_end_offset {
    int16_t error_code;
    int32_t partition;
    int32_t leader_epoch; /* v1+; -1 */
    int64_t end_offset;   /* -1 */
};

struct kmsg_epoch_topic_result {
    struct kp_str topic;
    const struct kmsg_epoch_end_offset *partitions;
    int32_t partitions_count;
};

struct kmsg_offset_for_leader_epoch_response {
    int32_t throttle_time_ms; /* v2+ */
    const struct kmsg_epoch_topic_result *topics;
    int32_t topics_count;
};

int kmsg_offset_for_leader_epoch_request_decode(struct kp_reader *r, int16_t version,
                                                struct kp_arena *a,
                                                struct kmsg_offset_for_leader_epoch_request *out);
int kmsg_offset_for_leader_epoch_response_encode(
    struct kp_writer *w, int16_t version, const struct kmsg_offset_for_leader_epoch_response *m);

/* WriteTxnMarkers (27) v0-1 (flexible from v1): a transaction coordinator's markers to a
 * partition leader (kmsg_markers.c; served by handle_txn_markers.c, sent by txn_marker_send.c). */
struct kmsg_txn_marker {
    int64_t producer_id;
    int16_t producer_epoch;
    bool transaction_result;       /* true: COMMIT, false: ABORT */
    struct kmsg_txn_topic *topics; /* name + partition indexes */
    int32_t topics_count;
    int32_t coordinator_epoch;
};

struct kmsg_write_txn_markers_request {
    struct kmsg_txn_marker *markers;
    int32_t markers_count;
};

struct kmsg_txn_marker_result {
    int64_t producer_id;
    struct kmsg_topic_errors *topics; /* name + [partition_index, error_code] */
    int32_t topics_count;
};

struct kmsg_write_txn_markers_response {
    struct kmsg_txn_marker_result *markers;
    int32_t markers_count;
};

int kmsg_write_txn_markers_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                          struct kmsg_write_txn_markers_request *out);
int kmsg_write_txn_markers_response_encode(struct kp_writer *w, int16_t version,
                                           const struct kmsg_write_txn_markers_response *m);

/* ---- any request by key (fuzz targets and the server's dispatch share it) ---- */

/* The largest decoded request struct: a union the server can keep one of per connection. */
union kmsg_request {
    struct kmsg_api_versions_request api_versions;
    struct kmsg_metadata_request metadata;
    struct kmsg_produce_request produce;
    struct kmsg_fetch_request fetch;
    struct kmsg_list_offsets_request list_offsets;
    struct kmsg_find_coordinator_request find_coordinator;
    struct kmsg_init_producer_id_request init_producer_id;
    struct kmsg_create_topics_request create_topics;
    struct kmsg_delete_topics_request delete_topics;
    struct kmsg_describe_configs_request describe_configs;
    struct kmsg_alter_configs_request alter_configs; /* and IncrementalAlterConfigs */
    struct kmsg_create_partitions_request create_partitions;
    struct kmsg_delete_records_request delete_records;
    struct kmsg_add_partitions_to_txn_request add_partitions_to_txn;
    struct kmsg_add_offsets_to_txn_request add_offsets_to_txn;
    struct kmsg_end_txn_request end_txn;
    struct kmsg_txn_offset_commit_request txn_offset_commit;
    struct kmsg_offset_commit_request offset_commit;
    struct kmsg_offset_fetch_request offset_fetch;
    struct kmsg_join_group_request join_group;
    struct kmsg_sync_group_request sync_group;
    struct kmsg_heartbeat_request heartbeat;
    struct kmsg_leave_group_request leave_group;
    struct kmsg_list_groups_request list_groups;
    struct kmsg_describe_groups_request describe_groups;
    struct kmsg_delete_groups_request delete_groups;
    struct kmsg_offset_delete_request offset_delete;
    struct kmsg_describe_producers_request describe_producers;
    struct kmsg_allocate_producer_ids_request allocate_producer_ids;
    struct kmsg_broker_registration_request broker_registration;
    struct kmsg_broker_heartbeat_request broker_heartbeat;
    struct kmsg_alter_partition_request alter_partition;
    struct kmsg_offset_for_leader_epoch_request offset_for_leader_epoch;
    struct kmsg_write_txn_markers_request write_txn_markers;
    struct kmsg_describe_transactions_request describe_transactions;
    struct kmsg_list_transactions_request list_transactions;
    struct kmsg_describe_acls_request describe_acls;
    struct kmsg_create_acls_request create_acls;
    struct kmsg_delete_acls_request delete_acls;
    struct kmsg_sasl_handshake_request sasl_handshake;
    struct kmsg_sasl_authenticate_request sasl_authenticate;
    struct kmsg_describe_user_scram_credentials_request describe_user_scram_credentials;
    struct kmsg_alter_user_scram_credentials_request alter_user_scram_credentials;
};

/* ---- the other direction (a client's requests, a broker's answers read back) ---- */

#define KMSG_OTHER_WAY(api, rq, rs)                                                                \
    int kmsg_##api##_request_encode(struct kp_writer *w, int16_t version,                          \
                                    const struct kmsg_##rq *m);                                    \
    int kmsg_##api##_response_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,     \
                                     struct kmsg_##rs *out);
KMSG_OTHER_WAY(api_versions, api_versions_request, api_versions_response)
KMSG_OTHER_WAY(metadata, metadata_request, metadata_response)
KMSG_OTHER_WAY(produce, produce_request, produce_response)
KMSG_OTHER_WAY(fetch, fetch_request, fetch_response)
KMSG_OTHER_WAY(list_offsets, list_offsets_request, list_offsets_response)
KMSG_OTHER_WAY(find_coordinator, find_coordinator_request, find_coordinator_response)
KMSG_OTHER_WAY(init_producer_id, init_producer_id_request, init_producer_id_response)
KMSG_OTHER_WAY(create_topics, create_topics_request, create_topics_response)
KMSG_OTHER_WAY(delete_topics, delete_topics_request, delete_topics_response)
KMSG_OTHER_WAY(describe_configs, describe_configs_request, describe_configs_response)
KMSG_OTHER_WAY(alter_configs, alter_configs_request, alter_configs_response)
KMSG_OTHER_WAY(incremental_alter_configs, alter_configs_request, alter_configs_response)
KMSG_OTHER_WAY(create_partitions, create_partitions_request, create_partitions_response)
KMSG_OTHER_WAY(delete_records, delete_records_request, delete_records_response)
KMSG_OTHER_WAY(add_partitions_to_txn, add_partitions_to_txn_request, add_partitions_to_txn_response)
KMSG_OTHER_WAY(add_offsets_to_txn, add_offsets_to_txn_request, error_response)
KMSG_OTHER_WAY(end_txn, end_txn_request, error_response)
KMSG_OTHER_WAY(txn_offset_commit, txn_offset_commit_request, commit_response)
KMSG_OTHER_WAY(offset_commit, offset_commit_request, commit_response)
KMSG_OTHER_WAY(offset_fetch, offset_fetch_request, offset_fetch_response)
KMSG_OTHER_WAY(join_group, join_group_request, join_group_response)
KMSG_OTHER_WAY(sync_group, sync_group_request, sync_group_response)
KMSG_OTHER_WAY(heartbeat, heartbeat_request, error_response)
KMSG_OTHER_WAY(leave_group, leave_group_request, leave_group_response)
KMSG_OTHER_WAY(list_groups, list_groups_request, list_groups_response)
KMSG_OTHER_WAY(describe_groups, describe_groups_request, describe_groups_response)
KMSG_OTHER_WAY(delete_groups, delete_groups_request, delete_groups_response)
KMSG_OTHER_WAY(offset_delete, offset_delete_request, offset_delete_response)
KMSG_OTHER_WAY(describe_producers, describe_producers_request, describe_producers_response)
KMSG_OTHER_WAY(allocate_producer_ids, allocate_producer_ids_request, allocate_producer_ids_response)
KMSG_OTHER_WAY(broker_registration, broker_registration_request, broker_registration_response)
KMSG_OTHER_WAY(broker_heartbeat, broker_heartbeat_request, broker_heartbeat_response)
KMSG_OTHER_WAY(alter_partition, alter_partition_request, alter_partition_response)
KMSG_OTHER_WAY(offset_for_leader_epoch, offset_for_leader_epoch_request,
               offset_for_leader_epoch_response)
KMSG_OTHER_WAY(write_txn_markers, write_txn_markers_request, write_txn_markers_response)
KMSG_OTHER_WAY(describe_transactions, describe_transactions_request, describe_transactions_response)
KMSG_OTHER_WAY(list_transactions, list_transactions_request, list_transactions_response)
KMSG_OTHER_WAY(describe_acls, describe_acls_request, describe_acls_response)
KMSG_OTHER_WAY(create_acls, create_acls_request, create_acls_response)
KMSG_OTHER_WAY(delete_acls, delete_acls_request, delete_acls_response)
KMSG_OTHER_WAY(sasl_handshake, sasl_handshake_request, sasl_handshake_response)
KMSG_OTHER_WAY(sasl_authenticate, sasl_authenticate_request, sasl_authenticate_response)
KMSG_OTHER_WAY(describe_user_scram_credentials, describe_user_scram_credentials_request,
               describe_user_scram_credentials_response)
KMSG_OTHER_WAY(alter_user_scram_credentials, alter_user_scram_credentials_request,
               alter_user_scram_credentials_response)
#undef KMSG_OTHER_WAY

/* The description (kdesc.h) of (key, request or response), NULL for a key without one. */
struct kd_message;
const struct kd_message *kmsg_desc(int16_t api_key, bool response);

/* Decodes the body of (key, version) into the matching member of `out`. RT_E_UNSUPPORTED for a
 * key without a codec or a version outside its codec range. */
int kmsg_request_decode(struct kp_reader *r, int16_t api_key, int16_t version, struct kp_arena *a,
                        union kmsg_request *out);

#endif
