// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Which machine a profile was measured on: CPU model, online cores, LLC,
 * and the ISA oneDNN dispatches to, given by the caller: colocd asks its
 * executor binary for it (daemon/isa_probe.h) and links no oneDNN; the
 * tools ask oneDNN (profile_isa.c).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "profile.h"
#include "topology.h"

int profile_machine_detect_isa(struct profile_machine *m, const char *isa)
{
	struct topology *topo;
	char line[512];
	FILE *f;
	long n;

	memset(m, 0, sizeof(*m));
	snprintf(m->cpu_model, sizeof(m->cpu_model), "unknown");
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');
			size_t len;

			if (strncmp(line, "model name", 10) || !colon)
				continue;
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			len = strcspn(colon, "\n");
			while (len && isspace((unsigned char)colon[len - 1]))
				len--;
			if (len) {
				if (len >= sizeof(m->cpu_model))
					len = sizeof(m->cpu_model) - 1;
				memcpy(m->cpu_model, colon, len);
				m->cpu_model[len] = '\0';
			}
			break;
		}
		fclose(f);
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return -errno ? -errno : -EINVAL;
	m->nr_cores = (int)n;
	/* without hwloc's view the machine is still known, only less precisely */
	if (!topology_open(NULL, &topo, NULL)) {
		m->llc_bytes = topology_llc_bytes(topo);
		topology_close(topo);
	}
	snprintf(m->isa, sizeof(m->isa), "%s", isa);
	return 0;
}
