/* hpo/hpo_log.c - a task's search log (HOME/hpo/NAME/search.log: the
 * search plugin's output and its host->log lines) as its owner reads it,
 * a bounded part per call. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpo/hpo_internal.h"
#include "util/user_tree.h"

/* Reads at most `max` bytes of `dir`/`name` from `from` (negative: the
 * last `max` bytes) beneath the task folder (util/user_tree: no link is
 * followed). A missing file is empty. All reading of the task folder goes
 * through here. */
static loom_error *read_beneath(const char *dir, const char *name, int64_t from, size_t max,
                                hpo_log_part *out)
{
    int fd = -1;
    loom_error *e = utree_open_read_in(dir, name, &fd);
    if (e && loom_err_code(e) == LOOM_E_NOT_FOUND) {
        loom_err_free(e);
        return NULL;
    }
    if (e)
        return e;
    int err;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return loom_err(LOOM_E_INTERNAL, "%s/%s: not a regular file", dir, name);
    }
    out->size = st.st_size;
    out->offset = from < 0 ? (st.st_size > (off_t)max ? st.st_size - (off_t)max : 0)
                           : (from < st.st_size ? from : st.st_size);
    size_t want = (size_t)(st.st_size - out->offset) < max ? (size_t)(st.st_size - out->offset) : max;
    out->text = malloc(want + 1);
    ssize_t n = out->text ? pread(fd, out->text, want, out->offset) : -1;
    err = errno;
    close(fd);
    if (n < 0) {
        free(out->text);
        out->text = NULL;
        return loom_err(LOOM_E_INTERNAL, "%s/%s: %s", dir, name, strerror(err));
    }
    out->len = (size_t)n;
    out->text[n] = 0;
    return NULL;
}

loom_error *hpo_search_log(hpo_service *svc, const char *owner, const char *name, int64_t from,
                           hpo_log_part *out)
{
    memset(out, 0, sizeof *out);
    hpo_task_rec rec;
    loom_error *e = hpo_get_visible(svc, owner, name, &rec);
    if (e)
        return e;
    out->state = rec.state;
    store_hpo_task_free(&rec);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/hpo/%s", svc->home, rec.name);
    e = read_beneath(dir, "search.log", from, HPO_SEARCH_LOG_MAX_READ, out);
    if (!e && !out->text)
        out->text = strdup("");
    if (!e && !out->text)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    return e;
}

void hpo_log_part_free(hpo_log_part *p)
{
    free(p->text);
    p->text = NULL;
}
