/*
 * metadata_image.h — the cluster's metadata records (the commands of the quorum's log, as Kafka's
 * KRaft metadata records) and the in-memory image they build: brokers (registered, fenced),
 * topics (id, name, configs), partitions (replicas, leader, leader epoch, ISR) and the producer-id
 * blocks handed out. Byte formats: docs/format.md L.
 *
 * The image is a pure function of the records applied in order: every member that applies the
 * same log holds the same image (MI1). A snapshot is the image serialised as the records that
 * rebuild it; a restore parses them into a fresh image. It never touches a socket, a file or
 * raft: quorum.c hands it bytes, it hands back bytes.
 *
 * Invariants:
 *   MI1  metadata_image_apply is deterministic: the same records in the same order give the same
 *       image, the same metadata_image_digest, and the same rejections, on every member.
 *   MI2  A record that does not decode (docs/format.md L.2) or does not apply to the image (L.3:
 *       an unknown topic, a lower leader epoch, ...) changes nothing but the counters; it never
 *       crashes and never stops the records after it.
 *   MI3  restore(snapshot(image)) is an image with the same digest and counters; a snapshot that
 *       does not parse whole (L.4) is refused and leaves the image as it was.
 *   MI4  Producer-id blocks never overlap: next_producer_id only grows.
 *   MI5  mi_place_replicas gives each partition rf distinct brokers, and spreads first replicas
 *       (the leaders) round-robin over the brokers, as Kafka's rack-unaware placement.
 *   MI6  mi_plan_leaders moves a leadership only to an ISR member that is registered and
 *       unfenced, never empties an ISR, and raises the leader epoch of every partition it changes.
 *   MI7  A CONFIG record (Kafka's ConfigRecord) sets one config of one topic (value present) or
 *       removes it (value absent; removing one the topic does not have changes nothing); it
 *       applies to a topic the image holds by that name only (else rejected), and never takes a
 *       topic past MI_CONFIGS_MAX. Only TOPIC resources apply; any other type is rejected.
 *   MI8  Every partition carries a partition epoch (KIP-497's, Kafka's PartitionRegistration.
 *       partitionEpoch): 0 when its first PARTITION record applies, one more at every later
 *       PARTITION record applied to it (each is a leader or ISR change); a PARTITION record of
 *       version 1 (what a snapshot writes) carries the epoch itself and sets it, so a restored
 *       image has the epochs it was saved with (MI3).
 *   MI9  A BATCH record (docs/format.md L.2 type 8) holds 1..65535 TOPIC, PARTITION or CONFIG
 *       records (no BATCH inside; each decodes as it would alone, else the whole BATCH is
 *       corrupt) and applies all or nothing: its records are applied in order to a copy of the
 *       image (snapshot and restore, O(image)), and the copy replaces the image only when
 *       every one applied; one rejection rejects the BATCH and leaves the image as it was. It
 *       counts as one record (records_applied, records_rejected, the chain over its bytes).
 *       So a CreateTopics or CreatePartitions the controller proposes as one BATCH entry is
 *       in the image whole or not at all, whatever becomes of the controller.
 */
#ifndef RT_KAFKA_CLUSTER_METADATA_IMAGE_H
#define RT_KAFKA_CLUSTER_METADATA_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Record types (docs/format.md L.2). */
enum {
    MI_REGISTER_BROKER = 1,
    MI_FENCE_BROKER = 2,
    MI_TOPIC = 3,
    MI_PARTITION = 4,
    MI_DELETE_TOPIC = 5,
    MI_PRODUCER_IDS = 6,
    MI_CONFIG = 7,
    MI_BATCH = 8, /* MI9: several records applied as one, all or nothing */
};

/* A CONFIG record's resource type (Kafka's ConfigResource.Type): only TOPIC applies (MI7). */
#define MI_RESOURCE_TOPIC 2

/* Limits (each refusal counted as a rejection, or corrupt when it is the bytes'). */
#define MI_BROKERS_MAX       1024
#define MI_TOPICS_MAX        65536
#define MI_PARTITIONS_MAX    100000 /* per topic */
#define MI_REPLICAS_MAX      64
#define MI_CONFIGS_MAX       256 /* per topic */
#define MI_HOST_BYTES_MAX    255
#define MI_TOPIC_NAME_MAX    249 /* Kafka's */
#define MI_CONFIG_KEY_MAX    255
#define MI_CONFIG_VALUE_MAX  4096
#define MI_RECORD_BYTES_MAX  1048576     /* one raft entry's record (docs/format.md L.1) */
#define MI_BATCH_RECORDS_MAX 65535       /* records in one BATCH (u16 count) */
#define MI_SNAPSHOT_MAGIC    0x52544d49u /* "RTMI" */
#define MI_SNAPSHOT_HEADER   44
#define MI_E_CORRUPT         (-3101) /* the bytes do not decode (L.2, L.4) */
#define MI_E_REJECTED        (-3102) /* valid bytes that do not apply to the image (L.3) */

/* A string inside a record's bytes (not NUL terminated). */
struct mi_str {
    const char *p;
    uint16_t len;
};

struct mi_config_kv {
    struct mi_str key, value;
};

/* A decoded record; pointers point into the bytes decoded. */
struct mi_record {
    uint8_t type;
    union {
        struct {
            int32_t node_id;
            int64_t epoch; /* -1: the record's own raft index (what a controller writes) */
            uint16_t port;
            struct mi_str host;
        } reg;
        struct {
            int32_t node_id;
            bool fenced;
        } fence;
        struct {
            uint8_t id[16];
            struct mi_str name;
            uint16_t configs_count;
            const uint8_t *configs; /* configs_count × (key, value), walk with mi_config_at */
        } topic;
        struct {
            uint8_t topic_id[16];
            int32_t partition, leader, leader_epoch;
            uint8_t replicas_count, isr_count;
            const uint8_t *replicas, *isr; /* big-endian i32s, read with mi_i32_at */
            int32_t partition_epoch;       /* version 1 only; -1 in a version 0 record (MI8) */
        } partition;
        struct {
            uint8_t topic_id[16];
        } del;
        struct {
            int32_t broker_id;
            int64_t next_producer_id; /* the end of the block granted: [previous next, this) */
        } pids;
        struct {
            uint16_t count;         /* 1..MI_BATCH_RECORDS_MAX */
            const uint8_t *records; /* count × (length u32, record): walk with mi_batch_next */
            size_t bytes;
        } batch;
        struct {
            uint8_t resource_type; /* MI_RESOURCE_TOPIC */
            struct mi_str name, key, value;
            bool has_value; /* false: remove the key (Kafka's null value) */
        } config;
    };
};

/* Decodes one record (docs/format.md L.2). 0, or MI_E_CORRUPT with the reason in err. */
int mi_record_decode(const void *buf, size_t len, struct mi_record *out, char *err, size_t err_len);
int32_t mi_i32_at(const uint8_t *p, unsigned i);
/* A decoded BATCH's next record: its bytes at *rec (*len of them) from *at (0 first), advanced;
 * false at the end. Every record was checked by mi_record_decode (MI9). */
bool mi_batch_next(const struct mi_record *batch, size_t *at, const uint8_t **rec, size_t *len);
/* The i-th config of a decoded topic record (i < configs_count). */
void mi_config_at(const struct mi_record *r, unsigned i, struct mi_config_kv *kv);

/* Encoders: the record's length into buf (which holds cap bytes), or 0 if it does not fit or an
 * argument is out of range. */
size_t mi_encode_register_broker(uint8_t *buf, size_t cap, int32_t node_id, int64_t epoch,
                                 const char *host, uint16_t port);
size_t mi_encode_fence_broker(uint8_t *buf, size_t cap, int32_t node_id, bool fenced);
size_t mi_encode_topic(uint8_t *buf, size_t cap, const uint8_t id[16], const char *name,
                       const char *const *keys, const char *const *values, unsigned configs_count);
size_t mi_encode_partition(uint8_t *buf, size_t cap, const uint8_t topic_id[16], int32_t partition,
                           const int32_t *replicas, unsigned replicas_count, int32_t leader,
                           int32_t leader_epoch, const int32_t *isr, unsigned isr_count);
/* The same with an explicit partition epoch (version 1, MI8): what a snapshot writes. */
size_t mi_encode_partition_v1(uint8_t *buf, size_t cap, const uint8_t topic_id[16],
                              int32_t partition, const int32_t *replicas, unsigned replicas_count,
                              int32_t leader, int32_t leader_epoch, const int32_t *isr,
                              unsigned isr_count, int32_t partition_epoch);
/* A CONFIG record (MI7): value NULL removes the key. */
size_t mi_encode_config(uint8_t *buf, size_t cap, uint8_t resource_type, const char *name,
                        const char *key, const char *value);
size_t mi_encode_delete_topic(uint8_t *buf, size_t cap, const uint8_t topic_id[16]);
size_t mi_encode_producer_ids(uint8_t *buf, size_t cap, int32_t broker_id,
                              int64_t next_producer_id);

/* A BATCH record being built (MI9): mi_batch_add appends one TOPIC, PARTITION or CONFIG record.
 * 0, -E2BIG when it would pass MI_RECORD_BYTES_MAX or MI_BATCH_RECORDS_MAX (nothing added), or
 * -ENOMEM. The record is buf[0..len) once count > 0; mi_batch_free releases it. */
struct mi_batch {
    uint8_t *buf;
    size_t len, cap;
    uint16_t count;
};
int mi_batch_add(struct mi_batch *b, const uint8_t *rec, size_t len);
void mi_batch_free(struct mi_batch *b);

/* ---- the image ---- */

struct mi_broker {
    int32_t id;
    uint16_t port;
    char host[MI_HOST_BYTES_MAX + 1];
    int64_t epoch; /* the raft index of its registration */
    bool fenced;
};

struct mi_partition {
    bool exists;
    int32_t leader, leader_epoch;
    int32_t partition_epoch; /* MI8 */
    uint8_t replicas_count, isr_count;
    int32_t replicas[MI_REPLICAS_MAX], isr[MI_REPLICAS_MAX];
};

struct mi_topic {
    uint8_t id[16];
    char name[MI_TOPIC_NAME_MAX + 1];
    unsigned configs_count;
    char **keys, **values;
    struct mi_partition *partitions;
    int32_t partitions_count; /* partitions 0..count-1 exist */
};

struct metadata_image {
    struct mi_broker *brokers; /* sorted by id */
    unsigned brokers_count;
    struct mi_topic **topics; /* in creation order; lookups are O(topics): the image is small */
    unsigned topics_count, topics_cap;
    int64_t next_producer_id; /* MI4 */
    int32_t producer_ids_broker;
    uint64_t last_index;      /* raft index of the last record applied */
    uint64_t records_applied; /* records handed to apply (rejected ones included) */
    uint64_t records_rejected;
    uint64_t chain; /* FNV-1a 64 over every record handed to apply, in order */
};

void metadata_image_init(struct metadata_image *img);
void metadata_image_free(struct metadata_image *img);
/* Applies one committed record (MI1, MI2). 0, MI_E_CORRUPT or MI_E_REJECTED (counted either way);
 * -ENOMEM leaves the image as it was. */
int metadata_image_apply(struct metadata_image *img, uint64_t index, const void *rec, size_t len);
const struct mi_topic *metadata_image_topic(const struct metadata_image *img, const char *name);
const struct mi_broker *metadata_image_broker(const struct metadata_image *img, int32_t id);
/* Whether `id` is among the partition's replicas (in_isr: among its ISR). */
bool mi_partition_has(const struct mi_partition *p, int32_t id, bool in_isr);

/* Kafka's rack-unaware replica placement (AdminUtils.assignReplicasToBrokersRackUnaware):
 * `brokers` sorted by id (n of them), partition p's first replica brokers[(p + start) % n], the
 * others shifted by 1 + (shift + j) % (n - 1) from it, the shift growing by one every n
 * partitions. out holds partitions × rf ids (partition p's at out[p * rf]). 0, or -EINVAL when
 * rf is 0 or above n (MI5: the replicas of a partition are distinct brokers). */
int mi_place_replicas(const int32_t *brokers, unsigned n, unsigned partitions, unsigned rf,
                      unsigned start, unsigned shift, int32_t *out);

/* The same placement for partitions from..from+count-1 of a topic (CreatePartitions), as Kafka's
 * AdminUtils.assignReplicasToBrokers with startPartitionId = from: start and shift as given (the
 * caller passes the index of partition 0's first replica for both, Kafka's fixedStartIndex),
 * the shift growing by one at each partition p (from on, p > 0) with p % n == 0, so an earlier
 * wrap does not count. out holds count × rf.
 * mi_place_replicas is this with from = 0. */
int mi_place_replicas_from(const int32_t *brokers, unsigned n, unsigned from, unsigned count,
                           unsigned rf, unsigned start, unsigned shift, int32_t *out);
/* How many partitions name `broker` their leader. */
unsigned mi_leaderships(const struct metadata_image *img, int32_t broker);

/* The PARTITION records (L.2) the controller proposes to keep leaders alive (MI6), each handed
 * to emit (bytes valid during the call). With fenced >= 0 (broker `fenced` was just fenced):
 * every partition with it in its ISR loses it unless it is the last member, and one it led
 * gets the first ISR member that is registered and unfenced as leader (-1, none, when there is
 * no such member). With fenced == -1: every leaderless partition whose ISR holds a registered
 * unfenced broker gets the first such as leader. The leader epoch grows by one in every record.
 * emit may apply each record to img: a partition is read whole before its record is emitted.
 * Returns the number of records emitted. */
unsigned mi_plan_leaders(const struct metadata_image *img, int32_t fenced,
                         void (*emit)(void *ctx, const uint8_t *rec, size_t len), void *ctx);

/* The image as a snapshot (docs/format.md L.4), into a malloc'ed buffer. 0 or -ENOMEM. */
int metadata_image_snapshot(const struct metadata_image *img, void **buf, size_t *len);
/* Replaces img by the snapshot's image (MI3). 0; MI_E_CORRUPT (err says why) or -ENOMEM, and img
 * unchanged. */
int metadata_image_restore(struct metadata_image *img, const void *buf, size_t len, char *err,
                           size_t err_len);
/* A digest of the whole image (FNV-1a 64 over its snapshot bytes): equal images, equal digests. */
uint64_t metadata_image_digest(const struct metadata_image *img);

#endif
