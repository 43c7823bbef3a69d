/* cli/demo_serve.c - the demo's last step: the MLP it trained becomes a
 * model service (deploy --from-exec, start) and classifies a few
 * Fashion-MNIST test images sent to POST /dlim/v1/inference/fmnist-mlp as
 * KServe v2 JSON, printing predicted and true labels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api/routes.h"
#include "cli/commands.h"

#define DEMO_IMAGES 8
/* How long the demo waits for the model's first instance to serve. */
#define DEMO_MODEL_START_S 120
#define IMAGE_PIXELS 784

static const char *const class_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress",
                                            "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                                            "Ankle boot"};

/* The first `n` records of `size` bytes after an IDX header of `header`
 * bytes, from a gzip file. */
static int read_idx(const char *path, unsigned header, unsigned size, unsigned n,
                    unsigned char *out)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return -1;
    unsigned char skip[16];
    int ok = gzread(f, skip, header) == (int)header &&
             gzread(f, out, size * n) == (int)(size * n);
    gzclose(f);
    return ok ? 0 : -1;
}

/* One image as {"inputs": [{"name", "shape", "datatype", "data"}]}. */
static char *image_request(const unsigned char *pixels)
{
    size_t cap = IMAGE_PIXELS * 12 + 128, n = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    n += (size_t)snprintf(s, cap, "{\"inputs\":[{\"name\":\"image\",\"shape\":[1,1,28,28],"
                          "\"datatype\":\"FP32\",\"data\":[");
    for (int i = 0; i < IMAGE_PIXELS; i++)
        n += (size_t)snprintf(s + n, cap - n, "%s%.4g", i ? "," : "", pixels[i] / 255.0);
    snprintf(s + n, cap - n, "]}]}");
    return s;
}

static int classify(const cli_globals *g, const char *images, const char *labels)
{
    unsigned char *px = malloc(DEMO_IMAGES * IMAGE_PIXELS), truth[DEMO_IMAGES];
    if (!px || read_idx(images, 16, IMAGE_PIXELS, DEMO_IMAGES, px) != 0 ||
        read_idx(labels, 8, 1, DEMO_IMAGES, truth) != 0) {
        free(px);
        return cli_fail("demo: cannot read the test images %s", images);
    }
    client c;
    cli_client(g, &c);
    int right = 0, rc = 0;
    for (int i = 0; i < DEMO_IMAGES && rc == 0; i++) {
        char *body = image_request(px + i * IMAGE_PIXELS), err[512];
        client_reply reply = {0};
        loom_error *e = body ? cli_client_call(&c, "POST", LOOM_ROUTE_INFERENCE "/fmnist-mlp", body,
                                           &reply)
                             : loom_err(LOOM_E_INTERNAL, "out of memory");
        free(body);
        if (e) {
            rc = cli_fail("demo: inference failed: %s", loom_err_message(e));
            loom_err_free(e);
            break;
        }
        cJSON *j = reply.status == 200 ? cli_client_reply_json(&reply) : NULL;
        const cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 1);
        const cJSON *label = cJSON_GetArrayItem(cJSON_GetObjectItem(out, "data"), 0);
        if (!cJSON_IsNumber(label) || label->valueint < 0 || label->valueint > 9) {
            cli_client_reply_error(&reply, err, sizeof err);
            rc = cli_fail("demo: inference failed: %s", err);
        } else {
            int p = label->valueint;
            right += p == truth[i];
            printf("test image %d: predicted %-11s true %-11s %s\n", i, class_names[p],
                   class_names[truth[i]], p == truth[i] ? "" : "(wrong)");
        }
        cJSON_Delete(j);
        cli_client_reply_free(&reply);
    }
    if (rc == 0)
        printf("== %d of %d right, through the REST endpoint\n", right, DEMO_IMAGES);
    free(px);
    return rc;
}

int cli_demo_serving(const cli_globals *g, const char *exec_id, const char *dataset_dir)
{
    printf("\n== loom model deploy --from-exec %s --name fmnist-mlp; loom model start "
           "fmnist-mlp\n", exec_id);
    char body[256], images[512], labels[512];
    snprintf(body, sizeof body, "{\"fromExec\":\"%s\",\"name\":\"fmnist-mlp\"}", exec_id);
    cJSON *j = cli_request(g, "POST", LOOM_ROUTE_MODELS, body);
    if (!j)
        return 1;
    cJSON_Delete(j);
    j = cli_request(g, "POST", LOOM_ROUTE_MODELS "/fmnist-mlp" LOOM_ROUTE_OP_START, "{}");
    if (!j)
        return 1;
    cJSON_Delete(j);
    /* A start returns at once; the images go once an instance serves. */
    if (cli_model_wait_started("fmnist-mlp", DEMO_MODEL_START_S, g) != 0)
        return 1;
    printf("== POST %s/fmnist-mlp with test images as KServe v2 JSON\n", LOOM_ROUTE_INFERENCE);
    snprintf(images, sizeof images, "%s/t10k-images-idx3-ubyte.gz", dataset_dir);
    snprintf(labels, sizeof labels, "%s/t10k-labels-idx1-ubyte.gz", dataset_dir);
    int rc = classify(g, images, labels);
    j = cli_request(g, "POST", LOOM_ROUTE_MODELS "/fmnist-mlp" LOOM_ROUTE_OP_STOP, "{}");
    cJSON_Delete(j);
    return rc;
}
