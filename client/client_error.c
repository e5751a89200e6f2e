// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* client_fail() (client_error.h): a client's last error, set. */
#include <stdarg.h>
#include <stdio.h>
#include "client_error.h"

int client_fail(struct client_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}
