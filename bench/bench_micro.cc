// bench_micro.cc — Google Benchmark micro-benchmarks of the engine's hot codecs: CRC-32C
// (hardware vs table), zigzag varints, RecordBatch encode and validate. A thin C++ harness over
// the C functions; it owns no logic of its own and must never be linked into the library.
//
// Run: build-*/rt_bench_micro [--benchmark_filter=crc]. Throughputs are bytes/s of payload
// (CRC: the buffer; batch: the whole encoded batch); varints report items/s.

#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

extern "C" {
#include "batch.h"
#include "index/crc32c.h"
}

namespace
{

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
    std::vector<uint8_t> v(n);
    std::mt19937 rng(seed);
    for (auto &b : v)
        b = static_cast<uint8_t>(rng());
    return v;
}

// ---- CRC-32C ------------------------------------------------------------------------------

void BM_crc32c_hw(benchmark::State &state)
{
    if (!crc32c_hw_available()) {
        state.SkipWithError("no SSE4.2 on this CPU");
        return;
    }
    const size_t n = static_cast<size_t>(state.range(0));
    auto buf = random_bytes(n, 1);
    uint32_t crc = 0;
    for (auto _ : state) {
        crc = crc32c(crc, buf.data(), n);
        benchmark::DoNotOptimize(crc);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_crc32c_hw)->Arg(64)->Arg(1 << 10)->Arg(16 << 10)->Arg(1 << 20);

void BM_crc32c_sw(benchmark::State &state)
{
    const size_t n = static_cast<size_t>(state.range(0));
    auto buf = random_bytes(n, 1);
    uint32_t crc = 0;
    for (auto _ : state) {
        crc = crc32c_sw(crc, buf.data(), n);
        benchmark::DoNotOptimize(crc);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_crc32c_sw)->Arg(64)->Arg(1 << 10)->Arg(16 << 10)->Arg(1 << 20);

// ---- varints ------------------------------------------------------------------------------

// Values shaped like a record's fields: small deltas and lengths, some multi-byte.
std::vector<int32_t> varint_values()
{
    std::vector<int32_t> v(1024);
    std::mt19937 rng(7);
    for (auto &x : v) {
        switch (rng() % 4) {
        case 0:
            x = static_cast<int32_t>(rng() % 64);
            break;
        case 1:
            x = static_cast<int32_t>(rng() % 8192) - 4096;
            break;
        case 2:
            x = static_cast<int32_t>(rng() % (1 << 20));
            break;
        default:
            x = static_cast<int32_t>(rng());
            break;
        }
    }
    return v;
}

void BM_varint_encode(benchmark::State &state)
{
    auto values = varint_values();
    std::vector<uint8_t> out(values.size() * VARINT_MAX_BYTES);
    for (auto _ : state) {
        uint8_t *p = out.data();
        for (int32_t v : values)
            p += varint_encode(p, v);
        benchmark::DoNotOptimize(p);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_varint_encode);

void BM_varint_decode(benchmark::State &state)
{
    auto values = varint_values();
    std::vector<uint8_t> buf(values.size() * VARINT_MAX_BYTES);
    uint8_t *w = buf.data();
    for (int32_t v : values)
        w += varint_encode(w, v);
    const uint8_t *end = w;
    for (auto _ : state) {
        const uint8_t *p = buf.data();
        int64_t sum = 0;
        while (p < end) {
            int32_t v;
            int n = varint_decode(p, end, &v);
            if (n < 0) {
                state.SkipWithError("decode failed");
                return;
            }
            sum += v;
            p += n;
        }
        benchmark::DoNotOptimize(sum);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                            static_cast<int64_t>(values.size()));
}
BENCHMARK(BM_varint_decode);

// ---- RecordBatch --------------------------------------------------------------------------

constexpr size_t kBatchCap = 16 << 10;
constexpr int32_t kValueBytes = 1 << 10;

// Fills buf with a 16 KiB-capped batch of 1 KiB values and 8-byte keys; returns its size.
size_t encode_batch(uint8_t *buf, const std::vector<uint8_t> &payload, int64_t ts)
{
    batch_builder b;
    if (batch_builder_init(&b, buf, kBatchCap, 0, -1, -1, -1) != 0)
        return 0;
    for (int i = 0;; i++) {
        rt_record r{};
        r.key = payload.data() + i;
        r.key_len = 8;
        r.value = payload.data() + 64 + i;
        r.value_len = kValueBytes;
        r.timestamp_ms = ts + i;
        int rc = batch_builder_add(&b, &r);
        if (rc == -ENOSPC)
            break;
        if (rc != 0)
            return 0;
    }
    size_t len = 0;
    if (batch_builder_finish(&b, &len) != 0)
        return 0;
    return len;
}

void BM_batch_encode(benchmark::State &state)
{
    auto payload = random_bytes(4096, 3);
    std::vector<uint8_t> buf(kBatchCap);
    size_t len = 0;
    for (auto _ : state) {
        len = encode_batch(buf.data(), payload, 1700000000000);
        benchmark::DoNotOptimize(buf.data());
    }
    if (len == 0) {
        state.SkipWithError("encode failed");
        return;
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(len));
    state.counters["batch_bytes"] = static_cast<double>(len);
}
BENCHMARK(BM_batch_encode);

void BM_batch_validate(benchmark::State &state)
{
    auto payload = random_bytes(4096, 3);
    std::vector<uint8_t> buf(kBatchCap);
    size_t len = encode_batch(buf.data(), payload, 1700000000000);
    if (len == 0) {
        state.SkipWithError("encode failed");
        return;
    }
    for (auto _ : state) {
        batch_header h;
        const char *why = nullptr;
        int rc = batch_validate(buf.data(), len, 0, &h, &why);
        if (rc != 0) {
            state.SkipWithError(why);
            return;
        }
        benchmark::DoNotOptimize(h);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(len));
}
BENCHMARK(BM_batch_validate);

void BM_control_batch_build(benchmark::State &state)
{
    uint8_t buf[CONTROL_BATCH_BYTES];
    for (auto _ : state) {
        control_batch_build(buf, 1000, 3, CONTROL_COMMIT, 5, 1700000000000);
        benchmark::DoNotOptimize(buf);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_control_batch_build);

// ==== APPEND-ROUND BENCHMARK: RESERVED ========================================================
// A benchmark of one group-commit append round (partition writer + io backend) will be added
// here by the engine owner. It belongs to the engine, not to the codecs above: keep it in its
// own section and register it with BENCHMARK() like the others.
// ==============================================================================================

} // namespace

BENCHMARK_MAIN();
