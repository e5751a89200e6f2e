// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A running block's pace: the share of its LLC domains and of the other
 * cores of its socket that other blocks occupy, the interference model's
 * slowdown for it, the time-sharing of
 * its cores when a policy shares them; each re-rate brings its progress up
 * to now and reschedules its end (sim/run.c says how a run uses them).
 */
#include <math.h>
#include "run_internal.h"

static bool socket_wide(const struct sim_state *s)
{
	return s->p->interference.socket_slowdown > 1.0;
}

/*
 * Share of the block's domains that other blocks occupy (*llc), and of the
 * other cores of its socket (*socket), each averaged over its cores.
 */
static void slot_pressure(struct sim_state *s, const struct sim_slot *sl, double *llc,
			  double *socket)
{
	const struct policy_cpuset *cs = &sl->d.cores;
	double sum = 0, sock_sum = 0;
	int c;

	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1)) {
		s->dom_own[s->cfg.llc[c]]++;
		s->sock_own[s->cfg.socket[c]]++;
	}
	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1)) {
		int d = s->cfg.llc[c], k = s->cfg.socket[c],
		    others = s->per_socket - s->sock_own[k];

		sum += (double)(s->dom_busy[d] - s->dom_own[d]) / s->p->machine.llc_size;
		if (others > 0)
			sock_sum += (double)(s->sock_busy[k] - s->sock_own[k]) / others;
	}
	for (c = policy_cpuset_next(cs, 0); c >= 0; c = policy_cpuset_next(cs, c + 1)) {
		s->dom_own[s->cfg.llc[c]] = 0;
		s->sock_own[s->cfg.socket[c]] = 0;
	}
	*llc = sum / sl->d.nr_cores;
	*socket = sock_sum / sl->d.nr_cores;
}

static void refresh_domain_signal(struct sim_state *s, int d)
{
	int size = s->p->machine.llc_size, first = d * size;
	double slow = 0;

	for (int c = first; c < first + size; c++)
		if (s->core_nr[c])
			slow += s->core_sig[c].slowdown;
	s->dom_sig[d].busy = (double)s->dom_busy[d] / size;
	s->dom_sig[d].slowdown = s->dom_busy[d] ? slow / s->dom_busy[d] : 1.0;
}

/* Brings the slot's progress up to now, applies its current slowdown, reschedules its end. */
static int rerate(struct sim_state *s, struct sim_slot *sl, struct coloc_err *err)
{
	const struct policy_costs *m = s->tenants[sl->d.tenant].costs;
	double llc, socket, slow, stretch;
	int c, share = 1;

	slot_pressure(s, sl, &llc, &socket);
	slow = sim_interference_slowdown(&s->p->interference, m, sl->d.first_layer,
					 sl->d.last_layer, sl->versions, sl->ci, llc, socket);

	for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
	     c = policy_cpuset_next(&sl->d.cores, c + 1))
		if (s->core_nr[c] > share && !sl->collapsed)
			share = s->core_nr[c];
	stretch = slow * share;
	if (share > 1 && s->p->shared_penalty)
		stretch *= s->p->shared_penalty;
	if (stretch == sl->stretch && sl->gen)
		return 0;
	sl->left_ns -= (double)(s->now - sl->last_ns) / sl->stretch;
	if (sl->left_ns < 0)
		sl->left_ns = 0;
	sl->last_ns = s->now;
	sl->slowdown = slow;
	sl->stretch = stretch;
	sl->gen = ++s->gen_seq;
	if (!s->shared)
		for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
		     c = policy_cpuset_next(&sl->d.cores, c + 1))
			s->core_sig[c].slowdown = slow;
	return sim_heap_push(&s->heap, s->now + (uint64_t)llround(sl->left_ns * stretch),
			     SIM_EV_DONE, (int)(sl - s->slots), sl->gen, err);
}

/*
 * With a socket-wide part: re-rates every running block on a socket of
 * cores, and refreshes the signals of every domain there.
 */
static int rerate_sockets(struct sim_state *s, const struct policy_cpuset *cores,
			  struct coloc_err *err)
{
	int doms = s->per_socket / s->p->machine.llc_size, c, ret;
	unsigned int stamp = ++s->stamp;

	for (c = policy_cpuset_next(cores, 0); c >= 0; c = policy_cpuset_next(cores, c + 1))
		s->sock_stamp[s->cfg.socket[c]] = stamp;
	for (int i = 0; i < s->nr_running; i++) {
		struct sim_slot *sl = &s->slots[s->running_slot[i]];

		for (c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
		     c = policy_cpuset_next(&sl->d.cores, c + 1))
			if (s->sock_stamp[s->cfg.socket[c]] == stamp)
				break;
		if (c < 0)
			continue;
		ret = rerate(s, sl, err);
		if (ret)
			return ret;
	}
	for (int k = 0; k < s->nr_sockets; k++)
		if (s->sock_stamp[k] == stamp)
			for (int d = k * doms; d < (k + 1) * doms; d++)
				refresh_domain_signal(s, d);
	return 0;
}

/*
 * Re-rates every running block sharing an LLC domain with cores (a socket,
 * when the interference model has a socket-wide part), and refreshes their
 * signals.
 */
int sim_run_rerate_neighbours(struct sim_state *s, const struct policy_cpuset *cores,
			      struct coloc_err *err)
{
	int size = s->p->machine.llc_size, last_dom = -1, ret;
	unsigned int stamp;

	if (socket_wide(s))
		return rerate_sockets(s, cores, err);
	stamp = ++s->stamp;

	for (int c = policy_cpuset_next(cores, 0); c >= 0; c = policy_cpuset_next(cores, c + 1)) {
		int d = s->cfg.llc[c];

		if (d == last_dom)
			continue;
		last_dom = d;
		for (int k = d * size; k < (d + 1) * size; k++) {
			struct sim_slot *sl;

			if (s->core_slot[k] < 0)
				continue;
			sl = &s->slots[s->core_slot[k]];
			if (sl->stamp == stamp)
				continue;
			sl->stamp = stamp;
			ret = rerate(s, sl, err);
			if (ret)
				return ret;
		}
	}
	last_dom = -1;
	for (int c = policy_cpuset_next(cores, 0); c >= 0; c = policy_cpuset_next(cores, c + 1)) {
		if (s->cfg.llc[c] != last_dom)
			refresh_domain_signal(s, s->cfg.llc[c]);
		last_dom = s->cfg.llc[c];
	}
	return 0;
}

/*
 * Shared cores: every running block is re-rated (a start or an end changes
 * the sharing on its cores and the pressure in its domains), then each
 * busy core's signal is the largest stretch among its blocks, which is
 * what colocd would measure there (latency / alone), and every domain's
 * signal is refreshed.
 */
int sim_run_rerate_all(struct sim_state *s, struct coloc_err *err)
{
	int n = s->p->machine.nr_cores, ret;

	for (int i = 0; i < s->nr_running; i++) {
		ret = rerate(s, &s->slots[s->running_slot[i]], err);
		if (ret)
			return ret;
	}
	for (int c = 0; c < n; c++)
		s->core_sig[c].slowdown = 1.0;
	for (int i = 0; i < s->nr_running; i++) {
		const struct sim_slot *sl = &s->slots[s->running_slot[i]];

		for (int c = policy_cpuset_next(&sl->d.cores, 0); c >= 0;
		     c = policy_cpuset_next(&sl->d.cores, c + 1))
			if (sl->stretch > s->core_sig[c].slowdown)
				s->core_sig[c].slowdown = sl->stretch;
	}
	for (int d = 0; d < s->nr_domains; d++)
		refresh_domain_signal(s, d);
	return 0;
}
