/*
 * fuzz_kafka_data.c — libFuzzer target for the data-path request decoders (Produce, Fetch,
 * ListOffsets; tools/kafka/proto/kmsg_data.c), input layout in kafka_fuzz.h. What decodes is answered:
 * every topic/partition echoed into the response encoder, fetch records as holes (KP8), and the
 * frame's size must equal writer bytes + hole bytes after the size field.
 */
#include "fuzz/kafka_fuzz.h"

static _Alignas(16) uint8_t resp_buf[1 << 20];

static void *resp_alloc(size_t *used, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof resp_buf - *used)
        return NULL;
    void *p = resp_buf + *used;
    *used += n;
    memset(p, 0, n);
    return p;
}

static void check_frame(struct kp_writer *w, size_t at)
{
    int rc = kafka_frame_end(w, at);
    if (rc != 0) {
        KCHECK(rc == KP_E_LIMIT || rc == -12 || rc == RT_E_INVALID_ARGUMENT);
        return;
    }
    uint32_t size = (uint32_t)w->buf[at] << 24 | (uint32_t)w->buf[at + 1] << 16 |
                    (uint32_t)w->buf[at + 2] << 8 | w->buf[at + 3];
    KCHECK((uint64_t)size == kp_writer_wire_bytes(w) - 4);
}

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    size_t used = 0;
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 7) == 0);
    if (key == KAFKA_PRODUCE) {
        const struct kmsg_produce_request *p = &req->produce;
        kf_str_inside(p->transactional_id);
        struct kmsg_produce_topic_response *tr =
            resp_alloc(&used, sizeof *tr * (size_t)p->topics_count);
        if (p->topics_count && !tr)
            return;
        for (int32_t i = 0; i < p->topics_count; i++) {
            kf_str_inside(p->topics[i].name);
            tr[i].name = p->topics[i].name;
            struct kmsg_produce_partition_response *pr =
                resp_alloc(&used, sizeof *pr * (size_t)p->topics[i].partitions_count);
            if (p->topics[i].partitions_count && !pr)
                return;
            for (int32_t j = 0; j < p->topics[i].partitions_count; j++) {
                kf_bytes_inside(p->topics[i].partitions[j].records);
                pr[j].index = p->topics[i].partitions[j].index;
                pr[j].base_offset = j;
                pr[j].log_append_time_ms = -1;
            }
            tr[i].partitions = pr;
            tr[i].partitions_count = p->topics[i].partitions_count;
        }
        struct kmsg_produce_response m = {tr, p->topics_count, 0};
        int rc = kmsg_produce_response_encode(w, version, &m);
        KCHECK(rc == 0 || rc == -12);
    } else if (key == KAFKA_FETCH) {
        const struct kmsg_fetch_request *f = &req->fetch;
        kf_str_inside(f->rack_id);
        struct kmsg_fetch_topic_response *tr =
            resp_alloc(&used, sizeof *tr * (size_t)f->topics_count);
        if (f->topics_count && !tr)
            return;
        int32_t holes = 0;
        for (int32_t i = 0; i < f->topics_count; i++) {
            kf_str_inside(f->topics[i].topic);
            tr[i].topic = f->topics[i].topic;
            struct kmsg_fetch_partition_response *pr =
                resp_alloc(&used, sizeof *pr * (size_t)f->topics[i].partitions_count);
            if (f->topics[i].partitions_count && !pr)
                return;
            for (int32_t j = 0; j < f->topics[i].partitions_count; j++) {
                pr[j].partition_index = f->topics[i].partitions[j].partition;
                pr[j].aborted_transactions_count = -1;
                pr[j].preferred_read_replica = -1;
                pr[j].records_len = f->topics[i].partitions[j].partition_max_bytes & 0xffff;
                if (pr[j].records_len > 0 && holes < 64)
                    holes++;
                else
                    pr[j].records_len = -1;
            }
            tr[i].partitions = pr;
            tr[i].partitions_count = f->topics[i].partitions_count;
        }
        for (int32_t i = 0; i < f->forgotten_topics_data_count; i++)
            kf_str_inside(f->forgotten_topics_data[i].topic);
        struct kmsg_fetch_response m = {0, 0, 0, tr, f->topics_count};
        int rc = kmsg_fetch_response_encode(w, version, &m);
        KCHECK(rc == 0 || rc == -12);
        if (rc == 0)
            KCHECK(w->holes_count == (size_t)holes);
    } else {
        const struct kmsg_list_offsets_request *l = &req->list_offsets;
        struct kmsg_list_offsets_topic_response *tr =
            resp_alloc(&used, sizeof *tr * (size_t)l->topics_count);
        if (l->topics_count && !tr)
            return;
        for (int32_t i = 0; i < l->topics_count; i++) {
            kf_str_inside(l->topics[i].name);
            tr[i].name = l->topics[i].name;
            struct kmsg_list_offsets_partition_response *pr =
                resp_alloc(&used, sizeof *pr * (size_t)l->topics[i].partitions_count);
            if (l->topics[i].partitions_count && !pr)
                return;
            for (int32_t j = 0; j < l->topics[i].partitions_count; j++) {
                pr[j].partition_index = l->topics[i].partitions[j].partition_index;
                pr[j].timestamp = l->topics[i].partitions[j].timestamp;
                pr[j].offset = 0;
            }
            tr[i].partitions = pr;
            tr[i].partitions_count = l->topics[i].partitions_count;
        }
        struct kmsg_list_offsets_response m = {0, tr, l->topics_count};
        int rc = kmsg_list_offsets_response_encode(w, version, &m);
        KCHECK(rc == 0 || rc == -12);
    }
    check_frame(w, at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_PRODUCE, KAFKA_FETCH, KAFKA_LIST_OFFSETS};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
