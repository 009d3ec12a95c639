// bench_micro.cc — Google Benchmark micro-benchmarks of the engine's hot codecs: CRC-32C
// (hardware vs table), zigzag varints, RecordBatch encode and validate. A thin C++ harness over
// the C functions; it owns no logic of its own and must never be linked into the library.
//
// Run: build-*/rt_bench_micro [--benchmark_filter=crc]. Throughputs are bytes/s of payload
// (CRC: the buffer; batch: the whole encoded batch); varints report items/s.
//
// Engine-level benchmarks (public API over a scratch directory in $TMPDIR or /tmp): index
// lookup over a full 10 MiB offset index, rt_append of a 16 KiB batch at sync=none (see its
// comment for what it includes), rt_fetch_start + rt_fetch_release (one batch and 1 MiB), and
// the record iterator over a 1 MiB fetch of 1 KiB records.

#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include "batch.h"
#include "index/crc32c.h"
#include "index/offset_index.h"
#include "ringtail.h"
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

// ==== APPEND-ROUND BENCHMARK ===================================================================
// rt_append of one 16-record batch of 1 KiB values (16 589 B encoded) to one partition of an
// engine opened with sync=none: the caller's encode + CRC, the hand-off to the shard thread, one
// group-commit round (a buffered io_uring write into the page cache, no fdatasync) and the
// wake-up back. It measures the engine's per-append overhead, not the disk: the page cache
// absorbs the write. Segments roll every 1 GiB as in production.
// ==============================================================================================

std::string scratch_dir(const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/rt_bench_micro." + tag + ".XXXXXX";
    std::vector<char> buf(t.begin(), t.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data()))
        return std::string();
    return std::string(buf.data());
}

void rmtree(const std::string &dir)
{
    std::string cmd = "rm -rf '" + dir + "'";
    if (system(cmd.c_str()) != 0)
        fprintf(stderr, "rt_bench_micro: could not remove %s\n", dir.c_str());
}

struct Engine {
    std::string dir;
    rt_engine *e = nullptr;
    explicit Engine(const char *tag)
    {
        dir = scratch_dir(tag);
        rt_options o;
        rt_options_init(&o);
        o.sync_mode = RT_SYNC_NONE;
        if (dir.empty() || rt_open(dir.c_str(), &o, &e) != 0 || rt_topic_create(e, "t", 1) != 0)
            e = nullptr;
    }
    ~Engine()
    {
        if (e)
            rt_close(e);
        if (!dir.empty())
            rmtree(dir);
    }
};

std::vector<rt_record> records_1k(const std::vector<uint8_t> &payload, size_t n)
{
    std::vector<rt_record> recs(n);
    for (size_t i = 0; i < n; i++) {
        recs[i] = rt_record{};
        recs[i].key_len = -1;
        recs[i].value = payload.data() + i * 61;
        recs[i].value_len = kValueBytes;
        recs[i].timestamp_ms = -1;
    }
    return recs;
}

void BM_append_round(benchmark::State &state)
{
    Engine eng("append");
    if (!eng.e) {
        state.SkipWithError("rt_open failed");
        return;
    }
    auto payload = random_bytes(64 << 10, 5);
    auto recs = records_1k(payload, 16);
    for (auto _ : state) {
        int rc = rt_append(eng.e, "t", 0, recs.data(), recs.size(), nullptr);
        if (rc != 0) {
            state.SkipWithError(rt_strerror(rc));
            return;
        }
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 16 * kValueBytes);
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_append_round)->UseRealTime();

// ---- offset index -------------------------------------------------------------------------

// A full 10 MiB index (1 310 720 entries; positions 1 KiB apart so the last stays within the
// i32 position range), looked up at random offsets: a binary search over the mapping.
void BM_index_lookup(benchmark::State &state)
{
    std::string dir = scratch_dir("index");
    std::string path = dir + "/00000000000000000000.index";
    offset_index idx = OFFSET_INDEX_INIT;
    const size_t cap = 10u << 20;
    if (dir.empty() || offset_index_open(&idx, path.c_str(), 0, cap, true, 0) != 0) {
        state.SkipWithError("offset_index_open failed");
        return;
    }
    const uint32_t n = static_cast<uint32_t>(cap / OFFSET_INDEX_ENTRY_BYTES);
    for (uint32_t i = 0; i < n; i++)
        if (offset_index_append(&idx, static_cast<int64_t>(i) * 4 + 1, i * 1024u + 1) != 0) {
            state.SkipWithError("offset_index_append failed");
            return;
        }
    std::mt19937_64 rng(11);
    std::vector<int64_t> targets(4096);
    for (auto &t : targets)
        t = static_cast<int64_t>(rng() % (static_cast<uint64_t>(n) * 4));
    size_t k = 0;
    for (auto _ : state) {
        int64_t off;
        uint32_t pos;
        offset_index_lookup(&idx, targets[k++ & 4095], &off, &pos);
        benchmark::DoNotOptimize(pos);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.counters["entries"] = n;
    offset_index_close(&idx);
    rmtree(dir);
}
BENCHMARK(BM_index_lookup);

// ---- fetch and the record iterator ---------------------------------------------------------

// A 64 MiB log of 16-record batches of 1 KiB values in one engine, shared by the reads below.
struct ReadLog {
    Engine eng{"fetch"};
    int64_t end = 0;
    ReadLog()
    {
        if (!eng.e)
            return;
        auto payload = random_bytes(64 << 10, 9);
        auto recs = records_1k(payload, 16);
        for (int b = 0; b < 4096; b++)
            if (rt_append(eng.e, "t", 0, recs.data(), recs.size(), nullptr) != 0)
                return;
        rt_list_offsets(eng.e, "t", 0, RT_OFFSET_LATEST, RT_READ_UNCOMMITTED, &end);
    }
};

ReadLog &read_log()
{
    static ReadLog log;
    return log;
}

// rt_fetch_start + rt_fetch_release at random offsets; range(0) = max_bytes (1: one batch).
void BM_fetch(benchmark::State &state)
{
    ReadLog &log = read_log();
    if (!log.eng.e || log.end == 0) {
        state.SkipWithError("log build failed");
        return;
    }
    const size_t max_bytes = static_cast<size_t>(state.range(0));
    std::mt19937_64 rng(13);
    uint64_t returned = 0;
    for (auto _ : state) {
        rt_fetch *f = nullptr;
        int rc = rt_fetch_start(log.eng.e, "t", 0,
                                static_cast<int64_t>(rng() % static_cast<uint64_t>(log.end)),
                                max_bytes, RT_READ_UNCOMMITTED, &f);
        if (rc != 0) {
            state.SkipWithError(rt_strerror(rc));
            return;
        }
        returned += rt_fetch_get(f)->size_bytes;
        rt_fetch_release(f);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.counters["bytes_per_call"] =
        static_cast<double>(returned) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_fetch)->Arg(1)->Arg(1 << 20);

// rt_records_next over one 1 MiB fetch of 1 KiB records (fetch outside the timed region is not
// possible per iteration, so the fetch is made once and re-iterated): range(0) = 1 touches every
// value byte (64-bit word sum), 0 reads headers only (offset, lengths). Every batch's CRC is
// checked by the iterator either way.
void BM_record_iterator(benchmark::State &state)
{
    ReadLog &log = read_log();
    if (!log.eng.e || log.end == 0) {
        state.SkipWithError("log build failed");
        return;
    }
    rt_fetch *f = nullptr;
    if (rt_fetch_start(log.eng.e, "t", 0, 0, 1 << 20, RT_READ_UNCOMMITTED, &f) != 0) {
        state.SkipWithError("rt_fetch_start failed");
        return;
    }
    const bool touch = state.range(0) != 0;
    int64_t records = 0;
    uint64_t bytes = 0;
    for (auto _ : state) {
        rt_records it;
        if (rt_records_init(&it, f, 0) != 0) {
            state.SkipWithError("rt_records_init failed");
            break;
        }
        rt_record_view v;
        uint64_t sum = 0;
        while (rt_records_next(&it, &v) == 0) {
            records++;
            bytes += static_cast<uint64_t>(v.value_len);
            if (touch) {
                const uint8_t *p = v.value;
                for (int32_t i = 0; i + 8 <= v.value_len; i += 8) {
                    uint64_t w;
                    memcpy(&w, p + i, 8);
                    sum += w;
                }
            } else {
                sum += static_cast<uint64_t>(v.offset) + static_cast<uint64_t>(v.value_len);
            }
        }
        benchmark::DoNotOptimize(sum);
    }
    rt_fetch_release(f);
    state.SetItemsProcessed(records);
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_record_iterator)->Arg(1)->Arg(0);

} // namespace

BENCHMARK_MAIN();
