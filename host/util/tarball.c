/* util/tarball.c - see tarball.h. */
#include "util/tarball.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/dynlib.h"
#include "util/user_tree.h"

/* libarchive is opened on first use: it brings libxml2 and ICU along, a
 * few milliseconds that every CLI call would otherwise pay at start. */
#define ARCHIVE_FUNCTIONS(X) \
    X(archive_entry_filetype) \
    X(archive_entry_free) \
    X(archive_entry_hardlink) \
    X(archive_entry_new) \
    X(archive_entry_pathname) \
    X(archive_entry_perm) \
    X(archive_entry_set_filetype) \
    X(archive_entry_set_mtime) \
    X(archive_entry_set_pathname) \
    X(archive_entry_set_perm) \
    X(archive_entry_set_size) \
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
    X(archive_read_support_format_zip) \
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

/* What goes into a tar of a folder (the CLI's model directories: the
 * user's own files, read as that user). */
typedef struct pack_spec {
    const char *top;  /* the folder every entry goes under, or NULL */
} pack_spec;

static loom_error *pack(const char *dir, const pack_spec *ps, char **out, size_t *out_len)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return loom_err(LOOM_E_INVALID, "%s: not a directory", dir);
    const archive_api *ar;
    loom_error *opened = archive_lib(&ar);
    if (opened)
        return opened;
    membuf m = {0};
    struct archive *w = ar->archive_write_new();
    struct archive *disk = ar->archive_read_disk_new();
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
            err = loom_err(LOOM_E_INTERNAL, "tar: %s: %s", rel, ar->archive_error_string(w));
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
            while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                ar->archive_write_data(w, buf, n);
            fclose(f);
        }
        ar->archive_entry_free(e);
    }
    if (ar->archive_write_close(w) != ARCHIVE_OK) {
        err = loom_err(LOOM_E_INTERNAL, "tar: %s", ar->archive_error_string(w));
        goto done;
    }
done:
    ar->archive_read_free(disk);
    ar->archive_write_free(w);
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

/* A zip being made of a user's tree. */
typedef struct zip_walk {
    const archive_api *ar;
    struct archive *w;
    membuf *m;
    tarball_leave_out leave_out;
    const void *ctx;
    char *buf; /* ZIP_CHUNK bytes */
} zip_walk;

#define ZIP_CHUNK 65536
/* Folders held open at once while zipping (one descriptor each). */
#define ZIP_DEPTH 64

static loom_error *zip_entry_header(zip_walk *z, const char *rel, const struct stat *st,
                                    mode_t type)
{
    struct archive_entry *e = z->ar->archive_entry_new();
    if (!e)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    z->ar->archive_entry_set_pathname(e, rel);
    z->ar->archive_entry_set_filetype(e, type);
    z->ar->archive_entry_set_perm(e, st->st_mode & 0777);
    z->ar->archive_entry_set_size(e, type == AE_IFREG ? st->st_size : 0);
    z->ar->archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    int r = z->ar->archive_write_header(z->w, e);
    z->ar->archive_entry_free(e);
    if (r == ARCHIVE_OK)
        return NULL;
    return z->m->too_large ? loom_err(LOOM_E_TOO_LARGE, "over the limit")
                           : loom_err(LOOM_E_INTERNAL, "zip: %s: %s", rel,
                                      z->ar->archive_error_string(z->w));
}

/* The regular file `name` in the folder dir, read through the descriptor
 * it was opened with: exactly the size its header gave (a file that shrank
 * meanwhile is padded with zeros, one that grew is cut at that size). */
static loom_error *zip_file(zip_walk *z, int dir, const char *name, const char *rel)
{
    int fd;
    loom_error *e = utree_open_read(dir, name, &fd);
    if (e)
        return loom_err_wrap(e, "zip");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return loom_err(LOOM_E_INTERNAL, "zip: %s: %s", rel, strerror(errno));
    }
    e = zip_entry_header(z, rel, &st, AE_IFREG);
    for (off_t left = st.st_size; !e && left > 0;) {
        size_t want = left < ZIP_CHUNK ? (size_t)left : ZIP_CHUNK;
        ssize_t r = read(fd, z->buf, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = loom_err(LOOM_E_INTERNAL, "zip: %s: %s", rel, strerror(errno));
            break;
        }
        if (r == 0) {
            memset(z->buf, 0, want);
            r = (ssize_t)want;
        }
        if (z->ar->archive_write_data(z->w, z->buf, (size_t)r) < 0)
            e = z->m->too_large ? loom_err(LOOM_E_TOO_LARGE, "over the limit")
                                : loom_err(LOOM_E_INTERNAL, "zip: %s: %s", rel,
                                           z->ar->archive_error_string(z->w));
        left -= r;
    }
    close(fd);
    return e;
}

/* Adds what the folder dir holds, under the name `at` ("" at the top). */
static loom_error *zip_folder(zip_walk *z, int dir, const char *at, int depth)
{
    if (depth > ZIP_DEPTH)
        return loom_err(LOOM_E_LIMIT, "zip: %s: folders nested more than %d deep", at,
                        ZIP_DEPTH);
    DIR *d;
    loom_error *e = utree_list(dir, "", &d);
    if (e)
        return loom_err_wrap(e, "zip");
    struct dirent *ent;
    while (!e && (ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        char rel[PATH_MAX];
        if (snprintf(rel, sizeof rel, "%s%s%s", at, *at ? "/" : "", name) >= (int)sizeof rel) {
            e = loom_err(LOOM_E_LIMIT, "zip: %s/%s: a path longer than %d bytes", at, name,
                         PATH_MAX - 1);
            break;
        }
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        /* Links are left out, never followed; so are FIFOs, sockets and
         * devices, which hold no result. */
        if (S_ISREG(st.st_mode) && !z->leave_out(z->ctx, rel, 0)) {
            e = zip_file(z, dir, name, rel);
        } else if (S_ISDIR(st.st_mode) && !z->leave_out(z->ctx, rel, 1)) {
            int sub;
            e = utree_open_dir(dir, name, &sub);
            if (e) {
                e = loom_err_wrap(e, "zip");
                break;
            }
            char named[PATH_MAX + 1];
            snprintf(named, sizeof named, "%s/", rel);
            e = zip_entry_header(z, named, &st, AE_IFDIR);
            if (!e)
                e = zip_folder(z, sub, rel, depth + 1);
            close(sub);
        }
    }
    closedir(d);
    return e;
}

static int leave_nothing_out(const void *ctx, const char *rel, int is_dir)
{
    (void)ctx;
    (void)rel;
    (void)is_dir;
    return 0;
}

loom_error *tarball_zip_tree(const char *dir, tarball_leave_out leave_out, const void *ctx,
                             size_t max_bytes, char **out, size_t *out_len)
{
    const archive_api *ar;
    loom_error *err = archive_lib(&ar);
    if (err)
        return err;
    int root;
    if ((err = utree_root(dir, &root)) != NULL)
        return err;
    membuf m = {.max = max_bytes};
    zip_walk z = {.ar = ar, .w = ar->archive_write_new(), .m = &m,
                  .leave_out = leave_out ? leave_out : leave_nothing_out, .ctx = ctx,
                  .buf = malloc(ZIP_CHUNK)};
    ar->archive_write_set_format_zip(z.w);
    if (!z.buf)
        err = loom_err(LOOM_E_INTERNAL, "out of memory");
    else if (ar->archive_write_open(z.w, &m, NULL, membuf_write, NULL) != ARCHIVE_OK)
        err = loom_err(LOOM_E_INTERNAL, "zip: %s", ar->archive_error_string(z.w));
    else
        err = zip_folder(&z, root, "", 0);
    if (!err && ar->archive_write_close(z.w) != ARCHIVE_OK)
        err = m.too_large ? loom_err(LOOM_E_TOO_LARGE, "over the limit")
                          : loom_err(LOOM_E_INTERNAL, "zip: %s", ar->archive_error_string(z.w));
    ar->archive_write_free(z.w);
    free(z.buf);
    close(root);
    if (err && loom_err_code(err) == LOOM_E_TOO_LARGE) {
        loom_err_free(err);
        err = loom_err(LOOM_E_TOO_LARGE, "%s: the archive would exceed the limit of %zu bytes",
                       dir, max_bytes);
    }
    if (err) {
        free(m.data);
        return err;
    }
    *out = m.data;
    *out_len = m.len;
    return NULL;
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
    /* A zip (what a browser's user has at hand) under the same checks and
     * limits: every entry passes entry_check, and what is written counts. */
    ar->archive_read_support_format_zip(a);
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
        err = loom_err(LOOM_E_INVALID, "not a tar or zip archive: %s",
                       ar->archive_error_string(a));
        goto done;
    }
    for (;;) {
        struct archive_entry *e;
        int r = ar->archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK) {
            err = loom_err(LOOM_E_INVALID, "bad tar or zip archive: %s", ar->archive_error_string(a));
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
            err = loom_err(LOOM_E_INVALID, "truncated archive at \"%s\"", full);
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
