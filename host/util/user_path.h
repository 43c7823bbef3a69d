/* util/user_path.h - a path a user names inside a tree of their own (a
 * model directory's kernel_path, --model-main). The host checks such
 * paths with root's powers, so the check must not tell the user anything
 * about files outside the tree: a path is first judged by its text
 * (relative, no ".." component), then resolved beneath the tree without
 * ever leaving it (openat2 RESOLVE_BENEATH: a link pointing out fails the
 * same way whether or not its target exists). Only then is existence
 * known, and only inside the tree. */
#ifndef LOOM_UTIL_USER_PATH_H
#define LOOM_UTIL_USER_PATH_H

#include <stddef.h>

/* 1 when rel is non-empty, relative and has no ".." component. */
int user_path_text_ok(const char *rel);

/* rel resolved beneath dir into out (an absolute path inside dir's real
 * path). 0, or -1 with errno: EXDEV when rel leaves dir (by its text or
 * through a link, whether or not the target exists), ENOENT when it is
 * missing inside dir, EISDIR/ENOTDIR/ENAMETOOLONG and others as found.
 * want_file: a regular file is required (EISDIR otherwise). */
int user_path_resolve(const char *dir, const char *rel, int want_file, char *out, size_t len);

#endif
