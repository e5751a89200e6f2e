/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the tests that drive colocd's serving core without a socket share
 * (serving_util.c): the model's profile in the test's cache, a serving
 * core of MobileNet-V2's profiled, a tenant
 * admitted from sealed copies of its files as colocd makes of a submit, a
 * turn of the event loop, and queries of zeros whose answers are counted.
 */
#ifndef COLOC_TESTS_SERVING_UTIL_H
#define COLOC_TESTS_SERVING_UTIL_H

#include <stddef.h>
#include "serving.h"

/*
 * The profile of the model file at model found in cache_dir, else made
 * there by bin/coloc-profile (one iteration, level 50) and found: 0, or
 * -1 with why in out.
 */
int tu_serving_profile(const char *model, const char *cache_dir, char *out, size_t len);

/*
 * The repository's MobileNet-V2 (models/mobilenet_v2.model) resolved into
 * model (PATH_MAX bytes) and profiled into cfg's cache_dir
 * (tu_quick_profile), then a serving core of cfg in *s: 0; 1 with why (len
 * bytes) when the model is not here, for the test to skip; -1 with why.
 */
int tu_serving_start_mobilenet(const struct serving_config *cfg, char *model, struct serving **s,
			       char *why, size_t len);

/*
 * spec admitted to s with sealed copies of the files at model and weights
 * (NULL: the model's seed) in its model_fd and weights_fd, waiting up to
 * timeout_ms for the answer (serving_admit_wait): 0 or -errno with err.
 */
int tu_serving_admit(struct serving *s, struct serving_tenant_spec spec, const char *model,
		     const char *weights, int timeout_ms, struct coloc_err *err);

/*
 * One turn of the event loop a test plays for s: polls its fds for up to
 * max_ms (less when its next timeout is sooner); calls serving_tick when
 * none was ready, else serving_handle_fd for each ready one: how many were.
 */
int tu_serving_turn(struct serving *s, int max_ms);

/* Queries of zeros, of the size of the first tenant they go to, and their answers counted. */
struct tu_zero_queries {
	float *input;
	size_t in_bytes;
	int done; /* answers of any status */
};

/* A serving completion callback that counts into ctx, an int. */
void tu_count_done(void *ctx, const struct serving_completion *c);
/* One query of zeros to name (err cleared first): serving_submit's 0 or -errno, -ENOENT. */
int tu_submit_zeros(struct serving *s, const char *name, struct tu_zero_queries *q,
		    struct coloc_err *err);

#endif /* COLOC_TESTS_SERVING_UTIL_H */
