/*
 * index_file.c — see index_file.h. The one place that sizes, reserves and maps index files.
 */
#include "index/index_file.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void closed(struct index_file *f, size_t entry_bytes, int64_t base_offset)
{
    memset(f, 0, sizeof(*f));
    f->fd = -1;
    f->entry_bytes = (uint32_t)entry_bytes;
    f->base_offset = base_offset;
}

void index_file_assert(const struct index_file *f)
{
    assert(f->entry_bytes > 0 || f->map_bytes == 0); /* a closed or never-opened one */
    assert(f->entries <= f->entries_max);            /* IF1 */
    assert(!f->writable || f->map_bytes == (size_t)f->entries_max * f->entry_bytes); /* IF2 */
    assert(f->map_bytes >= (size_t)f->entries * f->entry_bytes);                     /* IF3 */
    assert((f->map == NULL) == (f->map_bytes == 0));                                 /* IF4 */
    assert(f->reserved_bytes <= f->map_bytes);                                       /* IF6 */
    assert(!f->writable || f->fd < 0 ||
           (size_t)f->entries * f->entry_bytes <= f->reserved_bytes); /* IF6 */
}

/* fallocate [from, to) of fd: 0, or -errno; a file system without fallocate reserves nothing and
 * reports 1 (the caller then counts the whole mapping as reserved, as before IF6). */
static int reserve_range(int fd, size_t from, size_t to)
{
    if (to <= from)
        return 0;
    if (fallocate(fd, 0, (off_t)from, (off_t)(to - from)) == 0)
        return 0;
    if (errno == EOPNOTSUPP || errno == ENOSYS)
        return 1;
    return -errno;
}

int index_file_reserve(struct index_file *f, uint32_t entries)
{
    if (!f->writable || f->fd < 0)
        return 0;
    size_t need = (size_t)entries * f->entry_bytes;
    if (need <= f->reserved_bytes)
        return 0;
    if (need > f->map_bytes)
        need = f->map_bytes; /* past the capacity the owner's full check refuses the entry */
    if (need <= f->reserved_bytes)
        return 0;
    size_t step = f->reserved_bytes;
    if (step < INDEX_FILE_RESERVE_MIN_BYTES)
        step = INDEX_FILE_RESERVE_MIN_BYTES;
    if (step > INDEX_FILE_RESERVE_MAX_BYTES)
        step = INDEX_FILE_RESERVE_MAX_BYTES;
    size_t goal = (need + step - 1) / step * step;
    if (goal < f->reserved_bytes + step)
        goal = f->reserved_bytes + step;
    if (goal > f->map_bytes)
        goal = f->map_bytes;
    int rc = reserve_range(f->fd, f->reserved_bytes, goal);
    if (rc < 0)
        return rc;
    f->reserved_bytes = rc == 1 ? f->map_bytes : goal;
    index_file_assert(f);
    return 0;
}

int index_file_open(struct index_file *out, const char *path, size_t entry_bytes,
                    int64_t base_offset, size_t capacity_bytes, bool writable,
                    uint32_t live_entries)
{
    assert(out != NULL && path != NULL);
    assert(entry_bytes > 0 && entry_bytes <= UINT32_MAX);
    closed(out, entry_bytes, base_offset);
    if (base_offset < 0 || base_offset > INDEX_FILE_BASE_OFFSET_MAX)
        return -EINVAL;
    uint64_t capacity_entries = capacity_bytes / entry_bytes;
    if (writable && (capacity_entries == 0 || capacity_bytes > INDEX_FILE_BYTES_MAX))
        return -EINVAL;
    int fd = writable ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)
                      : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto err_close;
    }
    uint64_t file_bytes = (uint64_t)st.st_size;
    if (file_bytes > INDEX_FILE_BYTES_MAX) {
        rc = -EFBIG;
        goto err_close;
    }
    bool whole_file = !writable || live_entries == UINT32_MAX;
    if (whole_file && file_bytes % entry_bytes != 0) {
        rc = -EBADMSG;
        goto err_close;
    }
    uint32_t file_entries = (uint32_t)(file_bytes / entry_bytes);
    uint32_t live = whole_file ? file_entries : live_entries;
    if (live > file_entries) {
        rc = -EBADMSG;
        goto err_close;
    }
    uint32_t entries_max = live;
    if (writable && capacity_entries > live)
        entries_max = (uint32_t)capacity_entries;
    size_t map_bytes = (size_t)entries_max * entry_bytes;
    if (writable && file_bytes != map_bytes) {
        /* Cut to the live entries first, then extend: whatever follows them reads as zeros, so a
         * crash before the trim leaves a recognisable zero tail. */
        if (ftruncate(fd, (off_t)live * (off_t)entry_bytes) != 0 ||
            ftruncate(fd, (off_t)map_bytes) != 0) {
            rc = -errno;
            goto err_close;
        }
    }
    size_t reserved_bytes = map_bytes;
    if (writable && map_bytes > 0) {
        /* IF6: reserve the live entries and one window now: a store through the mapping into a
         * hole the file system cannot fill (ENOSPC) would kill the process with SIGBUS instead
         * of failing here; index_file_reserve grows it ahead of the appends. */
        size_t goal = (size_t)live * entry_bytes + INDEX_FILE_RESERVE_MIN_BYTES;
        goal = (goal + INDEX_FILE_RESERVE_MIN_BYTES - 1) / INDEX_FILE_RESERVE_MIN_BYTES *
               INDEX_FILE_RESERVE_MIN_BYTES;
        if (goal > map_bytes)
            goal = map_bytes;
        rc = reserve_range(fd, 0, goal);
        if (rc < 0)
            goto err_close;
        reserved_bytes = rc == 1 ? map_bytes : goal;
    }
    uint8_t *map = NULL;
    if (map_bytes > 0) {
        int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
        void *m = mmap(NULL, map_bytes, prot, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
            rc = -errno;
            goto err_close;
        }
        map = m;
    }
    if (!writable) {
        /* A read-only index is served from its mapping alone: holding a descriptor per sealed
         * index would make a directory of many segments run out of descriptors (limits.md). */
        close(fd);
        fd = -1;
    }
    out->fd = fd;
    out->map = map;
    out->map_bytes = map_bytes;
    out->reserved_bytes = reserved_bytes;
    out->entries_max = entries_max;
    out->entries = live;
    out->writable = writable;
    index_file_assert(out);
    return 0;

err_close:
    close(fd);
    return rc;
}

struct index_file index_file_view(const uint8_t *map, uint32_t entries, size_t entry_bytes,
                                  int64_t base_offset)
{
    struct index_file v;
    closed(&v, entry_bytes, base_offset);
    if (entries > 0) {
        v.map = (uint8_t *)map; /* never written through: writable stays false */
        v.map_bytes = v.reserved_bytes = (size_t)entries * entry_bytes;
        v.entries = v.entries_max = entries;
    }
    index_file_assert(&v);
    return v;
}

void index_file_keep(struct index_file *f, uint32_t keep)
{
    index_file_assert(f);
    assert(keep <= f->entries);
    f->entries = keep;
}

int index_file_seal(struct index_file *f)
{
    index_file_assert(f);
    if (!f->writable)
        return 0;
    if (f->fd < 0)
        return -EBADF; /* an in-memory index has no file to seal */
    size_t live_bytes = (size_t)f->entries * f->entry_bytes;
    if (live_bytes > 0 && msync(f->map, live_bytes, MS_SYNC) != 0)
        return -errno;
    if (ftruncate(f->fd, (off_t)live_bytes) != 0)
        return -errno;
    /* The mapping now reaches past the end of the file: read-only from here on. */
    f->writable = false;
    f->entries_max = f->entries;
    if (fdatasync(f->fd) != 0)
        return -errno;
    size_t page_bytes = (size_t)sysconf(_SC_PAGESIZE);
    size_t keep_bytes = (live_bytes + page_bytes - 1) / page_bytes * page_bytes;
    size_t mapped_bytes = (f->map_bytes + page_bytes - 1) / page_bytes * page_bytes;
    if (keep_bytes > 0 && mprotect(f->map, keep_bytes, PROT_READ) != 0)
        return -errno;
    if (mapped_bytes > keep_bytes && munmap(f->map + keep_bytes, mapped_bytes - keep_bytes) != 0)
        return -errno;
    if (live_bytes == 0)
        f->map = NULL;
    f->map_bytes = f->reserved_bytes = live_bytes;
    /* Sealed: served from the mapping alone, so the descriptor goes (see index_file_open). */
    close(f->fd);
    f->fd = -1;
    index_file_assert(f);
    return 0;
}

int index_file_sync(const struct index_file *f)
{
    index_file_assert(f);
    if (!f->writable || f->entries == 0)
        return 0;
    if (msync(f->map, (size_t)f->entries * f->entry_bytes, MS_SYNC) != 0)
        return -errno;
    return 0;
}

/* An in-memory index: an anonymous writable mapping of capacity_bytes, no file, no descriptor.
 * Read-only opens rebuild a damaged or untrusted index here instead of in its file. */
int index_file_open_memory(struct index_file *out, size_t entry_bytes, int64_t base_offset,
                           size_t capacity_bytes)
{
    assert(out != NULL);
    assert(entry_bytes > 0 && entry_bytes <= UINT32_MAX);
    closed(out, entry_bytes, base_offset);
    if (base_offset < 0 || base_offset > INDEX_FILE_BASE_OFFSET_MAX)
        return -EINVAL;
    uint64_t capacity_entries = capacity_bytes / entry_bytes;
    if (capacity_entries == 0 || capacity_bytes > INDEX_FILE_BYTES_MAX)
        return -EINVAL;
    size_t map_bytes = (size_t)capacity_entries * entry_bytes;
    void *m = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    out->map = m;
    out->map_bytes = out->reserved_bytes = map_bytes; /* memory: nothing to reserve (IF6) */
    out->entries_max = (uint32_t)capacity_entries;
    out->entries = 0;
    out->writable = true;
    index_file_assert(out);
    return 0;
}

void index_file_close(struct index_file *f)
{
    if (f->map != NULL)
        munmap(f->map, f->map_bytes);
    if (f->fd >= 0) {
        if (f->writable)
            (void)!ftruncate(f->fd, (off_t)((size_t)f->entries * f->entry_bytes));
        close(f->fd);
    }
    closed(f, f->entry_bytes, f->base_offset);
}
