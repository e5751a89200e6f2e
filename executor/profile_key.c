// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The profile cache key (profile_key.h): the framing of a model's files
 * hashed with SHA-256 (common/sha256.c), from memory or by descriptor.
 */
#define _GNU_SOURCE
#include "profile_key.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sha256.h"

static void put_len(struct sha256 *s, uint64_t len)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(len >> (8 * i));
	sha256_update(s, b, sizeof(b));
}

/* A part's header: its tag, its name framed, its data's length. */
static void put_head(struct sha256 *s, char tag, const char *name, uint64_t len)
{
	size_t n = name ? strlen(name) : 0;

	sha256_update(s, &tag, 1);
	put_len(s, n);
	sha256_update(s, name, n);
	put_len(s, len);
}

/*
 * A part whose data is the file behind fd, from offset 0 to its fstat size;
 * -ECANCELED before a chunk once *cancel (when not NULL) is set.
 */
static int put_fd(struct sha256 *s, char tag, const char *name, int fd, const char *what,
		  const int *cancel, struct coloc_err *err)
{
	unsigned char buf[65536];
	struct stat st;
	uint64_t off = 0, size;
	ssize_t n;

	if (fstat(fd, &st))
		return coloc_err_set(err, -errno, "hashing %s: fstat: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return coloc_err_set(err, -EINVAL, "hashing %s: not a regular file", what);
	size = (uint64_t)st.st_size;
	put_head(s, tag, name, size);
	for (;;) {
		size_t want = size - off < sizeof(buf) ? (size_t)(size - off) : sizeof(buf);

		if (cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE))
			return coloc_err_set(err, -ECANCELED, "hashing %s: given up on", what);
		/* one byte more at the end: a file that grew shows it */
		n = pread(fd, buf, want ? want : 1, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return coloc_err_set(err, -errno, "hashing %s: %s", what, strerror(errno));
		if (!want && !n)
			return 0;
		if (!n || !want)
			return coloc_err_set(err, -EIO,
					     "hashing %s: its size changed while it was read (%llu "
					     "bytes at the start)",
					     what, (unsigned long long)size);
		sha256_update(s, buf, (size_t)n);
		off += (uint64_t)n;
	}
}

static int by_location(const void *a, const void *b)
{
	return strcmp((*(const struct profile_key_external *const *)a)->location,
		      (*(const struct profile_key_external *const *)b)->location);
}

/* The external data parts, by location; 0 or -errno. */
static int put_externals(struct sha256 *s, const struct profile_key_input *in,
			 struct coloc_err *err)
{
	const struct profile_key_external **e;
	int ret = 0;

	if (in->nr_external <= 0)
		return 0;
	e = malloc((size_t)in->nr_external * sizeof(*e));
	if (!e)
		return coloc_err_set(err, -ENOMEM, "hashing the external data: out of memory");
	for (int i = 0; i < in->nr_external; i++)
		e[i] = &in->external[i];
	qsort(e, (size_t)in->nr_external, sizeof(*e), by_location);
	for (int i = 1; i < in->nr_external && !ret; i++)
		if (!strcmp(e[i - 1]->location, e[i]->location))
			ret = coloc_err_set(err, -EINVAL,
					    "external data location '%.128s' is given twice",
					    e[i]->location);
	for (int i = 0; i < in->nr_external && !ret; i++) {
		char what[200];

		snprintf(what, sizeof(what), "external data file '%.128s'", e[i]->location);
		ret = put_fd(s, 'E', e[i]->location, e[i]->fd, what, in->cancel, err);
	}
	free(e);
	return ret;
}

int profile_key_compute(const struct profile_key_input *in, struct profile_key *out,
			struct coloc_err *err)
{
	struct sha256 s;
	int ret = 0;

	sha256_init(&s);
	sha256_update(&s, PROFILE_KEY_DOMAIN, strlen(PROFILE_KEY_DOMAIN));
	if (in->model) {
		put_head(&s, 'M', NULL, in->model_len);
		sha256_update(&s, in->model, in->model_len);
	} else {
		ret = put_fd(&s, 'M', NULL, in->model_fd, "the model", in->cancel, err);
	}
	if (!ret && in->weights_fd >= 0)
		ret = put_fd(&s, 'W', NULL, in->weights_fd, "the weights", in->cancel, err);
	if (!ret)
		ret = put_externals(&s, in, err);
	if (ret)
		return ret;
	if (in->options && *in->options) {
		put_head(&s, 'O', NULL, strlen(in->options));
		sha256_update(&s, in->options, strlen(in->options));
	}
	sha256_final(&s, out->b);
	return 0;
}

void profile_key_hex(const struct profile_key *k, char out[PROFILE_KEY_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < PROFILE_KEY_BYTES; i++) {
		out[2 * i] = hex[k->b[i] >> 4];
		out[2 * i + 1] = hex[k->b[i] & 15];
	}
	out[PROFILE_KEY_HEX_LEN] = '\0';
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int profile_key_parse_hex(const char *s, struct profile_key *k)
{
	if (strlen(s) != PROFILE_KEY_HEX_LEN)
		return -EINVAL;
	for (int i = 0; i < PROFILE_KEY_BYTES; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		k->b[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

bool profile_key_equal(const struct profile_key *a, const struct profile_key *b)
{
	return !memcmp(a->b, b->b, sizeof(a->b));
}
