// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * infer_line.h: an infer's request line written with snprintf, colocd's
 * answer line read by a scanner of its one plain form: an object of
 * members whose keys and strings have no escapes, whose numbers are
 * non-negative integers json-c reads as int64, parts_ns an object of
 * such numbers, nothing after its '}'. Whatever else it meets, it gives
 * the line back to json-c (returns 0) rather than guess.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "coloc/protocol.h"
#include "infer_line.h"

/* A tenant name json-c writes as it is: no escapes, not even its '\/'. */
static bool line_plain(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

size_t coloc_infer_line_write(char *out, size_t cap, const char *tenant, uint64_t tag,
			      size_t input_bytes, bool memfd, size_t offset)
{
	char off[48] = "";
	int n;

	/* json-c writes tag and sizes as int64 */
	if (!line_plain(tenant) || tag > INT64_MAX || input_bytes > INT64_MAX || offset > INT64_MAX)
		return 0;
	if (offset)
		snprintf(off, sizeof(off), ",\"input_offset\":%zu", offset);
	n = snprintf(out, cap,
		     "{\"cmd\":\"infer\",\"tenant\":\"%s\",\"tag\":%" PRIu64
		     ",\"input_bytes\":%zu%s%s}\n",
		     tenant, tag, input_bytes, memfd ? ",\"input\":\"memfd\"" : "", off);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* ---- the answer --------------------------------------------------------------------------- */

struct scan {
	const char *p, *end;
};

/* A string with no escape, control or non-ASCII byte: *s, *n; false otherwise. */
static bool scan_str(struct scan *sc, const char **s, size_t *n)
{
	const char *q;

	if (sc->p >= sc->end || *sc->p != '"')
		return false;
	for (q = sc->p + 1; q < sc->end && *q != '"'; q++)
		if (*q == '\\' || (unsigned char)*q < 0x20 || (unsigned char)*q >= 0x80)
			return false;
	if (q >= sc->end)
		return false;
	*s = sc->p + 1;
	*n = (size_t)(q - *s);
	sc->p = q + 1;
	return true;
}

/* 0 to INT64_MAX in plain digits (no sign, leading zero, fraction or exponent). */
static bool scan_count(struct scan *sc, uint64_t *v)
{
	uint64_t x = 0;
	const char *start = sc->p;

	while (sc->p < sc->end && *sc->p >= '0' && *sc->p <= '9') {
		unsigned int d = (unsigned int)(*sc->p - '0');

		if (x > ((uint64_t)INT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
		sc->p++;
	}
	if (sc->p == start || (*start == '0' && sc->p - start > 1))
		return false;
	/* a number json-c reads as a double, or as something else, is not ours */
	if (sc->p < sc->end && *sc->p != ',' && *sc->p != '}')
		return false;
	*v = x;
	return true;
}

static bool scan_lit(struct scan *sc, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(sc->end - sc->p) < n || memcmp(sc->p, lit, n))
		return false;
	sc->p += n;
	return true;
}

static bool scan_char(struct scan *sc, char c)
{
	if (sc->p >= sc->end || *sc->p != c)
		return false;
	sc->p++;
	return true;
}

static bool str_is(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

/* parts_ns's object into res->parts_ns; unknown parts skipped as json-c's reading does. */
static bool scan_parts(struct scan *sc, struct coloc_infer_result *res)
{
	static const char *const names[COLOC_NR_PARTS] = COLOC_PART_NAMES;
	unsigned int seen = 0;

	if (!scan_char(sc, '{'))
		return false;
	if (scan_char(sc, '}'))
		return true;
	do {
		const char *k;
		size_t n;
		uint64_t v;
		int p;

		if (!scan_str(sc, &k, &n) || !scan_char(sc, ':') || !scan_count(sc, &v))
			return false;
		for (p = 0; p < COLOC_NR_PARTS && !str_is(k, n, names[p]); p++)
			;
		if (p < COLOC_NR_PARTS) {
			if (seen & 1u << p)
				return false; /* twice: json-c keeps the last; not ours to judge */
			seen |= 1u << p;
			res->parts_ns[p] = v;
		}
	} while (scan_char(sc, ','));
	return scan_char(sc, '}');
}

enum {
	ANS_OK,
	ANS_TAG,
	ANS_STATUS,
	ANS_LATENCY,
	ANS_EXEC,
	ANS_PARTS,
	ANS_RECEIVE,
	ANS_FIRST_BYTE,
	ANS_ANSWERED,
	ANS_WOKE,
	ANS_OUTPUT,
	ANS_ERROR,
	ANS_NR
};

static const char *const ans_keys[ANS_NR] = {
	[ANS_OK] = "ok",
	[ANS_TAG] = "tag",
	[ANS_STATUS] = "status",
	[ANS_LATENCY] = "latency_ns",
	[ANS_EXEC] = "exec_ns",
	[ANS_PARTS] = "parts_ns",
	[ANS_RECEIVE] = "receive_ns",
	[ANS_FIRST_BYTE] = "first_byte_at_ns",
	[ANS_ANSWERED] = "answered_at_ns",
	[ANS_WOKE] = "woke_at_ns",
	[ANS_OUTPUT] = "output_bytes",
	[ANS_ERROR] = "error",
};

static const struct {
	const char *name;
	enum coloc_infer_status status;
} ans_statuses[] = {
	{ "ok", COLOC_INFER_OK },
	{ "rejected", COLOC_INFER_REJECTED },
	{ "dropped", COLOC_INFER_DROPPED },
	{ "failed", COLOC_INFER_FAILED },
};

/* One member's value (key k), read into res; false when not in colocd's form. */
static bool scan_member(struct scan *sc, int k, struct coloc_infer_result *res, uint64_t *output)
{
	uint64_t *counts[ANS_NR] = {
		[ANS_TAG] = &res->tag,
		[ANS_LATENCY] = &res->latency_ns,
		[ANS_EXEC] = &res->exec_ns,
		[ANS_RECEIVE] = &res->receive_ns,
		[ANS_FIRST_BYTE] = &res->first_byte_at_ns,
		[ANS_ANSWERED] = &res->answered_at_ns,
		[ANS_WOKE] = &res->woke_at_ns,
		[ANS_OUTPUT] = output,
	};
	const char *s;
	size_t n;

	switch (k) {
	case ANS_OK:
		return scan_lit(sc, "true") || scan_lit(sc, "false");
	case ANS_STATUS:
		if (!scan_str(sc, &s, &n))
			return false;
		res->status = COLOC_INFER_REJECTED; /* a status not known: as json-c's reading */
		for (size_t i = 0; i < sizeof(ans_statuses) / sizeof(*ans_statuses); i++)
			if (str_is(s, n, ans_statuses[i].name))
				res->status = ans_statuses[i].status;
		return true;
	case ANS_PARTS:
		return scan_parts(sc, res);
	case ANS_ERROR:
		if (!scan_str(sc, &s, &n))
			return false;
		if (n >= sizeof(res->error))
			n = sizeof(res->error) - 1;
		memcpy(res->error, s, n);
		res->error[n] = '\0';
		return true;
	case ANS_NR: /* a member colocd does not write: a plain scalar is skipped */
		return scan_str(sc, &s, &n) || scan_count(sc, output + 1) || scan_lit(sc, "true") ||
		       scan_lit(sc, "false");
	default:
		return scan_count(sc, counts[k]);
	}
}

int coloc_answer_line_read(const char *line, size_t len, struct coloc_infer_result *res,
			   size_t *out_bytes)
{
	struct scan sc = { line, line + len };
	uint64_t output[2] = { 0, 0 }; /* output_bytes, and a skipped member's number */
	unsigned int seen = 0;

	memset(res, 0, sizeof(*res));
	res->status = COLOC_INFER_REJECTED;
	*out_bytes = 0;
	if (!scan_char(&sc, '{'))
		return 0;
	do {
		const char *key;
		size_t n;
		int k;

		if (!scan_str(&sc, &key, &n) || !scan_char(&sc, ':'))
			return 0;
		for (k = 0; k < ANS_NR && !str_is(key, n, ans_keys[k]); k++)
			;
		if (k < ANS_NR && seen & 1u << k)
			return 0;
		if (k < ANS_NR)
			seen |= 1u << k;
		if (!scan_member(&sc, k, res, output))
			return 0;
	} while (scan_char(&sc, ','));
	if (!scan_char(&sc, '}') || sc.p != sc.end || !(seen & 1u << ANS_TAG))
		return 0;
	if (res->status == COLOC_INFER_OK && seen & 1u << ANS_OUTPUT) {
		if (output[0] > COLOC_MAX_PAYLOAD)
			return 0; /* json-c's reading says why */
		*out_bytes = (size_t)output[0];
	}
	return 1;
}
