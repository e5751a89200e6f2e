// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * "data" arrays outside json-c (json_data.h). A first pass finds each
 * "data" member (a string followed by ':') and checks its array's grammar
 * (RFC 8259 numbers, so no leading zeros, NaN or Infinity; nested arrays);
 * json-c then parses the text between the arrays, fed in pieces with each
 * array's index in its place. A number is converted as json-c converts it
 * (an integer through int64 or uint64, any other through strtod) and then
 * narrowed to fp32, so a tensor holds the bytes it held through json-c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer_request.h"
#include "json_data.h"

static int json_fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int json_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

static size_t json_skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

static size_t json_skip_digits(const char *s, size_t len, size_t i)
{
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* The length of the JSON number at s, 0 if there is none; *integer: no fraction, no exponent. */
static size_t json_number_len(const char *s, size_t len, bool *integer)
{
	size_t i = s[0] == '-', from = i;

	*integer = true;
	i = i < len && s[i] == '0' ? i + 1 : json_skip_digits(s, len, i);
	if (i == from)
		return 0;
	if (i < len && s[i] == '.') {
		*integer = false;
		from = i + 1;
		if ((i = json_skip_digits(s, len, from)) == from)
			return 0;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		*integer = false;
		from = i + 1 < len && (s[i + 1] == '+' || s[i + 1] == '-') ? i + 2 : i + 1;
		if ((i = json_skip_digits(s, len, from)) == from)
			return 0;
	}
	return i;
}

/* The number of len bytes at s (followed by a byte that ends it) as fp32; -1 past its range. */
static int json_number_float(const char *s, size_t len, bool integer, float *f)
{
	char *end;
	double v;

	errno = 0;
	if (integer && s[0] == '-')
		v = (double)strtoll(s, &end, 10);
	else if (integer)
		v = (double)strtoull(s, &end, 10);
	else
		v = strtod(s, &end);
	*f = (float)v;
	return end == s + len && !(integer && errno == ERANGE) && isfinite(*f) ? 0 : -1;
}

/*
 * The array at s[*pos] ('['), up to len: its numbers into out[0..cap) when
 * out is not NULL (else only its grammar is checked), nested at most
 * levels deep; *n counts them, *pos ends past its ']'. 0 or -1 (why).
 */
static int json_walk(const char *s, size_t len, size_t *pos, float *out, uint64_t cap, int levels,
		     uint64_t *n, char *why, size_t why_len)
{
	enum { VALUE_OR_CLOSE, VALUE, COMMA_OR_CLOSE } want = VALUE;
	size_t i = *pos, l;
	int depth = 0;
	bool integer;

	for (*n = 0;; i++) {
		i = json_skip_ws(s, len, i);
		if (i == len)
			return json_fail(why, why_len, "\"data\" is cut short");
		if (want == COMMA_OR_CLOSE && s[i] == ',') {
			want = VALUE;
		} else if (want != VALUE && s[i] == ']') {
			want = COMMA_OR_CLOSE;
			if (--depth == 0)
				break;
		} else if (want != COMMA_OR_CLOSE && s[i] == '[') {
			if (++depth > levels)
				return json_fail(why, why_len, "\"data\" is nested deeper than %d",
						 levels);
			want = VALUE_OR_CLOSE;
		} else if (want != COMMA_OR_CLOSE &&
			   (l = json_number_len(s + i, len - i, &integer))) {
			if (out && *n == cap)
				return json_fail(why, why_len,
						 "\"data\" must hold exactly %llu numbers",
						 (unsigned long long)cap);
			if (out && json_number_float(s + i, l, integer, &out[*n]))
				return json_fail(
					why, why_len,
					"%.*s is out of range (of fp32, or of a 64-bit integer)",
					(int)(l < 40 ? l : 40), s + i);
			++*n;
			i += l - 1;
			want = COMMA_OR_CLOSE;
		} else {
			return json_fail(why, why_len,
					 "\"data\" must be an array of numbers (at byte %zu: '%c')",
					 i, s[i] >= ' ' && s[i] <= '~' ? s[i] : '?');
		}
	}
	*pos = i + 1;
	return 0;
}

/*
 * Feeds piece (n bytes) of d's text to tok, its containers and commas
 * counted first: 0, or -1 when the text is no (longer) one object or holds
 * more of them than d->max_values.
 */
static int json_feed(struct gw_json_data *d, struct json_tokener *tok, const char *piece, size_t n,
		     struct json_object **o)
{
	size_t i = 0;

	for (size_t k = 0; k < n; k++)
		d->values += piece[k] == ',' || piece[k] == '[' || piece[k] == '{';
	if (d->values > d->max_values)
		return -1;
	if (!*o && n) {
		*o = json_tokener_parse_ex(tok, piece, (int)n);
		if (!*o)
			return json_tokener_get_error(tok) == json_tokener_continue ? 0 : -1;
		i = json_tokener_get_parse_end(tok);
	}
	/* the object must end the text, with only white space after it */
	return *o && json_skip_ws(piece, n, i) < n ? -1 : 0;
}

static int json_parse_fail(const struct gw_json_data *d, char *why, size_t why_len)
{
	if (d->values > d->max_values)
		return json_fail(
			why, why_len,
			"the JSON part holds more than %llu values besides its \"data\" arrays",
			(unsigned long long)d->max_values);
	return json_fail(why, why_len, "the request is not one JSON object");
}

/* Where the string opening at json[i] ends (its closing '"'), len if it does not. */
static size_t json_string_end(const char *json, size_t len, size_t i)
{
	for (i++; i < len && json[i] != '"'; i++)
		i += json[i] == '\\';
	return i < len ? i : len;
}

/* The "data" member's array at json[*i] (past its ':') cut out of the text json-c sees. */
static int json_cut_data(struct gw_json_data *d, struct json_tokener *tok, size_t len, size_t *fed,
			 size_t *i, struct json_object **o, char *why, size_t why_len)
{
	size_t start = *i;
	uint64_t n;
	char index[16];

	if (start == len || d->json[start] != '[')
		return json_fail(why, why_len, "\"data\" must be an array of numbers");
	if (d->nr == GW_REPO_MAX_TENSORS)
		return json_fail(why, why_len, "more than %d \"data\" arrays", GW_REPO_MAX_TENSORS);
	if (json_walk(d->json, len, i, NULL, UINT64_MAX, GW_JSON_MAX_DEPTH, &n, why, why_len))
		return -1;
	/* the space keeps a digit after the array from joining the index */
	snprintf(index, sizeof(index), "%d ", d->nr);
	if (json_feed(d, tok, d->json + *fed, start - *fed, o) ||
	    json_feed(d, tok, index, strlen(index), o))
		return json_parse_fail(d, why, why_len);
	d->span[d->nr].start = start;
	d->span[d->nr++].end = *i;
	*fed = *i;
	return 0;
}

struct json_object *gw_json_data_parse(const char *json, size_t len, uint64_t max_values,
				       struct gw_json_data *d, char *why, size_t why_len)
{
	struct json_tokener *tok = json_tokener_new_ex(GW_JSON_MAX_DEPTH);
	struct json_object *o = NULL;
	size_t fed = 0, i = 0, end;
	bool key;

	memset(d, 0, sizeof(*d));
	d->json = json;
	d->max_values = max_values;
	if (!tok)
		return json_fail(why, why_len, "out of memory"), NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	while (i < len) {
		if (json[i] != '"') {
			i++;
			continue;
		}
		end = json_string_end(json, len, i);
		if (end == len)
			break;
		key = end - i == 5 && !memcmp(json + i + 1, "data", 4);
		i = json_skip_ws(json, len, end + 1);
		if (!key || i == len || json[i] != ':')
			continue;
		i = json_skip_ws(json, len, i + 1);
		if (json_cut_data(d, tok, len, &fed, &i, &o, why, why_len))
			goto fail;
	}
	if (json_feed(d, tok, json + fed, len - fed, &o) || !o) {
		json_parse_fail(d, why, why_len);
		goto fail;
	}
	json_tokener_free(tok);
	return o;
fail:
	json_tokener_free(tok);
	json_object_put(o);
	return NULL;
}

int gw_json_data_floats(struct gw_json_data *d, struct json_object *member, float *out, uint64_t n,
			int levels, char *why, size_t why_len)
{
	int64_t k = json_object_is_type(member, json_type_int) ? json_object_get_int64(member) : -1;
	size_t pos;
	uint64_t got;

	if (k < 0 || k >= d->nr || d->span[k].used)
		return json_fail(why, why_len,
				 "\"data\" must be an array of numbers, its key written "
				 "without escapes");
	d->span[k].used = true;
	pos = d->span[k].start;
	if (json_walk(d->json, d->span[k].end, &pos, out, n, levels, &got, why, why_len))
		return -1;
	if (got != n)
		return json_fail(why, why_len, "\"data\" must hold exactly %llu numbers",
				 (unsigned long long)n);
	return 0;
}
