// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ISA oneDNN dispatches to, for the tools that link oneDNN (and for
 * coloc-executor --print-isa, which colocd asks instead of linking it).
 */
#include <stdio.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include "profile_host.h"

void profile_isa_name(char *buf, size_t len)
{
	const char *isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());

	if (!strncmp(isa, "cpu_isa_", 8))
		isa += 8;
	snprintf(buf, len, "%s", isa);
}

int profile_machine_detect(struct profile_machine *m)
{
	char isa[PROFILE_ISA_LEN];

	profile_isa_name(isa, sizeof(isa));
	return profile_machine_detect_isa(m, isa);
}
