/*
 * test_crc32c.c — CRC-32C against published vectors, and the SSE4.2 path against the
 * slicing-by-8 path on every length 0..1024 from every alignment, plus the lengths where the
 * hardware path switches between its three-stream block sizes. Where the CPU has AVX-512
 * VPCLMULQDQ, the same comparisons cover the folding path (every buffer of 256 bytes and more,
 * from every alignment, with every tail of 0-63 bytes after its multiple of 64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "index/crc32c.h"
#include "helpers/test_util.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn fn)
{
    /* The CRC catalogue's check value for CRC-32C (CRC-32/ISCSI). */
    assert_int_equal(fn(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(fn(0, NULL, 0), 0);
    assert_int_equal(fn(0, "a", 1), 0xC1D04330u);

    /* RFC 3720 (iSCSI) appendix B.4. The RFC prints the CRC bytes in wire (little-endian)
     * order, e.g. "aa 36 91 8a" for 32 zero bytes. */
    uint8_t buf[48];
    memset(buf, 0, 32);
    assert_int_equal(fn(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    assert_int_equal(fn(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(fn(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(fn(0, buf, 32), 0x113FDB5Cu);
    /* An iSCSI SCSI Read (10) command PDU. */
    static const uint8_t pdu[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    assert_int_equal(fn(0, pdu, sizeof pdu), 0xD9963A56u);
}

static void test_vectors_dispatch(void **state)
{
    (void)state;
    check_vectors(crc32c);
}

static void test_vectors_sw(void **state)
{
    (void)state;
    check_vectors(crc32c_sw);
}

/* crc(a ‖ b) == crc(crc(a), b): callers checksum a batch in pieces (header, then records). */
static void test_incremental(void **state)
{
    (void)state;
    uint8_t buf[300];
    srand(7);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rand();
    uint32_t whole = crc32c(0, buf, sizeof buf);
    assert_int_equal(whole, crc32c_sw(0, buf, sizeof buf));
    for (size_t k = 0; k <= sizeof buf; k++) {
        assert_int_equal(crc32c(crc32c(0, buf, k), buf + k, sizeof buf - k), whole);
        assert_int_equal(crc32c_sw(crc32c_sw(0, buf, k), buf + k, sizeof buf - k), whole);
    }
}

static void test_hw_matches_sw(void **state)
{
    (void)state;
    if (!crc32c_hw_available())
        skip();
    enum { MAX_LEN = 1024, ALIGN_MAX = 16 };
    uint8_t *buf = malloc(MAX_LEN + ALIGN_MAX);
    assert_non_null(buf);
    srand(42);
    for (size_t i = 0; i < MAX_LEN + ALIGN_MAX; i++)
        buf[i] = (uint8_t)rand();
    for (size_t start = 0; start < ALIGN_MAX; start++)
        for (size_t len = 0; len <= MAX_LEN; len++) {
            uint32_t seed = (uint32_t)(len * 2654435761u);
            assert_int_equal(crc32c(seed, buf + start, len), crc32c_sw(seed, buf + start, len));
        }
    free(buf);
}

/* The hardware path cuts buffers into 3 x 8 KiB and 3 x 256 B interleaved streams: check the
 * lengths around each switch and a few large ones. */
static void test_hw_matches_sw_long(void **state)
{
    (void)state;
    if (!crc32c_hw_available())
        skip();
    const size_t max_len = 3 * 8192 * 4 + 3 * 256 * 3 + 64;
    uint8_t *buf = malloc(max_len + 8);
    assert_non_null(buf);
    srand(99);
    for (size_t i = 0; i < max_len + 8; i++)
        buf[i] = (uint8_t)rand();
    const size_t edges[] = {3 * 256,      3 * 256 * 2, 3 * 8192,           3 * 8192 * 2,
                            3 * 8192 * 4, 1 << 16,     3 * 8192 + 3 * 256, max_len};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++)
        for (size_t d = 0; d < 17; d++)
            for (size_t start = 0; start < 8; start += 3) {
                size_t len = edges[e] + d >= 8 ? edges[e] + d - 8 : 0;
                if (len > max_len)
                    continue;
                assert_int_equal(crc32c(1, buf + start, len), crc32c_sw(1, buf + start, len));
            }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_dispatch),   cmocka_unit_test(test_vectors_sw),
        cmocka_unit_test(test_incremental),        cmocka_unit_test(test_hw_matches_sw),
        cmocka_unit_test(test_hw_matches_sw_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
