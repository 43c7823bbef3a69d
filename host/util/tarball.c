/* util/tarball.c - see tarball.h. */
#include "util/tarball.h"

#include <archive.h>
#include <archive_entry.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct membuf {
    char *data;
    size_t len, cap;
} membuf;

static la_ssize_t membuf_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
    (void)a;
    membuf *m = ctx;
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 65536;
        while (cap < m->len + n)
            cap *= 2;
        char *grown = realloc(m->data, cap);
        if (!grown)
            return -1;
        m->data = grown;
        m->cap = cap;
    }
    memcpy(m->data + m->len, buf, n);
    m->len += n;
    return (la_ssize_t)n;
}

loom_error *tarball_pack_dir(const char *dir, char **out, size_t *out_len)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return loom_err(LOOM_E_INVALID, "%s: not a directory", dir);
    membuf m = {0};
    struct archive *w = archive_write_new();
    struct archive *disk = archive_read_disk_new();
    archive_write_set_format_pax_restricted(w);
    archive_write_set_bytes_in_last_block(w, 1);
    loom_error *err = NULL;
    if (archive_write_open(w, &m, NULL, membuf_write, NULL) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INTERNAL, "tar: %s", archive_error_string(w));
        goto done;
    }
    archive_read_disk_set_standard_lookup(disk);
    archive_read_disk_set_symlink_physical(disk);
    if (archive_read_disk_open(disk, dir) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INVALID, "%s: %s", dir, archive_error_string(disk));
        goto done;
    }
    size_t prefix = strlen(dir);
    for (;;) {
        struct archive_entry *e = archive_entry_new();
        int r = archive_read_next_header2(disk, e);
        if (r == ARCHIVE_EOF) {
            archive_entry_free(e);
            break;
        }
        if (r != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "%s: %s", dir, archive_error_string(disk));
            archive_entry_free(e);
            goto done;
        }
        archive_read_disk_descend(disk);
        const char *path = archive_entry_pathname(e);
        const char *rel = path + (strncmp(path, dir, prefix) == 0 ? prefix : 0);
        while (*rel == '/')
            rel++;
        if (*rel == 0) { /* the top directory itself */
            archive_entry_free(e);
            continue;
        }
        archive_entry_set_pathname(e, rel);
        if (archive_write_header(w, e) != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INTERNAL, "tar: %s: %s", rel, archive_error_string(w));
            archive_entry_free(e);
            goto done;
        }
        if (archive_entry_filetype(e) == AE_IFREG) {
            FILE *f = fopen(archive_entry_sourcepath(e), "rb");
            if (!f) {
                err = loom_err(LOOM_E_INVALID, "%s: cannot read", archive_entry_sourcepath(e));
                archive_entry_free(e);
                goto done;
            }
            char buf[65536];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                archive_write_data(w, buf, n);
            fclose(f);
        }
        archive_entry_free(e);
    }
    if (archive_write_close(w) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INTERNAL, "tar: %s", archive_error_string(w));
        goto done;
    }
done:
    archive_read_free(disk);
    archive_write_free(w);
    if (!err) {
        *out = m.data;
        *out_len = m.len;
    } else {
        free(m.data);
    }
    return err;
}

static loom_error *entry_check(struct archive_entry *e)
{
    const char *name = archive_entry_pathname(e);
    if (!name || !*name) {
        return loom_err(LOOM_E_INVALID, "archive entry with an empty name");
    }
    if (name[0] == '/') {
        return loom_err(LOOM_E_INVALID, "archive entry \"%s\" has an absolute path", name);
    }
    /* ".." as any path component. */
    for (const char *p = name; p && *p;) {
        if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == 0)) {
            return loom_err(LOOM_E_INVALID, "archive entry \"%s\" contains \"..\"", name);
        }
        p = strchr(p, '/');
        if (p)
            p++;
    }
    mode_t type = archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
        return loom_err(LOOM_E_INVALID, "archive entry \"%s\" is a device, fifo or socket",
                        name);
    }
    if (archive_entry_hardlink(e)) {
        return loom_err(LOOM_E_INVALID, "archive entry \"%s\" is a hard link", name);
    }
    if (type == AE_IFLNK) {
        const char *target = archive_entry_symlink(e);
        if (!target || target[0] == '/')
            return loom_err(LOOM_E_INVALID,
                            "archive entry \"%s\" is a symbolic link out of the directory", name);
        /* Links may only point down: a ".." anywhere could climb out,
         * alone or through a chain of links that each look harmless. */
        for (const char *p = target; *p;) {
            const char *slash = strchr(p, '/');
            size_t n = slash ? (size_t)(slash - p) : strlen(p);
            if (n == 2 && p[0] == '.' && p[1] == '.')
                return loom_err(LOOM_E_INVALID,
                                "archive entry \"%s\" is a symbolic link with \"..\" (to \"%s\"): "
                                "links may only point inside their folder",
                                name, target);
            p += n + (slash ? 1 : 0);
        }
    }
    return NULL;
}

loom_error *tarball_unpack(const void *data, size_t len, const char *dest, uint64_t max_bytes)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_none(a);
    struct archive *disk = archive_write_disk_new();
    /* Entries are checked by entry_is_safe and then prefixed with `dest`
     * (an absolute path, so NOABSOLUTEPATHS cannot be used; the daemon is
     * threaded and cannot chdir). libarchive still refuses ".." and writing
     * through a symbolic link. */
    archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                             ARCHIVE_EXTRACT_NO_OVERWRITE);
    loom_error *err = NULL;
    uint64_t total = 0;
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INVALID, "not a tar archive: %s", archive_error_string(a));
        goto done;
    }
    for (;;) {
        struct archive_entry *e;
        int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "bad tar archive: %s", archive_error_string(a));
            goto done;
        }
        if ((err = entry_check(e)) != NULL)
            goto done;
        total += (uint64_t)archive_entry_size(e);
        if (total > max_bytes) {
            err = loom_err(LOOM_E_TOO_LARGE, "archive contents exceed the limit of %llu bytes",
                     (unsigned long long)max_bytes);
            goto done;
        }
        char full[PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", dest, archive_entry_pathname(e));
        archive_entry_set_pathname(e, full);
        archive_entry_set_perm(e, archive_entry_perm(e) & 0755);
        if (archive_write_header(disk, e) != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "cannot extract \"%s\": %s", full,
                           archive_error_string(disk));
            goto done;
        }
        const void *buf;
        size_t n;
        la_int64_t off;
        while ((r = archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK)
            if (archive_write_data_block(disk, buf, n, off) != ARCHIVE_OK) {
                err = loom_err(LOOM_E_INVALID, "cannot write \"%s\": %s", full,
                               archive_error_string(disk));
                goto done;
            }
        if (r != ARCHIVE_EOF) {
            err = loom_err(LOOM_E_INVALID, "truncated tar archive at \"%s\"", full);
            goto done;
        }
        archive_write_finish_entry(disk);
    }
done:
    archive_read_free(a);
    archive_write_free(disk);
    return err;
}
