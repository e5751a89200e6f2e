// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The --state file's text (the format in serving_state.c), written
 * straight into a descriptor through a buffer on the stack: no allocation,
 * so writing the file after a remove cannot fail for want of memory and
 * bring a removed tenant back after a restart (docs/design/state-writer.md).
 * Strings are escaped as JSON; json-c reads them back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "serving_state.h"

struct state_out {
	int fd;
	int err; /* the first write's -errno */
	size_t len;
	char buf[4096];
};

static void state_out_flush(struct state_out *o)
{
	const char *p = o->buf;

	while (o->len && !o->err) {
		ssize_t n = write(o->fd, p, o->len);

		if (n < 0 && errno != EINTR)
			o->err = -errno;
		if (n > 0) {
			p += n;
			o->len -= (size_t)n;
		}
	}
	o->len = 0;
}

static void state_out_char(struct state_out *o, char c)
{
	if (o->len == sizeof(o->buf))
		state_out_flush(o);
	o->buf[o->len++] = c;
}

static void state_out_fmt(struct state_out *o, const char *fmt, ...)
{
	char s[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	for (int i = 0; i < n && i < (int)sizeof(s) - 1; i++)
		state_out_char(o, s[i]);
}

/* s as a JSON string: quotes, backslashes and control characters escaped. */
static void state_out_string(struct state_out *o, const char *s)
{
	state_out_char(o, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			state_out_char(o, '\\');
			state_out_char(o, (char)c);
		} else if (c < 0x20) {
			state_out_fmt(o, "\\u%04x", c);
		} else {
			state_out_char(o, (char)c);
		}
	}
	state_out_char(o, '"');
}

static void state_out_spec(struct state_out *o, const struct colocd_spec *sp)
{
	state_out_fmt(o, "{\"name\":");
	state_out_string(o, sp->name);
	state_out_fmt(o, ",\"model\":");
	state_out_string(o, sp->model);
	state_out_fmt(o, ",\"weights\":");
	if (sp->weights[0])
		state_out_string(o, sp->weights);
	else
		state_out_fmt(o, "null");
	if (sp->nr_external) {
		state_out_fmt(o, ",\"external\":[");
		for (int k = 0; k < sp->nr_external; k++) {
			if (k)
				state_out_char(o, ',');
			state_out_string(o, sp->external[k]);
		}
		state_out_char(o, ']');
	}
	state_out_fmt(o, ",\"qos_ns\":%" PRIu64, (uint64_t)sp->qos_ns);
	if (sp->executors > 1)
		state_out_fmt(o, ",\"executors\":%d", sp->executors);
	state_out_fmt(o, ",\"owner\":%" PRIu64 "}", (uint64_t)sp->owner);
}

int colocd_state_render(int fd, const struct colocd_spec *specs, int nr)
{
	struct state_out o = { .fd = fd };

	state_out_fmt(&o, "{\"tenants\":[");
	for (int i = 0; i < nr; i++) {
		state_out_fmt(&o, i ? ",\n  " : "\n  ");
		state_out_spec(&o, &specs[i]);
	}
	state_out_fmt(&o, "\n]}\n");
	state_out_flush(&o);
	return o.err;
}
