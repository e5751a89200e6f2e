// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An executor's query slots as colocd touches them (execproc.h): where
 * each one lies in the shared memory, and colocd's copies into and out of
 * them. A page of a shared memfd belongs to the memory cgroup of whoever
 * faults it in first, so colocd never does: it writes an input only into
 * pages the executor allocated (one never allocated is a breach; none can
 * be given back once the executor is ready, the memfd's seals refuse it),
 * and reads an output with pread(), which reads a hole as zeros and
 * allocates nothing (docs/security-executor.md, "Slot pages"). An input
 * in a client's frozen memfd skips the slot: its descriptor goes to the
 * executor on the lane's input socket (execproc_send_input).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "execproc_internal.h"
#include "input_memfd.h"

static size_t slot_offset(const struct execproc *ep, unsigned int slot)
{
	const struct coloc_shm_header *h = &ep->hdr;

	return h->data_offset + slot * (h->slot_in_capacity + h->slot_out_capacity);
}

void *execproc_input(struct execproc *ep, unsigned int slot)
{
	return slot < COLOC_SHM_NR_SLOTS ? (char *)ep->shm + slot_offset(ep, slot) : NULL;
}

const void *execproc_output(const struct execproc *ep, unsigned int slot)
{
	return slot < COLOC_SHM_NR_SLOTS ?
		       (char *)ep->shm + slot_offset(ep, slot) + ep->hdr.slot_in_capacity :
		       NULL;
}

size_t execproc_page_round(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

/* Whether every page of the memfd's [at, at + len) is in memory (mincore()). */
static bool resident(const struct execproc *ep, size_t at, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n;
	unsigned char in_core[256];

	for (size_t done = 0; done < len; done += n * page) {
		n = (len - done) / page < sizeof(in_core) ? (len - done) / page : sizeof(in_core);
		if (mincore((char *)ep->shm + at + done, n * page, in_core))
			return false;
		for (size_t i = 0; i < n; i++)
			if (!(in_core[i] & 1))
				return false;
	}
	return true;
}

/*
 * Whether every page of the memfd's [at, at + bytes) is allocated: in
 * memory (mincore(), the cheap answer: 0.5 us for a 600 KB input against
 * 6 us for SEEK_HOLE, docs/measurements/slot-pages.md), else as the memfd
 * says (SEEK_HOLE, which counts a page swapped out as allocated too).
 */
static bool pages_allocated(const struct execproc *ep, size_t at, unsigned long long bytes)
{
	size_t len = execproc_page_round((size_t)bytes);
	off_t hole;

	if (resident(ep, at, len))
		return true;
	hole = lseek(ep->shm_fd, (off_t)at, SEEK_HOLE);
	return hole >= 0 && (size_t)hole >= at + len;
}

/*
 * At ready both sides have mapped the memfd, so F_SEAL_FUTURE_WRITE now
 * costs neither its writes (mappings made before the seal keep writing)
 * and makes every allocated page of it stay so while colocd holds it: the
 * kernel refuses a hole punched (fallocate, MADV_REMOVE) and a truncation
 * to anyone, executor or not, sandboxed or not. A slot checked allocated
 * (execproc_input_allocated) thus stays allocated through colocd's copy.
 * Then the slots' input and output pages are mapped in colocd (best
 * effort), so that no query's copy faults: only where the executor
 * allocated every one of them (it does before it gets ready), so colocd
 * allocates none.
 */
int execproc_map_slots(struct execproc *ep, struct coloc_err *err)
{
	const struct coloc_shm_header *h = &ep->hdr;

	if (fcntl(ep->shm_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)) {
		int e = errno;

		return execproc_give_up(ep, err,
					"kept colocd from sealing its query slots' pages (%s)",
					strerror(e));
	}
	for (unsigned int k = 0; k < COLOC_SHM_NR_SLOTS; k++) {
		size_t in = slot_offset(ep, k), out = in + h->slot_in_capacity;

		if (h->in_bytes && pages_allocated(ep, in, h->in_bytes))
			madvise((char *)ep->shm + in, execproc_page_round(h->in_bytes),
				MADV_POPULATE_WRITE);
		if (h->out_bytes && pages_allocated(ep, out, h->out_bytes))
			madvise((char *)ep->shm + out, execproc_page_round(h->out_bytes),
				MADV_POPULATE_WRITE);
	}
	return 0;
}

int execproc_input_allocated(struct execproc *ep, unsigned int slot, struct coloc_err *err)
{
	if (ep->given_up)
		return coloc_err_set(err, ep->dead_err, "%s", ep->dead_msg);
	if (slot >= COLOC_SHM_NR_SLOTS)
		return coloc_err_set(err, -EINVAL, "query slot %u out of range (0..%d)", slot,
				     COLOC_SHM_NR_SLOTS - 1);
	if (pages_allocated(ep, slot_offset(ep, slot), ep->hdr.in_bytes))
		return 0;
	return execproc_give_up(ep, err,
				"gave its query slots' pages back (slot %u's input is not all "
				"allocated: colocd does not allocate it for the executor)",
				slot);
}

int execproc_read_output(const struct execproc *ep, unsigned int slot, void *buf,
			 struct coloc_err *err)
{
	int ret;

	if (slot >= COLOC_SHM_NR_SLOTS)
		return coloc_err_set(err, -EINVAL, "query slot %u out of range (0..%d)", slot,
				     COLOC_SHM_NR_SLOTS - 1);
	ret = input_memfd_read(ep->shm_fd, slot_offset(ep, slot) + ep->hdr.slot_in_capacity, buf,
			       ep->hdr.out_bytes);
	if (ret)
		return coloc_err_set(err, ret, "tenant %s: reading query slot %u's output: %s",
				     ep->tenant, slot, strerror(-ret));
	return 0;
}

bool execproc_takes_input_memfd(const struct execproc *ep)
{
	return ep->input_sock >= 0;
}

int execproc_send_input(struct execproc *ep, int memfd, struct coloc_err *err)
{
	struct coloc_shm_input_msg msg = { .seq = ep->seq + 1, .bytes = ep->hdr.in_bytes };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u = { 0 };
	struct iovec iov = { &msg, sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int e;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
	if (sendmsg(ep->input_sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(msg))
		return 0;
	e = errno;
	return coloc_err_set(err, -e, "tenant %s: sending the input's memfd to its executor: %s",
			     ep->tenant, strerror(e));
}
