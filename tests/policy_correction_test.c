// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of the coloc policy's correction of its predictions
 * (coloc_block_done): it converges on the measured ratio, each block
 * learns its own ratio beside the tenants, it fades without blocks so a
 * starved tenant is served; an uneven tenant is held for more cores when
 * only its mean fits, and only what is late even at the fast end of its
 * usual error is dropped.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "kselftest_harness.h"
#include "policy.h"
#include "policy_impl.h"
#include "policy_fixture.h"

/* d kept past the output it lives in: its versions copied into versions. */
static void keep_decision(const struct policy_decision *d, struct policy_decision *kept,
			  uint8_t *versions)
{
	*kept = *d;
	memcpy(versions, d->versions, (size_t)(d->last_layer - d->first_layer));
	kept->versions = versions;
}

/*
 * Tiny alone with QoS qos_ns and 4 free cores: p's decision for a query due
 * in 100 ms, kept in *first (its versions in versions[3]). True when it is
 * the whole model on all 4 cores, 540 us predicted.
 */
static bool tiny_first_block(FIXTURE_DATA(pol) * self, struct policy *p, uint64_t qos_ns,
			     struct policy_decision *first, uint8_t *versions)
{
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = qos_ns };
	self->free = cpus_of((const int[]){ 0, 1, 2, 3 }, 4);
	add_query(&self->in, self->queries, 1, 0, 0, 100000000);
	policy_output_reset(&self->out);
	if (policy_decide(p, &self->in, &self->out, &self->err) || self->out.nr_decisions != 1 ||
	    self->decisions[0].predicted_ns != 540000)
		return false;
	keep_decision(&self->decisions[0], first, versions);
	return true;
}

/* What coloc knows of one block (its layers and cores): its correction, its last 9 measured / table. */
struct block_learnt {
	double rel;
	float ratio[9];
	int nr, next;
};

/*
 * Its prediction of the block (corr, fixed, rel: as of now): raw x corr x
 * rel + fixed; measured 3 times or more, raw x the median of its last 9,
 * a median above corr x rel faded towards the former by kept (the share
 * left after the time since the block was last measured, half-life 1 s).
 */
static double coloc_predict(double corr, double fixed, double rel, const struct block_learnt *b,
			    double raw, double kept)
{
	float v[9];
	double med;

	if (b->nr < 3)
		return raw * corr * rel + fixed;
	memcpy(v, b->ratio, sizeof(v));
	for (int i = 1; i < b->nr; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			float t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	med = b->nr % 2 ? v[b->nr / 2] : ((double)v[b->nr / 2 - 1] + v[b->nr / 2]) / 2;
	if (med <= corr * rel)
		return raw * med;
	return raw * (corr * rel + (med - corr * rel) * kept) + fixed * (1 - kept);
}

/*
 * What coloc learns from a block of table latency raw measured at m, as its
 * header says: m is first taken at most as the block's prediction (nothing
 * faded) times 1 + max(2 x the tenant's usual error, 0.5); the relative
 * error of that to the prediction teaches the usual error, in proportion
 * to raw / (raw + 100 us); so does the ratio the tenant's correction, over
 * what the block's own (rel) already says, then the block's own what the
 * tenant's leaves; the rest (signed: it may be below 0) teaches the
 * per-block cost, floored at 0; alpha 0.3; m itself joins the block's last
 * 9.
 */
static void coloc_learn(double *corr, double *fixed, double *dev, struct block_learnt *b,
			double raw, double m)
{
	double p = coloc_predict(*corr, *fixed, b->rel, b, raw, 1);
	double c = fmin(m, p * (1 + fmax(2 * *dev, 0.5)));
	double w = raw / (raw + 100000), x = fmax(c - *fixed, c / 10) / raw;

	*dev = (1 - 0.3 * w) * *dev + 0.3 * w * fabs(c - p) / p;
	*corr = (1 - 0.3 * w) * *corr + 0.3 * w * x / b->rel;
	*fixed = fmax(0, (1 - 0.3 * (1 - w)) * *fixed + 0.3 * (1 - w) * (c - *corr * b->rel * raw));
	b->rel = (1 - 0.3 * w) * b->rel + 0.3 * w * x / *corr;
	b->ratio[b->next] = (float)(m / raw);
	b->next = (b->next + 1) % 9;
	b->nr += b->nr < 9;
}

TEST_F(pol, coloc_block_done__the_correction_converges_on_the_measured_ratio)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy *q = policy_create(policy_find("coloc-noprediction"), &self->cfg, &self->err);
	struct policy *e = policy_create(policy_find("coloc-ewma"), &self->cfg, &self->err);
	struct policy_decision first;
	uint8_t versions[3];
	struct block_learnt b = { .rel = 1.0 };
	double corr = 1.0, fixed = 0, dev = 0;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	ASSERT_NE(NULL, e);
	ASSERT_TRUE(tiny_first_block(self, e, 300000, &first, versions));
	ASSERT_TRUE(tiny_first_block(self, p, 300000, &first, versions));

	/* every block measures 1.5 x the table: after two the EWMAs walk towards 810 us */
	for (int i = 0; i < 2; i++) {
		policy_block_done(p, &first, 810000);
		policy_block_done(q, &first, 810000);
		coloc_learn(&corr, &fixed, &dev, &b, 540000, 810000);
	}
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ((uint64_t)(540000 * corr * b.rel + fixed), self->decisions[0].predicted_ns);
	ASSERT_LT(540000, self->decisions[0].predicted_ns);
	ASSERT_GT(810000, self->decisions[0].predicted_ns);
	/* from the third on, the block's own median: 810 us exactly */
	policy_block_done(e, &first, 810000);
	policy_block_done(e, &first, 810000);
	for (int i = 0; i < 8; i++) {
		policy_block_done(p, &first, 810000);
		policy_block_done(q, &first, 810000);
		policy_block_done(e, &first, 810000);
		coloc_learn(&corr, &fixed, &dev, &b, 540000, 810000);
	}
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ((uint64_t)coloc_predict(corr, fixed, b.rel, &b, 540000, 1),
		  self->decisions[0].predicted_ns);
	ASSERT_EQ(810000, self->decisions[0].predicted_ns);
	/* coloc-ewma: the EWMAs still, within 2 % of 810 us */
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(e, &self->in, &self->out, &self->err));
	ASSERT_EQ((uint64_t)(540000 * corr * b.rel + fixed), self->decisions[0].predicted_ns);
	ASSERT_LT(0.98 * 810000, self->decisions[0].predicted_ns);
	ASSERT_GT(810000, self->decisions[0].predicted_ns);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(q, &self->in, &self->out, &self->err));
	ASSERT_EQ(540000, self->decisions[0].predicted_ns);
	policy_destroy(p);
	policy_destroy(q);
	policy_destroy(e);
}

/*
 * A block's own correction: tiny's whole model on 4 cores (540 us in the
 * table) measured at 2x, and on 2 cores (versions 1, 0, 0: 960 us) at 1x,
 * in turn, all ending at one instant (nothing fades). One
 * correction per tenant would predict both near their mean ratio; the
 * 4-core block is predicted as the header's arithmetic says (tenant's x
 * block's), past 1.85x its table.
 */
TEST_F(pol, coloc_block_done__each_block_learns_its_own_ratio_beside_the_tenants)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy_decision four, two;
	uint8_t versions[3], two_versions[3] = { 1, 0, 0 };
	struct block_learnt b4 = { .rel = 1.0 }, b2 = { .rel = 1.0 };
	double corr = 1.0, fixed = 0, dev = 0;

	ASSERT_NE(NULL, p);
	ASSERT_TRUE(tiny_first_block(self, p, 100000000, &four, versions));
	two = four;
	two.nr_cores = 2;
	two.versions = two_versions;
	two.decided_ns = four.decided_ns + 1080000 - 960000; /* both end at once */
	for (int i = 0; i < 20; i++) {
		policy_block_done(p, &four, 1080000);
		coloc_learn(&corr, &fixed, &dev, &b4, 540000, 1080000);
		policy_block_done(p, &two, 960000);
		coloc_learn(&corr, &fixed, &dev, &b2, 960000, 960000);
	}
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(4, self->decisions[0].nr_cores);
	ASSERT_EQ((uint64_t)coloc_predict(corr, fixed, b4.rel, &b4, 540000, 1),
		  self->decisions[0].predicted_ns);
	ASSERT_LT(1.85 * 540000, self->decisions[0].predicted_ns);
	/* the EWMAs alone, as before a block's third measurement, tell them apart too */
	ASSERT_LT(1.85, corr * b4.rel + fixed / 540000);
	ASSERT_GT(1.1, corr * b2.rel + fixed / 960000);
	policy_destroy(p);
}

/*
 * Plans take the prediction times 1 + the tenant's usual error. Fresh, a
 * query due in 1 ms with 2 of the 8 cores free runs on them at once (960
 * µs predicted). After blocks that ran 1.2x and 0.8x the table in turn
 * (ending on 0.8x: the mean now predicts ~935 µs there, the error is
 * ~23 %), the same query is held for more cores rather than run where it
 * fits only on the mean; it is not dropped: on 4 cores (~540 µs) it meets
 * its deadline on the mean.
 */
TEST_F(pol, coloc_decide__an_uneven_tenant_is_held_for_more_cores_when_only_the_mean_fits)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	struct policy_decision first;
	uint8_t versions[3];

	ASSERT_NE(NULL, p);
	self->tenants[0] = (struct policy_tenant){ .costs = &tiny, .qos_ns = 1000000 };
	self->in.nr_tenants = 1;
	self->free = cpus_of((const int[]){ 0, 1 }, 2);
	add_query(&self->in, self->queries, 1, 0, 0, 1000000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(2, self->decisions[0].nr_cores);
	ASSERT_EQ(960000, self->decisions[0].predicted_ns);
	keep_decision(&self->decisions[0], &first, versions);
	for (int i = 0; i < 20; i++)
		policy_block_done(p, &first, i % 2 ? 768000 : 1152000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	EXPECT_EQ(0, self->out.nr_decisions);
	EXPECT_EQ(0, self->out.nr_drops);
	policy_destroy(p);
}

/*
 * A drop takes the fast end of the tenant's usual error: the mean
 * prediction over 1 + the error. After blocks measured at 1.3x and 0.7x the
 * table in turn (each ending at the same instant, so nothing fades), a query
 * with 1 % less time than that left to its deadline plus 2 QoS (QoS 100
 * ms; it is past its deadline) is dropped, naming the mean; one with 1 %
 * more is served, late, though the mean says it is later still (overdue,
 * with no query on time to delay: policy_late_overdue_test).
 */
TEST_F(pol, coloc_decide__drops_only_what_is_late_even_at_the_fast_end_of_its_usual_error)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	const uint64_t end = 500000000, qos = 100000000;
	struct policy_decision first;
	uint8_t versions[3];
	struct block_learnt b = { .rel = 1.0 };
	double corr = 1.0, fixed = 0, dev = 0, mean, fast;

	ASSERT_NE(NULL, p);
	ASSERT_TRUE(tiny_first_block(self, p, 100000000, &first, versions));
	for (int i = 0; i < 10; i++) {
		double m = i % 2 ? 378000 : 702000;

		coloc_learn(&corr, &fixed, &dev, &b, 540000, m);
		first.decided_ns = end - (uint64_t)m;
		policy_block_done(p, &first, (uint64_t)m);
	}
	/* the rest of the model is the block measured: its own median (0.7: 5 of its last 9) */
	mean = coloc_predict(corr, fixed, b.rel, &b, 540000, 1);
	ASSERT_GT(1, fabs(mean - 378000));
	fast = mean / (1 + dev);
	ASSERT_LT(0.1, dev);

	self->in.now_ns = end;
	self->in.nr_queries = 0;
	add_query(&self->in, self->queries, 2, 0, end - 3 * qos, end - 2 * qos + (uint64_t)(0.99 * fast));
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(0, self->out.nr_decisions);
	ASSERT_EQ(1, self->out.nr_drops);
	ASSERT_EQ(POLICY_DROP_CANNOT_MEET, self->drops[0].reason);
	ASSERT_EQ((uint64_t)mean, self->drops[0].predicted_ns);

	self->in.nr_queries = 0;
	add_query(&self->in, self->queries, 3, 0, end - 3 * qos, end - 2 * qos + (uint64_t)(1.01 * fast));
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id);
	ASSERT_EQ(4, self->decisions[0].nr_cores);

	/* 3 s on, no block since: a median below the EWMAs' prediction does not fade */
	self->in.nr_queries = 0;
	self->in.now_ns = end + 3000000000ull;
	add_query(&self->in, self->queries, 4, 0, self->in.now_ns, self->in.now_ns + 100000000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_GE(1, fabs((double)self->decisions[0].predicted_ns - 378000));
	policy_destroy(p);
}

/*
 * A tenant whose blocks all ran 2x the table is predicted late (the block's
 * median: 2x): served, demoted, not dropped (the table says it can still be
 * answered within its deadline plus its QoS); with no block for 3 s its
 * correction has lost 7/8 of its excess (a half-life of 1 s), the block's
 * own correction 1 - 2^(-3/5) of its (5 s), the block's median 7/8 of its
 * excess over those (1 s), and the same query is predicted in time again.
 * Before queries predicted late were demoted, this fading was all that
 * kept such a tenant from being starved: its queries were dropped, never
 * measured.
 */
TEST_F(pol, coloc_block_done__a_correction_fades_without_blocks)
{
	struct policy *p = policy_create(policy_find("coloc"), &self->cfg, &self->err);
	const uint64_t end = 1080000, later = end + 3000000000ull;
	struct policy_decision first;
	uint8_t versions[3];
	struct block_learnt b = { .rel = 1.0 };
	double corr = 1.0, fixed = 0, dev = 0, rel;

	ASSERT_NE(NULL, p);
	ASSERT_TRUE(tiny_first_block(self, p, 100000000, &first, versions));
	/* decided at 0, each measured 1.08 ms: every block ends at 1.08 ms */
	for (int i = 0; i < 10; i++) {
		policy_block_done(p, &first, end);
		coloc_learn(&corr, &fixed, &dev, &b, 540000, 1080000);
	}
	rel = b.rel;

	/* 800 us left: ~1.08 ms predicted on the whole machine: late, served whole */
	self->in.nr_queries = 0;
	self->in.now_ns = end;
	add_query(&self->in, self->queries, 2, 0, end, end + 800000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].last_layer);
	ASSERT_EQ((uint64_t)coloc_predict(corr, fixed, rel, &b, 540000, 1),
		  self->decisions[0].predicted_ns);
	ASSERT_EQ(1080000, self->decisions[0].predicted_ns); /* its median: 2.0 */

	/*
	 * 3 s later, no block since: 1/8 of the tenant's excess is left, and of
	 * the block's median's excess over that 1/8 too: ~0.7 ms fits in 800 us
	 */
	self->in.nr_queries = 0;
	self->in.now_ns = later;
	add_query(&self->in, self->queries, 3, 0, later, later + 800000);
	policy_output_reset(&self->out);
	ASSERT_EQ(0, policy_decide(p, &self->in, &self->out, &self->err));
	ASSERT_EQ(0, self->out.nr_drops);
	ASSERT_EQ(1, self->out.nr_decisions);
	ASSERT_EQ(3, self->decisions[0].query_id);
	ASSERT_EQ((uint64_t)coloc_predict(1.0 + (corr - 1.0) / 8, fixed / 8,
					  1.0 + (rel - 1.0) * exp2(-0.6), &b, 540000, 1.0 / 8),
		  self->decisions[0].predicted_ns);
	ASSERT_GT(800000, self->decisions[0].predicted_ns);
	policy_destroy(p);
}

TEST_HARNESS_MAIN
