/*
 * kmsg.h — Kafka request decoders and response encoders (issue 12's APIs; issue 13's below
 * them). Field names follow Kafka's message definitions (snake_case of the JSON names); a field
 * a version lacks decodes as Kafka's default for it and is not written at that version.
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
 * A whole response frame: `size_t at = kafka_frame_begin(w); kafka_response_header_encode(...);
 * kmsg_..._response_encode(...); kafka_frame_end(w, at);`, then send writer bytes with the holes
 * filled in order (kp_hole.at says where each goes).
 */
#ifndef RT_KAFKA_KMSG_H
#define RT_KAFKA_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/kafka/api.h"
#include "tools/kafka/proto.h"

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

/* ---- Metadata (3), v0-4 ---- */

struct kmsg_metadata_request {
    struct kp_str *topics;          /* names */
    int32_t topics_count;           /* -1 = all topics (v1+ null; v0's empty array means all) */
    bool allow_auto_topic_creation; /* v4+; true before v4 */
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
};

struct kmsg_metadata_topic {
    int16_t error_code;
    struct kp_str name;
    bool is_internal; /* v1+ */
    const struct kmsg_metadata_partition *partitions;
    int32_t partitions_count;
};

struct kmsg_metadata_response {
    int32_t throttle_time_ms; /* v3+ */
    const struct kmsg_metadata_broker *brokers;
    int32_t brokers_count;
    struct kp_str cluster_id; /* v2+, nullable */
    int32_t controller_id;    /* v1+ */
    const struct kmsg_metadata_topic *topics;
    int32_t topics_count;
};

int kmsg_metadata_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                 struct kmsg_metadata_request *out);
int kmsg_metadata_response_encode(struct kp_writer *w, int16_t version,
                                  const struct kmsg_metadata_response *m);

/* ---- Produce (0), v3-7 (record format v2 only) ---- */

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
    struct kp_str transactional_id; /* nullable */
    int16_t acks;
    int32_t timeout_ms;
    struct kmsg_produce_topic *topics;
    int32_t topics_count;
};

struct kmsg_produce_partition_response {
    int32_t index;
    int16_t error_code;
    int64_t base_offset;
    int64_t log_append_time_ms; /* -1 unless LogAppendTime */
    int64_t log_start_offset;   /* v5+ */
};

struct kmsg_produce_topic_response {
    struct kp_str name;
    const struct kmsg_produce_partition_response *partitions;
    int32_t partitions_count;
};

struct kmsg_produce_response {
    const struct kmsg_produce_topic_response *responses;
    int32_t responses_count;
    int32_t throttle_time_ms;
};

int kmsg_produce_request_decode(struct kp_reader *r, int16_t version, struct kp_arena *a,
                                struct kmsg_produce_request *out);
int kmsg_produce_response_encode(struct kp_writer *w, int16_t version,
                                 const struct kmsg_produce_response *m);

/* ---- Fetch (1), v4-11 ---- */

struct kmsg_fetch_partition {
    int32_t partition;
    int32_t current_leader_epoch; /* v9+; -1 before */
    int64_t fetch_offset;
    int64_t log_start_offset; /* v5+; -1 before */
    int32_t partition_max_bytes;
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
    struct kp_str rack_id; /* v11+; empty before */
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

/* ---- ListOffsets (2), v1-3 ---- */

struct kmsg_list_offsets_partition {
    int32_t partition_index;
    int32_t current_leader_epoch; /* v4+ (not in our range); -1 */
    int64_t timestamp;            /* -1 latest, -2 earliest, else a time */
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
    int64_t timestamp;
    int64_t offset;
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

/* ---- FindCoordinator (10), v0-2 (v3 flexible decoded too) ---- */

struct kmsg_find_coordinator_request {
    struct kp_str key;
    int8_t key_type; /* v1+: 0 group, 1 transaction; 0 before */
};

struct kmsg_find_coordinator_response {
    int32_t throttle_time_ms; /* v1+ */
    int16_t error_code;
    struct kp_str error_message; /* v1+, nullable */
    int32_t node_id;
    struct kp_str host;
    int32_t port;
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

/* ---- CreateTopics (19), v0-4 ---- */

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

struct kmsg_create_topics_topic_response {
    struct kp_str name;
    int16_t error_code;
    struct kp_str error_message; /* v1+, nullable */
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

/* ---- DeleteTopics (20), v0-3 ---- */

struct kmsg_delete_topics_request {
    struct kp_str *topic_names;
    int32_t topic_names_count;
    int32_t timeout_ms;
};

struct kmsg_delete_topics_topic_response {
    struct kp_str name;
    int16_t error_code;
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

/* ---- DescribeConfigs (32), v0-2 ---- */

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
    bool include_synonyms; /* v1+ */
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
};

/* Decodes the body of (key, version) into the matching member of `out`. RT_E_UNSUPPORTED for a
 * key without a codec or a version outside its codec range. */
int kmsg_request_decode(struct kp_reader *r, int16_t api_key, int16_t version, struct kp_arena *a,
                        union kmsg_request *out);

#endif
