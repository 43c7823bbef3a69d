/*
 * tests/unit/api/test_http_wire.c - the HTTP text the inference lane reads
 * and writes itself (http/http_wire.h): %-decoding, query arguments split
 * before they are decoded, a reply's head, refused when it does not fit;
 * and the connection counts (http/conn_count.h) both paths share.
 */
#include <stdlib.h>
#include <string.h>

#include "http/conn_count.h"
#include "http/http_wire.h"
#include "check.h"

static void test_unescape(void)
{
    char out[32];
    CHECK(http_unescape("/a%62c%2Fd+e", 12, out, sizeof out, 0) == 0);
    CHECK_STR_EQ(out, "/abc/d+e");
    CHECK(http_unescape("a+b%20c", 7, out, sizeof out, 1) == 0);
    CHECK_STR_EQ(out, "a b c");
    /* not an escape: kept as sent */
    CHECK(http_unescape("%zz%4", 5, out, sizeof out, 0) == 0);
    CHECK_STR_EQ(out, "%zz%4");
    CHECK_MSG(http_unescape("abcdef", 6, out, 6, 0) == -1, "six bytes and a NUL in 6: refused");
    CHECK(http_unescape("abcdef", 6, out, 7, 0) == 0);
}

static void test_split_query(void)
{
    char q[] = "x=1&name=a%26b&flag&&y=two+words%21";
    const char *k[8], *v[8];
    int n = http_split_query(q, k, v, 8);
    CHECK_MSG(n == 4, "four arguments: %d", n);
    if (n == 4) {
        CHECK_STR_EQ(k[0], "x");
        CHECK_STR_EQ(v[0], "1");
        CHECK_STR_EQ(k[1], "name");
        CHECK_MSG(strcmp(v[1], "a&b") == 0, "an escaped & stays in its value: %s", v[1]);
        CHECK_STR_EQ(k[2], "flag");
        CHECK_STR_EQ(v[2], "");
        CHECK_STR_EQ(v[3], "two words!");
    }
    char many[] = "a=1&b=2&c=3";
    CHECK_MSG(http_split_query(many, k, v, 2) == -1, "more arguments than room: refused");
}

static void test_head(void)
{
    cors_headers cors = {.count = 1, .name = {"Access-Control-Allow-Origin"}, .value = {"https://ui"}};
    http_head h = {.status = 200, .date = "Tue, 24 Nov 2026 06:00:00 GMT", .content_length = 42,
                   .cors = &cors, .keep_alive = 1};
    char out[512];
    size_t n = http_head_write(&h, out, sizeof out);
    out[n] = 0;
    CHECK_STR_EQ(out, "HTTP/1.1 200 OK\r\nDate: Tue, 24 Nov 2026 06:00:00 GMT\r\n"
                      "Content-Type: application/json\r\nContent-Length: 42\r\n"
                      "Access-Control-Allow-Origin: https://ui\r\nConnection: keep-alive\r\n\r\n");
    h = (http_head){.status = 431, .date = "D", .content_type = "text/plain", .close = 1,
                    .disposition = "attachment; filename=\"x\""};
    n = http_head_write(&h, out, sizeof out);
    out[n] = 0;
    CHECK_CONTAINS(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n");
    CHECK_CONTAINS(out, "Content-Type: text/plain\r\nContent-Length: 0\r\n");
    CHECK_CONTAINS(out, "Content-Disposition: attachment; filename=\"x\"\r\nConnection: close\r\n\r\n");
    size_t whole = n;
    CHECK_MSG(http_head_write(&h, out, whole) == 0, "a head one byte too long for its buffer: 0");
    CHECK(http_head_write(&h, out, whole + 1) == whole);
    CHECK_STR_EQ(http_reason_phrase(413), "Content Too Large");
}

static void test_conn_count(void)
{
    conn_count *c = conn_count_create(4, 2);
    unsigned from;
    CHECK(conn_count_take(c, 1) && conn_count_take(c, 1));
    CHECK_MSG(!conn_count_take(c, 1), "a third from one address: refused");
    CHECK(conn_count_take(c, 2) && conn_count_take(c, 3));
    CHECK_MSG(!conn_count_take(c, 4), "a fifth in all: refused");
    CHECK(conn_count_open(c, 1, &from) == 4 && from == 2);
    conn_count_hold(c, 5); /* a connection passing between owners */
    CHECK(conn_count_open(c, 5, &from) == 5 && from == 1);
    conn_count_give_back(c, 5);
    conn_count_give_back(c, 1);
    CHECK(conn_count_open(c, 1, &from) == 3 && from == 1);
    CHECK_MSG(conn_count_take(c, 1), "a place given back is taken again");
    conn_count_give_back(c, 2);
    conn_count_give_back(c, 3);
    conn_count_give_back(c, 1);
    conn_count_give_back(c, 1);
    CHECK(conn_count_open(c, 1, &from) == 0 && from == 0);
    conn_count_give_back(c, 9); /* never counted: nothing changes */
    CHECK(conn_count_open(c, 9, NULL) == 0);
    conn_count_free(c);
}

int main(void)
{
    test_unescape();
    test_split_query();
    test_head();
    test_conn_count();
    return CHECK_DONE();
}
