/*
 * tests/unit/cli/test_cli_client.c - every request of the CLI's REST client
 * (call, upload, Basic logon) reports a host it cannot reach as a
 * loom_error with LOOM_E_UNAVAILABLE and the address, and no reply body is
 * left behind to free.
 */
#include <stdlib.h>

#include "check.h"
#include "cli/client.h"

/* Port 1 on loopback: nothing listens there. */
#define NOBODY "http://127.0.0.1:1"

static void unreachable(loom_error *e, const client_reply *r, const char *what)
{
    CHECK_MSG(loom_err_code(e) == LOOM_E_UNAVAILABLE, "%s: code %d", what, (int)loom_err_code(e));
    CHECK_CONTAINS(loom_err_message(e), "cannot reach the loom host at " NOBODY);
    CHECK_MSG(r->body == NULL, "%s: a body left behind", what);
    loom_err_free(e);
}

int main(void)
{
    client c;
    cli_client_init(&c, NOBODY);
    client_reply r;
    unreachable(cli_client_call(&c, "GET", "/loom/v1/health", NULL, &r), &r, "call");
    unreachable(cli_client_call(&c, "POST", "/loom/v1/x", "{}", &r), &r, "call with a body");
    client_part part = {.name = "data", .value = "{}"};
    unreachable(cli_client_upload(&c, "/loom/v1/x", &part, 1, &r), &r, "upload");
    unreachable(cli_client_logon_basic(&c, "alice", "secret", &r), &r, "logon");
    return CHECK_DONE();
}
