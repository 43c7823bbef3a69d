/*
 * http/json_text.h - JSON text as clients receive it. cJSON copies string
 * bytes as they are, so text a client sent with invalid UTF-8 (an exec's
 * args, a name in an error message) would make the reply invalid JSON;
 * each invalid byte becomes the escape \ufffd (the replacement character).
 */
#ifndef LOOM_HTTP_JSON_TEXT_H
#define LOOM_HTTP_JSON_TEXT_H

#include <stddef.h>

/* Takes `text` (malloc'd, *len bytes) and returns it, or a repaired
 * malloc'd copy (freeing text) with *len updated. Valid UTF-8 is returned
 * unchanged; so is the text when memory runs out. */
char *json_text_repair_utf8(char *text, size_t *len);
/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
size_t json_text_utf8_len(const unsigned char *s, size_t n);

#endif
