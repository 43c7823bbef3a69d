/* util/fs.h - file-system helpers the host needs in several places. */
#ifndef LOOM_UTIL_FS_H
#define LOOM_UTIL_FS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util/error.h"

/* The fallible helpers return NULL or an error naming the operation and the
 * path, with the errno kept (loom_err_errno); the code follows it: ENOENT
 * and ENOTDIR give LOOM_E_NOT_FOUND, EEXIST LOOM_E_CONFLICT, ENAMETOOLONG
 * LOOM_E_INVALID, the rest LOOM_E_INTERNAL. */

/* mkdir -p with mode 0755 for every missing component. */
loom_error *fs_mkdir_p(const char *path);
/* rm -rf without following symbolic links; a missing path is no error. */
loom_error *fs_rm_rf(const char *path);
/* Reads a whole regular file into *out (NUL-terminated, caller frees; *len,
 * when given, excludes the NUL). A file over max_bytes is LOOM_E_TOO_LARGE
 * naming the limit; *out is NULL on any error. */
loom_error *fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len);
/* Writes data to path atomically (temp file, fsync, rename). */
loom_error *fs_write_file_atomic(const char *path, const void *data, size_t len, int mode);
/* Copies a regular file of at most 2 GiB atomically (same rules). */
loom_error *fs_copy_file(const char *src, const char *dst, int mode);
int fs_is_dir(const char *path);
int fs_is_file(const char *path);
/* Milliseconds since the Unix epoch / monotonic milliseconds. */
int64_t time_now_ms(void);
int64_t time_mono_ms(void);
/* `ms` milliseconds from now on `clock`: the deadline pthread_cond_timedwait
 * takes (CLOCK_REALTIME, or the clock the condition was made with). */
struct timespec time_after_ms(clockid_t clock, int64_t ms);

/* Writes or reads exactly `len` bytes, retrying after signals (writes in
 * pieces of at most 1 GiB, which some kernels cap one write at). 0, or -1
 * with errno on an error, a write that wrote nothing or a read at EOF.
 * The one exception to loom_error (see util/error.h): these are write(2)
 * and read(2) made whole, called in the loops that frame bytes on pipes
 * and sockets, whose callers name the peer in their own error. */
int fd_write_all(int fd, const void *buf, size_t len);
int fd_read_all(int fd, void *buf, size_t len);

/* The path of the running loom binary (to start its other roles: worker,
 * plugin-host, confine) into `out`; false, with `out` empty, when it
 * cannot be read. */
bool fs_self_exe(char *out, size_t outlen);

#endif
