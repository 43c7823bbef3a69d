/* util/fs.h - file-system helpers the host needs in several places. */
#ifndef LOOM_UTIL_FS_H
#define LOOM_UTIL_FS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* mkdir -p with mode 0755 for every missing component. 0 or -1 (errno). */
int fs_mkdir_p(const char *path);
/* rm -rf without following symbolic links. 0 or -1. */
int fs_rm_rf(const char *path);
/* Reads a whole file (NUL-terminated; *len excludes it). NULL on error or
 * when the file is larger than max_bytes (errno EFBIG). Caller frees. */
char *fs_read_file(const char *path, size_t max_bytes, size_t *len);
/* Writes data to path atomically (temp file, fsync, rename). */
int fs_write_file_atomic(const char *path, const void *data, size_t len, int mode);
/* Copies a regular file atomically (same rules). */
int fs_copy_file(const char *src, const char *dst, int mode);
int fs_is_dir(const char *path);
int fs_is_file(const char *path);
/* Milliseconds since the Unix epoch / monotonic milliseconds. */
int64_t time_now_ms(void);
int64_t time_mono_ms(void);

/* Writes or reads exactly `len` bytes, retrying after signals (writes in
 * pieces of at most 1 GiB, which some kernels cap one write at). 0, or -1
 * with errno on an error, a write that wrote nothing or a read at EOF. */
int fd_write_all(int fd, const void *buf, size_t len);
int fd_read_all(int fd, void *buf, size_t len);

/* The path of the running loom binary (to start its other roles: worker,
 * plugin-host, confine) into `out`; false, with `out` empty, when it
 * cannot be read. */
bool fs_self_exe(char *out, size_t outlen);

#endif
