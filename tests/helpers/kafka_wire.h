/*
 * kafka_wire.h — what the broker tests share to speak Kafka by hand: a kafka_server running
 * in-process on the engine fixture (port 0 on 127.0.0.1, the network backend from RT_TEST_IO)
 * and a client that writes request frames with the codec's kp_writer and reads answers with
 * kp_reader over a real socket. Test support only: it fails the test (cmocka) instead of
 * returning errors, except where a test asserts the failure itself (a closed connection).
 * Tests include this after cmocka's headers.
 */
#ifndef RT_TEST_KAFKA_WIRE_H
#define RT_TEST_KAFKA_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "helpers/test_util.h"
#include "tools/kafka/proto/proto.h"

/* ---- the socket, the frames ---- */

/* Connects to 127.0.0.1:port (TCP_NODELAY, a receive timeout of rcv_timeout_s seconds). */
int tk_dial(uint16_t port, int rcv_timeout_s);
/* Starts a request frame in w (a fresh writer): size hole, key, version, correlation id, the
 * client id and, for a flexible request header, its empty tags. */
void tk_request_begin(struct kp_writer *w, int16_t key, int16_t version, int32_t correlation_id,
                      const char *client_id);
/* Closes the frame, sends all of it on sock and frees the writer. */
void tk_request_send(int sock, struct kp_writer *w);
/* Reads one answer frame into *buf (malloc'd) and leaves r past the correlation id (returned in
 * *correlation_id) and, when flexible_header, the header's tags. Returns -1 when the connection
 * closed (or the receive timeout passed) before a frame began, 0 otherwise. */
int tk_response_read(int sock, uint8_t **buf, struct kp_reader *r, bool flexible_header,
                     int32_t *correlation_id);

/* ---- the broker fixture: engine fixture + kafka_server + one lazily dialled connection ---- */

struct tk_fx {
    struct tu_fixture f;
    struct kafka_server *srv;
    int sock;     /* -1 until the first tk_req_send */
    int32_t corr; /* the last correlation id sent */
    const char *client_id;
};

/* cmocka setup: tu_fixture_setup, the engine opened, a kafka_server started on it (two network
 * threads, two partitions per auto-created topic) and *state the struct tk_fx. */
int tk_fx_start(void **state, bool auto_create, const char *client_id);
/* cmocka teardown: closes the connection, stops the server, closes and removes the engine. */
int tk_fx_stop(void **state);
/* tk_request_begin with the next correlation id and the fixture's client id. */
void tk_req_begin(struct tk_fx *x, struct kp_writer *w, int16_t key, int16_t version);
/* tk_request_send on the fixture's connection, dialled first if there is none (10 s timeout). */
void tk_req_send(struct tk_fx *x, struct kp_writer *w);
/* tk_response_read on the fixture's connection; the answer must carry the correlation id last
 * sent. -1: the connection closed. */
int tk_resp_read(struct tk_fx *x, uint8_t **buf, struct kp_reader *r, bool flexible_header);

#endif
