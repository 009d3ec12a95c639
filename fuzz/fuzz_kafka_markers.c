/*
 * fuzz_kafka_markers.c — libFuzzer target for the WriteTxnMarkers (27) request decoder a cluster
 * node serves (tools/kafka/proto/kmsg_markers.c; handlers/handle_txn_markers.c), input layout in
 * kafka_fuzz.h (one API: byte 0 is ignored). What decodes round-trips and is answered through
 * the response encoder with one result per marker, topic and partition, as the handler answers;
 * every topic name points inside the input. The answer's decoder (what txn_marker_send.c reads)
 * is fuzzed by the same harness's response direction and by fuzz_kafka_client.c.
 */
#include "fuzz/kafka_fuzz.h"

static struct kmsg_txn_marker_result results[1024];
static struct kmsg_topic_errors topics[4096];
static struct kmsg_partition_error parts[16384];

static void respond(int16_t key, int16_t version, const union kmsg_request *req,
                    struct kp_writer *w)
{
    KCHECK(key == KAFKA_WRITE_TXN_MARKERS);
    const struct kmsg_write_txn_markers_request *q = &req->write_txn_markers;
    size_t at = kafka_frame_begin(w);
    KCHECK(kafka_response_header_encode(w, key, version, 7) == 0);
    int32_t nm = q->markers_count > 1024 ? 1024 : q->markers_count;
    int32_t tu = 0, pu = 0;
    for (int32_t m = 0; m < nm; m++) {
        const struct kmsg_txn_marker *qm = &q->markers[m];
        int32_t nt = qm->topics_count;
        if (nt > 4096 - tu)
            nt = 4096 - tu;
        results[m] = (struct kmsg_txn_marker_result){qm->producer_id, &topics[tu], nt};
        for (int32_t t = 0; t < nt; t++) {
            kf_str_inside(qm->topics[t].name);
            int32_t np = qm->topics[t].partitions_count;
            if (np > 16384 - pu)
                np = 16384 - pu;
            for (int32_t i = 0; i < np; i++)
                parts[pu + i] = (struct kmsg_partition_error){qm->topics[t].partitions[i], 6};
            topics[tu + t] = (struct kmsg_topic_errors){qm->topics[t].name, &parts[pu], np};
            pu += np;
        }
        tu += nt;
    }
    struct kmsg_write_txn_markers_response m = {results, nm < 0 ? 0 : nm};
    int rc = kmsg_write_txn_markers_response_encode(w, version, &m);
    KCHECK(rc == 0 || rc == -12);
    if (rc == 0)
        KCHECK(kafka_frame_end(w, at) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int16_t keys[] = {KAFKA_WRITE_TXN_MARKERS};
    return kf_run(data, size, keys, sizeof keys / sizeof keys[0], respond);
}
