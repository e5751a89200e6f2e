// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Parser for coloc's model files (the format is described in
 * models/README.md). It runs in two passes. The first splits the text into
 * statements, rejects binary data and overlong lines, matches each `repeat`
 * with its closing brace, and requires the closing `end` line and the final
 * newline, so a file cut at any byte is caught before any layer is built.
 * The second executes the statements, expanding repeat blocks with their
 * {var} name templates, and hands each layer to model_shape.c, which checks
 * it and computes its output shape, MACs and parameters; their sums must
 * then match the header's declared figures within a tolerance. Every error
 * is reported once as "FILE:LINE: what is wrong";
 * every number goes through strtoll/strtod with range checks and every size
 * is bounded, because the parser is fuzzed and reads files from users.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

#define PARSE_MAX_FILE_BYTES (16 << 20)
#define PARSE_MAX_REPEAT_DEPTH 4
#define PARSE_MAX_REPEAT_COUNT 10000
#define PARSE_MAX_EXPANDED_STMTS (1 << 20)
#define PARSE_MAX_VAR_LEN 16
/* A template can grow a token: "{i}" (3 bytes) becomes at most 7 digits. */
#define PARSE_SUBST_BYTES (4 * MODEL_PARSE_MAX_LINE)

struct parse_stmt {
	int line;
	int first_tok, nr_toks;
	int end; /* repeat: index of its closing '}' */
};

struct parse_var {
	char name[PARSE_MAX_VAR_LEN];
	int64_t value;
};

struct parser {
	struct model_ctx ctx; /* shared with model_shape.c: model, line, error */
	char *text; /* mutable copy, tokens point into it */
	char **toks;
	int nr_toks, cap_toks;
	struct parse_stmt *stmts;
	int nr_stmts, cap_stmts;
	struct parse_var vars[PARSE_MAX_REPEAT_DEPTH];
	int depth;
	int nr_lines;
	int end_line; /* the closing 'end', 0 until seen */
	int cur_stmt;
	long expanded;
	bool have_model, have_seed, have_macs, have_params;
	int macs_line, params_line; /* where macs and params were declared */
	/* the current statement's tokens after {var} substitution */
	char subst[PARSE_SUBST_BYTES];
	char *stoks[MODEL_PARSE_MAX_LINE / 2 + 2];
};

int model_fail(struct model_ctx *c, const char *fmt, ...)
{
	char msg[COLOC_ERR_MSG_MAX];
	va_list ap;

	if (c->failed)
		return -EINVAL;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return coloc_err_set(c->err, -EINVAL, "%s:%d: %s%s%s%s", c->file, c->line, msg,
			     c->context[0] ? " (" : "", c->context, c->context[0] ? ")" : "");
}

static void parse_update_context(struct parser *p)
{
	size_t n = 0;
	int i, k;

	p->ctx.context[0] = '\0';
	for (i = 0; i < p->depth && n < sizeof(p->ctx.context); i++) {
		k = snprintf(p->ctx.context + n, sizeof(p->ctx.context) - n, "%s%s=%lld",
			     i ? ", " : "in repeat ", p->vars[i].name, (long long)p->vars[i].value);
		if (k < 0)
			break;
		n += (size_t)k;
	}
}

static int parse_grow(void **arr, int *cap, int need, size_t elem)
{
	int new_cap;
	void *a;

	if (need <= *cap)
		return 0;
	new_cap = *cap ? *cap : 64;
	while (new_cap < need)
		new_cap *= 2;
	a = realloc(*arr, (size_t)new_cap * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = new_cap;
	return 0;
}

/* Splits one line (already NUL-terminated, comment removed) into tokens. */
static int parse_tokenize(struct parser *p, char *s)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			*s++ = '\0';
		if (!*s)
			return n;
		if (parse_grow((void **)&p->toks, &p->cap_toks, p->nr_toks + 1, sizeof(char *)))
			return -ENOMEM;
		p->toks[p->nr_toks++] = s;
		n++;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
	}
}

/*
 * A file must end with the line 'end' and its newline, so a file cut at any
 * byte is refused: a cut inside a line leaves that line without its newline
 * (parse_split), a cut between lines leaves no 'end' (here).
 */
static int parse_check_end(struct parser *p)
{
	p->ctx.line = p->nr_lines ? p->nr_lines : 1;
	if (!p->nr_stmts)
		return model_fail(&p->ctx, "empty or truncated file: no statements (expected "
					   "'model NAME', the header, the layers and 'end')");
	if (!p->end_line)
		return model_fail(&p->ctx, "the file ends after this line without the closing "
					   "'end' line: it is truncated");
	return 0;
}

/* 'end' closes the file: alone on its line, outside repeat blocks, and last. */
static int parse_end(struct parser *p, int n, int nr_open, const int *open)
{
	if (n != 1)
		return model_fail(&p->ctx, "'end' must stand alone on its line");
	if (nr_open)
		return model_fail(&p->ctx, "'end' inside the repeat block of line %d (missing '}')",
				  p->stmts[open[nr_open - 1]].line);
	p->end_line = p->ctx.line;
	return 0;
}

/* First pass: lines -> statements, with repeat blocks matched. */
static int parse_split(struct parser *p, size_t len)
{
	int open[PARSE_MAX_REPEAT_DEPTH];
	int nr_open = 0, line = 0, err;
	char *s = p->text, *end = p->text + len;

	while (s < end) {
		char *eol = memchr(s, '\n', (size_t)(end - s));
		char *c;
		int first, n;

		if (!eol)
			eol = end;
		p->ctx.line = ++line;
		if (p->end_line)
			return model_fail(&p->ctx,
					  "text after 'end' (line %d): 'end' must be the "
					  "last line, not even followed by a blank line or "
					  "a comment",
					  p->end_line);
		if (eol - s > MODEL_PARSE_MAX_LINE)
			return model_fail(&p->ctx, "line is longer than %d characters",
					  MODEL_PARSE_MAX_LINE);
		for (c = s; c < eol; c++) {
			unsigned char b = (unsigned char)*c;

			if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
				return model_fail(&p->ctx,
						  "binary data (byte 0x%02x at column %d); "
						  "a model file is text",
						  b, (int)(c - s) + 1);
		}
		if (eol == end)
			return model_fail(
				&p->ctx, "the file ends inside this line, without a newline: it is "
					 "truncated (a model file ends with the line 'end' and a "
					 "newline)");
		*eol = '\0';
		c = strchr(s, '#');
		if (c)
			*c = '\0';
		first = p->nr_toks;
		n = parse_tokenize(p, s);
		if (n < 0)
			return n;
		s = eol + 1;
		if (!n)
			continue;
		if (!strcmp(p->toks[first], "end")) {
			err = parse_end(p, n, nr_open, open);
			if (err)
				return err;
			continue;
		}
		if (parse_grow((void **)&p->stmts, &p->cap_stmts, p->nr_stmts + 1,
			       sizeof(*p->stmts)))
			return -ENOMEM;
		p->stmts[p->nr_stmts] = (struct parse_stmt){
			.line = line, .first_tok = first, .nr_toks = n, .end = -1
		};
		if (!strcmp(p->toks[first], "repeat")) {
			if (strcmp(p->toks[first + n - 1], "{"))
				return model_fail(&p->ctx, "expected '{' at the end of the line: "
							   "repeat VAR FIRST..LAST {");
			if (nr_open == PARSE_MAX_REPEAT_DEPTH)
				return model_fail(&p->ctx, "repeat blocks nested deeper than %d",
						  PARSE_MAX_REPEAT_DEPTH);
			open[nr_open++] = p->nr_stmts;
		} else if (!strcmp(p->toks[first], "}")) {
			if (n != 1)
				return model_fail(&p->ctx, "'}' must stand alone on its line");
			if (!nr_open)
				return model_fail(&p->ctx, "'}' without a matching 'repeat'");
			p->stmts[open[--nr_open]].end = p->nr_stmts;
		}
		p->nr_stmts++;
	}
	p->nr_lines = line;
	return parse_check_end(p);
}

static int parse_var_value(struct parser *p, const char *name, size_t len, int64_t *v)
{
	int i;

	for (i = p->depth - 1; i >= 0; i--) {
		if (strlen(p->vars[i].name) == len && !memcmp(p->vars[i].name, name, len)) {
			*v = p->vars[i].value;
			return 0;
		}
	}
	return model_fail(&p->ctx, "'%.*s' is not a repeat variable here", (int)len, name);
}

/*
 * Copies the statement's tokens into p->subst, replacing {var}, {var+N} and
 * {var-N} by their decimal value.
 */
static int parse_substitute(struct parser *p, const struct parse_stmt *st)
{
	size_t pos = 0;
	int t;

	for (t = 0; t < st->nr_toks; t++) {
		const char *s = p->toks[st->first_tok + t];

		p->stoks[t] = p->subst + pos;
		if (!strcmp(s, "{")) { /* opens a repeat block, not a template */
			if (pos + 2 > sizeof(p->subst))
				return model_fail(&p->ctx, "line too long after substitution");
			memcpy(p->subst + pos, "{", 2);
			pos += 2;
			continue;
		}
		while (*s) {
			char num[32];
			const char *close, *op;
			int64_t v = 0, off = 0;
			size_t n;

			if (*s == '}')
				return model_fail(&p->ctx, "'}' without '{' in '%s'",
						  p->toks[st->first_tok + t]);
			if (*s != '{') {
				if (pos + 2 > sizeof(p->subst))
					return model_fail(&p->ctx,
							  "line too long after substitution");
				p->subst[pos++] = *s++;
				continue;
			}
			close = strchr(s, '}');
			if (!close)
				return model_fail(&p->ctx, "unclosed '{' in '%s'",
						  p->toks[st->first_tok + t]);
			op = s + 1;
			while (op < close && *op != '+' && *op != '-')
				op++;
			if (op < close) {
				char digits[16];
				char *e;

				n = (size_t)(close - op - 1);
				if (!n || n >= sizeof(digits))
					return model_fail(&p->ctx, "bad offset in '%.*s'",
							  (int)(close - s + 1), s);
				memcpy(digits, op + 1, n);
				digits[n] = '\0';
				errno = 0;
				off = strtoll(digits, &e, 10);
				if (errno || *e || digits[0] < '0' || digits[0] > '9' ||
				    off > 1000000)
					return model_fail(&p->ctx, "bad offset in '%.*s'",
							  (int)(close - s + 1), s);
				if (*op == '-')
					off = -off;
			}
			if (parse_var_value(p, s + 1, (size_t)(op - s - 1), &v))
				return -EINVAL;
			n = (size_t)snprintf(num, sizeof(num), "%lld", (long long)(v + off));
			if (pos + n + 1 > sizeof(p->subst))
				return model_fail(&p->ctx, "line too long after substitution");
			memcpy(p->subst + pos, num, n);
			pos += n;
			s = close + 1;
		}
		p->subst[pos++] = '\0';
	}
	return 0;
}

/* "4.09G", "25557032", "340M": a count as published. */
static int parse_declared(struct parser *p, const char *what, const char *s, uint64_t *out)
{
	double mult = 1, v;
	size_t n = strlen(s);
	char buf[40];
	char *e;

	if (n && strchr("KMGT", s[n - 1])) {
		mult = s[n - 1] == 'K' ? 1e3 : s[n - 1] == 'M' ? 1e6 : s[n - 1] == 'G' ? 1e9 : 1e12;
		n--;
	}
	if (!n || n >= sizeof(buf) || strspn(s, "0123456789.eE+-") < n)
		return model_fail(&p->ctx, "%s '%s' is not a number (e.g. 4.09G, 25557032)", what,
				  s);
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &e);
	if (errno || *e || !isfinite(v))
		return model_fail(&p->ctx, "%s '%s' is not a number", what, s);
	v *= mult;
	if (v < 0 || v > 1e16)
		return model_fail(&p->ctx, "%s %s is out of range [0, 1e16]", what, s);
	*out = (uint64_t)llround(v);
	return 0;
}

static int parse_header(struct parser *p, char **tok, int n)
{
	struct model *m = p->ctx.m;
	const char *kw = tok[0];
	bool *seen = !strcmp(kw, "model") ? &p->have_model :
		     !strcmp(kw, "seed")  ? &p->have_seed :
		     !strcmp(kw, "macs")  ? &p->have_macs :
					    &p->have_params;

	if (p->depth)
		return model_fail(&p->ctx, "'%s' is not allowed inside a repeat block", kw);
	if (m->nr_layers)
		return model_fail(&p->ctx, "'%s' must come before the first layer", kw);
	if (*seen)
		return model_fail(&p->ctx, "'%s' given twice", kw);
	if (n != 2)
		return model_fail(&p->ctx, "'%s' takes exactly one value", kw);
	*seen = true;
	if (seen == &p->have_model) {
		if (model_check_name(&p->ctx, tok[1]))
			return -EINVAL;
		strcpy(m->name, tok[1]);
		return 0;
	}
	if (!p->have_model)
		return model_fail(&p->ctx, "the file must start with 'model NAME'");
	if (seen == &p->have_seed) {
		int64_t v;

		if (model_parse_int(tok[1], &v) || v < 0 || v > UINT32_MAX)
			return model_fail(&p->ctx, "seed '%s' is not an integer in [0, %u]", tok[1],
					  UINT32_MAX);
		m->seed = (uint32_t)v;
		return 0;
	}
	if (seen == &p->have_macs) {
		p->macs_line = p->ctx.line;
		return parse_declared(p, "macs", tok[1], &m->declared_macs);
	}
	p->params_line = p->ctx.line;
	return parse_declared(p, "params", tok[1], &m->declared_params);
}

static int parse_run(struct parser *p, int first, int last);

static int parse_repeat(struct parser *p, int idx, char **tok, int n)
{
	const struct parse_stmt *st = &p->stmts[idx];
	struct parse_var *var;
	int64_t lo, hi, i;
	char *dots;
	size_t vlen;
	int err;

	if (n != 4)
		return model_fail(&p->ctx, "expected 'repeat VAR FIRST..LAST {'");
	vlen = strlen(tok[1]);
	if (!vlen || vlen >= PARSE_MAX_VAR_LEN ||
	    strspn(tok[1], "abcdefghijklmnopqrstuvwxyz_") != vlen)
		return model_fail(&p->ctx, "repeat variable '%s' must be 1-%d lowercase letters",
				  tok[1], PARSE_MAX_VAR_LEN - 1);
	for (i = 0; i < p->depth; i++)
		if (!strcmp(p->vars[i].name, tok[1]))
			return model_fail(&p->ctx, "repeat variable '%s' is already in use",
					  tok[1]);
	dots = strstr(tok[2], "..");
	if (!dots)
		return model_fail(&p->ctx, "expected a range FIRST..LAST, got '%s'", tok[2]);
	*dots = '\0';
	err = model_parse_int(tok[2], &lo) || model_parse_int(dots + 2, &hi);
	*dots = '.';
	if (err)
		return model_fail(&p->ctx, "range '%s' is not FIRST..LAST with integers", tok[2]);
	if (lo < 0 || hi > 1000000 || hi < lo || hi - lo + 1 > PARSE_MAX_REPEAT_COUNT)
		return model_fail(&p->ctx,
				  "range %s must satisfy 0 <= FIRST <= LAST <= 1000000 and hold at "
				  "most %d iterations",
				  tok[2], PARSE_MAX_REPEAT_COUNT);
	var = &p->vars[p->depth++];
	strcpy(var->name, tok[1]);
	for (i = lo; i <= hi; i++) {
		/* iterations count too: nested empty blocks must not spin for ages */
		if (++p->expanded > PARSE_MAX_EXPANDED_STMTS) {
			err = model_fail(&p->ctx, "repeat blocks expand to more than %d statements",
					 PARSE_MAX_EXPANDED_STMTS);
			break;
		}
		var->value = i;
		parse_update_context(p);
		err = parse_run(p, idx + 1, st->end);
		if (err)
			break;
	}
	p->depth--;
	parse_update_context(p);
	return err;
}

/* Second pass: executes statements [first, last). */
static int parse_run(struct parser *p, int first, int last)
{
	int i, err;

	for (i = first; i < last; i++) {
		const struct parse_stmt *st = &p->stmts[i];
		char *kw;

		p->ctx.line = st->line;
		p->cur_stmt = i;
		if (++p->expanded > PARSE_MAX_EXPANDED_STMTS)
			return model_fail(&p->ctx,
					  "repeat blocks expand to more than %d statements",
					  PARSE_MAX_EXPANDED_STMTS);
		err = parse_substitute(p, st);
		if (err)
			return err;
		kw = p->stoks[0];
		if (!p->have_model && strcmp(kw, "model"))
			return model_fail(&p->ctx,
					  "missing header: the file must start with 'model NAME'");
		if (!strcmp(kw, "repeat")) {
			err = parse_repeat(p, i, p->stoks, st->nr_toks);
			i = st->end;
		} else if (!strcmp(kw, "model") || !strcmp(kw, "seed") || !strcmp(kw, "macs") ||
			   !strcmp(kw, "params")) {
			err = parse_header(p, p->stoks, st->nr_toks);
		} else {
			if (!p->have_seed || !p->have_macs || !p->have_params)
				return model_fail(
					&p->ctx, "missing header: 'seed', 'macs' and 'params' must "
						 "come before the first layer");
			err = model_add_layer(&p->ctx, p->stoks, st->nr_toks);
		}
		if (err)
			return err;
	}
	return 0;
}

/* So that a forward reference says where the layer it wants is defined. */
static int parse_later_definition(const struct model_ctx *c, const char *name)
{
	const struct parser *p = (const struct parser *)c; /* ctx is the first member */
	int i;

	for (i = p->cur_stmt + 1; i < p->nr_stmts; i++)
		if (p->stmts[i].nr_toks >= 2 && !strcmp(p->toks[p->stmts[i].first_tok + 1], name))
			return p->stmts[i].line;
	return 0;
}

static int parse_finish(struct parser *p)
{
	struct model *m = p->ctx.m;
	bool has_input = false, has_compute = false;
	int i;

	/* what is missing is missing at the end of the file */
	p->ctx.line = p->nr_lines;
	if (!p->have_seed || !p->have_macs || !p->have_params)
		return model_fail(&p->ctx,
				  "missing header: 'seed', 'macs' and 'params' are required");
	for (i = 0; i < m->nr_layers; i++) {
		if (m->layers[i].op == MODEL_OP_INPUT)
			has_input = true;
		else
			has_compute = true;
	}
	if (!has_input || !has_compute)
		return model_fail(&p->ctx, "the model needs at least one input and one layer "
					   "(truncated file?)");
	return 0;
}

/*
 * Published figures are rounded ("4.09G") and sometimes counted a little
 * differently, hence a tolerance; anything beyond it is a wrong header or a
 * wrong model.
 */
static int parse_check_declared(struct parser *p, const char *what, int line, uint64_t declared,
				uint64_t computed)
{
	uint64_t diff = declared > computed ? declared - computed : computed - declared;

	if ((unsigned __int128)diff * 100 <=
	    (unsigned __int128)computed * MODEL_DECLARED_TOLERANCE_PCT)
		return 0;
	p->ctx.line = line;
	if (!computed)
		return model_fail(&p->ctx, "declared %s %llu, but the layers have none", what,
				  (unsigned long long)declared);
	return model_fail(&p->ctx,
			  "declared %s %llu, but the layers add up to %llu (%+.1f%%, more than "
			  "the %d%% allowed)",
			  what, (unsigned long long)declared, (unsigned long long)computed,
			  100.0 * ((double)declared - (double)computed) / (double)computed,
			  MODEL_DECLARED_TOLERANCE_PCT);
}

struct model *model_parse(const char *name, const char *text, size_t len, struct coloc_err *err)
{
	const char *file = name ? name : "model";
	struct parser *p;
	struct model *m = NULL;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p) {
		coloc_err_set(err, -ENOMEM, "%s: out of memory", file);
		return NULL;
	}
	p->ctx.file = file;
	p->ctx.err = err;
	p->ctx.line = 1;
	p->ctx.later_definition = parse_later_definition;
	if (!text && len) {
		model_fail(&p->ctx, "no text");
		goto cleanup;
	}
	if (!text)
		text = "";
	if (len > PARSE_MAX_FILE_BYTES) {
		model_fail(&p->ctx, "file is larger than %d bytes", PARSE_MAX_FILE_BYTES);
		goto cleanup;
	}
	p->text = malloc(len + 1);
	m = calloc(1, sizeof(*m));
	p->ctx.m = m;
	if (!p->text || !m) {
		ret = -ENOMEM;
		goto out_of_memory;
	}
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	ret = parse_split(p, len);
	if (!ret)
		ret = parse_run(p, 0, p->nr_stmts);
	if (!ret)
		ret = parse_finish(p);
	if (!ret)
		ret = model_finish(&p->ctx);
	if (!ret)
		ret = parse_check_declared(p, "macs", p->macs_line, m->declared_macs, m->macs);
	if (!ret)
		ret = parse_check_declared(p, "params", p->params_line, m->declared_params,
					   m->params);
out_of_memory:
	if (ret == -ENOMEM)
		coloc_err_set(err, -ENOMEM, "%s: out of memory", file);
	if (ret) {
		model_free(m);
		m = NULL;
	}
cleanup:
	model_ctx_release(&p->ctx);
	free(p->toks);
	free(p->stmts);
	free(p->text);
	free(p);
	return m;
}

struct model *model_load(const char *path, struct coloc_err *err)
{
	struct model *m = NULL;
	size_t len = 0, cap = 0;
	char *buf = NULL;
	FILE *f;

	f = fopen(path, "rb");
	if (!f) {
		int e = errno;

		coloc_err_set(err, -e, "%s: cannot open: %s", path, strerror(e));
		return NULL;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			char *b;

			cap = cap ? cap * 2 : 65536;
			if (cap > PARSE_MAX_FILE_BYTES + 1)
				cap = PARSE_MAX_FILE_BYTES + 1;
			if (len == cap) {
				coloc_err_set(err, -EFBIG, "%s: file is larger than %d bytes", path,
					      PARSE_MAX_FILE_BYTES);
				goto cleanup;
			}
			b = realloc(buf, cap);
			if (!b) {
				coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
				goto cleanup;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				coloc_err_set(err, -EIO, "%s: read error", path);
				goto cleanup;
			}
			break;
		}
	}
	m = model_parse(path, buf ? buf : "", len, err);
cleanup:
	free(buf);
	fclose(f);
	return m;
}
