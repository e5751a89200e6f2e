// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The one error type of coloc's libraries (see error.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "error.h"

int coloc_err_set(struct coloc_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int coloc_err_prefix(struct coloc_err *err, const char *fmt, ...)
{
	char prefix[COLOC_ERR_MSG_MAX], old[COLOC_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return 0;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	snprintf(old, sizeof(old), "%s", coloc_err_str(err));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	return err->code;
}

void coloc_err_clear(struct coloc_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *coloc_err_str(const struct coloc_err *err)
{
	if (!err)
		return "";
	if (!err->msg[0] && err->code)
		return strerror(-err->code);
	return err->msg;
}
