// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What an executor says of its model while it loads (execproc.h), taken
 * once and checked: its summary, its ready header and the kernel versions
 * it built; after ready, that the header changes in its state only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "execproc_internal.h"
#include "shm_summary_check.h"

/*
 * The executor's summary of its model, copied once when header.described
 * turns 1 and checked (shm_summary_check.h): the one description of the
 * model colocd takes.
 */
int execproc_take_summary(struct execproc *ep, struct coloc_err *err)
{
	char why[COLOC_ERR_MSG_MAX / 2];

	ep->summary = malloc(sizeof(*ep->summary));
	if (!ep->summary)
		return execproc_give_up(ep, err,
					"described its model; colocd is out of memory for it");
	memcpy(ep->summary, &ep->shm->summary, sizeof(*ep->summary));
	if (!shm_summary_check(ep->summary, ep->hdr.slot_in_capacity, ep->hdr.slot_out_capacity,
			       why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	return 0;
}

/* At ready, the header's description must be the summary's. */
static int check_ready_summary(struct execproc *ep, struct coloc_err *err)
{
	const struct coloc_shm_header *h = &ep->hdr;
	const struct coloc_shm_summary *s = ep->summary;

	if (!s)
		return execproc_give_up(ep, err, "got ready without describing its model first");
	if (h->nr_layers != s->nr_layers || h->nr_inputs != s->nr_inputs ||
	    h->nr_outputs != s->nr_outputs || h->in_bytes != s->in_bytes ||
	    h->out_bytes != s->out_bytes)
		return execproc_give_up(ep, err, "got ready with another model than it described");
	return 0;
}

/*
 * The kernel versions the executor built, copied once at ready and checked
 * against the summary's layers (shm_summary_check.h): what colocd compares
 * with the profile it admits the tenant by.
 */
static int take_versions(struct execproc *ep, struct coloc_err *err)
{
	char why[COLOC_ERR_MSG_MAX / 2];

	ep->versions = malloc(sizeof(*ep->versions));
	if (!ep->versions)
		return execproc_give_up(
			ep, err, "reported its kernel versions; colocd is out of memory for them");
	memcpy(ep->versions, &ep->shm->versions, sizeof(*ep->versions));
	if (!shm_versions_check(ep->versions, ep->summary->nr_layers, why, sizeof(why)))
		return execproc_give_up(ep, err, "%s", why);
	return 0;
}

/*
 * Takes the executor's description of its model, once, if it fits the
 * layout; the layout colocd wrote must still be there. Then the slots'
 * input and output pages are allocated, so that no query's copy faults.
 */
int execproc_take_ready(struct execproc *ep, struct coloc_err *err)
{
	struct coloc_shm_header *h = &ep->hdr, sh;

	memcpy(&sh, &ep->shm->hdr, sizeof(sh));
	/* its getpid(): 1 in its own pid namespace */
	if (sh.executor_pid != (ep->own_pidns ? 1 : ep->pid) || sh.in_bytes > h->slot_in_capacity ||
	    sh.out_bytes > h->slot_out_capacity || !sh.nr_layers || !sh.nr_inputs ||
	    !sh.nr_outputs || sh.nr_inputs > sh.nr_layers || sh.nr_outputs > sh.nr_layers)
		return execproc_give_up(
			ep, err,
			"described its model wrongly (pid %d, %u layers, %u inputs, %u "
			"outputs, %llu bytes in, %llu out)",
			sh.executor_pid, sh.nr_layers, sh.nr_inputs, sh.nr_outputs,
			(unsigned long long)sh.in_bytes, (unsigned long long)sh.out_bytes);
	if (memcmp(&sh, h, offsetof(struct coloc_shm_header, executor_pid)))
		return execproc_give_up(ep, err, "rewrote the layout colocd wrote into the header");
	h->executor_pid = ep->pid;
	h->in_bytes = sh.in_bytes;
	h->out_bytes = sh.out_bytes;
	h->nr_layers = sh.nr_layers;
	h->nr_inputs = sh.nr_inputs;
	h->nr_outputs = sh.nr_outputs;
	h->state = COLOC_SHM_READY;
	ep->shm_hdr = sh;
	if (check_ready_summary(ep, err) || take_versions(ep, err))
		return -EPROTO;
	if (execproc_map_slots(ep, err))
		return -EPROTO;
	ep->ready = true;
	return 0;
}

int execproc_check_header(struct execproc *ep, struct coloc_err *err)
{
	const size_t model_at = offsetof(struct coloc_shm_header, nr_layers);
	const size_t model_end = offsetof(struct coloc_shm_header, error);
	struct coloc_shm_header sh;

	memcpy(&sh, &ep->shm->hdr, sizeof(sh));
	if (memcmp(&sh, &ep->shm_hdr, offsetof(struct coloc_shm_header, state)) ||
	    memcmp((char *)&sh + model_at, (char *)&ep->shm_hdr + model_at, model_end - model_at))
		return execproc_give_up(ep, err,
					"rewrote the shared memory's header after it got ready");
	if (sh.state != COLOC_SHM_READY && sh.state != COLOC_SHM_FAILED)
		return execproc_give_up(ep, err, "set the header's state to %u after it got ready",
					sh.state);
	return 0;
}
