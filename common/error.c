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
	char both[2 * COLOC_ERR_MSG_MAX];
	size_t n;
	va_list ap;

	if (!err)
		return 0;
	va_start(ap, fmt);
	n = (size_t)vsnprintf(both, sizeof(both), fmt, ap);
	va_end(ap);
	if (n < sizeof(both))
		snprintf(both + n, sizeof(both) - n, ": %s", coloc_err_str(err));
	/* cut on a character boundary, never inside a UTF-8 sequence */
	n = strnlen(both, sizeof(err->msg) - 1);
	while (n && n < strlen(both) && ((unsigned char)both[n] & 0xc0) == 0x80)
		n--;
	memcpy(err->msg, both, n);
	err->msg[n] = '\0';
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
