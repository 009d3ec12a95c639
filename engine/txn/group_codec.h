/*
 * group_codec.h — the records of `__consumer_offsets` (docs/format.md §H): the offset-commit key
 * and value codecs and Kafka's group placement hash. Internal to group.c; declared here so the
 * tests and the fuzz target use the same definitions (not copies of them). Pure: decoders treat
 * their input as untrusted and never read outside it.
 */
#ifndef RT_GROUP_CODEC_H
#define RT_GROUP_CODEC_H

#include <stddef.h>
#include <stdint.h>

struct group_offset_key {
    int16_t version; /* 0, 1: offset commit; 2: group metadata (group only) */
    const uint8_t *group;
    uint16_t group_len;
    const uint8_t *topic; /* versions 0 and 1 */
    uint16_t topic_len;
    int32_t partition;
};

struct group_offset_value {
    int16_t version; /* 0..3 */
    int64_t offset;
    int32_t leader_epoch; /* v3; -1 otherwise */
    const uint8_t *metadata;
    uint16_t metadata_len;
    int64_t commit_timestamp;
    int64_t expire_timestamp; /* v1; -1 otherwise */
};

int group_key_decode(const uint8_t *buf, size_t len, struct group_offset_key *out,
                     const char **why);
int group_key_encode(const struct group_offset_key *k, uint8_t *buf, size_t cap, size_t *len_out);
int group_value_decode(const uint8_t *buf, size_t len, struct group_offset_value *out,
                       const char **why);
int group_value_encode(const struct group_offset_value *v, uint8_t *buf, size_t cap,
                       size_t *len_out);
/* Kafka's GroupMetadataValue (the value of a key of version 2), versions 0-3; ringtail writes 3.
 * Strings as (pointer, length); a nullable one has length -1 for null. */
struct group_meta_member {
    const uint8_t *member_id;
    int16_t member_id_len;
    const uint8_t *instance_id; /* v3; null before */
    int16_t instance_id_len;
    const uint8_t *client_id;
    int16_t client_id_len;
    const uint8_t *client_host;
    int16_t client_host_len;
    int32_t rebalance_timeout_ms; /* v1+; -1 before */
    int32_t session_timeout_ms;
    const uint8_t *subscription;
    int32_t subscription_len;
    const uint8_t *assignment;
    int32_t assignment_len;
};

struct group_meta_value {
    int16_t version;
    const uint8_t *protocol_type;
    int16_t protocol_type_len;
    int32_t generation;
    const uint8_t *protocol; /* nullable */
    int16_t protocol_len;
    const uint8_t *leader; /* nullable */
    int16_t leader_len;
    int64_t current_state_timestamp; /* v2+; -1 before */
    int32_t members_count;
    const uint8_t *members_at, *end; /* the members' bytes (validated by the decoder) */
};

/* Validates the whole value; members are then read with group_meta_member_at. */
int group_meta_value_decode(const uint8_t *buf, size_t len, struct group_meta_value *out,
                            const char **why);
/* Member i (< members_count) of a decoded value: O(i). */
void group_meta_member_at(const struct group_meta_value *v, int32_t i,
                          struct group_meta_member *out);
/* The bytes of v with these members at v->version; *len_out. 0, -ENOSPC, RT_E_INVALID_ARGUMENT. */
int group_meta_value_encode(const struct group_meta_value *v,
                            const struct group_meta_member *members, uint8_t *buf, size_t cap,
                            size_t *len_out);
size_t group_meta_value_size(const struct group_meta_value *v,
                             const struct group_meta_member *members);

/* Java's String.hashCode of the string whose UTF-8 bytes are s[0..len). */
int32_t group_java_hash(const char *s, size_t len);

#endif /* RT_GROUP_CODEC_H */
