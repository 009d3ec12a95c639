/*
 * error.h — the thread's detailed error message behind rt_error_detail(). Every public entry
 * point clears it on entry (error_clear) and failure paths fill it (error_set) with the file,
 * offset or rule involved. Internal only; never allocates (a fixed thread-local buffer).
 */
#ifndef RT_ERROR_H
#define RT_ERROR_H

#include <stdarg.h>

#define ERROR_DETAIL_BYTES 512

void error_clear(void);
/* Formats the detail and returns `code` so callers can write `return error_set(rc, ...)`. */
int error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RT_ERROR_H */
