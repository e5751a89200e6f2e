// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The query timeline (timeline.h): switched on by COLOC_GW_TIMELINE at
 * start; each connection's reading stamps kept by its socket until its
 * method (on the thread that read it) takes them; the last GW_TL_KEEP
 * queries in a ring; at exit, to FILE.PID, one line a query (each stage
 * in µs after the wake, 0: not stamped) and the quartiles of each step
 * over the queries that have both ends.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "timeline.h"

#define GW_TL_KEEP 8192

bool gw_tl_on;
static const char *tl_path;
static struct gw_tl tl_ring[GW_TL_KEEP];
static atomic_uint tl_next;

static const char *const tl_names[GW_TL_NR] = {
	"wake",	     "read1",	   "read_end", "handle",   "checked", "sent",
	"colocd_in", "colocd_out", "readable", "received", "packed",  "written",
};
/*
 * Each connection's stamps (by its socket), until a method takes them. A
 * wake whose connection has not read 16 KiB of a message since the last
 * query (a WINDOW_UPDATE, a PING) starts over; one that has is the same
 * query's next piece.
 */
#define TL_FDS 1024
#define TL_PIECE 16384
static struct {
	struct gw_tl tl;
	uint64_t bytes;
	bool taken;
} tl_conn[TL_FDS];
static __thread int tl_fd = -1;

void gw_tl_wake(int fd)
{
	tl_fd = fd >= 0 && fd < TL_FDS ? fd : -1;
	if (!gw_tl_on || tl_fd < 0)
		return;
	if (tl_conn[fd].taken || tl_conn[fd].bytes < TL_PIECE) {
		memset(&tl_conn[fd], 0, sizeof(tl_conn[fd]));
		tl_conn[fd].tl.t[GW_TL_WAKE] = coloc_now_ns();
	}
	tl_conn[fd].tl.wakes++;
}

void gw_tl_read(ssize_t r, uint64_t now)
{
	struct gw_tl *tl;

	if (!gw_tl_on || tl_fd < 0 || r <= 0)
		return;
	tl = &tl_conn[tl_fd].tl;
	tl_conn[tl_fd].bytes += (uint64_t)r;
	tl->t[GW_TL_READ_END] = now;
	if (!tl->reads++) {
		tl->t[GW_TL_READ1] = tl->t[GW_TL_READ_END];
		tl->read1_bytes = (uint32_t)r;
	}
}

void gw_tl_begin(struct gw_tl *tl)
{
	if (!gw_tl_on)
		return;
	memset(tl, 0, sizeof(*tl));
	if (tl_fd >= 0) {
		*tl = tl_conn[tl_fd].tl;
		tl_conn[tl_fd].taken = true;
	}
	tl->t[GW_TL_HANDLE] = coloc_now_ns();
}

void gw_tl_commit(const struct gw_tl *tl)
{
	if (gw_tl_on)
		tl_ring[atomic_fetch_add(&tl_next, 1) % GW_TL_KEEP] = *tl;
}

static int tl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Step a -> b in µs over the n queries that have both, sorted into v; how many. */
static unsigned int tl_step(const struct gw_tl *q, unsigned int n, int a, int b, double *v)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < n; i++)
		if (q[i].t[a] && q[i].t[b])
			v[k++] = ((double)q[i].t[b] - (double)q[i].t[a]) / 1e3;
	qsort(v, k, sizeof(*v), tl_cmp);
	return k;
}

static void tl_print_step(FILE *f, const struct gw_tl *q, unsigned int n, int a, int b, double *v)
{
	unsigned int k = tl_step(q, n, a, b, v);

	if (k)
		fprintf(f, "# %s -> %s: p25 %.1f p50 %.1f p75 %.1f (%u)\n", tl_names[a],
			tl_names[b], v[k / 4], v[k / 2], v[k * 3 / 4], k);
}

static void tl_write(void)
{
	unsigned int n = atomic_load(&tl_next);
	char path[4096];
	FILE *f;
	double *v;

	snprintf(path, sizeof(path), "%s.%d", tl_path, (int)getpid());
	f = fopen(path, "w");
	if (n > GW_TL_KEEP)
		n = GW_TL_KEEP;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!f || !v) {
		if (f)
			fclose(f);
		free(v);
		return;
	}
	fprintf(f, "# %u queries; each stage in us after wake (0: none); wakes reads read1_bytes\n",
		n);
	for (int s = 0; s < GW_TL_NR; s++)
		fprintf(f, "%s%s", s ? " " : "# ", tl_names[s]);
	fprintf(f, " wakes reads read1_bytes\n");
	for (unsigned int i = 0; i < n; i++) {
		const struct gw_tl *q = &tl_ring[i];

		for (int s = 0; s < GW_TL_NR; s++)
			fprintf(f, "%s%.1f", s ? " " : "",
				q->t[s] && q->t[GW_TL_WAKE] ?
					((double)q->t[s] - (double)q->t[GW_TL_WAKE]) / 1e3 :
					0.0);
		fprintf(f, " %u %u %u\n", q->wakes, q->reads, q->read1_bytes);
	}
	fprintf(f, "# steps (us)\n");
	for (int s = 1; s < GW_TL_NR; s++)
		tl_print_step(f, tl_ring, n, s - 1, s, v);
	/* the gateway's own time on the way in and on the way out */
	tl_print_step(f, tl_ring, n, GW_TL_WAKE, GW_TL_SENT, v);
	tl_print_step(f, tl_ring, n, GW_TL_COLOCD_OUT, GW_TL_WRITTEN, v);
	fclose(f);
	free(v);
}

__attribute__((constructor)) static void tl_init(void)
{
	tl_path = getenv("COLOC_GW_TIMELINE");
	if (!tl_path || !*tl_path)
		return;
	gw_tl_on = true;
	atexit(tl_write);
}
