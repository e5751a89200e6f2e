// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The coloc engine's prediction of a block's time, learnt from the blocks
 * measured: per tenant a correction of the table (measured / table), a
 * per-block cost and the usual relative error (EWMAs that fade towards 1.0
 * and 0 without measurements), and per block class (first layer, last
 * layer, core count) its own correction and the median of its last ratios;
 * a block of a class not yet known is predicted as its core count's blocks.
 * The EWMAs learn a block's time clipped at its prediction times 1 + a few
 * usual errors, so that one stalled block does not wreck them.
 * Why each part is there: docs/design/coloc-policy.md.
 */
#include <math.h>
#include "coloc_internal.h"

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
/* a block class's own correction (COLOC_BLOCK_CLASSES) fades by half in this long */
#define COLOC_CLASS_HALF_LIFE_NS 5000000000.0
/* a class predicts from its median once it holds this many samples (COLOC_CLASS_SAMPLES) */
#define COLOC_CLASS_MIN_SAMPLES 3
/*
 * What a block teaches the EWMAs is at most its prediction times 1 + this
 * many of the tenant's usual errors, and never less than 1 + COLOC_CLIP_MIN:
 * one block stalled 20x moves them as one 1.5x late would, and a real
 * shift, clipped, widens the usual error and so its own clip within a few
 * blocks (docs/design/coloc-policy.md, "One stalled block").
 */
#define COLOC_CLIP_DEVS 2.0
#define COLOC_CLIP_MIN 0.5
/* weight of a block of a class not yet known in the errors of its two predictions */
#define COLOC_UNSEEN_WEIGHT 0.1

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

/* Core index ci's group in a tenant's grp[], and its key there (never 0). */
static int group_index(int ci, uint64_t *key)
{
	*key = (uint64_t)ci + 1;
	return ci % COLOC_CORE_GROUPS;
}

/*
 * c's correction for key as of now, faded towards 1.0; 1.0 when it holds
 * another block or coloc does not predict.
 */
static double class_faded(const struct coloc_state *st, const struct coloc_class *c, uint64_t key,
			  uint64_t now)
{
	if (!st->flags.predict || c->key != key)
		return 1.0;
	return 1.0 + (c->rel - 1.0) * kept_since(now, c->ns, COLOC_CLASS_HALF_LIFE_NS);
}

/* Whether c (of key) is a class not yet known: a block of it is predicted otherwise. */
static bool class_unknown(const struct coloc_class *c, uint64_t key)
{
	return c->key != key || c->nr < COLOC_CLASS_MIN_SAMPLES;
}

/* The prediction from entry c (of key), a class or a core count's group. */
static struct block_pred entry_pred(const struct coloc_state *st, const struct coloc_class *c,
				    uint64_t key, double corr, double fixed, uint64_t now)
{
	struct block_pred p = { corr * class_faded(st, c, key, now), fixed };
	double k;

	if (!st->flags.predict || st->flags.ewma_only || class_unknown(c, key))
		return p;
	if (c->median <= p.scale)
		return (struct block_pred){ c->median, 0 };
	k = kept_since(now, c->ns, COLOC_CORR_HALF_LIFE_NS);
	return (struct block_pred){ p.scale + (c->median - p.scale) * k, p.fixed * (1 - k) };
}

struct block_pred coloc_class_pred(const struct coloc_state *st, const struct coloc_tenant *ct,
				   int first, int last, int ci, double corr, double fixed,
				   uint64_t now)
{
	uint64_t key, gkey;
	const struct coloc_class *c = &ct->cls[class_index(first, last, ci, &key)];

	/*
	 * a class not yet known: its core count's, unless the tenant's own
	 * correction has predicted such blocks better (coloc-ewma: always its own)
	 */
	if (!st->flags.ewma_only && class_unknown(c, key) &&
	    !(ct->unseen_err_own < ct->unseen_err_group)) {
		c = &ct->grp[group_index(ci, &gkey)];
		key = gkey;
	}
	return entry_pred(st, c, key, corr, fixed, now);
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

/*
 * c (of key) learns a block of weight w whose leftover ratio is x, its
 * correction rel as of end_ns, the tenant's corr: the correction towards
 * x / corr, the ring and its median the block's measured / table.
 */
static void class_learn(struct coloc_class *c, uint64_t key, double rel, double w, double x,
			double corr, double ratio, uint64_t end_ns)
{
	/* from its value as of now: a new entry at 1.0, an old one faded */
	if (c->key != key) {
		c->nr = 0;
		c->next = 0;
	}
	c->key = key;
	c->rel = (1 - COLOC_ALPHA * w) * rel + COLOC_ALPHA * w * x / corr;
	c->ns = end_ns;
	/* the median needs no clip: one stall in nine does not move it */
	c->ratio[c->next] = (float)ratio;
	c->next = (c->next + 1) % COLOC_CLASS_SAMPLES;
	if (c->nr < COLOC_CLASS_SAMPLES)
		c->nr++;
	c->median = ring_median(c->ratio, c->nr);
}

/* t's correction as of now, faded towards 1.0. */
double coloc_aged_corr(const struct coloc_tenant *ct, uint64_t now)
{
	return 1.0 + (ct->corr - 1.0) * corr_kept(ct, now);
}

/* t's per-block cost as of now, faded towards 0. */
double coloc_aged_fixed(const struct coloc_tenant *ct, uint64_t now)
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
double coloc_aged_margin(const struct coloc_tenant *ct, uint64_t now)
{
	return 1.0 + ct->dev * corr_kept(ct, now);
}

/*
 * m as the EWMAs learn it from a block predicted at p, dev the tenant's
 * usual error as of the block's end: clipped above only (a block cannot
 * take less than nothing, and a tenant predicted late must unlearn it at
 * once, or its queries are dropped and never measured).
 */
static double clipped(double m, double p, double dev)
{
	return fmin(m, p * (1 + fmax(COLOC_CLIP_DEVS * dev, COLOC_CLIP_MIN)));
}

/*
 * A block of class c (of key, not yet known) measured: how far each of the
 * two predictions of it was (its core count's, its own correction's; both
 * as of its end, as the rest of the learning), into the tenant's EWMAs of
 * their relative errors (unclipped: a stall hits both alike).
 */
static void score_unseen(const struct coloc_state *st, struct coloc_tenant *ct,
			 const struct coloc_class *c, uint64_t key, int ci, uint64_t raw,
			 uint64_t measured_ns, double corr, double fixed, uint64_t end_ns)
{
	uint64_t gkey;
	const struct coloc_class *g = &ct->grp[group_index(ci, &gkey)];
	double m = (double)measured_ns;
	double own = coloc_predicted(entry_pred(st, c, key, corr, fixed, end_ns), raw);
	double group = coloc_predicted(entry_pred(st, g, gkey, corr, fixed, end_ns), raw);

	ct->unseen_err_own = (1 - COLOC_UNSEEN_WEIGHT) * ct->unseen_err_own +
			     COLOC_UNSEEN_WEIGHT * fabs(m - own) / m;
	ct->unseen_err_group = (1 - COLOC_UNSEEN_WEIGHT) * ct->unseen_err_group +
			       COLOC_UNSEEN_WEIGHT * fabs(m - group) / m;
}

void policy_coloc_engine_block_done(void *state, const struct policy_decision *d,
				    uint64_t measured_ns)
{
	struct coloc_state *st = state;
	struct coloc_tenant *ct;
	const struct policy_costs *m;
	int ci;
	uint64_t raw;

	if (d->tenant < 0 || d->tenant >= POLICY_MAX_TENANTS)
		return;
	ct = &st->t[d->tenant];
	m = ct->costs;
	if (!ct->known || !m || d->last_layer > m->nr_layers || !measured_ns)
		return;
	if (!ct->ran || d->decided_ns + measured_ns > ct->last_end_ns)
		ct->last_end_ns = d->decided_ns + measured_ns;
	ct->ran = true;
	ci = policy_costs_core_index(m, d->nr_cores);
	if (ci < 0)
		return;
	raw = 0;
	for (int l = d->first_layer; l < d->last_layer; l++)
		raw += policy_costs_latency(m, l, d->versions[l - d->first_layer], ci,
					    policy_costs_level_pos(m, d->level));
	if (d->cold) /* priced cold: what the block's time teaches is relative to that */
		raw = policy_scale_ns(raw, d->cold_scale > 1 ? d->cold_scale : 1.0);
	if (raw) {
		uint64_t end_ns = d->decided_ns + measured_ns;
		double w = raw / (raw + COLOC_SMALL_BLOCK_NS);
		double corr = coloc_aged_corr(ct, end_ns), fixed = coloc_aged_fixed(ct, end_ns);
		uint64_t key, gkey;
		struct coloc_class *c =
			&ct->cls[class_index(d->first_layer, d->last_layer, ci, &key)];
		struct coloc_class *g = &ct->grp[group_index(ci, &gkey)];
		double rel = class_faded(st, c, key, end_ns);
		double p = coloc_predicted(coloc_class_pred(st, ct, d->first_layer, d->last_layer,
							    ci, corr, fixed, end_ns),
					   raw);
		double dev = ct->dev * corr_kept(ct, end_ns);
		double m_ns = clipped((double)measured_ns, p, dev);

		if (st->flags.predict && !st->flags.ewma_only && class_unknown(c, key))
			score_unseen(st, ct, c, key, ci, raw, measured_ns, corr, fixed, end_ns);
		/* the ratio of what is not the block's cost; never below a tenth of the whole */
		double x = fmax(m_ns - fixed, m_ns / 10) / (double)raw;

		ct->dev = (1 - COLOC_ALPHA * w) * dev + COLOC_ALPHA * w * fabs(m_ns - p) / p;

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
		class_learn(c, key, rel, w, x, corr, (double)measured_ns / (double)raw, end_ns);
		class_learn(g, gkey, class_faded(st, g, gkey, end_ns), w, x, corr,
			    (double)measured_ns / (double)raw, end_ns);
		ct->corr = corr;
		ct->fixed_ns = fixed;
		ct->corr_ns = end_ns;
	}
}

/*
 * The rest of the model from first, predicted (with its own correction when
 * that rest ran as one block before): at least one more block; 0 when a
 * layer has no version.
 */
uint64_t coloc_rest_of_model(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			     int ci, double pos, double corr, double fixed, uint64_t now)
{
	uint64_t raw = coloc_span_ns(st, ct, first, ct->costs->nr_layers, ci, pos, NULL, 0);

	return raw ? (uint64_t)coloc_predicted(coloc_class_pred(st, ct, first, ct->costs->nr_layers,
								ci, corr, fixed, now),
					       raw) :
		     0;
}

/*
 * The rest of the model from first on count index ci, or (with the whole
 * rest as a candidate, which may run it on fewer cores) on the count up to
 * ci whose prediction is the least: on a VM whose blocks on both vCPUs
 * learn a worse ratio than on one, more cores can be predicted slower.
 * 0 when a layer has no version at ci.
 */
uint64_t coloc_rest_at_best(const struct coloc_state *st, struct coloc_tenant *ct, int first,
			    int ci, double pos, double corr, double fixed, uint64_t now)
{
	uint64_t best = coloc_rest_of_model(st, ct, first, ci, pos, corr, fixed, now);

	for (int c = 0; st->flags.whole_candidate && best && c < ci; c++) {
		uint64_t ns = coloc_rest_of_model(st, ct, first, c, pos, corr, fixed, now);

		if (ns && ns < best)
			best = ns;
	}
	return best;
}

/*
 * The rest of the model from first at the level, the table alone (no
 * correction learnt): its least over the counts up to ci; 0 when none.
 */
uint64_t coloc_table_rest(const struct coloc_state *st, struct coloc_tenant *ct, int first, int ci,
			  double pos)
{
	uint64_t best = 0;

	for (int c = 0; c <= ci; c++) {
		uint64_t ns = coloc_span_ns(st, ct, first, ct->costs->nr_layers, c, pos, NULL, 0);

		if (ns && (!best || ns < best))
			best = ns;
	}
	return best;
}
