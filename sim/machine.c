// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated machine: N cores with ids 0 .. N-1, cut into equal sockets
 * of consecutive ids, each socket into LLC domains of llc_size consecutive
 * cores; turned into the struct policy_config the policy is created with.
 */
#include <errno.h>
#include "sim.h"

int sim_machine_config(const struct sim_machine *m, enum policy_late late,
		       struct policy_config *cfg, struct coloc_err *err)
{
	int per_socket;

	if (m->nr_cores < 1 || m->nr_cores > POLICY_MAX_CPUS)
		return coloc_err_set(err, -EINVAL, "machine: %d cores; give 1 to %d", m->nr_cores,
				     POLICY_MAX_CPUS);
	if (m->nr_sockets < 1 || m->nr_cores % m->nr_sockets)
		return coloc_err_set(err, -EINVAL,
				     "machine: %d sockets do not divide %d cores evenly",
				     m->nr_sockets, m->nr_cores);
	per_socket = m->nr_cores / m->nr_sockets;
	if (m->llc_size < 1 || per_socket % m->llc_size)
		return coloc_err_set(err, -EINVAL,
				     "machine: LLC domains of %d cores do not divide a socket of "
				     "%d cores evenly",
				     m->llc_size, per_socket);
	*cfg = (struct policy_config){ .late = late };
	for (int c = 0; c < m->nr_cores; c++) {
		policy_cpuset_set(&cfg->online, c);
		cfg->socket[c] = c / per_socket;
		cfg->llc[c] = c / m->llc_size;
	}
	return 0;
}
