/* util/tarball.c - see tarball.h. */
#include "util/tarball.h"

#include <archive.h>
#include <archive_entry.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/dynlib.h"

/* libarchive is opened on first use: it brings libxml2 and ICU along, a
 * few milliseconds that every CLI call would otherwise pay at start. */
#define ARCHIVE_FUNCTIONS(X) \
    X(archive_entry_filetype) \
    X(archive_entry_free) \
    X(archive_entry_hardlink) \
    X(archive_entry_new) \
    X(archive_entry_pathname) \
    X(archive_entry_perm) \
    X(archive_entry_set_pathname) \
    X(archive_entry_set_perm) \
    X(archive_entry_size) \
    X(archive_entry_sourcepath) \
    X(archive_entry_symlink) \
    X(archive_error_string) \
    X(archive_read_data_block) \
    X(archive_read_disk_descend) \
    X(archive_read_disk_new) \
    X(archive_read_disk_open) \
    X(archive_read_disk_set_standard_lookup) \
    X(archive_read_disk_set_symlink_physical) \
    X(archive_read_free) \
    X(archive_read_new) \
    X(archive_read_next_header) \
    X(archive_read_next_header2) \
    X(archive_read_open_filename) \
    X(archive_read_open_memory) \
    X(archive_read_support_filter_gzip) \
    X(archive_read_support_filter_none) \
    X(archive_read_support_format_gnutar) \
    X(archive_read_support_format_tar) \
    X(archive_write_close) \
    X(archive_write_data) \
    X(archive_write_data_block) \
    X(archive_write_disk_new) \
    X(archive_write_disk_set_options) \
    X(archive_write_finish_entry) \
    X(archive_write_free) \
    X(archive_write_header) \
    X(archive_write_new) \
    X(archive_write_open) \
    X(archive_write_set_bytes_in_last_block) \
    X(archive_write_set_format_pax_restricted) \
    X(archive_write_set_format_zip)

#define ARCHIVE_FIELD(fn) __typeof__(&fn) fn;
typedef struct archive_api {
    ARCHIVE_FUNCTIONS(ARCHIVE_FIELD)
} archive_api;
#undef ARCHIVE_FIELD
#define ARCHIVE_SYMBOL(fn) DYNLIB_SYMBOL(archive_api, fn),
static const dynlib_symbol archive_symbols[] = {ARCHIVE_FUNCTIONS(ARCHIVE_SYMBOL)};
#undef ARCHIVE_SYMBOL

/* 13: the soname of every libarchive 3.x */
static const char *const archive_sonames[] = {"libarchive.so.13", NULL};
static const dynlib_spec archive_spec = {"libarchive", archive_sonames, NULL, archive_symbols,
                                         sizeof archive_symbols / sizeof archive_symbols[0]};
static archive_api archive_table;
static dynlib_once archive_once = DYNLIB_ONCE_INIT;

/* Opens libarchive once; the table in *out, or an error naming the library. */
static loom_error *archive_lib(const archive_api **out)
{
    *out = NULL;
    loom_error *e = dynlib_open_once(&archive_once, &archive_spec, &archive_table);
    if (e)
        return loom_err_wrap(e, "tar");
    *out = &archive_table;
    return NULL;
}

typedef struct membuf {
    char *data;
    size_t len, cap;
    size_t max;    /* 0: no limit */
    int too_large;
} membuf;

static la_ssize_t membuf_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
    (void)a;
    membuf *m = ctx;
    if (m->max && m->len + n > m->max) {
        m->too_large = 1;
        return -1;
    }
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

/* What goes into an archive of a folder. */
typedef struct pack_spec {
    int zip;          /* zip, else tar (pax) */
    const char *skip; /* a top-level entry left out, or NULL */
    const char *top;  /* the folder every entry goes under, or NULL */
    size_t max;       /* bytes of the archive; 0: no limit */
} pack_spec;

static int skipped(const pack_spec *ps, const char *rel)
{
    size_t n = ps->skip ? strlen(ps->skip) : 0;
    return n && strncmp(rel, ps->skip, n) == 0 && (rel[n] == 0 || rel[n] == '/');
}

static loom_error *pack(const char *dir, const pack_spec *ps, char **out, size_t *out_len)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return loom_err(LOOM_E_INVALID, "%s: not a directory", dir);
    const archive_api *ar;
    loom_error *opened = archive_lib(&ar);
    if (opened)
        return opened;
    membuf m = {.max = ps->max};
    struct archive *w = ar->archive_write_new();
    struct archive *disk = ar->archive_read_disk_new();
    if (ps->zip)
        ar->archive_write_set_format_zip(w);
    else
        ar->archive_write_set_format_pax_restricted(w);
    ar->archive_write_set_bytes_in_last_block(w, 1);
    loom_error *err = NULL;
    if (ar->archive_write_open(w, &m, NULL, membuf_write, NULL) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INTERNAL, "tar: %s", ar->archive_error_string(w));
        goto done;
    }
    ar->archive_read_disk_set_standard_lookup(disk);
    ar->archive_read_disk_set_symlink_physical(disk);
    if (ar->archive_read_disk_open(disk, dir) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INVALID, "%s: %s", dir, ar->archive_error_string(disk));
        goto done;
    }
    size_t prefix = strlen(dir);
    for (;;) {
        struct archive_entry *e = ar->archive_entry_new();
        int r = ar->archive_read_next_header2(disk, e);
        if (r == ARCHIVE_EOF) {
            ar->archive_entry_free(e);
            break;
        }
        if (r != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "%s: %s", dir, ar->archive_error_string(disk));
            ar->archive_entry_free(e);
            goto done;
        }
        const char *path = ar->archive_entry_pathname(e);
        const char *rel = path + (strncmp(path, dir, prefix) == 0 ? prefix : 0);
        while (*rel == '/')
            rel++;
        if (skipped(ps, rel)) { /* neither it nor what is inside */
            ar->archive_entry_free(e);
            continue;
        }
        ar->archive_read_disk_descend(disk);
        if (*rel == 0) { /* the top directory itself */
            ar->archive_entry_free(e);
            continue;
        }
        char named[PATH_MAX + NAME_MAX + 2];
        if (ps->top) {
            snprintf(named, sizeof named, "%s/%s", ps->top, rel);
            rel = named;
        }
        ar->archive_entry_set_pathname(e, rel);
        if (ar->archive_write_header(w, e) != ARCHIVE_OK) {
            err = m.too_large ? NULL
                              : loom_err(LOOM_E_INTERNAL, "%s: %s: %s", ps->zip ? "zip" : "tar",
                                         rel, ar->archive_error_string(w));
            ar->archive_entry_free(e);
            goto done;
        }
        if (ar->archive_entry_filetype(e) == AE_IFREG) {
            FILE *f = fopen(ar->archive_entry_sourcepath(e), "rb");
            if (!f) {
                err = loom_err(LOOM_E_INVALID, "%s: cannot read", ar->archive_entry_sourcepath(e));
                ar->archive_entry_free(e);
                goto done;
            }
            char buf[65536];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, f)) > 0 && !m.too_large)
                ar->archive_write_data(w, buf, n);
            fclose(f);
        }
        ar->archive_entry_free(e);
        if (m.too_large)
            goto done;
    }
    if (ar->archive_write_close(w) != ARCHIVE_OK && !m.too_large) {
        err = loom_err(LOOM_E_INTERNAL, "%s: %s", ps->zip ? "zip" : "tar",
                       ar->archive_error_string(w));
        goto done;
    }
done:
    ar->archive_read_free(disk);
    ar->archive_write_free(w);
    if (!err && m.too_large)
        err = loom_err(LOOM_E_TOO_LARGE, "%s: the archive would exceed the limit of %zu bytes",
                       dir, ps->max);
    if (!err) {
        *out = m.data;
        *out_len = m.len;
    } else {
        free(m.data);
    }
    return err;
}

loom_error *tarball_pack_dir(const char *dir, char **out, size_t *out_len)
{
    pack_spec ps = {0};
    return pack(dir, &ps, out, out_len);
}

loom_error *tarball_pack_dir_as(const char *dir, const char *top, char **out, size_t *out_len)
{
    pack_spec ps = {.top = top};
    return pack(dir, &ps, out, out_len);
}

loom_error *tarball_zip_dir(const char *dir, const char *skip, size_t max_bytes, char **out,
                            size_t *out_len)
{
    pack_spec ps = {.zip = 1, .skip = skip, .max = max_bytes};
    return pack(dir, &ps, out, out_len);
}

static loom_error *entry_check(const archive_api *ar, struct archive_entry *e)
{
    const char *name = ar->archive_entry_pathname(e);
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
    mode_t type = ar->archive_entry_filetype(e);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
        return loom_err(LOOM_E_INVALID, "archive entry \"%s\" is a device, fifo or socket",
                        name);
    }
    if (ar->archive_entry_hardlink(e)) {
        return loom_err(LOOM_E_INVALID, "archive entry \"%s\" is a hard link", name);
    }
    if (type == AE_IFLNK) {
        const char *target = ar->archive_entry_symlink(e);
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

/* Opens `data` (len bytes) or, when data is NULL, the file `path`. */
static int open_source(const archive_api *ar, struct archive *a, const void *data, size_t len,
                       const char *path)
{
    return data ? ar->archive_read_open_memory(a, data, len)
                : ar->archive_read_open_filename(a, path, 1 << 16);
}

/* From `data` (len bytes) or, when data is NULL, the file `path`. */
static loom_error *unpack_bounded(const void *data, size_t len, const char *path,
                                  const char *dest, const tarball_limits *limits)
{
    uint64_t max_bytes = limits->max_bytes, entries = 0;
    const archive_api *ar;
    loom_error *opened = archive_lib(&ar);
    if (opened)
        return opened;
    struct archive *a = ar->archive_read_new();
    ar->archive_read_support_format_tar(a);
    ar->archive_read_support_format_gnutar(a);
    ar->archive_read_support_filter_gzip(a);
    ar->archive_read_support_filter_none(a);
    struct archive *disk = ar->archive_write_disk_new();
    /* Entries are checked by entry_is_safe and then prefixed with `dest`
     * (an absolute path, so NOABSOLUTEPATHS cannot be used; the daemon is
     * threaded and cannot chdir). libarchive still refuses ".." and writing
     * through a symbolic link. */
    ar->archive_write_disk_set_options(disk, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                             ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                             ARCHIVE_EXTRACT_NO_OVERWRITE);
    loom_error *err = NULL;
    uint64_t total = 0;
    if (open_source(ar, a, data, len, path) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INVALID, "not a tar archive: %s", ar->archive_error_string(a));
        goto done;
    }
    for (;;) {
        struct archive_entry *e;
        int r = ar->archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "bad tar archive: %s", ar->archive_error_string(a));
            goto done;
        }
        if ((err = entry_check(ar, e)) != NULL)
            goto done;
        if (++entries > limits->max_entries) {
            err = loom_err(LOOM_E_TOO_LARGE,
                           "archive has more than %llu entries (files, folders and links), the "
                           "limit (loom serve --archive-max-entries)",
                           (unsigned long long)limits->max_entries);
            goto done;
        }
        la_int64_t declared = ar->archive_entry_size(e);
        if (declared > 0 && (uint64_t)declared > max_bytes - total) {
            err = loom_err(LOOM_E_TOO_LARGE,
                           "archive contents exceed the limit of %llu bytes unpacked "
                           "(loom serve --archive-max-bytes)",
                           (unsigned long long)max_bytes);
            goto done;
        }
        /* An entry whose full name does not fit is refused, never cut. */
        char full[PATH_MAX];
        size_t need = (size_t)snprintf(full, sizeof full, "%s/%s", dest, ar->archive_entry_pathname(e));
        if (need >= sizeof full) {
            err = loom_err(LOOM_E_INVALID,
                           "archive entry \"%.64s...\": its path (%zu bytes once unpacked) is "
                           "longer than the limit of %d bytes (PATH_MAX)",
                           ar->archive_entry_pathname(e), need, PATH_MAX - 1);
            goto done;
        }
        ar->archive_entry_set_pathname(e, full);
        ar->archive_entry_set_perm(e, ar->archive_entry_perm(e) & 0755);
        if (ar->archive_write_header(disk, e) != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "cannot extract \"%s\": %s", full,
                           ar->archive_error_string(disk));
            goto done;
        }
        const void *buf;
        size_t n;
        la_int64_t off;
        while ((r = ar->archive_read_data_block(a, &buf, &n, &off)) == ARCHIVE_OK) {
            /* What is written counts, whatever the header declared. */
            if (n > max_bytes - total) {
                err = loom_err(LOOM_E_TOO_LARGE,
                               "archive contents exceed the limit of %llu bytes unpacked "
                               "(loom serve --archive-max-bytes)",
                               (unsigned long long)max_bytes);
                goto done;
            }
            total += n;
            if (ar->archive_write_data_block(disk, buf, n, off) != ARCHIVE_OK) {
                err = loom_err(LOOM_E_INVALID, "cannot write \"%s\": %s", full,
                               ar->archive_error_string(disk));
                goto done;
            }
        }
        if (r != ARCHIVE_EOF) {
            err = loom_err(LOOM_E_INVALID, "truncated tar archive at \"%s\"", full);
            goto done;
        }
        ar->archive_write_finish_entry(disk);
    }
done:
    ar->archive_read_free(a);
    ar->archive_write_free(disk);
    return err;
}

loom_error *tarball_unpack_bounded(const void *data, size_t len, const char *dest,
                                   const tarball_limits *limits)
{
    return unpack_bounded(data ? data : "", len, NULL, dest, limits);
}

loom_error *tarball_unpack_file_bounded(const char *path, const char *dest,
                                        const tarball_limits *limits)
{
    return unpack_bounded(NULL, 0, path, dest, limits);
}

loom_error *tarball_unpack(const void *data, size_t len, const char *dest, uint64_t max_bytes)
{
    tarball_limits limits = {.max_bytes = max_bytes, .max_entries = UINT64_MAX};
    return tarball_unpack_bounded(data, len, dest, &limits);
}

loom_error *tarball_unpack_file(const char *path, const char *dest, uint64_t max_bytes)
{
    tarball_limits limits = {.max_bytes = max_bytes, .max_entries = UINT64_MAX};
    return tarball_unpack_file_bounded(path, dest, &limits);
}
