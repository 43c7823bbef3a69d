/*
 * util/user_tree.h - the one way the host touches a tree its users control:
 * exec folders (RESULT_DIR and its logs, checkpoints, code), model
 * directories, upload spools, data directories and tuning folders.
 *
 * The host runs with more powers than the users whose files these are, so a
 * path inside such a tree is never handed to open() or its friends: a job
 * can replace any component with a symbolic link (to /etc/shadow, to the
 * host's credentials) between the host's check and its use. Instead every
 * operation starts from a descriptor of the tree's root and resolves the
 * rest with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS): a link in any component (absolute or relative, to
 * a file or a folder), a ".." component, an absolute path or a /proc magic
 * link is refused, never followed. Files are created with O_EXCL |
 * O_NOFOLLOW, and what is opened is used through its descriptor from then
 * on, never reopened by path. Reads refuse anything but a regular file (a
 * planted FIFO would block the host). Hard links to files the job could not
 * read itself are the kernel's to refuse (fs.protected_hardlinks).
 *
 * Paths given here (`rel`) are relative to the root descriptor; "" or "."
 * names the root itself. scripts/check-user-trees keeps other host code from
 * calling open/fopen/opendir/unlink/rename/... on these trees.
 *
 * Errors keep errno as the failed call left it. A link, "..", an absolute
 * path or a magic link: LOOM_E_FORBIDDEN. Missing: LOOM_E_NOT_FOUND. Not a
 * regular file or folder where one is needed: LOOM_E_INVALID. A kernel
 * without openat2 (before Linux 5.6, or a seccomp filter that hides it):
 * LOOM_E_UNSUPPORTED, naming the call. Thread-safe (no state but the
 * descriptors the caller holds).
 */
#ifndef LOOM_UTIL_USER_TREE_H
#define LOOM_UTIL_USER_TREE_H

#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* Opens the root of a tree: `path` is the host's own name for it (the exec
 * folder under the state home, a model directory it registered), whose
 * components are the host's; the last one must be a folder, not a link.
 * The caller closes *root. */
loom_error *utree_root(const char *path, int *root);

/* Opens a folder of the host's own that the operator may have made a link
 * (the data store on another disk) as the root of a user tree below it:
 * links in `path` are followed, none beneath it. */
loom_error *utree_host_root(const char *path, int *root);

/* Opens the regular file rel beneath root for reading (O_RDONLY; a FIFO, a
 * device or a folder is refused without blocking). */
loom_error *utree_open_read(int root, const char *rel, int *fd);
/* Opens rel for reading and writing, creating it (mode) when missing; an
 * existing entry must be a regular file. */
loom_error *utree_open_write(int root, const char *rel, mode_t mode, int *fd);
/* As utree_open_write, for appending: O_APPEND (writers that share the
 * file each write at its end), positioned at the end. */
loom_error *utree_open_append(int root, const char *rel, mode_t mode, int *fd);
/* Creates rel, which must not exist (O_CREAT | O_EXCL | O_NOFOLLOW), for
 * writing. */
loom_error *utree_create(int root, const char *rel, mode_t mode, int *fd);
/* Opens the folder rel beneath root (a descriptor usable as another root). */
loom_error *utree_open_dir(int root, const char *rel, int *fd);
/* A listing of the folder rel (fdopendir on a folder opened beneath root);
 * the caller closedir()s it. Entries are names: look them up again with
 * these functions relative to dirfd(*out), never by path. */
loom_error *utree_list(int root, const char *rel, DIR **out);

/* Makes the folder rel and every missing folder above it (mode), beneath
 * root; existing folders are fine, anything else in the way is refused. */
loom_error *utree_mkdirs(int root, const char *rel, mode_t mode);
/* Removes the file or link rel (the link itself, never its target). A
 * missing entry is not an error. */
loom_error *utree_unlink(int root, const char *rel);
/* Renames rel `from` to `to` (replacing a file there), both beneath root. */
loom_error *utree_rename(int root, const char *from, const char *to);
/* Removes rel and everything inside it without following a link; "" or
 * "." empties the root. A missing entry is not an error. Any depth. */
loom_error *utree_remove_all(int root, const char *rel);

/* Reads the whole regular file rel (at most max bytes, else
 * LOOM_E_TOO_LARGE): a malloc'd NUL-terminated buffer; *len (when given)
 * excludes the NUL. */
loom_error *utree_read_file(int root, const char *rel, size_t max, char **out, size_t *len);
/* Writes data as the file rel: written to a new file beside it, then
 * renamed over it, so a reader sees the old or the new text. */
loom_error *utree_write_file(int root, const char *rel, const void *data, size_t len,
                             mode_t mode);

/* Removes the tree at `path` (its parent is the host's, as for
 * utree_root) and all inside it, following no link. Missing: no error. */
loom_error *utree_delete(const char *path);

/* The part of `path` below the folder `dir` ("a/b" for dir "/x", path
 * "/x/a/b"), or NULL when path is not inside dir. */
const char *utree_rel_of(const char *dir, const char *path);

/* For a single call: the same operations with the root given by path
 * (opened with utree_root for the call, then closed). */
loom_error *utree_mkdirs_in(const char *dir, const char *rel, mode_t mode);
loom_error *utree_read_file_in(const char *dir, const char *rel, size_t max, char **out,
                               size_t *len);
loom_error *utree_write_file_in(const char *dir, const char *rel, const void *data, size_t len,
                                mode_t mode);
loom_error *utree_open_write_in(const char *dir, const char *rel, mode_t mode, int *fd);
loom_error *utree_open_append_in(const char *dir, const char *rel, mode_t mode, int *fd);
loom_error *utree_open_read_in(const char *dir, const char *rel, int *fd);
loom_error *utree_unlink_in(const char *dir, const char *rel);
/* Copies the regular file `from` beneath the folder from_dir to `to`
 * beneath to_dir (written beside it, then renamed over it). */
loom_error *utree_copy_file_in(const char *from_dir, const char *from, const char *to_dir,
                               const char *to, mode_t mode);
/* A path a user names inside their own tree (--model-main, model.json's
 * kernel_path, weight_path, ffi.library), checked by the host with root's
 * powers, so the check tells nothing about files outside the tree. The
 * one difference from the rest of this module: links that stay inside the
 * tree are followed (a model directory may ship its own), so the path is
 * resolved with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS alone; a link or
 * ".." leading out fails the same way whether or not its target exists.
 * Its answer is a path, for the job or kernel to open later under its own
 * uid, and errors come as errno (callers word them for their own field). */
/* 1 when rel is non-empty, relative and has no ".." component. */
int utree_name_ok(const char *rel);
/* rel resolved beneath dir into out (an absolute path inside dir's real
 * path). 0, or -1 with errno: EXDEV when rel leaves dir (by its text or
 * through a link, whether or not the target exists), ENOENT when it is
 * missing inside dir, EISDIR/ENOTDIR/ENAMETOOLONG and others as found.
 * want_file: a regular file is required (EISDIR or EINVAL otherwise). */
int utree_resolve_named(const char *dir, const char *rel, int want_file, char *out, size_t len);

/* Opens the file at `path` for appending (created with mode; positioned at
 * its end) beneath its folder: neither the file nor its folder may be a
 * link. For a file the host names by a full path inside a user's tree. */
loom_error *utree_open_append_path(const char *path, mode_t mode, int *fd);

#endif
