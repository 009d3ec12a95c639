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
/* Java's String.hashCode of the string whose UTF-8 bytes are s[0..len). */
int32_t group_java_hash(const char *s, size_t len);

#endif /* RT_GROUP_CODEC_H */
