// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The tenant mixes file (tools/qos-mixes.conf), the one `make bench-qos`
 * measures and `make bench-sim` simulates: one mix per line, its name then
 * its model names; `#` starts a comment line, blank lines are skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

#define MIXES_LINE_MAX 1024

int sim_mixes_load(const char *path, struct sim_mixes *mx, struct coloc_err *err)
{
	char line[MIXES_LINE_MAX];
	FILE *in = fopen(path, "r");
	int lineno = 0, ret = 0;

	*mx = (struct sim_mixes){ 0 };
	if (!in)
		return coloc_err_set(err, -errno, "%s: %m", path);
	while (!ret && fgets(line, sizeof(line), in)) {
		char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
		struct sim_mix *m;

		lineno++;
		if (!tok || *tok == '#')
			continue;
		if (mx->nr == SIM_MAX_MIXES) {
			ret = coloc_err_set(err, -E2BIG, "%s:%d: more than %d mixes", path, lineno,
					    SIM_MAX_MIXES);
			break;
		}
		m = &mx->mix[mx->nr];
		*m = (struct sim_mix){ 0 };
		if (strlen(tok) >= sizeof(m->name)) {
			ret = coloc_err_set(err, -EINVAL, "%s:%d: mix name too long", path, lineno);
			break;
		}
		snprintf(m->name, sizeof(m->name), "%s", tok);
		for (int i = 0; i < mx->nr; i++)
			if (!strcmp(mx->mix[i].name, m->name))
				ret = coloc_err_set(err, -EINVAL, "%s:%d: mix %s given twice", path,
						    lineno, m->name);
		while (!ret && (tok = strtok_r(NULL, " \t\r\n", &save))) {
			if (m->nr_models == POLICY_MAX_TENANTS ||
			    strlen(tok) >= sizeof(m->model[0]))
				ret = coloc_err_set(err, -EINVAL,
						    "%s:%d: at most %d models of names under %zu "
						    "characters",
						    path, lineno, POLICY_MAX_TENANTS,
						    sizeof(m->model[0]));
			else
				snprintf(m->model[m->nr_models++], sizeof(m->model[0]), "%s", tok);
		}
		if (!ret && !m->nr_models)
			ret = coloc_err_set(err, -EINVAL, "%s:%d: mix %s names no model", path,
					    lineno, m->name);
		mx->nr += !ret;
	}
	fclose(in);
	if (!ret && !mx->nr)
		ret = coloc_err_set(err, -EINVAL, "%s: no mix in it", path);
	return ret;
}

const struct sim_mix *sim_mixes_find(const struct sim_mixes *mx, const char *name)
{
	for (int i = 0; i < mx->nr; i++)
		if (!strcmp(mx->mix[i].name, name))
			return &mx->mix[i];
	return NULL;
}
