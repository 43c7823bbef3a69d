/* http/cors.c - see cors.h. */
#include "http/cors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct cors_policy {
    int count;
    char origin[CORS_MAX_ORIGINS][CORS_ORIGIN_MAX];
};

/* scheme "://" host [":" port], the host of letters, digits, '-' and '.'
 * (or a bracketed IPv6 address), the port 1-65535. */
static int origin_well_formed(const char *o)
{
    const char *p;
    if (strncmp(o, "http://", 7) == 0)
        p = o + 7;
    else if (strncmp(o, "https://", 8) == 0)
        p = o + 8;
    else
        return 0;
    const char *host = p;
    if (*p == '[') {
        p = strchr(p, ']');
        if (!p || p == host + 1)
            return 0;
        p++;
    } else {
        while (isalnum((unsigned char)*p) || *p == '-' || *p == '.')
            p++;
        if (p == host)
            return 0;
    }
    if (*p == ':') {
        char *end;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535)
            return 0;
        p = end;
    }
    return *p == 0;
}

loom_error *cors_policy_create(const char *const *origins, int count, cors_policy **out)
{
    *out = NULL;
    if (count > CORS_MAX_ORIGINS)
        return loom_err(LOOM_E_LIMIT, "--cors-origin: at most %d origins, got %d", CORS_MAX_ORIGINS,
                        count);
    cors_policy *p = calloc(1, sizeof *p);
    if (!p)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    for (int i = 0; i < count; i++) {
        const char *o = origins[i];
        if (strcmp(o, "*") == 0) {
            free(p);
            return loom_err(LOOM_E_INVALID, "--cors-origin: \"*\" is refused: credentials go only "
                                            "to origins named one by one");
        }
        if (strlen(o) >= CORS_ORIGIN_MAX || !origin_well_formed(o)) {
            free(p);
            return loom_err(LOOM_E_INVALID,
                            "--cors-origin \"%.300s\": expected SCHEME://HOST[:PORT] (http or "
                            "https, no path, at most %d bytes)",
                            o, CORS_ORIGIN_MAX - 1);
        }
        snprintf(p->origin[p->count++], CORS_ORIGIN_MAX, "%s", o);
    }
    *out = p;
    return NULL;
}

void cors_policy_free(cors_policy *p) { free(p); }

/* Scheme and host compare ignoring case (RFC 6454 serialises them in
 * lower case; a hand-typed allow-list may not be). */
int cors_origin_allowed(const cors_policy *p, const char *origin)
{
    if (!p || !origin)
        return 0;
    for (int i = 0; i < p->count; i++)
        if (strcasecmp(p->origin[i], origin) == 0)
            return 1;
    return 0;
}

static void add(cors_headers *h, const char *name, const char *value)
{
    if (h->count < CORS_MAX_HEADERS) {
        h->name[h->count] = name;
        h->value[h->count] = value;
        h->count++;
    }
}

void cors_reply_headers(const cors_policy *p, const char *origin, cors_headers *out)
{
    memset(out, 0, sizeof *out);
    if (!origin)
        return;
    /* Caches must not hand one origin's reply to another. */
    add(out, "Vary", "Origin");
    if (!cors_origin_allowed(p, origin))
        return;
    snprintf(out->origin, sizeof out->origin, "%s", origin);
    add(out, "Access-Control-Allow-Origin", out->origin);
    add(out, "Access-Control-Allow-Credentials", "true");
    add(out, "Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
    add(out, "Access-Control-Allow-Headers",
        "Authorization, Content-Type, Accept, X-Auth-Token, X-User-Token");
    add(out, "Access-Control-Max-Age", "600");
}

int cors_is_preflight(const char *method, const char *origin, const char *request_method)
{
    return strcmp(method, "OPTIONS") == 0 && origin && request_method;
}
