// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc: the scheduler issue's policy, VELTAIR's layer blocks and
 * interference-chosen versions with Abacus's prediction and headroom order,
 * and the engine its ablations and the model-wise and layer-wise baselines
 * share (struct coloc_flags says which parts are on; each entry is a flag
 * set, no copies). A round: the level, each layer's budget and core need,
 * the dynamic threshold, the next block of each query (cut at a pivot,
 * capped by the other tenants' slack), tenants by headroom, drops, cores by
 * LLC domain; predictions corrected by what blocks measured. Each tenant
 * caches what it read from its table at the current level. The algorithm
 * step by step, and why each rule is there: docs/design/coloc-policy.md.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "policy_impl.h"

#define COLOC_ALPHA 0.3
/*
 * The correction is evidence from the tenant's recent blocks: with none for
 * this long, half of its distance from 1.0 is forgotten. Only blocks that
 * run update it, and a correction that predicts every query late drops
 * every query: without forgetting, one slow spell would starve the tenant
 * for good.
 */
#define COLOC_CORR_HALF_LIFE_NS 1000000000.0
/* A block of this table latency teaches the correction and the per-block cost equally. */
#define COLOC_SMALL_BLOCK_NS 100000.0
/*
 * A block's own correction on top of its tenant's, per (first layer, last
 * layer, core count): the same layers on the same cores run alike query
 * after query and unlike the tenant's other blocks. Direct-mapped, a
 * collision replaces the entry; 1.0 until the block was measured once. It
 * fades towards 1.0 without measurements (a block predicted too late to run
 * is never measured again: it must not starve its tenant). The replays
 * that chose it and its half-life: docs/design/coloc-policy.md.
 */
#define COLOC_BLOCK_CLASSES 256
#define COLOC_CLASS_HALF_LIFE_NS 5000000000.0
/*
 * Once a block was measured COLOC_CLASS_MIN_SAMPLES times, its prediction
 * is the table at the level times the median measured / table of its last
 * COLOC_CLASS_SAMPLES (Abacus predicts a layer group from what the same
 * group measured): a median is not moved by the one block in ten that runs
 * 2-3x slow, which an EWMA carries into the next predictions. A median
 * above the EWMAs' prediction fades towards it, as the tenant's correction
 * does, so a stale slow median cannot starve its tenant. What it gained:
 * docs/design/coloc-policy.md.
 */
#define COLOC_CLASS_SAMPLES 9
#define COLOC_CLASS_MIN_SAMPLES 3
/*
 * The level a round uses, in steps of this much slowdown: a measured level
 * carries a few % of noise, and a level that moves re-reads the tables (a
 * round then costs ~10x more, see the cache below).
 */
#define COLOC_LEVEL_STEP 0.02
#define COLOC_LOOKAHEAD 4
/*
 * A tenant's cache covers tables up to these sizes; larger ones are read
 * directly. 16384 cells hold ResNet-50's 53 layers at 256 core counts (the
 * simulator issue's largest machine); the state is then about 60 MB of
 * address space, of which only what tenants touch is ever backed.
 */
#define COLOC_CACHE_LAYERS 1024
#define COLOC_CACHE_CELLS 16384
/* A round sorts up to this many queries by tenant; with more, each look-up reads them all. */
#define COLOC_MAX_QUEUED 4096
#define CPU_WORDS (POLICY_MAX_CPUS / 64)

struct coloc_cell {
	uint64_t gen; /* valid when it is the cache's generation */
	uint64_t ns; /* latency of the chosen version, 0: no version */
	/* least non-zero ns at this count or fewer, NAN: none (valid below the row's filled) */
	double min_ns;
	int ver;
};

struct coloc_row {
	uint64_t gen; /* the rest is valid when it is the cache's generation */
	int filled; /* min_ns is set at counts [0, filled) */
	int fastest; /* the fastest of those counts, the first of equals (0 when none) */
	uint64_t min; /* its latency, 0: none */
};

struct coloc_cache {
	uint64_t gen;
	double pos; /* the level position the entries hold */
	double share[COLOC_CACHE_LAYERS]; /* layer_share() of each layer, kept with the tenant */
	double rest
		[COLOC_CACHE_LAYERS]; /* shares of layers l.. summed from l up, as rest_share() */
	struct coloc_row row[COLOC_CACHE_LAYERS];
	struct coloc_cell cell[COLOC_CACHE_CELLS]; /* [layer * nr_core_counts + ci] */
	uint64_t col[POLICY_MAX_CORE_COUNTS]; /* the generation column ci's sums hold */
	/* [layer * nr_core_counts + ci], layer 0 .. nr_layers */
	uint64_t sum_before[COLOC_CACHE_CELLS + POLICY_MAX_CORE_COUNTS];
	uint32_t bad_before[COLOC_CACHE_CELLS + POLICY_MAX_CORE_COUNTS];
	/* the same running sums of the chosen versions' latency alone (level column 0) */
	uint64_t alone_before[COLOC_CACHE_CELLS + POLICY_MAX_CORE_COUNTS];
	/* [ci * nr_layers + layer]: the chosen version, a column's layers side by side */
	uint8_t ver_col[COLOC_CACHE_CELLS];
};

struct coloc_tenant {
	bool known;
	uint64_t uid;
	const struct policy_model *model;
	double avg_need; /* avg_C: mean core need alone */
	/* a layer's share of the QoS is its alone latency at this count's index, -1: its ops */
	int share_ci;
	double share_den; /* total ops, or total alone latency at share_ci */
	double corr; /* measured / table latency, EWMA */
	double fixed_ns; /* a block's cost beyond its table latency, EWMA */
	double dev; /* relative error of its blocks' predictions, |measured - predicted| / predicted, EWMA */
	uint64_t corr_ns; /* when corr and fixed_ns were last measured (a block's end) */
	struct coloc_cache *cache; /* NULL: the table is too large to cache */
	struct {
		uint64_t key; /* class_index()'s key of the block, 0: empty */
		double rel; /* measured / (table x corr), EWMA */
		uint64_t ns; /* when it was last measured (the block's end) */
		float ratio[COLOC_CLASS_SAMPLES]; /* its last measured / table, a ring */
		int nr, next; /* samples in the ring, where the next one goes */
		double median; /* of the ring, once it holds COLOC_CLASS_MIN_SAMPLES */
	} cls[COLOC_BLOCK_CLASSES];
};

struct coloc_state {
	struct coloc_flags flags;
	int nr_online;
	struct coloc_tenant t[POLICY_MAX_TENANTS];
	struct coloc_cache cache[POLICY_MAX_TENANTS];
	const struct policy_query
		*queued[COLOC_MAX_QUEUED]; /* a round's, by tenant (struct round) */
};

double policy_coloc_threshold(int total_cores, double sum_avg, double avg)
{
	double spare = (double)total_cores - sum_avg;

	if (sum_avg <= 0 || spare <= 0)
		return 0;
	return spare * avg / sum_avg;
}

int policy_coloc_engine_create(const struct coloc_flags *flags, const struct policy_config *cfg,
			       void **state, struct coloc_err *err)
{
	/*
	 * Mapped, not calloc'd: the caches are tens of MB that only the
	 * tenants' touched cells ever back, and fresh zero pages cost nothing
	 * until touched, where calloc may clear reused heap (glibc) or poison
	 * its shadow (ASan) in full at every create.
	 */
	struct coloc_state *st =
		mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (st == MAP_FAILED)
		return coloc_err_set(err, -ENOMEM, "out of memory for the policy's %zu MB of state",
				     sizeof(*st) >> 20);
	st->flags = *flags;
	st->nr_online = policy_cpuset_count(&cfg->online);
	*state = st;
	return 0;
}

void policy_coloc_engine_destroy(void *state)
{
	munmap(state, sizeof(struct coloc_state));
}

/*
 * The version of layer l at (ci, pos) the flags choose, and its latency; -1
 * when none. Without versions it is the fastest alone at ci, whatever the
 * level: at level 1.0 (pos 0) both choices are then the same version.
 */
static int layer_version(const struct coloc_state *st, const struct policy_model *m, int l, int ci,
			 double pos, uint64_t *ns)
{
	int v;

	if (st->flags.versions || pos <= 0)
		return policy_model_fastest_version(m, l, ci, pos, ns);
	v = policy_model_fastest_version(m, l, ci, 0, ns);
	if (v < 0)
		return v;
	*ns = policy_model_latency(m, l, v, ci, pos);
	/* a table without that version's column at the level: the fastest that has one */
	return *ns ? v : policy_model_fastest_version(m, l, ci, pos, ns);
}

static double layer_share(const struct coloc_tenant *ct, const struct policy_model *m, int l)
{
	uint64_t ns;

	if (ct->cache)
		return ct->cache->share[l];
	if (ct->share_den <= 0)
		return 1.0 / m->nr_layers;
	if (ct->share_ci < 0)
		return (double)m->layer_ops[l] / ct->share_den;
	if (policy_model_fastest_version(m, l, ct->share_ci, 0, &ns) < 0)
		return 0;
	return (double)ns / ct->share_den;
}

/* ct's cache at pos, emptied when the position moved; NULL when the table is not cached. */
static struct coloc_cache *cache_at(struct coloc_tenant *ct, double pos)
{
	struct coloc_cache *c = ct->cache;

	if (c && c->pos != pos) {
		c->gen++;
		c->pos = pos;
	}
	return c;
}

/* Fills cell e of (l, ci) in cache c at pos. */
static void cache_fill(const struct coloc_state *st, const struct coloc_tenant *ct,
		       struct coloc_cache *c, struct coloc_cell *e, int l, int ci, double pos)
{
	e->ver = layer_version(st, ct->model, l, ci, pos, &e->ns);
	e->gen = c->gen;
}

/* layer_version() of ct's model, through its cache. */
static inline int layer_cell(const struct coloc_state *st, struct coloc_tenant *ct, int l, int ci,
			     double pos, uint64_t *ns)
{
	struct coloc_cache *c = cache_at(ct, pos);
	struct coloc_cell *e;

	if (!c)
		return layer_version(st, ct->model, l, ci, pos, ns);
	e = &c->cell[l * ct->model->nr_core_counts + ci];
	if (e->gen != c->gen)
		cache_fill(st, ct, c, e, l, ci, pos);
	*ns = e->ns;
	return e->ver;
}

/* Extends layer l's running minimum (min_ns) in cache c over its first n counts. */
static void cache_row_fill(const struct coloc_state *st, struct coloc_tenant *ct,
			   struct coloc_cache *c, int l, double pos, int n)
{
	struct coloc_cell *e = &c->cell[l * ct->model->nr_core_counts];
	struct coloc_row *row = &c->row[l];

	if (row->gen != c->gen)
		*row = (struct coloc_row){ .gen = c->gen };
	for (int ci = row->filled; ci < n; ci++) {
		uint64_t ns;

		if (layer_cell(st, ct, l, ci, pos, &ns) >= 0 && ns &&
		    (!row->min || ns < row->min)) {
			row->min = ns;
			row->fastest = ci;
		}
		/* NAN compares false with every budget, as "no version" never fits */
		e[ci].min_ns = row->min ? (double)row->min : NAN;
	}
	if (n > row->filled)
		row->filled = n;
}

/*
 * Layer l's cells of cache c with their running minimum (min_ns) set over
 * at least the first n counts: a round reads the table only as far as its
 * comparisons look, which matters when the level, so the generation, moves
 * from round to round.
 */
static inline const struct coloc_cell *cache_row(const struct coloc_state *st,
						 struct coloc_tenant *ct, struct coloc_cache *c,
						 int l, double pos, int n)
{
	if (c->row[l].gen != c->gen || c->row[l].filled < n)
		cache_row_fill(st, ct, c, l, pos, n);
	return &c->cell[l * ct->model->nr_core_counts];
}

/* The shares of layers first.. summed in order (kept per tenant: the same sum, bit for bit). */
static double rest_share(const struct coloc_tenant *ct, const struct policy_model *m, int first)
{
	double rest = 0;

	if (ct->cache)
		return ct->cache->rest[first];
	for (int l = first; l < m->nr_layers; l++)
		rest += layer_share(ct, m, l);
	return rest;
}

/* Index of the fewest cores whose latency of layer l at pos fits budget; the fastest when none. */
static int layer_need(const struct coloc_state *st, struct coloc_tenant *ct, int l, double budget,
		      double pos)
{
	const struct policy_model *m = ct->model;
	struct coloc_cache *c = cache_at(ct, pos);
	uint64_t best_ns = 0;
	int best = 0;

	if (c) {
		/*
		 * The first count whose latency fits is the first whose running
		 * minimum fits, and the running minimum only falls with the count.
		 */
		const struct coloc_cell *e = cache_row(st, ct, c, l, pos, 0), *b = e;
		int n = c->row[l].filled, first_fit;

		if (!n || !(e[n - 1].min_ns <= budget)) {
			/* beyond what is read: one more count at a time, each a table read */
			for (; n < m->nr_core_counts; n++) {
				e = cache_row(st, ct, c, l, pos, n + 1);
				if (e[n].min_ns <= budget)
					return n;
			}
			return c->row[l].fastest;
		}
		/* within it, a lower bound without branches on the comparisons, which do not predict */
		while (n > 1) {
			int half = n / 2;

			b = b[half - 1].min_ns <= budget ? b : b + half;
			n -= half;
		}
		first_fit = (int)(b - e) + !(b->min_ns <= budget);
		return first_fit;
	}
	for (int ci = 0; ci < m->nr_core_counts; ci++) {
		uint64_t ns;

		if (layer_version(st, m, l, ci, pos, &ns) < 0 || !ns)
			continue;
		if ((double)ns <= budget)
			return ci;
		if (!best_ns || ns < best_ns) {
			best_ns = ns;
			best = ci;
		}
	}
	return best;
}

/*
 * The count whose alone latencies share out a tenant's QoS over its layers
 * (coloc-timeshares): the fewest cores on which its whole model, each layer
 * in its fastest version alone, fits qos_ns; the largest count when none
 * does or qos_ns is 0. Shares by ops (VELTAIR's, the baselines') give a
 * layer with few ops and a long time (a depthwise convolution, a pool, an
 * add: ops 0) a budget it cannot meet on the cores the whole model needs,
 * so it becomes a pivot of its own, a block of its own, on more cores than
 * the model needs (simulated 64-core mix, 2 executors a tenant:
 * EfficientNet-B0 in 8.5 blocks a query, 1.4 by alone latency). Not
 * coloc's rule yet: it also lowers avg_C, so the dynamic threshold leaves
 * more spare cores, and side by side it was neither clearly better nor
 * worse (sim/README.md).
 */
static int share_index(const struct policy_model *m, uint64_t qos_ns)
{
	for (int ci = 0; qos_ns && ci < m->nr_core_counts; ci++) {
		double sum = 0;

		for (int l = 0; l < m->nr_layers && sum <= (double)qos_ns; l++) {
			uint64_t ns;

			if (policy_model_fastest_version(m, l, ci, 0, &ns) < 0 || !ns)
				sum = INFINITY;
			else
				sum += (double)ns;
		}
		if (sum <= (double)qos_ns)
			return ci;
	}
	return m->nr_core_counts - 1;
}

static struct coloc_tenant *tenant_state(struct coloc_state *st, const struct policy_input *in,
					 int t)
{
	struct coloc_tenant *ct = &st->t[t];
	const struct policy_tenant *pt = &in->tenants[t];
	const struct policy_model *m = pt->model;
	double sum = 0;

	if (ct->known && ct->uid == pt->uid && ct->model == m)
		return ct;
	*ct = (struct coloc_tenant){ .known = true, .uid = pt->uid, .model = m, .corr = 1.0 };
	ct->share_ci = st->flags.time_shares || !m->layer_ops ?
			       share_index(m, st->flags.time_shares ? pt->qos_ns : 0) :
			       -1;
	for (int l = 0; l < m->nr_layers; l++) {
		uint64_t ns = 0;

		if (ct->share_ci < 0)
			ct->share_den += (double)m->layer_ops[l];
		else if (policy_model_fastest_version(m, l, ct->share_ci, 0, &ns) >= 0)
			ct->share_den += (double)ns;
	}
	if (m->nr_layers <= COLOC_CACHE_LAYERS &&
	    (size_t)m->nr_layers * m->nr_core_counts <= COLOC_CACHE_CELLS) {
		struct coloc_cache *c = &st->cache[t];

		for (int l = 0; l < m->nr_layers; l++)
			c->share[l] = layer_share(ct, m, l);
		for (int l = 0; l < m->nr_layers; l++)
			c->rest[l] = rest_share(ct, m, l);
		/* what it held was another tenant's, or another model's */
		c->gen++;
		c->pos = -1;
		ct->cache = c;
	}
	for (int l = 0; l < m->nr_layers; l++)
		sum += m->core_counts[layer_need(st, ct, l,
						 (double)pt->qos_ns * layer_share(ct, m, l), 0)];
	ct->avg_need = sum / m->nr_layers;
	return ct;
}

/*
 * Fills column ci of cache c: per layer the latency of the layers before it
 * (at the level and alone, in the versions chosen), how many lack a version,
 * and the versions side by side.
 */
static void cache_column(const struct coloc_state *st, struct coloc_tenant *ct,
			 struct coloc_cache *c, int ci, double pos)
{
	const struct policy_model *m = ct->model;
	int nc = m->nr_core_counts, l;
	uint64_t sum = 0, alone = 0;
	uint32_t bad = 0;

	if (c->col[ci] == c->gen)
		return;
	for (l = 0; l < m->nr_layers; l++) {
		uint64_t ns;
		int ver = layer_cell(st, ct, l, ci, pos, &ns);

		c->sum_before[l * nc + ci] = sum;
		c->bad_before[l * nc + ci] = bad;
		c->alone_before[l * nc + ci] = alone;
		c->ver_col[ci * m->nr_layers + l] = (uint8_t)ver;
		if (ver < 0 || !ns) {
			bad++;
		} else {
			sum += ns;
			alone += policy_model_cell(m, l, ver, ci, 0);
		}
	}
	c->sum_before[l * nc + ci] = sum;
	c->bad_before[l * nc + ci] = bad;
	c->alone_before[l * nc + ci] = alone;
	c->col[ci] = c->gen;
}

/*
 * Table latency of layers [first, last) at (ci, pos), versions written to v
 * when non-NULL; 0 when a layer has no version there. With stop > 0 it may
 * return any sum above stop, and leave v unwritten, once the sum passes stop
 * (the caller only compares).
 */
static uint64_t span_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
			int ci, double pos, uint8_t *v, double stop)
{
	struct coloc_cache *c = cache_at(ct, pos);
	uint64_t sum = 0;

	if (c && ci >= 0) {
		/* integer sums: the difference of two running sums is the span's sum exactly */
		int nc = ct->model->nr_core_counts;

		cache_column(st, ct, c, ci, pos);
		if (c->bad_before[last * nc + ci] != c->bad_before[first * nc + ci])
			return 0;
		sum = c->sum_before[last * nc + ci] - c->sum_before[first * nc + ci];
		if (stop > 0 && (double)sum > stop)
			return sum;
		if (v)
			memcpy(v, &c->ver_col[ci * ct->model->nr_layers + first],
			       (size_t)(last - first));
		return sum;
	}
	for (int l = first; l < last && !(stop > 0 && (double)sum > stop); l++) {
		uint64_t ns;
		int ver = layer_cell(st, ct, l, ci, pos, &ns);

		if (ver < 0 || !ns)
			return 0;
		if (v)
			v[l - first] = (uint8_t)ver;
		sum += ns;
	}
	return sum;
}

/*
 * Table latency alone (level column 0) of layers [first, last) on
 * core_counts[ci] in versions v, which span_ns() wrote at (ci, pos).
 */
static uint64_t span_alone_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			      int last, int ci, double pos, const uint8_t *v)
{
	const struct policy_model *m = ct->model;
	struct coloc_cache *c = cache_at(ct, pos);
	uint64_t sum = 0;

	if (c && ci >= 0) {
		int nc = m->nr_core_counts;

		cache_column(st, ct, c, ci, pos);
		/* every layer has its version there, so v holds the column's */
		if (c->bad_before[last * nc + ci] == c->bad_before[first * nc + ci])
			return c->alone_before[last * nc + ci] - c->alone_before[first * nc + ci];
	}
	for (int l = first; l < last; l++)
		sum += policy_model_cell(m, l, v[l - first], ci, 0);
	return sum;
}

/* The slowdown of a core: its own signal, else its domain's, else none (1.0). */
static double core_slowdown(const struct policy_config *cfg, const struct policy_input *in, int c)
{
	if (in->cores && (in->cores[c].live & POLICY_SIG_SLOWDOWN))
		return in->cores[c].slowdown;
	if (in->domains && (in->domains[cfg->llc[c]].live & POLICY_SIG_SLOWDOWN))
		return in->domains[cfg->llc[c]].slowdown;
	return 1.0;
}

struct round {
	struct policy_cpuset free;
	int nr_free; /* cores in free */
	int busy[POLICY_MAX_CPUS]; /* busy cores per LLC domain */
	int agg[POLICY_MAX_CPUS]; /* cores per LLC domain the heaviest aggressor holds */
	double level;
	double thres[POLICY_MAX_TENANTS];
	double cap[POLICY_MAX_TENANTS]; /* the longest predicted time a block may have, ns */
	const struct policy_query *head[POLICY_MAX_TENANTS];
	bool done[POLICY_MAX_TENANTS];
	int in_flight[POLICY_MAX_TENANTS]; /* blocks of the tenant running, or decided this round */
	/*
	 * When sorted, tenant t's queued queries in input order are
	 * st->queued[at[t] .. at[t] + nr[t]): finding a tenant's next query
	 * reads its own queries, not the whole queue, and sees them in the
	 * same order.
	 */
	bool sorted;
	int at[POLICY_MAX_TENANTS], nr[POLICY_MAX_TENANTS];
};

/* The mean slowdown of r's free cores, at least 1.0, in CPU order; counts them in r->nr_free. */
static double free_level(const struct policy_config *cfg, const struct policy_input *in,
			 struct round *r)
{
	double sum = 0;
	int n = 0;

	for (int w = 0; w < CPU_WORDS; w++)
		for (uint64_t bits = r->free.bits[w]; bits; bits &= bits - 1) {
			sum += core_slowdown(cfg, in, w * 64 + __builtin_ctzll(bits));
			n++;
		}
	r->nr_free = n;
	if (!n || sum / n <= 1.0)
		return 1.0;
	return 1.0 + round((sum / n - 1.0) / COLOC_LEVEL_STEP) * COLOC_LEVEL_STEP;
}

/* How much of what was learnt at since is left at now: half every half-life. */
static double kept_since(uint64_t now, uint64_t since, double half_life_ns)
{
	return now <= since ? 1.0 : exp2(-(double)(now - since) / half_life_ns);
}

/* How much of a tenant's learnt prediction is left at now: half every half-life without a block. */
static double corr_kept(const struct coloc_tenant *ct, uint64_t now)
{
	return kept_since(now, ct->corr_ns, COLOC_CORR_HALF_LIFE_NS);
}

/* The entry of block (first, last, ci) in a tenant's cls[], and its key there (never 0). */
static int class_index(int first, int last, int ci, uint64_t *key)
{
	*key = ((uint64_t)first << 42 | (uint64_t)last << 21 | (uint64_t)ci) + 1;
	return (int)((*key * 0x9e3779b97f4a7c15ULL) >> 56) % COLOC_BLOCK_CLASSES;
}

/*
 * Entry i's correction for key as of now, faded towards 1.0; 1.0 when it
 * holds another block or coloc does not predict.
 */
static double class_faded(const struct coloc_state *st, const struct coloc_tenant *ct, int i,
			  uint64_t key, uint64_t now)
{
	if (!st->flags.predict || ct->cls[i].key != key)
		return 1.0;
	return 1.0 +
	       (ct->cls[i].rel - 1.0) * kept_since(now, ct->cls[i].ns, COLOC_CLASS_HALF_LIFE_NS);
}

/*
 * A block's prediction as of now, raw x scale + fixed (raw: its table
 * latency at the level): from the tenant's correction (corr) and per-block
 * cost (fixed) as of now times the block's own correction, or, once the
 * block was measured COLOC_CLASS_MIN_SAMPLES times, its median measured /
 * table; a median above the former fades towards it as the tenant's
 * correction does (half every second without the block measured).
 */
struct block_pred {
	double scale, fixed;
};

static struct block_pred class_pred(const struct coloc_state *st, const struct coloc_tenant *ct,
				    int first, int last, int ci, double corr, double fixed,
				    uint64_t now)
{
	uint64_t key;
	int i = class_index(first, last, ci, &key);
	struct block_pred p = { corr * class_faded(st, ct, i, key, now), fixed };
	double k;

	if (!st->flags.predict || st->flags.ewma_only || ct->cls[i].key != key ||
	    ct->cls[i].nr < COLOC_CLASS_MIN_SAMPLES)
		return p;
	if (ct->cls[i].median <= p.scale)
		return (struct block_pred){ ct->cls[i].median, 0 };
	k = kept_since(now, ct->cls[i].ns, COLOC_CORR_HALF_LIFE_NS);
	return (struct block_pred){ p.scale + (ct->cls[i].median - p.scale) * k,
				    p.fixed * (1 - k) };
}

/* raw predicted by p. */
static double predicted(struct block_pred p, uint64_t raw)
{
	return (double)raw * p.scale + p.fixed;
}

/* The median of a class's ring (nr <= COLOC_CLASS_SAMPLES). */
static double ring_median(const float *ratio, int nr)
{
	float v[COLOC_CLASS_SAMPLES];

	for (int i = 0; i < nr; i++) {
		int j = i;

		for (; j > 0 && v[j - 1] > ratio[i]; j--)
			v[j] = v[j - 1];
		v[j] = ratio[i];
	}
	return nr % 2 ? v[nr / 2] : ((double)v[nr / 2 - 1] + v[nr / 2]) / 2;
}

/* t's correction as of now, faded towards 1.0. */
static double aged_corr(const struct coloc_tenant *ct, uint64_t now)
{
	return 1.0 + (ct->corr - 1.0) * corr_kept(ct, now);
}

/* t's per-block cost as of now, faded towards 0. */
static double aged_fixed(const struct coloc_tenant *ct, uint64_t now)
{
	return ct->fixed_ns * corr_kept(ct, now);
}

/*
 * The factor a plan takes on t's prediction as of now: 1 + its usual
 * relative error (faded towards 1). QoS is a percentile: a block that fits
 * its budget only on the mean misses whenever it runs slow, so cores are
 * chosen, and a query held for more cores, on this; the cap stays on the
 * mean, and dropping (the whole machine late) divides by it: only a query
 * late even when its blocks run fast is given up.
 */
static double aged_margin(const struct coloc_tenant *ct, uint64_t now)
{
	return 1.0 + ct->dev * corr_kept(ct, now);
}

/*
 * How hard a tenant presses on what co-runners share, from its own
 * attributed signals: DRAM bandwidth where any running tenant has it live,
 * else LLC misses per second; < 0 when it has no such signal (no PMU).
 */
static double pressure(const struct policy_input *in, int t, bool by_dram)
{
	const struct policy_signal *sig = &in->tenants[t].sig;

	if (by_dram)
		return sig->live & POLICY_SIG_DRAM ? sig->dram_gbps : -1;
	return sig->live & POLICY_SIG_LLC ? sig->llc_misses_per_s : -1;
}

/*
 * The heaviest aggressor: of the tenants running a block, the one with the
 * highest pressure, counted per LLC domain by the cores it holds, so that
 * cores for others come from where it is not (VELTAIR's co-location by
 * interference, per-tenant attribution standing in for its profiling).
 */
static void find_aggressor(const struct policy_config *cfg, const struct policy_input *in,
			   struct round *r)
{
	bool by_dram = false;
	double most = 0;
	int aggressor = -1;

	for (int i = 0; i < in->nr_running; i++)
		by_dram |= in->tenants[in->running[i].tenant].sig.live & POLICY_SIG_DRAM;
	for (int i = 0; i < in->nr_running; i++) {
		double p = pressure(in, in->running[i].tenant, by_dram);

		if (p > most) {
			most = p;
			aggressor = in->running[i].tenant;
		}
	}
	for (int i = 0; i < in->nr_running && aggressor >= 0; i++) {
		const struct policy_cpuset *c = &in->running[i].cores;

		if (in->running[i].tenant != aggressor)
			continue;
		for (int w = 0; w < CPU_WORDS; w++)
			for (uint64_t bits = c->bits[w]; bits; bits &= bits - 1)
				r->agg[cfg->llc[w * 64 + __builtin_ctzll(bits)]]++;
	}
}

/* What a round starts from: busy cores per domain, the level, the tenants running, the queue sorted. */
static void round_init(struct coloc_state *st, const struct policy_config *cfg,
		       const struct policy_input *in, struct round *r)
{
	int fill[POLICY_MAX_TENANTS];

	for (int w = 0; w < CPU_WORDS; w++)
		for (uint64_t bits = cfg->online.bits[w] & ~r->free.bits[w]; bits; bits &= bits - 1)
			r->busy[cfg->llc[w * 64 + __builtin_ctzll(bits)]]++;
	find_aggressor(cfg, in, r);
	r->level = free_level(cfg, in, r);
	for (int i = 0; i < in->nr_running; i++)
		r->in_flight[in->running[i].tenant]++;
	r->sorted = in->nr_queries <= COLOC_MAX_QUEUED;
	if (!r->sorted)
		return;
	for (int i = 0; i < in->nr_queries; i++)
		if (!in->queries[i].in_flight)
			r->nr[in->queries[i].tenant]++;
	for (int t = 0; t < in->nr_tenants; t++) {
		r->at[t] = t ? r->at[t - 1] + r->nr[t - 1] : 0;
		fill[t] = r->at[t];
	}
	for (int i = 0; i < in->nr_queries; i++)
		if (!in->queries[i].in_flight)
			st->queued[fill[in->queries[i].tenant]++] = &in->queries[i];
}

/*
 * Whether LLC domain d is a better place than best for new cores: fewer of
 * the aggressor's cores, then fewer busy cores, then the lower slowdown.
 * (The aggressor runs a block, so it is never the one asking: a tenant
 * runs one block at a time.)
 */
static bool domain_better(const struct round *r, int d, double slow, int best, double best_slow)
{
	if (best < 0)
		return true;
	if (r->agg[d] != r->agg[best])
		return r->agg[d] < r->agg[best];
	if (r->busy[d] != r->busy[best])
		return r->busy[d] < r->busy[best];
	return slow < best_slow;
}

/* Grants n cores from r->free, best LLC domains first (domain_better). */
static void grant_cores(const struct policy_config *cfg, const struct policy_input *in,
			struct round *r, int n, struct policy_cpuset *cores)
{
	policy_cpuset_zero(cores);
	while (n > 0) {
		int best = -1, prev = -1;
		double best_slow = 0;

		for (int w = 0; w < CPU_WORDS; w++)
			for (uint64_t bits = r->free.bits[w]; bits; bits &= bits - 1) {
				int d = cfg->llc[w * 64 + __builtin_ctzll(bits)];
				double slow;

				/* the next core of the domain just compared compares the same */
				if (d == prev)
					continue;
				prev = d;
				slow = in->domains && (in->domains[d].live & POLICY_SIG_SLOWDOWN) ?
					       in->domains[d].slowdown :
					       1.0;
				if (domain_better(r, d, slow, best, best_slow)) {
					best = d;
					best_slow = slow;
				}
			}
		for (int w = 0; w < CPU_WORDS && n > 0; w++)
			for (uint64_t bits = r->free.bits[w]; bits && n > 0; bits &= bits - 1) {
				int c = w * 64 + __builtin_ctzll(bits);

				if (cfg->llc[c] != best)
					continue;
				policy_cpuset_set(cores, c);
				policy_cpuset_clear(&r->free, c);
				r->nr_free--;
				r->busy[best]++;
				n--;
			}
	}
}

static bool before(const struct coloc_state *st, const struct policy_query *a,
		   const struct policy_query *b)
{
	uint64_t ka = st->flags.headroom ? a->deadline_ns : a->arrival_ns;
	uint64_t kb = st->flags.headroom ? b->deadline_ns : b->arrival_ns;

	return ka < kb || (ka == kb && a->id < b->id);
}

/* Tenant t's first queued query in the policy's order after `after` (NULL: from the start). */
static const struct policy_query *next_query(const struct coloc_state *st,
					     const struct policy_input *in, const struct round *r,
					     int t, const struct policy_query *after)
{
	const struct policy_query *best = NULL;
	int n = r->sorted ? r->nr[t] : in->nr_queries;

	for (int i = 0; i < n; i++) {
		const struct policy_query *q =
			r->sorted ? st->queued[r->at[t] + i] : &in->queries[i];

		if (q->tenant != t || q->in_flight || (after && !before(st, after, q)))
			continue;
		if (!best || before(st, q, best))
			best = q;
	}
	return best;
}

/*
 * Whether layer l's core need (layer_need() of its budget b) is below count
 * index n, without searching: the first count that fits is below n exactly
 * when the running minimum at n - 1 fits (it only falls with the count),
 * and when no count fits the need is the fastest. Reads the row only as
 * far as that.
 */
static bool need_below_read(const struct coloc_state *st, struct coloc_tenant *ct,
			    struct coloc_cache *c, int l, double pos, double b, int n)
{
	int nc = ct->model->nr_core_counts;
	const struct coloc_cell *e = cache_row(st, ct, c, l, pos, n);

	if (e[n - 1].min_ns <= b)
		return true;
	/* some count fits when one read already does: then the need is at n or above */
	if (e[c->row[l].filled - 1].min_ns <= b)
		return false;
	e = cache_row(st, ct, c, l, pos, nc);
	return !(e[nc - 1].min_ns <= b) && c->row[l].fastest < n;
}

static inline bool need_below(const struct coloc_state *st, struct coloc_tenant *ct,
			      struct coloc_cache *c, int l, double pos, double b, int n)
{
	const struct coloc_row *row = &c->row[l];
	const struct coloc_cell *e = &c->cell[l * ct->model->nr_core_counts];

	if (n <= 0)
		return false;
	/* what was read this generation answers most layers; the rest reads on */
	if (row->gen == c->gen && row->filled >= n) {
		if (e[n - 1].min_ns <= b)
			return true;
		if (e[row->filled - 1].min_ns <= b)
			return false;
	}
	return need_below_read(st, ct, c, l, pos, b, n);
}

/* The first count index whose count is above limit (a need there makes a pivot); nc when none. */
static int pivot_index(const struct policy_model *m, double limit)
{
	int lo = 0, hi = m->nr_core_counts;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (m->core_counts[mid] > limit)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * The end of q's next block: the next pivot after next_layer, per the flags'
 * unit. Also the block's budget (its layers' budgets summed in layer order)
 * and the least core need among its layers (0 unless blocks are cut).
 */
/*
 * The first layer from first on with work (MACs), or the last layer: the
 * layers before it (a model's input, a pool or add after a block's end)
 * take no time worth a dispatch, so a block never ends with them alone.
 * Cut there by the cap, a model's input made a block of its own: 21 % of
 * Tiny-YOLOv2's queries in colocd paid one more round trip (2.4 ms on the
 * 2-vCPU VM) for a 1.5 us layer.
 */
static int first_with_work(const struct policy_model *m, int first)
{
	while (m->layer_ops && first + 1 < m->nr_layers && !m->layer_ops[first])
		first++;
	return first;
}

static int block_end(const struct coloc_state *st, struct coloc_tenant *ct,
		     const struct policy_model *m, int first, double scale, double thres,
		     double pos, int *min_need, double *budget)
{
	double limit = ct->avg_need + thres;
	struct coloc_cache *c = cache_at(ct, pos);
	int pivot, least, l;
	double sum;

	*min_need = 0;
	*budget = 0;
	if (st->flags.unit != COLOC_UNIT_BLOCK) {
		int last = st->flags.unit == COLOC_UNIT_MODEL ? m->nr_layers : first + 1;

		for (l = first; l < last; l++)
			*budget += scale * layer_share(ct, m, l);
		return last;
	}
	/* layers without work ride with the first one that has some: its need starts the block */
	for (int w = first_with_work(m, first); first < w; first++)
		*budget += scale * layer_share(ct, m, first);
	*budget += scale * layer_share(ct, m, first);
	*min_need = layer_need(st, ct, first, scale * layer_share(ct, m, first), pos);
	/*
	 * A block that starts at a pivot runs on the cores the pivot needs, so
	 * the layers after it that need no more join it: without this, when a
	 * tight headroom lifts every need over avg_C + thres, each layer became
	 * a block of its own (SSD-MobileNet: 2.4 layers a block in colocd),
	 * paying a dispatch each.
	 */
	if (m->core_counts[*min_need] > limit)
		limit = m->core_counts[*min_need];
	if (!c) {
		for (l = first + 1; l < m->nr_layers; l++) {
			double b = scale * layer_share(ct, m, l);
			int need = layer_need(st, ct, l, b, pos);

			if (m->core_counts[need] > limit)
				break;
			*budget += b;
			if (need < *min_need)
				*min_need = need;
		}
		return l;
	}
	/*
	 * A layer is a pivot when its need is at or above the first count over
	 * the limit; it lowers the block's least need when below it. Both are
	 * comparisons on the layer's cached row; a need is searched only when
	 * it is the new least.
	 */
	pivot = pivot_index(m, limit);
	least = *min_need;
	sum = *budget;
	for (l = first + 1; l < m->nr_layers; l++) {
		double b = scale * c->share[l];

		if (!need_below(st, ct, c, l, pos, b, pivot))
			break;
		sum += b;
		if (need_below(st, ct, c, l, pos, b, least))
			least = layer_need(st, ct, l, b, pos);
	}
	*min_need = least;
	*budget = sum;
	return l;
}

/*
 * The rest of the model from first, predicted (with its own correction when
 * that rest ran as one block before): at least one more block; 0 when a
 * layer has no version.
 */
static uint64_t rest_of_model(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			      int ci, double pos, double corr, double fixed, uint64_t now)
{
	uint64_t raw = span_ns(st, ct, first, ct->model->nr_layers, ci, pos, NULL, 0);

	return raw ? (uint64_t)predicted(
			     class_pred(st, ct, first, ct->model->nr_layers, ci, corr, fixed, now),
			     raw) :
		     0;
}

/*
 * What a layer's budget is per unit of share (layer ops / model ops): the
 * tenant's QoS, or with headroom budgets the time q's tenant has for the
 * rest of q's model. That is the tightest (deadline - now) / w over the
 * tenant's queued queries in order, i = 1, 2, ..., w = 1 + (i - 1) / E (its
 * E executors run them one after another, so the i-th waits for its share
 * of the i - 1 before it), spread over the rest of q's work. Only the
 * first COLOC_LOOKAHEAD queries count: each costs a pass over the queue,
 * and a long queue is late anyway.
 */
static double budget_scale(const struct coloc_state *st, const struct policy_input *in,
			   const struct round *r, const struct coloc_tenant *ct,
			   const struct policy_query *q)
{
	const struct policy_model *m = in->tenants[q->tenant].model;
	double rest, head = 0, e = policy_tenant_executors(&in->tenants[q->tenant]);
	int i = 1;

	if (!st->flags.headroom_budget)
		return (double)in->tenants[q->tenant].qos_ns;
	for (const struct policy_query *p = q; p && i <= COLOC_LOOKAHEAD;
	     p = next_query(st, in, r, q->tenant, p), i++) {
		double h = p->deadline_ns > in->now_ns ?
				   (double)(p->deadline_ns - in->now_ns) / (1 + (i - 1) / e) :
				   0;

		if (p == q || h < head)
			head = h;
	}
	rest = rest_share(ct, m, q->next_layer);
	return rest > 0 ? head / rest : 0;
}

/* The error for a rest of model that a layer from first on cannot run on cores. */
static int no_version(struct coloc_err *err, const struct policy_query *q, int first, int cores)
{
	return coloc_err_set(err, -EINVAL,
			     "tenant %d: a layer from %d on has no version at %d cores", q->tenant,
			     first, cores);
}

/* Decides q's next block, or drops it, or waits; an enum policy_served. */
static int serve(struct coloc_state *st, const struct policy_config *cfg,
		 const struct policy_input *in, struct round *r, const struct policy_query *q,
		 struct policy_output *out, struct coloc_err *err)
{
	const struct policy_tenant *pt = &in->tenants[q->tenant];
	const struct policy_model *m = pt->model;
	struct coloc_tenant *ct = &st->t[q->tenant];
	double level = st->flags.use_level ? r->level : 1.0;
	double pos = policy_model_level_pos(m, level);
	double corr = st->flags.predict ? aged_corr(ct, in->now_ns) : 1.0;
	double fixed = st->flags.predict ? aged_fixed(ct, in->now_ns) : 0;
	double margin = st->flags.predict ? aged_margin(ct, in->now_ns) : 1.0;
	int max_count = r->nr_free;
	int max_ci = policy_model_core_index(m, max_count);
	int first = q->next_layer, lead = first_with_work(m, first), last, ci;
	double budget, scale;
	struct block_pred bp;
	int min_need;
	uint64_t raw_ns = 0;
	struct policy_decision *d;
	uint8_t *versions;

	if (cfg->late == POLICY_LATE_DROP && in->now_ns >= q->deadline_ns)
		return policy_append_drop(out, q, POLICY_DROP_DEADLINE_PASSED, 0);
	if (max_ci < 0)
		return POLICY_WAIT;
	/*
	 * The rest of the model, priced only to drop or hold it (not when late
	 * queries are served): late even on the whole machine, dropped; late
	 * on the cores free now but not on the whole machine, it waits for
	 * cores, and less urgent queries may use the free ones meanwhile.
	 */
	if (cfg->late == POLICY_LATE_DROP) {
		int all_ci = policy_model_core_index(m, st->nr_online);
		uint64_t rest_ns =
			rest_of_model(st, ct, first, all_ci, pos, corr, fixed, in->now_ns);

		if (!rest_ns)
			return no_version(err, q, first, m->core_counts[all_ci]);
		if ((double)in->now_ns + (double)rest_ns / margin > (double)q->deadline_ns)
			return policy_append_drop(out, q, POLICY_DROP_CANNOT_MEET, rest_ns);
		if (max_ci < all_ci) {
			rest_ns =
				rest_of_model(st, ct, first, max_ci, pos, corr, fixed, in->now_ns);
			if (!rest_ns)
				return no_version(err, q, first, m->core_counts[max_ci]);
			if ((double)in->now_ns + (double)rest_ns * margin > (double)q->deadline_ns)
				return POLICY_WAIT;
		}
	}

	scale = budget_scale(st, in, r, ct, q);
	last = block_end(st, ct, m, first, scale, r->thres[q->tenant], pos, &min_need, &budget);
	if (out->nr_decisions >= out->max_decisions ||
	    out->nr_versions + (last - first) > out->max_versions)
		return POLICY_OUT_FULL;
	/*
	 * The fewest cores whose block latency fits its budget, else the
	 * fastest that is free. Each try writes its versions into the pool and
	 * stops summing once past the budget, so the fitting try leaves them.
	 * Below every layer's own need each layer is over its budget, so the
	 * block is too: the search starts at the least need among its layers.
	 */
	versions = &out->versions[out->nr_versions];
	ci = -1;
	for (int c = min_need; c <= max_ci && budget > fixed * margin; c++) {
		bp = class_pred(st, ct, first, last, c, corr, fixed, in->now_ns);
		if (budget / margin <= bp.fixed)
			continue;
		raw_ns = span_ns(st, ct, first, last, c, pos, versions,
				 (budget / margin - bp.fixed) / bp.scale);
		if (raw_ns && predicted(bp, raw_ns) * margin <= budget) {
			ci = c;
			break;
		}
	}
	if (ci < 0) {
		uint64_t best_ns = 0;

		for (int c = 0; c <= max_ci; c++) {
			uint64_t ns = span_ns(st, ct, first, last, c, pos, NULL, 0);

			if (ns && (!best_ns || ns < best_ns)) {
				best_ns = ns;
				ci = c;
			}
		}
		raw_ns = span_ns(st, ct, first, last, ci, pos, versions, 0);
	}
	/*
	 * Cores nobody needs are not left idle: up to avg_C + thres (the
	 * model's fair share under the current load), the block takes the
	 * largest count there is when that runs it faster.
	 */
	if (st->flags.use_spare) {
		double limit = ct->avg_need + r->thres[q->tenant];
		int ci_spare =
			policy_model_core_index(m, limit < max_count ? (int)limit : max_count);

		if (ci_spare > ci) {
			uint64_t ns = span_ns(st, ct, first, last, ci_spare, pos, NULL, 0);

			if (ns && ns < raw_ns) {
				ci = ci_spare;
				raw_ns = span_ns(st, ct, first, last, ci, pos, versions, 0);
			}
		}
	}
	/*
	 * The cap bounds how long the block holds its cores (a block is not
	 * preempted, and another tenant's query may arrive behind it). It is
	 * checked on the block's predicted time, not its budget: headroom
	 * scaling makes the budget of a query with a distant deadline far
	 * larger than its time, and capping budgets cut such queries into
	 * blocks of one layer (SSD-MobileNet: 2.5 layers a block in colocd).
	 * The longest prefix within the cap stays, at least one layer with work.
	 */
	bp = class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	if (last - lead > 1 && predicted(bp, raw_ns) > r->cap[q->tenant]) {
		int lo = lead + 1, hi = last - 1;

		while (lo < hi) {
			int mid = lo + (hi - lo + 1) / 2;

			if (predicted(class_pred(st, ct, first, mid, ci, corr, fixed, in->now_ns),
				      span_ns(st, ct, first, mid, ci, pos, NULL, 0)) <=
			    r->cap[q->tenant])
				lo = mid;
			else
				hi = mid - 1;
		}
		last = lo;
		raw_ns = span_ns(st, ct, first, last, ci, pos, versions, 0);
		bp = class_pred(st, ct, first, last, ci, corr, fixed, in->now_ns);
	}
	out->nr_versions += last - first;
	d = &out->decisions[out->nr_decisions++];
	*d = (struct policy_decision){
		.query_id = q->id,
		.tenant = q->tenant,
		.first_layer = first,
		.last_layer = last,
		.versions = versions,
		.nr_cores = m->core_counts[ci],
		.decided_ns = in->now_ns,
		.level = level,
		.predicted_ns = (uint64_t)predicted(bp, raw_ns),
	};
	d->alone_ns = span_alone_ns(st, ct, first, last, ci, pos, versions);
	grant_cores(cfg, in, r, d->nr_cores, &d->cores);
	return POLICY_SERVED;
}

/*
 * Tenant t's slack: its QoS minus its whole model predicted alone on every
 * core at the round's level, at least a tenth of its QoS. A query of t that
 * arrives behind another tenant's block waits for it, and meets its QoS only
 * if the wait fits in this.
 */
static double solo_slack(struct coloc_state *st, const struct policy_input *in,
			 const struct round *r, int t)
{
	const struct policy_tenant *pt = &in->tenants[t];
	const struct policy_model *m = pt->model;
	struct coloc_tenant *ct = tenant_state(st, in, t);
	double pos = policy_model_level_pos(m, st->flags.use_level ? r->level : 1.0);
	int ci = policy_model_core_index(m, st->nr_online);
	uint64_t raw = ci < 0 ? 0 : span_ns(st, ct, 0, m->nr_layers, ci, pos, NULL, 0);
	double qos = (double)pt->qos_ns, solo = (double)raw;

	if (st->flags.predict)
		solo = predicted(class_pred(st, ct, 0, m->nr_layers, ci, aged_corr(ct, in->now_ns),
					    aged_fixed(ct, in->now_ns), in->now_ns),
				 raw);
	return fmax(qos - solo, qos / 10);
}

/*
 * Each tenant's block cap: block_cap x the least slack among the other
 * tenants, queued or not (a query may arrive behind the block any time);
 * none when it is the only tenant or the flag is off.
 */
static void block_caps(struct coloc_state *st, const struct policy_input *in, struct round *r)
{
	double min1 = INFINITY, min2 = INFINITY;
	int t1 = -1;

	for (int t = 0; t < in->nr_tenants && st->flags.block_cap > 0; t++) {
		double slack;

		if (!in->tenants[t].model)
			continue;
		slack = solo_slack(st, in, r, t);
		if (slack < min1) {
			min2 = min1;
			min1 = slack;
			t1 = t;
		} else if (slack < min2) {
			min2 = slack;
		}
	}
	for (int t = 0; t < in->nr_tenants; t++)
		r->cap[t] = st->flags.block_cap > 0 ?
				    st->flags.block_cap * (t == t1 ? min2 : min1) :
				    INFINITY;
}

int policy_coloc_engine_decide(void *state, const struct policy_config *cfg,
			       const struct policy_input *in, struct policy_output *out,
			       struct coloc_err *err)
{
	struct coloc_state *st = state;
	struct round r = { .free = *in->free };
	double sum_avg = 0;

	round_init(st, cfg, in, &r);
	for (int t = 0; t < in->nr_tenants; t++) {
		r.done[t] = true;
		if (!in->tenants[t].model)
			continue;
		if (r.in_flight[t] < policy_tenant_executors(&in->tenants[t])) {
			r.head[t] = next_query(st, in, &r, t, NULL);
			r.done[t] = !r.head[t];
		}
		if (!r.done[t] || r.in_flight[t])
			sum_avg += tenant_state(st, in, t)->avg_need;
	}
	block_caps(st, in, &r);
	for (int t = 0; t < in->nr_tenants; t++)
		if (!r.done[t])
			r.thres[t] = st->flags.dynamic_thres ?
					     policy_coloc_threshold(st->nr_online, sum_avg,
								    st->t[t].avg_need) :
					     st->flags.fixed_thres;
	for (;;) {
		int t = -1, ret;

		for (int i = 0; i < in->nr_tenants; i++)
			if (!r.done[i] && (t < 0 || before(st, r.head[i], r.head[t])))
				t = i;
		if (t < 0)
			return 0;
		ret = serve(st, cfg, in, &r, r.head[t], out, err);
		if (ret < 0)
			return ret;
		if (ret == POLICY_OUT_FULL)
			return 0;
		/* a tenant with an executor left serves its next query in turn */
		if (ret == POLICY_DROPPED ||
		    (ret == POLICY_SERVED &&
		     ++r.in_flight[t] < policy_tenant_executors(&in->tenants[t]))) {
			r.head[t] = next_query(st, in, &r, t, r.head[t]);
			r.done[t] = !r.head[t];
		} else {
			r.done[t] = true;
		}
	}
}

void policy_coloc_engine_block_done(void *state, const struct policy_decision *d,
				    uint64_t measured_ns)
{
	struct coloc_state *st = state;
	struct coloc_tenant *ct;
	const struct policy_model *m;
	int ci;
	uint64_t raw;

	if (d->tenant < 0 || d->tenant >= POLICY_MAX_TENANTS)
		return;
	ct = &st->t[d->tenant];
	m = ct->model;
	if (!ct->known || !m || d->last_layer > m->nr_layers || !measured_ns)
		return;
	ci = policy_model_core_index(m, d->nr_cores);
	if (ci < 0)
		return;
	raw = 0;
	for (int l = d->first_layer; l < d->last_layer; l++)
		raw += policy_model_latency(m, l, d->versions[l - d->first_layer], ci,
					    policy_model_level_pos(m, d->level));
	if (raw) {
		uint64_t end_ns = d->decided_ns + measured_ns;
		double m_ns = (double)measured_ns, w = raw / (raw + COLOC_SMALL_BLOCK_NS);
		double corr = aged_corr(ct, end_ns), fixed = aged_fixed(ct, end_ns);
		uint64_t key;
		int i = class_index(d->first_layer, d->last_layer, ci, &key);
		double rel = class_faded(st, ct, i, key, end_ns);
		double p = predicted(
			class_pred(st, ct, d->first_layer, d->last_layer, ci, corr, fixed, end_ns),
			raw);
		/* the ratio of what is not the block's cost; never below a tenth of the whole */
		double x = fmax(m_ns - fixed, m_ns / 10) / (double)raw;

		ct->dev = (1 - COLOC_ALPHA * w) * ct->dev * corr_kept(ct, end_ns) +
			  COLOC_ALPHA * w * fabs(m_ns - p) / p;

		/* the tenant's correction learns what the block's own leaves, and back */
		corr = (1 - COLOC_ALPHA * w) * corr + COLOC_ALPHA * w * x / rel;
		/*
		 * signed, then floored: the leftover is noise around the true cost,
		 * and an average of its positive part alone is biased upwards (in
		 * replays of a Zen 5 run's logs it over-predicted blocks under 1 ms
		 * by 1.4x their median: block MAPE 32.9 %, signed 28.3 %)
		 */
		fixed = fmax(0, (1 - COLOC_ALPHA * (1 - w)) * fixed +
					COLOC_ALPHA * (1 - w) * (m_ns - corr * rel * (double)raw));
		/* from its value as of now: a new entry at 1.0, an old one faded */
		if (ct->cls[i].key != key) {
			ct->cls[i].nr = 0;
			ct->cls[i].next = 0;
		}
		ct->cls[i].key = key;
		ct->cls[i].rel = (1 - COLOC_ALPHA * w) * rel + COLOC_ALPHA * w * x / corr;
		ct->cls[i].ns = end_ns;
		ct->cls[i].ratio[ct->cls[i].next] = (float)(m_ns / (double)raw);
		ct->cls[i].next = (ct->cls[i].next + 1) % COLOC_CLASS_SAMPLES;
		if (ct->cls[i].nr < COLOC_CLASS_SAMPLES)
			ct->cls[i].nr++;
		ct->cls[i].median = ring_median(ct->cls[i].ratio, ct->cls[i].nr);
		ct->corr = corr;
		ct->fixed_ns = fixed;
		ct->corr_ns = end_ns;
	}
}

COLOC_ENTRY(policy_coloc, "coloc",
	    "VELTAIR's layer blocks and versions by interference level, Abacus's prediction "
	    "and headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true);
COLOC_ENTRY(policy_coloc_noversions, "coloc-noversions",
	    "coloc with one fixed version per layer (its fastest alone)", .use_level = true,
	    .headroom_budget = true, .use_spare = true, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .predict = true, .headroom = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noblocks, "coloc-noblocks",
	    "coloc with the whole remaining model as one block (model-wise inside coloc)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .unit = COLOC_UNIT_MODEL, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_fixedthres, "coloc-fixedthres",
	    "coloc with a fixed pivot threshold of 0 instead of the dynamic one", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .unit = COLOC_UNIT_BLOCK,
	    .fixed_thres = 0, .predict = true, .headroom = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_noprediction, "coloc-noprediction",
	    "coloc without the online correction of predicted latencies", .use_level = true,
	    .versions = true, .headroom_budget = true, .use_spare = true, .unit = COLOC_UNIT_BLOCK,
	    .dynamic_thres = true, .headroom = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_nocap, "coloc-nocap",
	    "coloc without the cap on a block's length (half the other tenants' least slack)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_fcfs, "coloc-fcfs", "coloc in arrival order instead of headroom order",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .block_cap = 0.5);
COLOC_ENTRY(policy_coloc_ewma, "coloc-ewma",
	    "coloc predicting every block from the EWMAs alone, never from its own median",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true, .ewma_only = true);
COLOC_ENTRY(policy_coloc_nospare, "coloc-nospare",
	    "coloc without spare cores: each block on the fewest cores that fit its budget",
	    .use_level = true, .versions = true, .headroom_budget = true, .block_cap = 0.5,
	    .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true, .headroom = true);
COLOC_ENTRY(policy_coloc_timeshares, "coloc-timeshares",
	    "coloc sharing each query's QoS over its layers by their alone latency on the "
	    "fewest cores where the model fits, instead of by their ops (VELTAIR's rule)",
	    .use_level = true, .versions = true, .headroom_budget = true, .use_spare = true,
	    .block_cap = 0.5, .unit = COLOC_UNIT_BLOCK, .dynamic_thres = true, .predict = true,
	    .headroom = true, .time_shares = true);
