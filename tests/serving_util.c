// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the tests that drive colocd's serving core without a socket share
 * (serving_util.h): the model's profile, a tenant admitted from sealed
 * copies of its files, as colocd makes of a submit (tu_sealed_copy), a turn
 * of the event loop, and queries of zeros counted.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model.h"
#include "profile_host.h"
#include "serving_util.h"
#include "testutil.h"

/* Whether model's profile is in cache_dir: 1, 0 (none), or -1 with why in out. */
static int profile_found(const char *model, const char *cache_dir, char *out, size_t len)
{
	struct coloc_err err = { 0 };
	struct model *m = model_load(model, &err);
	struct profile *p = m ? profile_table_find(model, m, cache_dir, &err) : NULL;
	int found = p ? 1 : err.code == -ENOENT ? 0 : -1;

	if (found < 0)
		snprintf(out, len, "%s", coloc_err_str(&err));
	profile_free(p);
	model_free(m);
	return found;
}

int tu_serving_profile(const char *model, const char *cache_dir, char *out, size_t len)
{
	char bin[512], cmd[2048], ran[4096];
	int found = profile_found(model, cache_dir, out, len);

	if (found)
		return found > 0 ? 0 : -1;
	snprintf(cmd, sizeof(cmd),
		 "%s '%s' -o '%s/setup.profile' --iters 1 --levels 50 --force --cache-dir '%s'",
		 tu_bin("coloc-profile", bin, sizeof(bin)), model, cache_dir, cache_dir);
	if (tu_run(cmd, ran, sizeof(ran))) {
		snprintf(out, len, "%s: %s", cmd, ran);
		return -1;
	}
	found = profile_found(model, cache_dir, out, len);
	if (!found)
		snprintf(out, len, "%s made no profile that is found", cmd);
	return found > 0 ? 0 : -1;
}

int tu_serving_start_mobilenet(const struct serving_config *cfg, char *model, struct serving **s,
			       char *why, size_t len)
{
	struct coloc_err err = { 0 };

	if (tu_repo_realpath("models/mobilenet_v2.model", model, why, len))
		return 1;
	if (!cfg->cache_dir || !cfg->cache_dir[0]) {
		snprintf(why, len, "no cache folder for the profile");
		return -1;
	}
	if (tu_quick_profile(model, cfg->cache_dir, why, len))
		return -1;
	if (serving_create(cfg, s, &err)) {
		snprintf(why, len, "serving_create: %s", coloc_err_str(&err));
		return -1;
	}
	return 0;
}

int tu_serving_admit(struct serving *s, struct serving_tenant_spec spec, const char *model,
		     const char *weights, int timeout_ms, struct coloc_err *err)
{
	int ret;

	spec.model_fd = tu_sealed_copy(model);
	if (spec.model_fd < 0)
		return coloc_err_set(err, spec.model_fd, "%s: %s", model, strerror(-spec.model_fd));
	spec.weights_fd = weights ? tu_sealed_copy(weights) : -1;
	if (weights && spec.weights_fd < 0) {
		ret = coloc_err_set(err, spec.weights_fd, "%s: %s", weights,
				    strerror(-spec.weights_fd));
		close(spec.model_fd);
		return ret;
	}
	ret = serving_admit_wait(s, &spec, timeout_ms, err);
	close(spec.model_fd);
	if (spec.weights_fd >= 0)
		close(spec.weights_fd);
	return ret;
}

int tu_serving_turn(struct serving *s, int max_ms)
{
	struct pollfd pfd[16];
	int fds[16], n = serving_fds(s, fds, 16), wait = serving_next_timeout_ms(s), ready;

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (wait < 0 || wait > max_ms)
		wait = max_ms;
	ready = poll(pfd, (nfds_t)n, wait);
	if (ready <= 0) {
		serving_tick(s);
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (pfd[i].revents)
			serving_handle_fd(s, pfd[i].fd);
	return ready;
}

void tu_count_done(void *ctx, const struct serving_completion *c)
{
	(void)c;
	(*(int *)ctx)++;
}

int tu_submit_zeros(struct serving *s, const char *name, struct tu_zero_queries *q,
		    struct coloc_err *err)
{
	struct serving_tenant_info info;

	coloc_err_clear(err);
	if (serving_tenant_info(s, name, &info))
		return -ENOENT;
	if (!q->input) {
		q->in_bytes = info.in_bytes;
		q->input = calloc(1, info.in_bytes);
		if (!q->input)
			return -ENOMEM;
	}
	return serving_submit(s, name, q->input, q->in_bytes, tu_count_done, &q->done, NULL, err);
}
