// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl's commands on tenants: tenant add/rm (processes and cgroups to
 * watch), submit (a model served by colocd, its files passed as
 * descriptors), list/status/remove/restart, and infer (one query, its input
 * from a file or random, its output to a file or the screen).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ctl.h"
#include "cli.h"

static int ctl_tenant_add(int argc, char **argv)
{
	struct json_object *req = ctl_cmd("tenant-add"), *pids = json_object_new_array();
	bool have_pid = false, have_cgroup = false;

	json_object_object_add(req, "name", json_object_new_string(argv[0]));
	for (int i = 1; i < argc; i++) {
		long pid;

		if (!strcmp(argv[i], "--pid") && i + 1 < argc) {
			if (cli_parse_flag("colocctl", "--pid", argv[++i], 1, 0x3fffffff, &pid))
				goto bad;
			json_object_array_add(pids, json_object_new_int64((int64_t)pid));
			have_pid = true;
		} else if (!strcmp(argv[i], "--cgroup") && i + 1 < argc && !have_cgroup) {
			json_object_object_add(req, "cgroup", json_object_new_string(argv[++i]));
			have_cgroup = true;
		} else {
			fprintf(stderr, "colocctl: tenant add: unexpected '%s'\n", argv[i]);
			goto bad;
		}
	}
	if (!have_pid && !have_cgroup) {
		fprintf(stderr, "colocctl: tenant add NAME needs --pid PID or --cgroup DIR\n");
		goto bad;
	}
	if (have_pid)
		json_object_object_add(req, "pids", pids);
	else
		json_object_put(pids);
	return ctl_run(req, ctl_print_tenant_added);
bad:
	json_object_put(pids);
	json_object_put(req);
	return 2;
}

int ctl_tenant(int argc, char **argv)
{
	struct json_object *req;

	if (argc >= 2 && !strcmp(argv[0], "add"))
		return ctl_tenant_add(argc - 1, argv + 1);
	if (argc == 2 && (!strcmp(argv[0], "rm") || !strcmp(argv[0], "remove"))) {
		req = ctl_cmd("tenant-remove");
		json_object_object_add(req, "name", json_object_new_string(argv[1]));
		return ctl_run(req, ctl_print_done);
	}
	fprintf(stderr,
		"colocctl: usage: tenant add NAME [--pid PID]... [--cgroup DIR] | tenant rm NAME\n");
	return 2;
}

/* ---- submitted tenants and their queries ------------------------------------- */

/* The arguments of a tenant command: positional words and the flags it takes. */
struct ctl_args {
	const char *pos[3];
	int nr_pos;
	const char *qos_ms, *weights, *input, *output, *executors;
	bool allow_foreign_owner; /* 'O' */
};

/* Splits argv (after the command) into words and flags; 0 or 2 (bad usage). */
static int ctl_parse_args(const char *cmd, int argc, char **argv, const char *allowed,
			  struct ctl_args *a)
{
	static const struct {
		const char *flag;
		char key;
		size_t off;
	} flags[] = {
		{ "--qos-ms", 'q', offsetof(struct ctl_args, qos_ms) },
		{ "--weights", 'w', offsetof(struct ctl_args, weights) },
		{ "--input", 'i', offsetof(struct ctl_args, input) },
		{ "--output", 'o', offsetof(struct ctl_args, output) },
		{ "--executors", 'e', offsetof(struct ctl_args, executors) },
	};

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		bool known = false;

		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			ctl_opts.json = true;
			continue;
		}
		if ((!strcmp(argv[i], "--socket") || !strcmp(argv[i], "-s")) && i + 1 < argc) {
			ctl_opts.socket_path = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "--allow-foreign-owner") && strchr(allowed, 'O')) {
			a->allow_foreign_owner = true;
			continue;
		}
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			if (strcmp(argv[i], flags[f].flag) || !strchr(allowed, flags[f].key))
				continue;
			if (i + 1 >= argc) {
				fprintf(stderr, "colocctl: %s: %s wants a value\n", cmd, argv[i]);
				return 2;
			}
			*(const char **)((char *)a + flags[f].off) = argv[++i];
			known = true;
		}
		if (known)
			continue;
		if (argv[i][0] == '-' || a->nr_pos >= 3) {
			fprintf(stderr, "colocctl: %s: unexpected '%s' (see --help)\n", cmd,
				argv[i]);
			return 2;
		}
		a->pos[a->nr_pos++] = argv[i];
	}
	return 0;
}

/*
 * The files go as descriptors this process opens, with the user's own
 * permissions (libcoloc_client): colocd opens no path.
 */
static int ctl_submit_files(const struct coloc_submit *sub)
{
	struct coloc_client *c = ctl_connect();
	struct json_object *resp;
	int rc = 0;

	if (!c)
		return 1;
	resp = coloc_client_submit(c, sub);
	if (!resp) {
		fprintf(stderr, "colocctl: %s\n", coloc_client_error(c));
		rc = 1;
	} else if (!ctl_ok(resp)) {
		rc = 1;
	} else if (ctl_opts.json) {
		printf("%s\n", json_object_to_json_string_ext(resp, JSON_C_TO_STRING_PLAIN));
	} else {
		ctl_print_submitted(resp);
	}
	json_object_put(resp);
	coloc_client_close(c);
	return rc;
}

int ctl_submit(int argc, char **argv)
{
	struct ctl_args a;
	long executors = 0;
	double qos;

	if (ctl_parse_args("submit", argc, argv, "qweO", &a))
		return 2;
	if (a.nr_pos != 2 || !a.qos_ms) {
		fprintf(stderr, "colocctl: usage: submit NAME MODEL --qos-ms X [--weights FILE] "
				"[--executors N] [--allow-foreign-owner] [--json]\n");
		return 2;
	}
	if (a.executors && cli_parse_flag("colocctl", "--executors", a.executors, 1,
					  COLOC_MAX_EXECUTORS, &executors))
		return 2;
	if (cli_parse_double(a.qos_ms, 0, 3600000, &qos) || qos == 0) {
		fprintf(stderr,
			"colocctl: --qos-ms wants a number of ms above 0 and up to 3600000, not "
			"'%s'\n",
			a.qos_ms);
		return 2;
	}
	return ctl_submit_files(
		&(struct coloc_submit){ .name = a.pos[0],
					.model = a.pos[1],
					.weights = a.weights,
					.qos_ms = qos,
					.executors = (int)executors,
					.allow_foreign_owner = a.allow_foreign_owner });
}

/* list, status [NAME], remove NAME, restart NAME */
int ctl_named(const char *cmd, int argc, char **argv, int min, int max,
	      void (*print)(struct json_object *))
{
	struct json_object *req;
	struct ctl_args a;

	if (ctl_parse_args(cmd, argc, argv, "", &a))
		return 2;
	if (a.nr_pos < min || a.nr_pos > max) {
		fprintf(stderr, "colocctl: usage: %s%s (see --help)\n", cmd,
			max ? (min ? " NAME" : " [NAME]") : "");
		return 2;
	}
	req = ctl_cmd(cmd);
	if (a.nr_pos)
		json_object_object_add(req, "name", json_object_new_string(a.pos[0]));
	return ctl_run(req, print);
}

/* The tenant's input and output sizes, from status. */
static int ctl_tenant_sizes(struct coloc_client *c, const char *name, size_t *in, size_t *out)
{
	struct json_object *req = ctl_cmd("status"), *resp, *arr;
	int rc = 1;

	json_object_object_add(req, "name", json_object_new_string(name));
	resp = ctl_request(c, req);
	json_object_put(req);
	if (resp && ctl_ok(resp) && json_object_object_get_ex(resp, "tenants", &arr) &&
	    json_object_array_length(arr) == 1) {
		struct json_object *t = json_object_array_get_idx(arr, 0);

		*in = (size_t)ctl_json_num(t, "input_bytes");
		*out = (size_t)ctl_json_num(t, "output_bytes");
		rc = 0;
	}
	json_object_put(resp);
	return rc;
}

/*
 * The input: FILE's bytes (exactly len of them), or random 0s and 1s: whole
 * numbers, so the same input is valid pixels and valid token ids (every
 * embedding has a vocabulary of at least 2) whatever the model.
 */
static void *ctl_read_input(const char *path, size_t len)
{
	float *buf = malloc(len ? len : 1);
	FILE *f;

	if (!buf)
		return NULL;
	if (!path) {
		srand((unsigned int)time(NULL) ^ (unsigned int)getpid());
		for (size_t i = 0; i < len / sizeof(float); i++)
			buf[i] = (float)(rand() & 1);
		return buf;
	}
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "colocctl: %s: %s\n", path, strerror(errno));
		free(buf);
		return NULL;
	}
	if (fread(buf, 1, len, f) != len || fgetc(f) != EOF) {
		fprintf(stderr,
			"colocctl: %s must hold exactly %zu bytes (the model's inputs as raw "
			"little-endian fp32)\n",
			path, len);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static int ctl_write_output(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f || fwrite(buf, 1, len, f) != len)
		rc = 1;
	if (f && fclose(f))
		rc = 1;
	if (rc)
		fprintf(stderr, "colocctl: cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

static void ctl_print_infer(const struct coloc_infer_result *r, const float *out, bool to_file)
{
	static const char *const names[] = { "ok", "rejected", "dropped", "failed" };

	if (ctl_opts.json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "ok", json_object_new_boolean(r->status == 0));
		json_object_object_add(o, "status", json_object_new_string(names[r->status]));
		json_object_object_add(o, "latency_ns",
				       json_object_new_int64((int64_t)r->latency_ns));
		json_object_object_add(o, "exec_ns", json_object_new_int64((int64_t)r->exec_ns));
		json_object_object_add(o, "output_bytes",
				       json_object_new_int64((int64_t)r->output_bytes));
		if (r->error[0])
			json_object_object_add(o, "error", json_object_new_string(r->error));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		return;
	}
	printf("%s: latency %.3f ms in colocd (executor %.3f ms), %zu output bytes\n",
	       names[r->status], r->latency_ns / 1e6, r->exec_ns / 1e6, r->output_bytes);
	if (!to_file && r->output_bytes) {
		size_t n = r->output_bytes / sizeof(float), show = n < 8 ? n : 8;

		printf("output[0..%zu):", show);
		for (size_t i = 0; i < show; i++)
			printf(" %g", out[i]);
		printf("%s\n", n > show ? " ..." : "");
	}
}

int ctl_infer(int argc, char **argv)
{
	struct coloc_infer_result res;
	struct coloc_client *c;
	struct ctl_args a;
	size_t in_len, out_len;
	void *in = NULL, *out = NULL;
	int rc = 1, ret;

	if (ctl_parse_args("infer", argc, argv, "io", &a))
		return 2;
	if (a.nr_pos != 1) {
		fprintf(stderr, "colocctl: usage: infer NAME [--input FILE] [--output FILE]\n");
		return 2;
	}
	c = ctl_connect();
	if (!c)
		return 1;
	if (ctl_tenant_sizes(c, a.pos[0], &in_len, &out_len))
		goto out;
	in = ctl_read_input(a.input, in_len);
	out = malloc(out_len ? out_len : 1);
	if (!in || !out)
		goto out;
	/* the input goes in a memfd, not on the socket (protocol.h's "input":"memfd") */
	coloc_client_use_memfd(c, 1);
	ret = coloc_client_infer(c, a.pos[0], in, in_len, out, out_len, &res);
	if (ret) {
		fprintf(stderr, "colocctl: infer: %s\n", coloc_client_error(c));
		goto out;
	}
	if (res.status != COLOC_INFER_OK) {
		ctl_print_infer(&res, out, false);
		if (!ctl_opts.json)
			fprintf(stderr, "colocctl: colocd: %s\n", res.error);
		goto out;
	}
	if (a.output && ctl_write_output(a.output, out, res.output_bytes))
		goto out;
	ctl_print_infer(&res, out, a.output != NULL);
	rc = 0;
out:
	free(in);
	free(out);
	coloc_client_close(c);
	return rc;
}
