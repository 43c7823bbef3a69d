/*
 * daemon/daemon.h - the host daemon: its home directory, store, auth,
 * plugin registry, scheduler, exec, tuning and inference services, job
 * sandboxing and the HTTP transport serving the REST routes, started and
 * stopped as one.
 * `loom serve` runs one in the foreground; `loom demo` embeds one.
 */
#ifndef LOOM_DAEMON_DAEMON_H
#define LOOM_DAEMON_DAEMON_H

#include <limits.h>

#include "api/api.h"
#include "api/history.h"
#include "http/cors.h"
#include "http/http.h"

typedef struct loomd_options {
    const char *home;        /* state directory (created if missing) */
    const char *shared_dir;  /* the folders jobs reach; NULL: in the home */
    const char *address;     /* default "127.0.0.1" */
    int port;                /* 0: any free port */
    const char *plugin_dir;  /* built-in plugins; NULL: next to the binary */
    int cpu_slots;           /* devices without a GPU; 0: the number of cores */
    const char *slurm_partition; /* the inventory from this Slurm partition; NULL: this machine */
    const char *slurm_conf;  /* NULL: SLURM_CONF, else Slurm's default */
    int slurm_cpus_per_slot; /* 0: one CPU a slot */
    double hysteresis;       /* seconds between resizes of one job; < 0: default */
    const char *admin_password; /* the first admin's, on a new home; NULL: random */
    const char *tls_cert_pem;   /* both set: serve HTTPS */
    const char *tls_key_pem;
    unsigned job_uid_first, job_uid_last; /* jobs' accounts when root; 0: defaults */
    int no_job_accounts;     /* root, yet jobs run as the host's user */
    int require_isolation;   /* refuse to start without complete isolation */
    exec_limits limits;      /* bounds on execs; zeros: the defaults */
    const char *const *data_roots; /* --data-root: where --data-dir may be (exec.h) */
    int data_root_count;
    http_limits http;        /* connections, uploads, slow requests; 0s: defaults */
    int allow_basic_over_http; /* passwords over plain HTTP on a non-loopback listener */
    const char *const *cors_origins; /* origins browsers may call from (http/cors.h) */
    int cors_origin_count;
    const char *web_dir;     /* the console's files; NULL: loomd_default_web_dir */
    int history_hours;       /* the history's window and points per series */
    int history_points;      /* (api/history.h); 0: the defaults */
    unsigned max_event_streams_per_user; /* api/events.h; 0: the default */
} loomd_options;

typedef struct loomd {
    api_services api; /* what the routes serve: their context */
    char plugin_dir[PATH_MAX];
    char spool_dir[PATH_MAX]; /* HOME/uploads: file parts being received */
    int lock_fd;
    store *auth_st; /* the same database, the auth service's own connection */
    /* A new home's first admin password when it was generated: shown once. */
    char generated_admin_password[AUTH_PASSWORD_GEN_MAX];
    http_server *http;
    cors_policy *cors;
    http_route routes[API_MAX_ROUTES];
    api_history *history;
} loomd;


/* Starts everything into *out, or returns why not (`loom serve` and `loom
 * demo` print it). Refuses a home another host holds (LOOM_E_CONFLICT naming
 * the home and its holder): the host keeps an flock on HOME/loom.lock while
 * it runs. */
loom_error *loomd_start(const loomd_options *opt, loomd **out);
/* NULL when no running host holds `home`, else LOOM_E_CONFLICT naming the
 * home and that host ("pid N at URL"). Opens nothing but the lock file, so
 * a caller can refuse before touching the home. */
loom_error *loomd_home_free(const char *home);
int loomd_port(const loomd *d);
void loomd_stop(loomd *d);

/* The folder of built-in plugins for this binary: $LOOM_PLUGIN_DIR, else
 * ../lib/loom/plugins (or the install's libdir) next to the executable. */
void loomd_default_plugin_dir(char *out, size_t outlen);

/* The web console's files for this binary: ../share/loom/web next to the
 * executable (an install), else the source tree's web/ (a build tree). */
void loomd_default_web_dir(char *out, size_t outlen);

/* Confines the host's jobs (isolation.c): accounts when root, the home's
 * modes; says at start what isolation jobs have. Fails when that fails, or
 * when it is incomplete and opt->require_isolation is set. */
loom_error *loomd_isolate_jobs(loomd *d, const loomd_options *opt);

#endif
