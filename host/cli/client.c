/* cli/client.c - see client.h. */
#include "cli/client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs.h"

void client_home(const char *flag, char *out, size_t outlen)
{
    const char *env = getenv("LOOM_HOME");
    const char *home = getenv("HOME");
    if (flag && *flag)
        snprintf(out, outlen, "%s", flag);
    else if (env && *env)
        snprintf(out, outlen, "%s", env);
    else
        snprintf(out, outlen, "%s/.loom", home && *home ? home : ".");
}

void client_init(client *c, const char *host_flag)
{
    const char *env = getenv("LOOM_HOST");
    const char *host = host_flag && *host_flag ? host_flag : env && *env ? env : NULL;
    char from_file[512] = "";
    if (!host) {
        char home[4096], path[4200];
        client_home(NULL, home, sizeof home);
        snprintf(path, sizeof path, "%s/host", home);
        char *text = fs_read_file(path, sizeof from_file - 1, NULL);
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
        return;
    }
    if (strncmp(host, "http://", 7) == 0 || strncmp(host, "https://", 8) == 0)
        snprintf(c->base, sizeof c->base, "%s", host);
    else
        snprintf(c->base, sizeof c->base, "http://%s", host);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = 0;
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

static int perform(CURL *curl, const client *c, const char *path, client_reply *reply,
                   char *err, size_t errlen)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%s", c->base, path);
    memset(reply, 0, sizeof *reply);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, reply);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "cannot reach the loom host at %s: %s (start one with 'loom serve', or set --host / LOOM_HOST)",
                 c->base, curl_easy_strerror(rc));
        client_reply_free(reply);
        return -1;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply->status);
    if (!reply->body) {
        reply->body = calloc(1, 1);
        reply->len = 0;
    }
    return 0;
}

int client_call(const client *c, const char *method, const char *path,
                const char *json_body, client_reply *reply, char *err, size_t errlen)
{
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    struct curl_slist *headers = NULL;
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (json_body) {
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json_body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(json_body));
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    int rc = perform(curl, c, path, reply, err, errlen);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return rc;
}

int client_upload(const client *c, const char *path, const client_part *parts, int nparts,
                  client_reply *reply, char *err, size_t errlen)
{
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return -1;
    }
    curl_mime *mime = curl_mime_init(curl);
    for (int i = 0; i < nparts; i++) {
        curl_mimepart *part = curl_mime_addpart(mime);
        curl_mime_name(part, parts[i].name);
        if (parts[i].filename) {
            curl_mime_data(part, parts[i].data, parts[i].len);
            curl_mime_filename(part, parts[i].filename);
            curl_mime_type(part, "application/octet-stream");
        } else {
            curl_mime_data(part, parts[i].value, CURL_ZERO_TERMINATED);
        }
    }
    curl_easy_setopt(curl, CURLOPT_MIMEPOST, mime);
    /* No "Expect: 100-continue" round trip. */
    struct curl_slist *headers = curl_slist_append(NULL, "Expect:");
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    int rc = perform(curl, c, path, reply, err, errlen);
    curl_slist_free_all(headers);
    curl_mime_free(mime);
    curl_easy_cleanup(curl);
    return rc;
}

void client_reply_free(client_reply *r)
{
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

cJSON *client_reply_json(const client_reply *r)
{
    return r->body ? cJSON_ParseWithLength(r->body, r->len) : NULL;
}

void client_reply_error(const client_reply *r, char *out, size_t outlen)
{
    cJSON *j = client_reply_json(r);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    if (cJSON_IsString(e))
        snprintf(out, outlen, "%s", e->valuestring);
    else
        snprintf(out, outlen, "the host answered HTTP %ld", r->status);
    cJSON_Delete(j);
}
