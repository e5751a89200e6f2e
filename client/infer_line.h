/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An infer's request line and colocd's answer line without json-c, in the
 * one form colocd and this library write them (protocol.h): the request
 * from a tenant name of plain characters, the answer when it is an object
 * of exactly the members colocd writes, each in the plain form json-c
 * gives it. Anything else is left to client.c's json-c: these only make
 * the common case cheap, never answer differently (tests/infer_line_test.c
 * holds them to json-c's readings).
 */
#ifndef COLOC_CLIENT_INFER_LINE_H
#define COLOC_CLIENT_INFER_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "coloc/client.h"

/*
 * The infer request's line, '\n' ended, into out (cap bytes), as json-c
 * writes it: its length, or 0 when tenant has a character json-c would
 * escape (or the line does not fit): the caller builds it with json-c.
 */
size_t coloc_infer_line_write(char *out, size_t cap, const char *tenant, uint64_t tag,
			      size_t input_bytes, bool memfd, size_t offset);

/*
 * colocd's answer line (len bytes, no '\n') into res and *out_bytes, as
 * client.c's json-c reading would fill them: 1, or 0 when the line is not
 * in colocd's plain form with a tag (an escape in a string, a member twice,
 * a number json-c would read otherwise, output_bytes out of range, ...):
 * res is then undefined and the caller parses the line with json-c.
 */
int coloc_answer_line_read(const char *line, size_t len, struct coloc_infer_result *res,
			   size_t *out_bytes);

#endif /* COLOC_CLIENT_INFER_LINE_H */
