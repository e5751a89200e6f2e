/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the coloc engine: its state and the functions its files share.
 * coloc.c decides a round (each query in turn: served, held, dropped or
 * demoted); coloc_block.c shapes a query's next block (where it ends, its
 * budget, its spare cores); coloc_caps.c works out what a block owes the
 * other tenants (the cap, the latest starts of those waiting);
 * coloc_table.c reads a tenant's latency table through its cache (layer
 * versions, needs, shares, span latencies); coloc_predict.c learns the
 * prediction from measured blocks; coloc_round.c is a round's view of the
 * cores (level, aggressor, LLC domains) and of the queue; coloc_entries.c
 * names the variants (flag sets). The algorithm and why each rule is
 * there: docs/design/coloc-policy.md.
 */
#ifndef COLOC_POLICY_COLOC_INTERNAL_H
#define COLOC_POLICY_COLOC_INTERNAL_H

#include <math.h>
#include "policy_impl.h"

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
/*
 * A block whose class holds fewer than COLOC_CLASS_MIN_SAMPLES is predicted
 * as one of its core count's blocks (the correction and median of all the
 * tenant's blocks on that count, any layers): a plan cuts a model at new
 * layers often (a third of ResNet-50's blocks in the demo are of a class
 * seen under five times), and the tenant's correction, learnt on all its
 * core counts, misses the one at hand. Unless, measured on the tenant's
 * blocks of classes not yet known, the tenant's correction has been the
 * nearer (coloc_tenant.unseen_err_own). Core indices share an entry modulo
 * this. docs/design/coloc-policy.md, "A block never seen".
 */
#define COLOC_CORE_GROUPS 16
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
/*
 * A tenant with no query queued or in flight still weighs in the others'
 * block caps for this many times its QoS after its last block ended: a
 * tenant that sends no query cuts no one's blocks, and one that keeps the
 * cut runs a block at least every COLOC_ACTIVE_QOS x its QoS.
 * docs/design/coloc-policy.md, "Whose slack caps a block".
 */
#define COLOC_ACTIVE_QOS 10
/*
 * A tenant weighs in the others' block caps only when its solo time in its
 * table (the whole model alone on every core) leaves it at least this
 * share of its QoS as slack (QoS >= 1.11x solo): a tighter one cannot
 * meet its QoS beside anyone, and its cap would only cut the others'
 * queries. And no tenant's cap is below its own solo time over
 * COLOC_CAP_FLOOR_DIV: whatever the others' QoS, a query runs as a bounded
 * number of blocks. docs/design/coloc-policy.md, "Whose slack caps a
 * block".
 */
#define COLOC_CAP_MIN_SLACK 0.1
#define COLOC_CAP_FLOOR_DIV 8
/*
 * A tenant runs alone on the socket (policy/coloc_alone.c) only while its
 * fastest time alone is within this share of the least slack its block
 * cap weighs: a query of another tenant arriving behind the alone block
 * waits for it whole. Set between the ratios of the 64-core mixes it was
 * measured on (0.54 gains, 0.66 and 0.75 lose): docs/design/coloc-policy.md,
 * "Alone on the socket".
 */
#define COLOC_ALONE_SLACK 0.6
/*
 * coloc-wide takes every free core for a block whose time x cores there is
 * within 1 / this of its time x cores on the cores it needs: a second core
 * that buys little time stays free for the next query
 * (docs/design/coloc-policy.md, "Every free core that pays").
 */
#define COLOC_SPARE_EFFICIENCY 0.8
/*
 * A block that runs for speed ends before a layer that runs this much
 * slower on the block's count than on its own fastest (once the time lost
 * passes a block's cost): a smaller difference is within a profile's noise
 * (docs/design/coloc-policy.md, "Each layer on its own count").
 */
#define COLOC_COUNT_SLACK 0.05
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

/*
 * A block class's learnt prediction (COLOC_BLOCK_CLASSES), or a core
 * count's (COLOC_CORE_GROUPS): the blocks it holds measured.
 */
struct coloc_class {
	uint64_t key; /* class_index()'s key (a group's: its core index + 1), 0: empty */
	double rel; /* measured / (table x corr), EWMA */
	uint64_t ns; /* when it was last measured (the block's end) */
	float ratio[COLOC_CLASS_SAMPLES]; /* its last measured / table, a ring */
	int nr, next; /* samples in the ring, where the next one goes */
	double median; /* of the ring, once it holds COLOC_CLASS_MIN_SAMPLES */
};

struct coloc_tenant {
	bool known;
	uint64_t uid;
	const struct policy_costs *costs;
	double avg_need; /* avg_C: mean core need alone */
	double alone_ns; /* may run alone on the socket: its fastest time alone, else 0 */
	/* a layer's share of the QoS is its alone latency at this count's index, -1: its ops */
	int share_ci;
	double share_den; /* total ops, or total alone latency at share_ci */
	double corr; /* measured / table latency, EWMA */
	double fixed_ns; /* a block's cost beyond its table latency, EWMA */
	double dev; /* relative error of its blocks' predictions, |measured - predicted| / predicted, EWMA */
	uint64_t corr_ns; /* when corr and fixed_ns were last measured (a block's end) */
	bool ran; /* a block of it was measured: last_end_ns is the latest one's end */
	uint64_t last_end_ns;
	struct coloc_cache *cache; /* NULL: the table is too large to cache */
	struct coloc_class cls[COLOC_BLOCK_CLASSES];
	/* per core count: every block on it, what a class not yet known predicts from */
	struct coloc_class grp[COLOC_CORE_GROUPS];
	/*
	 * The relative error (EWMA) of the two predictions of a block whose
	 * class was not yet known, its core count's and its own correction's,
	 * each blocks of such classes measured: the lesser's predicts the next.
	 */
	double unseen_err_group, unseen_err_own;
};

struct coloc_state {
	struct coloc_flags flags;
	int nr_online;
	/*
	 * The slowdown each core a block takes adds to every other block of
	 * its socket: (cfg->socket_slowdown - 1) / (cores a socket - 1); 0
	 * when not known (docs/design/coloc-policy.md, "The socket's price").
	 */
	double socket_per_core;
	/* the socket-wide slowdown where the machine is one socket of cores, else 0 */
	double socket_full;
	struct coloc_tenant t[POLICY_MAX_TENANTS];
	struct coloc_cache cache[POLICY_MAX_TENANTS];
	const struct policy_query
		*queued[COLOC_MAX_QUEUED]; /* a round's, by tenant (struct round) */
};

struct round {
	struct policy_cpuset free;
	int nr_free; /* cores in free */
	int nr_blocks; /* blocks running, and decided this round (coloc_grant_cores) */
	int busy[POLICY_MAX_CPUS]; /* busy cores per LLC domain */
	int agg[POLICY_MAX_CPUS]; /* cores per LLC domain the heaviest aggressor holds */
	double slowdown; /* the free cores' interference level (1.0 = alone) */
	double thres[POLICY_MAX_TENANTS];
	double cap[POLICY_MAX_TENANTS]; /* the longest predicted time a block may have, ns */
	double cap_late; /* ... a demoted (late) query's block, of any tenant */
	double others_slack[POLICY_MAX_TENANTS]; /* the least slack its cap weighs, ns */
	double cap_floor[POLICY_MAX_TENANTS]; /* no cap below: solo / COLOC_CAP_FLOOR_DIV, ns */
	double slack[POLICY_MAX_TENANTS]; /* QoS - the whole model on every core, ns (solo_slack) */
	/* a query queued or in flight, or a block ended within COLOC_ACTIVE_QOS x its QoS */
	bool active[POLICY_MAX_TENANTS];
	/*
	 * The latest start of each tenant's head query, ns (its deadline less
	 * its rest on every core, predicted, times its margin): a block of
	 * another tenant that leaves it too few cores must end by then
	 * (docs/design/coloc-policy.md, "No wait past the slack").
	 */
	double latest[POLICY_MAX_TENANTS];
	/*
	 * The fewest cores on which the rest of each tenant's head query,
	 * started now, is predicted to end by its deadline: a block that
	 * leaves that many free does not keep it waiting.
	 */
	int need[POLICY_MAX_TENANTS];
	/*
	 * The fewest cores on which each tenant's whole model, predicted times
	 * its margin, meets its QoS (INT_MAX: none): what a query of it arriving
	 * now needs to start at once.
	 */
	int fresh[POLICY_MAX_TENANTS];
	bool waiting[POLICY_MAX_TENANTS]; /* its head waits for cores: not served, or held */
	bool deferred[POLICY_MAX_TENANTS]; /* gave way to another's waiting head this round */
	int nr_tables; /* tenants with a table: who else a block's cores may keep waiting */
	/* runs alone this round (coloc_alone_round()) */
	bool alone[POLICY_MAX_TENANTS];
	/* a tenant that runs alone holds the socket, or waits for it (coloc_socket_closed()) */
	bool socket_kept;
	const struct policy_query *head[POLICY_MAX_TENANTS];
	/* each tenant's earliest query demoted this round (late), served after the others */
	const struct policy_query *late[POLICY_MAX_TENANTS];
	/* how long the queries on time can wait for a late one (late.c; zeroed: not known) */
	struct policy_late_room late_room;
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

/* coloc_table.c: a tenant's table, through its cache */
struct coloc_tenant *coloc_tenant_state(struct coloc_state *st, const struct policy_input *in,
					int t);
double coloc_layer_share(const struct coloc_tenant *ct, const struct policy_costs *m, int l);
double coloc_rest_share(const struct coloc_tenant *ct, const struct policy_costs *m, int first);
int coloc_layer_need(const struct coloc_state *st, struct coloc_tenant *ct, int l, double budget,
		     double pos);
uint64_t coloc_span_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
		       int ci, double pos, uint8_t *v, double stop);
uint64_t coloc_span_alone_ns(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			     int last, int ci, double pos, const uint8_t *v);
int coloc_fastest_index(const struct coloc_state *st, struct coloc_tenant *ct, int first, int last,
			int max_ci, double pos);
bool coloc_need_below_read(const struct coloc_state *st, struct coloc_tenant *ct,
			   struct coloc_cache *c, int l, double pos, double b, int n);

/* coloc_predict.c: the prediction learnt from measured blocks */
struct block_pred coloc_class_pred(const struct coloc_state *st, const struct coloc_tenant *ct,
				   int first, int last, int ci, double corr, double fixed,
				   uint64_t now);
double coloc_aged_corr(const struct coloc_tenant *ct, uint64_t now);
double coloc_aged_fixed(const struct coloc_tenant *ct, uint64_t now);
double coloc_aged_margin(const struct coloc_tenant *ct, uint64_t now);
uint64_t coloc_rest_of_model(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			     int ci, double pos, double corr, double fixed, uint64_t now);
uint64_t coloc_rest_at_best(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			    int ci, double pos, double corr, double fixed, uint64_t now);
uint64_t coloc_table_rest(const struct coloc_state *st, struct coloc_tenant *ct, int first, int ci,
			  double pos);

/* coloc_block.c: a block's extent and cores */
int coloc_first_with_work(const struct policy_costs *m, int first);
int coloc_block_end(const struct coloc_state *st, struct coloc_tenant *ct,
		    const struct policy_costs *m, int first, double scale, double thres, double pos,
		    int *min_need, double *budget);
double coloc_budget_scale(const struct coloc_state *st, const struct policy_input *in,
			  const struct round *r, const struct coloc_tenant *ct,
			  const struct policy_query *q);
int coloc_spare_index(const struct coloc_state *st, const struct policy_input *in,
		      const struct round *r, struct coloc_tenant *ct, const struct policy_query *q,
		      int first, int last, int ci, double pos, double cold);
int coloc_fastest_block(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			int last, int hi, double pos, double fixed, int *ci);
int coloc_whole_rest_index(const struct coloc_state *st, const struct policy_input *in,
			   const struct round *r, const struct policy_output *out,
			   struct coloc_tenant *ct, const struct policy_query *q, int ci,
			   double pos, double cold, double budget, double tcap, double corr,
			   double fixed, double margin);

/* coloc_caps.c: what a block owes the other tenants */
double coloc_wait_bound(const struct policy_input *in, const struct round *r, int t, int left);
bool coloc_leaves_enough(const struct policy_input *in, const struct round *r,
			 const struct policy_output *out, int t, int left);
void coloc_block_caps(struct coloc_state *st, const struct policy_input *in, struct round *r);
double coloc_latest_start(struct coloc_state *st, const struct policy_input *in,
			  const struct round *r, const struct policy_query *q, int *need);

/* coloc_alone.c: tenants that run alone on the socket */
double coloc_alone_tenant(const struct coloc_state *st, const struct policy_costs *m);
void coloc_alone_round(struct coloc_state *st, const struct policy_input *in, struct round *r);
const struct policy_query *coloc_alone_head(const struct coloc_state *st,
					    const struct policy_input *in, const struct round *r);
int coloc_alone_block(struct coloc_state *st, const struct policy_input *in, struct round *r,
		      const struct policy_query *q, const struct policy_output *out, int max_ci,
		      double pos, int *ci, struct coloc_err *err);
bool coloc_socket_closed(const struct round *r, const struct policy_query *q);

/* coloc_round.c: a round's cores and queue */
void coloc_round_init(struct coloc_state *st, const struct policy_config *cfg,
		      const struct policy_input *in, struct round *r);
void coloc_grant_cores(const struct policy_config *cfg, const struct policy_input *in,
		       struct round *r, int n, struct policy_cpuset *cores);
bool coloc_before(const struct coloc_state *st, const struct policy_query *a,
		  const struct policy_query *b);
const struct policy_query *coloc_next_query(const struct coloc_state *st,
					    const struct policy_input *in, const struct round *r,
					    int t, const struct policy_query *after);

/* ct's cache at pos, emptied when the position moved; NULL when the table is not cached. */
static inline struct coloc_cache *coloc_cache_at(struct coloc_tenant *ct, double pos)
{
	struct coloc_cache *c = ct->cache;

	if (c && c->pos != pos) {
		c->gen++;
		c->pos = pos;
	}
	return c;
}

/* raw predicted by p. */
static inline double coloc_predicted(struct block_pred p, uint64_t raw)
{
	return (double)raw * p.scale + p.fixed;
}

static inline bool coloc_need_below(const struct coloc_state *st, struct coloc_tenant *ct,
				    struct coloc_cache *c, int l, double pos, double b, int n)
{
	const struct coloc_row *row = &c->row[l];
	const struct coloc_cell *e = &c->cell[l * ct->costs->nr_core_counts];

	if (n <= 0)
		return false;
	/* what was read this generation answers most layers; the rest reads on */
	if (row->gen == c->gen && row->filled >= n) {
		if (e[n - 1].min_ns <= b)
			return true;
		if (e[row->filled - 1].min_ns <= b)
			return false;
	}
	return coloc_need_below_read(st, ct, c, l, pos, b, n);
}

#endif /* COLOC_POLICY_COLOC_INTERNAL_H */
