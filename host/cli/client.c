/* cli/client.c - see client.h. */
#include "api/routes.h"
#include "cli/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/curl_dl.h"
#include "util/fs.h"

void cli_client_home(const char *flag, char *out, size_t outlen)
{
    const char *env = getenv("LOOM_HOME");
    const char *home = getenv("HOME");
    if (flag && *flag)
        snprintf(out, outlen, "%s", flag);
    else if (env && *env)
        snprintf(out, outlen, "%s", env);
    else if (geteuid() == 0) /* root's own home is 0700: no job account passes it */
        snprintf(out, outlen, "%s", CLIENT_ROOT_HOME);
    else
        snprintf(out, outlen, "%s/.loom", home && *home ? home : ".");
}

void cli_client_init(client *c, const char *host_flag)
{
    const char *env = getenv("LOOM_HOST");
    const char *host = host_flag && *host_flag ? host_flag : env && *env ? env : NULL;
    char from_file[512] = "";
    if (!host) {
        char home[4096], path[4200];
        cli_client_home(NULL, home, sizeof home);
        snprintf(path, sizeof path, "%s/host", home);
        char *text; /* none, or unreadable: the default host */
        loom_err_free(fs_read_file(path, sizeof from_file - 1, &text, NULL));
        if (text) {
            snprintf(from_file, sizeof from_file, "%s", text);
            from_file[strcspn(from_file, "\r\n")] = 0;
            free(text);
        }
        if (from_file[0])
            host = from_file;
    }
    if (!host) {
        snprintf(c->base, sizeof c->base, "http://127.0.0.1:%d", LOOM_DEFAULT_PORT);
        cli_client_load_token(c);
        return;
    }
    if (strncmp(host, "http://", 7) == 0 || strncmp(host, "https://", 8) == 0)
        snprintf(c->base, sizeof c->base, "%s", host);
    else
        snprintf(c->base, sizeof c->base, "http://%s", host);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = 0;
    cli_client_load_token(c);
}

static size_t collect(char *data, size_t size, size_t nmemb, void *arg)
{
    client_reply *r = arg;
    size_t n = size * nmemb;
    char *grown = realloc(r->body, r->len + n + 1);
    if (!grown)
        return 0;
    r->body = grown;
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = 0;
    return n;
}

static void credentials_path(char *out, size_t len)
{
    char home[4096];
    cli_client_home(NULL, home, sizeof home);
    snprintf(out, len, "%s/credentials", home);
}

void cli_client_load_token(client *c)
{
    c->token[0] = 0;
    const char *env = getenv("LOOM_TOKEN");
    if (env && *env) {
        snprintf(c->token, sizeof c->token, "%s", env);
        return;
    }
    char path[4200];
    credentials_path(path, sizeof path);
    char *text; /* none, or unreadable: no token, and the host says so */
    loom_err_free(fs_read_file(path, 1u << 20, &text, NULL));
    if (!text)
        return;
    size_t blen = strlen(c->base);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, c->base, blen) == 0 && line[blen] == ' ')
            snprintf(c->token, sizeof c->token, "%s", line + blen + 1);
    free(text);
}

loom_error *cli_client_save_token(const client *c, const char *token)
{
    char path[4200];
    credentials_path(path, sizeof path);
    char *old;
    loom_error *e = fs_read_file(path, 1u << 20, &old, NULL);
    if (e && loom_err_code(e) != LOOM_E_NOT_FOUND)
        return e;
    loom_err_free(e);
    size_t cap = (old ? strlen(old) : 0) + strlen(c->base) + (token ? strlen(token) : 0) + 8;
    char *out = calloc(1, cap);
    if (!out) {
        free(old);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    }
    size_t blen = strlen(c->base), used = 0;
    for (char *line = old ? strtok(old, "\n") : NULL; line; line = strtok(NULL, "\n"))
        if (!(strncmp(line, c->base, blen) == 0 && line[blen] == ' '))
            used += (size_t)snprintf(out + used, cap - used, "%s\n", line);
    if (token)
        snprintf(out + used, cap - used, "%s %s\n", c->base, token);
    char home[4096];
    cli_client_home(NULL, home, sizeof home);
    e = fs_mkdir_p(home);
    /* Written whole with mode 0600: the token is a secret. */
    if (!e)
        e = fs_write_file_atomic(path, out, strlen(out), 0600);
    free(out);
    free(old);
    return e;
}

/* libcurl and a fresh handle, the start every request shares; NULL with
 * *err set when either fails. */
static CURL *request_begin(const curl_api **cu, loom_error **err)
{
    if ((*err = cli_curl_lib(cu)))
        return NULL;
    CURL *curl = (*cu)->curl_easy_init();
    *err = curl ? NULL : loom_err(LOOM_E_INTERNAL, "cannot initialise libcurl");
    return curl;
}

/* Sends the request set up on `curl` to the host's `path`; LOOM_E_UNAVAILABLE
 * when the host cannot be reached. Cleans the handle up either way. */
static loom_error *perform(const curl_api *cu, CURL *curl, const client *c, const char *path,
                           client_reply *reply)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%s", c->base, path);
    memset(reply, 0, sizeof *reply);
    cu->curl_easy_setopt(curl, CURLOPT_URL, url);
    cu->curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    cu->curl_easy_setopt(curl, CURLOPT_WRITEDATA, reply);
    cu->curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    cu->curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    /* A host with its own (self-signed) certificate: trust that file. */
    const char *ca = getenv("LOOM_CA_CERT");
    if (ca && *ca)
        cu->curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
    if (c->token[0]) {
        cu->curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, c->token);
        cu->curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
    }
    CURLcode rc = cu->curl_easy_perform(curl);
    loom_error *e = NULL;
    if (rc != CURLE_OK) {
        e = loom_err(LOOM_E_UNAVAILABLE,
                     "cannot reach the loom host at %s: %s (start one with 'loom serve', or set --host / LOOM_HOST)",
                     c->base, cu->curl_easy_strerror(rc));
        cli_client_reply_free(reply);
    } else {
        cu->curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply->status);
        if (!reply->body) {
            reply->body = calloc(1, 1);
            reply->len = 0;
        }
    }
    cu->curl_easy_cleanup(curl);
    return e;
}

loom_error *cli_client_call(const client *c, const char *method, const char *path,
                        const char *json_body, client_reply *reply)
{
    const curl_api *cu;
    loom_error *e;
    CURL *curl = request_begin(&cu, &e);
    if (!curl)
        return e;
    struct curl_slist *headers = NULL;
    cu->curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (json_body) {
        headers = cu->curl_slist_append(headers, "Content-Type: application/json");
        cu->curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json_body);
        cu->curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(json_body));
    } else if (strcmp(method, "POST") == 0) {
        cu->curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    }
    cu->curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    e = perform(cu, curl, c, path, reply);
    cu->curl_slist_free_all(headers);
    return e;
}

loom_error *cli_client_upload(const client *c, const char *path, const client_part *parts, int nparts,
                          client_reply *reply)
{
    const curl_api *cu;
    loom_error *e;
    CURL *curl = request_begin(&cu, &e);
    if (!curl)
        return e;
    curl_mime *mime = cu->curl_mime_init(curl);
    for (int i = 0; i < nparts; i++) {
        curl_mimepart *part = cu->curl_mime_addpart(mime);
        cu->curl_mime_name(part, parts[i].name);
        if (parts[i].filename) {
            cu->curl_mime_data(part, parts[i].data, parts[i].len);
            cu->curl_mime_filename(part, parts[i].filename);
            cu->curl_mime_type(part, "application/octet-stream");
        } else {
            cu->curl_mime_data(part, parts[i].value, CURL_ZERO_TERMINATED);
        }
    }
    cu->curl_easy_setopt(curl, CURLOPT_MIMEPOST, mime);
    /* No "Expect: 100-continue" round trip. */
    struct curl_slist *headers = cu->curl_slist_append(NULL, "Expect:");
    cu->curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    e = perform(cu, curl, c, path, reply);
    cu->curl_slist_free_all(headers);
    cu->curl_mime_free(mime);
    return e;
}

loom_error *cli_client_logon_basic(const client *c, const char *user, const char *password,
                               client_reply *reply)
{
    const curl_api *cu;
    loom_error *e;
    CURL *curl = request_begin(&cu, &e);
    if (!curl)
        return e;
    client anonymous = *c;
    anonymous.token[0] = 0;
    cu->curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "POST");
    cu->curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    cu->curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    cu->curl_easy_setopt(curl, CURLOPT_USERNAME, user);
    cu->curl_easy_setopt(curl, CURLOPT_PASSWORD, password);
    return perform(cu, curl, &anonymous, LOOM_ROUTE_LOGON, reply);
}

void cli_client_reply_free(client_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

cJSON *cli_client_reply_json(const client_reply *r)
{
    return r->body ? cJSON_ParseWithLength(r->body, r->len) : NULL;
}

void cli_client_reply_error(const client_reply *r, char *out, size_t outlen)
{
    cJSON *j = cli_client_reply_json(r);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(e))
        snprintf(out, outlen, "%s", e->valuestring);
    else
        snprintf(out, outlen, "the host answered HTTP %ld", r->status);
    cJSON_Delete(j);
}
