/* util/sandbox.h - confining the calling process with the kernel's own
 * mechanisms, for good: no_new_privs, another uid/gid (when root), and a
 * Landlock ruleset under which only the listed paths exist for it. Used by
 * `loom confine`, the step every job process goes through before exec. */
#ifndef LOOM_UTIL_SANDBOX_H
#define LOOM_UTIL_SANDBOX_H

#include <sys/types.h>

#include "util/error.h"

typedef struct sandbox_spec {
    const char *const *read;   /* read and execute beneath each (NULL-terminated; may be NULL) */
    const char *const *write;  /* everything beneath each: create, write, remove, execute */
    const char *const *device; /* device nodes: read, write and ioctl */
    int switch_ids;            /* become uid/gid (needs root), after the write paths are theirs */
    uid_t uid;
    gid_t gid;
} sandbox_spec;

/* The kernel's Landlock ABI version; 0 when the kernel has none (too old,
 * or disabled at boot). */
int sandbox_landlock_abi(void);

/* Applies spec to the calling process: with switch_ids, every write path
 * (a tree, walked without following links) is chowned to uid:gid and
 * supplementary groups are dropped; no_new_privs is set; when the kernel
 * has Landlock, only the listed paths stay reachable (and, from ABI 6, the
 * process cannot signal outside its sandbox); root that does not switch
 * ids keeps uid 0 without any capability. Read and device paths that do
 * not exist are skipped; a write path must exist. Without Landlock, the rest
 * is applied and NULL returned: the host reports that at start. */
loom_error *sandbox_apply(const sandbox_spec *spec);

/* Gives the tree at path (a directory or a file; symbolic links are changed
 * themselves, never followed) to uid:gid. */
loom_error *sandbox_chown_tree(const char *path, uid_t uid, gid_t gid);

#endif
