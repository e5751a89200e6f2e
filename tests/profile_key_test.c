// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The profile cache key (executor/profile_key.h): SHA-256 against the FIPS
 * 180-2 vectors, the framing against a digest Python's hashlib gave for
 * the same bytes, every file of a model in the key (bytes moved between
 * files, other weights, other external data), the tools' key over what
 * they parse (model_open_key, coloc-profile --weights), and profiles of
 * the key before it (format 6-8, FNV-1a of the model file) refused with
 * words rather than used; a key given up on stops before its next chunk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "testutil.h"
#include "model_open.h"
#include "profile.h"
#include "profile_host.h"
#include "profile_table.h"
#include "profile_tool.h"
#include "sha256.h"

static void hex_of(const unsigned char *b, int n, char *out)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* A memfd holding len bytes of data (a file given by descriptor, as colocd's copies). */
static int memfd_of(const void *data, size_t len)
{
	int fd = memfd_create("profile-key-test", MFD_CLOEXEC);

	if (fd >= 0 && write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

TEST(sha256__fips180_vectors)
{
	static const char *const msgs[] = {
		"", "abc", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
	};
	static const char *const want[] = {
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	};
	unsigned char d[SHA256_BYTES];
	char hex[2 * SHA256_BYTES + 1], a[1000];
	struct sha256 s;

	for (int i = 0; i < 3; i++) {
		sha256_init(&s);
		/* a byte at a time too: the block boundary is crossed in every way */
		for (size_t k = 0; k < strlen(msgs[i]); k++)
			sha256_update(&s, msgs[i] + k, 1);
		sha256_final(&s, d);
		hex_of(d, SHA256_BYTES, hex);
		EXPECT_STREQ(want[i], hex);
		sha256_init(&s);
		sha256_update(&s, msgs[i], strlen(msgs[i]));
		sha256_final(&s, d);
		hex_of(d, SHA256_BYTES, hex);
		EXPECT_STREQ(want[i], hex);
	}
	memset(a, 'a', sizeof(a));
	sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		sha256_update(&s, a, sizeof(a));
	sha256_final(&s, d);
	hex_of(d, SHA256_BYTES, hex);
	EXPECT_STREQ("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", hex);
}

/*
 * The framing of profile_key.h over known bytes, external data given out
 * of order; the digests are Python's:
 *   part = lambda t, n, d: t + struct.pack('<Q', len(n)) + n + struct.pack('<Q', len(d)) + d
 *   hashlib.sha256(b"coloc-profile-key 1\n" + part(b'M', b'', b'layer x\n') + ...)
 */
TEST(key__is_sha256_of_the_framing)
{
	struct coloc_err err = { 0 };
	struct profile_key_external ext[2];
	struct profile_key k, again;
	char hex[PROFILE_KEY_HEX_LEN + 1];
	int w = memfd_of("COLOCWT1", 8), e1 = memfd_of("\0\1", 2), e2 = memfd_of("xyz", 3);
	struct profile_key_input in = { .model = "layer x\n", .model_len = 8, .weights_fd = -1 };

	ASSERT_LE(0, w);
	ASSERT_LE(0, e1);
	ASSERT_LE(0, e2);
	ASSERT_EQ(0, profile_key_compute(&in, &k, &err)) TH_LOG("%s", err.msg);
	profile_key_hex(&k, hex);
	EXPECT_STREQ("843203af826fadaaeb11c7634f4be2bd513ae6b7ecbb394e17a464b47591b64f", hex);

	ext[0] = (struct profile_key_external){ "b/c.bin", e2 };
	ext[1] = (struct profile_key_external){ "a.bin", e1 };
	in.weights_fd = w;
	in.external = ext;
	in.nr_external = 2;
	in.options = "batch=2;";
	ASSERT_EQ(0, profile_key_compute(&in, &k, &err)) TH_LOG("%s", err.msg);
	profile_key_hex(&k, hex);
	EXPECT_STREQ("d7bea6167a8acd581316201598f3e7478c81a8351c1aa4ceb5db2fae060d9006", hex);
	ASSERT_EQ(0, profile_key_parse_hex(hex, &again));
	EXPECT_TRUE(profile_key_equal(&k, &again));
	EXPECT_EQ(-EINVAL, profile_key_parse_hex("D7BEA6", &again));

	/* the model by descriptor keys as its bytes in memory do */
	in.model = NULL;
	in.model_fd = memfd_of("layer x\n", 8);
	ASSERT_LE(0, in.model_fd);
	ASSERT_EQ(0, profile_key_compute(&in, &again, &err)) TH_LOG("%s", err.msg);
	EXPECT_TRUE(profile_key_equal(&k, &again));
	/* a location twice is refused, not keyed */
	ext[1].location = "b/c.bin";
	EXPECT_EQ(-EINVAL, profile_key_compute(&in, &again, &err));
	EXPECT_NE(NULL, strstr(err.msg, "'b/c.bin' is given twice")) TH_LOG("%s", err.msg);
	close(in.model_fd);
	close(w);
	close(e1);
	close(e2);
}

/* The key of model bytes m with weights w (NULL: none) and one external file at loc (or none). */
static int key_of(const char *m, const char *w, const char *loc, const char *ext,
		  struct profile_key *k)
{
	struct coloc_err err = { 0 };
	struct profile_key_external e = { loc, ext ? memfd_of(ext, strlen(ext)) : -1 };
	struct profile_key_input in = {
		.model = m,
		.model_len = strlen(m),
		.weights_fd = w ? memfd_of(w, strlen(w)) : -1,
		.external = &e,
		.nr_external = ext ? 1 : 0,
	};
	int ret = profile_key_compute(&in, k, &err);

	if (in.weights_fd >= 0)
		close(in.weights_fd);
	if (e.fd >= 0)
		close(e.fd);
	return ret;
}

TEST(key__every_file_and_where_its_bytes_are)
{
	struct profile_key base, k;

	ASSERT_EQ(0, key_of("ab", "c", NULL, NULL, &base));
	ASSERT_EQ(0, key_of("a", "bc", NULL, NULL, &k)); /* a byte moved into the weights */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("abc", NULL, NULL, NULL, &k)); /* the weights into the model */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("ab", "d", NULL, NULL, &k)); /* other weights */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("ab", NULL, NULL, NULL, &k)); /* no weights */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("ab", "c", NULL, NULL, &k)); /* the same bytes, the same key */
	EXPECT_TRUE(profile_key_equal(&base, &k));

	ASSERT_EQ(0, key_of("ab", NULL, "w.bin", "xy", &base));
	ASSERT_EQ(0, key_of("ab", NULL, "w.bin", "xz", &k)); /* other external data */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("ab", NULL, "v.bin", "xy", &k)); /* at another location */
	EXPECT_FALSE(profile_key_equal(&base, &k));
	ASSERT_EQ(0, key_of("ab", "xy", NULL, NULL, &k)); /* as weights instead */
	EXPECT_FALSE(profile_key_equal(&base, &k));
}

/*
 * A key given up on (in->cancel set, as colocd's copy past its deadline
 * sets it) stops before it reads a chunk of a file by descriptor
 * (-ECANCELED, naming the file); a flag never set changes nothing.
 */
TEST(key__given_up_on_stops_before_a_chunk)
{
	int model = memfd_of("layer x\n", 8), weights = memfd_of("COLOCWT1", 8);
	struct profile_key_input in = { .model_fd = model, .weights_fd = weights };
	struct profile_key plain, k;
	struct coloc_err err = { 0 };
	int cancel = 0;

	ASSERT_LE(0, model);
	ASSERT_LE(0, weights);
	ASSERT_EQ(0, profile_key_compute(&in, &plain, NULL));
	in.cancel = &cancel;
	ASSERT_EQ(0, profile_key_compute(&in, &k, NULL));
	EXPECT_TRUE(profile_key_equal(&plain, &k));
	cancel = 2; /* SUBMIT_COPY_GIVEN_UP: any nonzero */
	EXPECT_EQ(-ECANCELED, profile_key_compute(&in, &k, &err));
	EXPECT_NE(NULL, strstr(err.msg, "hashing the model: given up on")) TH_LOG("%s", err.msg);
	/* a model from memory: the weights' descriptor is where it stops */
	in.model = "layer x\n";
	in.model_len = 8;
	coloc_err_clear(&err);
	EXPECT_EQ(-ECANCELED, profile_key_compute(&in, &k, &err));
	EXPECT_NE(NULL, strstr(err.msg, "hashing the weights: given up on")) TH_LOG("%s", err.msg);
	close(model);
	close(weights);
}

FIXTURE(tool)
{
	char dir[64], model[128], w1[128], w2[128];
};

FIXTURE_SETUP(tool)
{
	char out[4096];

	ASSERT_EQ(0, tu_make_tmpdir("profile-key", self->dir, sizeof(self->dir)));
	snprintf(self->model, sizeof(self->model), "%s/tiny.model", self->dir);
	snprintf(self->w1, sizeof(self->w1), "%s/w1.weights", self->dir);
	snprintf(self->w2, sizeof(self->w2), "%s/w2.weights", self->dir);
	ASSERT_EQ(0, profile_tool_write_tiny_weights(self->model, self->w1, self->w2, out,
						     sizeof(out)))
	TH_LOG("%s", out);
}

FIXTURE_TEARDOWN(tool)
{
	tu_remove_tree(self->dir);
}

/* model_open_key keys what the tools parse: the model and its weights file, by the framing. */
TEST_F(tool, model_open_key__keys_the_weights_file)
{
	struct coloc_err err = { 0 };
	struct profile_key none, k1, k2, want;
	struct profile_key_input in = { .weights_fd = -1 };
	struct model_source src;

	ASSERT_EQ(0, model_open_key(self->model, NULL, NULL, &none, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, model_open_key(self->model, self->w1, NULL, &k1, &err)) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, model_open_key(self->model, self->w2, NULL, &k2, &err)) TH_LOG("%s", err.msg);
	EXPECT_FALSE(profile_key_equal(&none, &k1));
	EXPECT_FALSE(profile_key_equal(&k1, &k2));

	in.model_fd = open(self->model, O_RDONLY | O_CLOEXEC);
	in.weights_fd = open(self->w1, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, in.model_fd);
	ASSERT_LE(0, in.weights_fd);
	ASSERT_EQ(0, profile_key_compute(&in, &want, &err));
	EXPECT_TRUE(profile_key_equal(&want, &k1));
	close(in.model_fd);
	close(in.weights_fd);

	/* parsed with the key: the same key, and the weights handed on from what was keyed */
	ASSERT_EQ(0, model_open_keyed(self->model, self->w1, NULL, &src, &want, &err))
	TH_LOG("%s", err.msg);
	EXPECT_TRUE(profile_key_equal(&want, &k1));
	EXPECT_LE(0, src.weights_fd);
	EXPECT_NE(NULL, strstr(src.weights_path, "/proc/self/fd/"));
	model_source_close(&src);
	EXPECT_EQ(-EINVAL, model_open_key("x.onnx", self->w1, NULL, &want, &err));
}

/* coloc-profile --weights caches under the key of the model and those weights. */
TEST_F_TIMEOUT(tool, coloc_profile__keys_its_weights, 120)
{
	char out[160], cache[160], cached[PATH_MAX];
	const char *args[] = { self->model, "-o",      out,	   "--weights", self->w1,
			       "--iters",   "1",       "--levels", "50",	"--cache-dir",
			       cache,	    "--force", NULL };
	struct coloc_err err = { 0 };
	struct profile_machine machine;
	struct profile_key k1, none;
	struct tu_child run;
	struct profile *p;

	snprintf(out, sizeof(out), "%s/tiny.profile", self->dir);
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, profile_tool_run(args, &run));
	ASSERT_TRUE(tu_child_exited_with(&run, 0)) TH_LOG("%s", run.output);
	ASSERT_EQ(0, model_open_key(self->model, self->w1, NULL, &k1, &err));
	ASSERT_EQ(0, model_open_key(self->model, NULL, NULL, &none, &err));
	p = profile_load(out, &err);
	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	EXPECT_TRUE(profile_key_equal(&k1, &p->model_key));
	profile_free(p);
	ASSERT_EQ(0, profile_machine_detect(&machine));
	p = profile_table_find_keyed("tiny", &k1, self->model, cache, &machine, &err);
	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	profile_free(p);
	/* without the weights, or with others: none */
	EXPECT_EQ(NULL,
		  profile_table_find_keyed("tiny", &none, self->model, cache, &machine, &err));
	EXPECT_EQ(-ENOENT, err.code);
	EXPECT_NE(NULL, strstr(err.msg, "no profile for this model")) TH_LOG("%s", err.msg);
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", &k1, &machine, cached, sizeof(cached)));
	EXPECT_EQ(0, access(cached, R_OK));
}

/* A profile of the key before (format 6-8, FNV-1a of the model file only) is not used. */
TEST_F(tool, find__refuses_profiles_of_the_old_key_with_words)
{
	const char *root = getenv("COLOC_ROOT");
	char seed[PATH_MAX], path[PATH_MAX], cache[160], *text;
	struct coloc_err err = { 0 };
	struct profile_machine machine = { .nr_cores = 2, .llc_bytes = 1 << 20 };
	struct profile_key k;
	struct profile *p;
	size_t len;

	snprintf(seed, sizeof(seed), "%s/tests/fuzz/seeds/profile/small.profile",
		 root ? root : ".");
	text = tu_read_file(seed, &len);
	if (!text)
		SKIP(return, "%.900s not found (set COLOC_ROOT to the repo root)", seed);
	ASSERT_NE(NULL, strstr(text, "\nmodel-hash ")); /* a profile of the old key */
	p = profile_load(seed, &err);
	ASSERT_NE(NULL, p) TH_LOG("%s", err.msg);
	EXPECT_TRUE(p->model_key_old);
	profile_free(p);
	snprintf(machine.cpu_model, sizeof(machine.cpu_model), "CPU X");
	snprintf(machine.isa, sizeof(machine.isa), "avx2");
	snprintf(cache, sizeof(cache), "%s/cache", self->dir);
	ASSERT_EQ(0, mkdir(cache, 0755));
	ASSERT_EQ(0, model_open_key(self->model, NULL, NULL, &k, &err));

	/* under its old name: not found, and the message says one is there and why unused */
	snprintf(path, sizeof(path), "%s/tiny-3e7cb7ff03cc405f-%016llx.profile", cache,
		 (unsigned long long)profile_machine_hash(&machine));
	ASSERT_EQ(0, tu_write_file(path, text, len));
	EXPECT_EQ(NULL, profile_table_find_keyed("tiny", &k, self->model, cache, &machine, &err));
	EXPECT_EQ(-ENOENT, err.code);
	EXPECT_NE(NULL, strstr(err.msg, "no profile for this model")) TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(err.msg, "(1 of tiny keyed by the model file alone, before "
					"2026-12-06: not used)"))
	TH_LOG("%s", err.msg);
	EXPECT_NE(NULL, strstr(err.msg, "make it with: coloc-profile ")) TH_LOG("%s", err.msg);

	/* renamed to the new key's name: read, and refused for its header */
	ASSERT_EQ(0, profile_cache_path(cache, "tiny", &k, &machine, path, sizeof(path)));
	ASSERT_EQ(0, tu_write_file(path, text, len));
	coloc_err_clear(&err);
	EXPECT_EQ(NULL, profile_table_find_keyed("tiny", &k, self->model, cache, &machine, &err));
	EXPECT_EQ(-ESTALE, err.code);
	EXPECT_NE(NULL, strstr(err.msg, "a profile of the key before 2026-12-06"))
	TH_LOG("%s", err.msg);
	free(text);
}

TEST_HARNESS_MAIN
