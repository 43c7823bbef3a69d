/* util/num_text.h - numbers as users read them: the shortest text that
 * reads back as the same double, so 0.1 prints as "0.1", not
 * "0.10000000000000001", and nothing is lost. */
#ifndef LOOM_UTIL_NUM_TEXT_H
#define LOOM_UTIL_NUM_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The longest text num_text_double writes, with its NUL. */
#define NUM_TEXT_MAX 32

/* Writes d with %.15g, %.16g or %.17g, the first that strtod reads back
 * identically (%.17g always does). Infinities and NaN print as %g does.
 * Returns buf. */
char *num_text_double(double d, char *buf, size_t len);

/* Makes every finite number of a cJSON tree (`node`, its siblings and
 * children) print as num_text_double's text: cJSON's own (%.15g, else
 * %.17g) is not always the shortest. Call it on a tree about to be
 * printed for a user, after the last read of its numbers: they become
 * raw JSON text. NaN and infinities stay numbers (cJSON prints null). */
struct cJSON;
void num_text_json_shortest(struct cJSON *node);

/* A whole number from min to max, with an optional K, M or G suffix
 * (powers of 1024) when `sizes`: what the command line takes for a count or
 * a size in bytes. 0, or -1 when the text is not one. */
int num_text_amount(const char *text, int sizes, uint64_t min, uint64_t max, uint64_t *out);

#endif
