/*
 * crc32c.c — CRC-32C (Castagnoli), the checksum of Kafka's RecordBatch v2 (docs/format.md
 * §B.3: CRC over bytes [21, end) of a batch) and of ringtail's own files.
 *
 * Definition: reflected polynomial 0x82F63B78, register preset to 0xFFFFFFFF, final XOR
 * 0xFFFFFFFF, no byte swapping — the same function as java.util.zip.CRC32C, Kafka's Crc32C,
 * iSCSI (RFC 3720 §B.4) and the SSE4.2 crc32 instruction. check("123456789") = 0xE3069283.
 *
 * This module owns two implementations of that one function and the choice between them:
 *   - hardware: SSE4.2 `crc32` on 8-byte words. The instruction has a latency of 3 cycles and a
 *     throughput of 1, so long buffers are cut into three interleaved streams whose partial CRCs
 *     are merged by multiplying by x^(8·n) mod P (a table-driven linear map, 1 KiB per block
 *     size). That runs ~3x faster than one dependent chain once a buffer exceeds ~768 bytes.
 *   - software: slicing-by-8 tables, ~1 byte/cycle, for CPUs without SSE4.2 and non-x86 hosts.
 *   - folding: where the CPU has AVX-512 VPCLMULQDQ, buffers of 256 bytes and more are first
 *     folded 256 bytes at a time by carry-less multiplies (four 512-bit accumulators, each lane
 *     of 16 bytes multiplied by x^2048 mod P and added to the lane 256 bytes on), then folded to
 *     64 bytes whose CRC the crc32 instruction takes; the rest (< 64 bytes) as above. That ran
 *     2-2.5x faster than the three crc32 streams on an AMD EPYC (rt_bench_micro: 16 KiB 740-800
 *     -> 309-375 ns, 1 KiB 61-66 -> 25-30 ns; docs/bench.md item 4). Issue 27 item 4: the seal
 *     of every batch and the validation of every appended batch read each byte through here.
 * The choice is made once (pthread_once) from __builtin_cpu_supports("sse4.2") (and
 * "avx512f", "vpclmulqdq", "pclmul" for the folding).
 *
 * It must never allocate, never keep state other than the tables built on first use, and never
 * use a CPU instruction outside a function that was selected for it: the hardware paths are the
 * only code marked target(...), and each runs only when its flag was set from the CPU's.
 */
#include "index/crc32c.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include <nmmintrin.h>
#define CRC32C_HAVE_X86 1
#else
#define CRC32C_HAVE_X86 0
#endif

#define CRC32C_POLY 0x82F63B78u

/* Interleaved block sizes for the hardware path: LONG for big buffers, SHORT for the rest. Each
 * is a multiple of 8 so the three streams stay on word boundaries. */
#define CRC32C_LONG_BYTES  8192
#define CRC32C_SHORT_BYTES 256
_Static_assert(CRC32C_LONG_BYTES % 8 == 0, "streams must be whole words");
_Static_assert(CRC32C_SHORT_BYTES % 8 == 0, "streams must be whole words");

static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static bool crc32c_hw;
#if CRC32C_HAVE_X86
static bool crc32c_fold; /* crc32c_hw and AVX-512 VPCLMULQDQ */
/* Folding constants for a distance of D bits, as the two 64-bit halves of a 128-bit lane:
 * {x^(D+63) mod P, x^(D-1) mod P}, each reflected and shifted left by 32 (fold_constants). */
static uint64_t crc32c_k2048[2]; /* D = 2048: one accumulator to the same one, 256 bytes on */
static uint64_t crc32c_k512[2];  /* D = 512: one accumulator to the next, 64 bytes on */
#endif
/* Slicing-by-8: table[k][b] is the CRC register after feeding byte b followed by k zero bytes. */
static uint32_t crc32c_table[8][256];
/* Shift tables: shift_x[k][b] = (b << 8k) · x^(8·X_BYTES) mod P, so a register r is advanced over
 * X_BYTES zero bytes by four lookups. */
static uint32_t crc32c_shift_long[4][256];
static uint32_t crc32c_shift_short[4][256];

/* a · b mod P in the reflected representation (bit 31 is x^0). O(32). */
static uint32_t gf2_multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31;
    uint32_t p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

/* x^(8·n) mod P, by square-and-multiply over x^(2^k). O(32 log n). */
static uint32_t gf2_x8n(size_t n)
{
    uint32_t result = 1u << 31; /* x^0 */
    uint32_t sq = 1u << 23;     /* x^8 */
    while (n) {
        if (n & 1)
            result = gf2_multmodp(sq, result);
        sq = gf2_multmodp(sq, sq);
        n >>= 1;
    }
    return result;
}

static void shift_table_build(uint32_t table[4][256], size_t zeros_bytes)
{
    uint32_t op = gf2_x8n(zeros_bytes);
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            table[k][b] = gf2_multmodp(op, b << (8 * k));
}

#if CRC32C_HAVE_X86
/* A lane of 16 bytes holds x^(127-m) at bit m (the crc32 instruction's order: its first bit is
 * the highest power). Its low half L0 (bits 0-63) stands for L0·x^64, its high half L1 for L1.
 * Moving the lane D bits on is L·x^D = L0·x^(64+D) + L1·x^D mod P. A carry-less product of a
 * half (x^(63-i) at bit i) by a constant holding x^e at bit 63-e (the reflected 32-bit form
 * shifted left by 32) holds x^(126-m) at bit m; read as a lane that is the product times x, so
 * the constants are x^(63+D) and x^(D-1). */
static void fold_constants(uint64_t k[2], uint32_t d_bits)
{
    const uint32_t x7 = 1u << (31 - 7);
    k[0] = (uint64_t)gf2_multmodp(gf2_x8n((d_bits + 56) / 8), x7) << 32; /* x^(D+63) */
    k[1] = (uint64_t)gf2_multmodp(gf2_x8n((d_bits - 8) / 8), x7) << 32;  /* x^(D-1) */
}

#endif

static void crc32c_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int i = 0; i < 8; i++)
            r = (r & 1) ? (r >> 1) ^ CRC32C_POLY : r >> 1;
        crc32c_table[0][b] = r;
    }
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = crc32c_table[0][b];
        for (int k = 1; k < 8; k++) {
            r = crc32c_table[0][r & 0xff] ^ (r >> 8);
            crc32c_table[k][b] = r;
        }
    }
    shift_table_build(crc32c_shift_long, CRC32C_LONG_BYTES);
    shift_table_build(crc32c_shift_short, CRC32C_SHORT_BYTES);
#if CRC32C_HAVE_X86
    __builtin_cpu_init();
    crc32c_hw = __builtin_cpu_supports("sse4.2");
    crc32c_fold = crc32c_hw && __builtin_cpu_supports("pclmul") &&
                  __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
    fold_constants(crc32c_k2048, 2048);
    fold_constants(crc32c_k512, 512);
#else
    crc32c_hw = false;
#endif
}

static inline void crc32c_ready(void)
{
    int rc = pthread_once(&crc32c_once, crc32c_init);
    assert(rc == 0);
    (void)rc;
}

/* ---- software: slicing-by-8 on the raw (pre-inverted) register ---- */
static uint32_t crc32c_sw_raw(uint32_t r, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        r = crc32c_table[0][(r ^ *p++) & 0xff] ^ (r >> 8);
        len--;
    }
    while (len >= 8) {
        /* Byte loads keep this endian-neutral; compilers fuse them into one load on x86. */
        uint32_t lo = r ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        r = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
            crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
            crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
            crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        r = crc32c_table[0][(r ^ *p++) & 0xff] ^ (r >> 8);
    return r;
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    assert(buf != NULL || len == 0);
    crc32c_ready();
    return ~crc32c_sw_raw(~crc, buf, len);
}

/* ---- hardware: SSE4.2 ---- */
#if CRC32C_HAVE_X86
static inline uint32_t crc32c_shift(const uint32_t table[4][256], uint32_t r)
{
    return table[0][r & 0xff] ^ table[1][(r >> 8) & 0xff] ^ table[2][(r >> 16) & 0xff] ^
           table[3][r >> 24];
}

static inline uint64_t load64_le(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w); /* x86 is little-endian: the crc32 instruction wants LE words */
    return w;
}

/* Three streams of `block` bytes each over p, merged into r. */
__attribute__((target("sse4.2"))) static inline uint32_t
crc32c_hw_3way(uint32_t r, const uint8_t *p, size_t block, const uint32_t shift[4][256])
{
    uint64_t c0 = r, c1 = 0, c2 = 0;
    const uint8_t *end = p + block;
    while (p < end) {
        c0 = _mm_crc32_u64(c0, load64_le(p));
        c1 = _mm_crc32_u64(c1, load64_le(p + block));
        c2 = _mm_crc32_u64(c2, load64_le(p + 2 * block));
        p += 8;
    }
    /* raw(A‖B, r) = raw(A, r)·x^(8|B|) ⊕ raw(B, 0): the register is linear in its inputs. */
    uint32_t m = crc32c_shift(shift, (uint32_t)c0) ^ (uint32_t)c1;
    return crc32c_shift(shift, m) ^ (uint32_t)c2;
}

#define CRC32C_FOLD_MIN_BYTES 256

#define FOLD_TARGET "sse4.2,pclmul,avx512f,vpclmulqdq"

/* x·k for every lane (both halves), added to d: each lane of x moved D bits on, onto d's. */
__attribute__((target(FOLD_TARGET))) static inline __m512i fold_onto(__m512i x, __m512i k,
                                                                     __m512i d)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), d, 0x96); /* a^b^c */
}

/* The raw register after r over p[0, len), len a multiple of 64 and >= CRC32C_FOLD_MIN_BYTES.
 * raw(r, D) = raw(0, D with r added to its first 4 bytes), so r goes into the first lane. */
__attribute__((target(FOLD_TARGET))) static uint32_t crc32c_fold_raw(uint32_t r, const uint8_t *p,
                                                                     size_t len)
{
    assert(len % 64 == 0 && len >= CRC32C_FOLD_MIN_BYTES);
    __m512i x0 = _mm512_loadu_si512((const void *)p);
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)r)));
    p += 256;
    len -= 256;
    const __m512i k2048 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)crc32c_k2048[1], (long long)crc32c_k2048[0]));
    while (len >= 256) {
        x0 = fold_onto(x0, k2048, _mm512_loadu_si512((const void *)p));
        x1 = fold_onto(x1, k2048, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = fold_onto(x2, k2048, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = fold_onto(x3, k2048, _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        len -= 256;
    }
    const __m512i k512 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)crc32c_k512[1], (long long)crc32c_k512[0]));
    x1 = fold_onto(x0, k512, x1);
    x2 = fold_onto(x1, k512, x2);
    x3 = fold_onto(x2, k512, x3);
    while (len >= 64) {
        x3 = fold_onto(x3, k512, _mm512_loadu_si512((const void *)p));
        p += 64;
        len -= 64;
    }
    uint64_t w[8];
    _mm512_storeu_si512((void *)w, x3);
    uint64_t c = 0;
    for (int i = 0; i < 8; i++)
        c = _mm_crc32_u64(c, w[i]);
    return (uint32_t)c;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_raw(uint32_t r, const uint8_t *p,
                                                                size_t len)
{
    if (crc32c_fold && len >= CRC32C_FOLD_MIN_BYTES) {
        size_t n = len & ~(size_t)63;
        r = crc32c_fold_raw(r, p, n);
        p += n;
        len -= n;
    }
    while (len && ((uintptr_t)p & 7)) {
        r = _mm_crc32_u8(r, *p++);
        len--;
    }
    while (len >= 3 * CRC32C_LONG_BYTES) {
        r = crc32c_hw_3way(r, p, CRC32C_LONG_BYTES, crc32c_shift_long);
        p += 3 * CRC32C_LONG_BYTES;
        len -= 3 * CRC32C_LONG_BYTES;
    }
    while (len >= 3 * CRC32C_SHORT_BYTES) {
        r = crc32c_hw_3way(r, p, CRC32C_SHORT_BYTES, crc32c_shift_short);
        p += 3 * CRC32C_SHORT_BYTES;
        len -= 3 * CRC32C_SHORT_BYTES;
    }
    uint64_t c = r;
    while (len >= 8) {
        c = _mm_crc32_u64(c, load64_le(p));
        p += 8;
        len -= 8;
    }
    r = (uint32_t)c;
    while (len--)
        r = _mm_crc32_u8(r, *p++);
    return r;
}
#endif

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
    assert(buf != NULL || len == 0);
    crc32c_ready();
#if CRC32C_HAVE_X86
    if (crc32c_hw)
        return ~crc32c_hw_raw(~crc, buf, len);
#endif
    return ~crc32c_sw_raw(~crc, buf, len);
}

bool crc32c_hw_available(void)
{
    crc32c_ready();
    return crc32c_hw;
}
