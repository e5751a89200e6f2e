// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The ONNX importer's driver: opens the graph, walks its nodes in order
 * (each folded into constants or lowered into coloc layers), writes the
 * model text and weights, parses the text back with model_parse() and checks
 * every layer's shape against the one inferred from the ONNX graph, so a
 * lowering that the format would read differently is refused, not run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "huge_alloc.h"
#include "model_file.h"
#include "onnx_internal.h"

int onnx_dim_parse(struct onnx_import_opts *opts, const char *arg, struct coloc_err *err)
{
	const char *eq = strchr(arg, '=');
	char *end;
	long long v;

	if (!eq || eq == arg || (size_t)(eq - arg) >= ONNX_DIM_NAME_LEN)
		return coloc_err_set(err, -EINVAL, "--dim wants NAME=VALUE, got '%s'", arg);
	if (opts->nr_dims >= ONNX_MAX_DIM_VALUES)
		return coloc_err_set(err, -EINVAL, "at most %d --dim values", ONNX_MAX_DIM_VALUES);
	v = strtoll(eq + 1, &end, 10);
	if (!eq[1] || *end || v < 1 || v > (1 << 24))
		return coloc_err_set(err, -EINVAL, "--dim %s: VALUE must be 1..16777216", arg);
	memcpy(opts->dims[opts->nr_dims].name, arg, (size_t)(eq - arg));
	opts->dims[opts->nr_dims].name[eq - arg] = 0;
	opts->dims[opts->nr_dims++].value = v;
	return 0;
}

static int walk_nodes(struct onnx_ctx *c, bool *skip)
{
	for (size_t i = 0; i < c->g->n_node; i++) {
		const Onnx__NodeProto *n = c->g->node[i];
		int ret, first;

		if (skip[i])
			continue;
		c->node = n;
		if (!n->op_type || !n->op_type[0])
			return onnx_refuse(c, -EINVAL, "node %zu has no op type", i);
		if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
			return onnx_refuse(c, -EOPNOTSUPP,
					   "ops outside the default ONNX domain are "
					   "not supported");
		for (size_t k = 0; k < n->n_input; k++) {
			struct onnx_value *v = onnx_input(c, n, k);

			if (n->input[k][0] && (!v || !v->defined))
				return onnx_refuse(
					c, -EINVAL,
					"input '%.64s' is not computed before "
					"this node (the graph is not sorted, or the name "
					"is unknown)",
					n->input[k]);
		}
		first = c->nr_layers;
		ret = onnx_pattern(c, i, skip);
		if (!ret)
			ret = onnx_fold(c, n);
		if (ret < 0)
			return ret;
		if (!ret) {
			ret = onnx_lower(c, n);
			if (ret)
				return ret;
		}
		/* a fusion into a layer now read would change what its readers see */
		for (int li = first; li < c->nr_layers; li++)
			for (int j = 0; j < c->layers[li].l.nr_inputs; j++)
				c->layers[c->layers[li].l.inputs[j]].read = true;
		for (size_t k = 0; k < n->n_input; k++) {
			struct onnx_value *v = onnx_input(c, n, k);

			if (v && v->layer >= 0)
				c->layers[v->layer].uses--;
		}
	}
	c->node = NULL;
	return 0;
}

static int collect_outputs(struct onnx_ctx *c, struct onnx_import *out)
{
	for (size_t i = 0; i < c->g->n_output; i++) {
		struct onnx_value *v = onnx_value_find(c, c->g->output[i]->name);

		if (!v->defined || v->layer < 0)
			return coloc_err_set(
				c->err, -EOPNOTSUPP,
				"%s: graph output '%.64s' is %s; coloc runs layers only", c->file,
				v->name, v->defined ? "a constant" : "never computed");
		if (out->nr_outputs >= ONNX_MAX_OUTPUTS)
			return coloc_err_set(c->err, -EOPNOTSUPP, "%s: more than %d graph outputs",
					     c->file, ONNX_MAX_OUTPUTS);
		out->outputs[out->nr_outputs++] = v->layer;
	}
	return 0;
}

/*
 * The lowered text refused by model_parse(): an importer check is missing.
 * Only the line is told, not the parser's words: they quote the text's
 * values, and those may come from a tensor's data.
 */
static int refused_by_parser(const char *name, const struct coloc_err *perr,
			     struct coloc_err *err)
{
	size_t len = strlen(name);
	long line = 0;

	if (!strncmp(perr->msg, name, len) && perr->msg[len] == ':')
		line = strtol(perr->msg + len + 1, NULL, 10);
	return coloc_err_set(err, perr->code ? perr->code : -EINVAL,
			     "%s: the lowered model is refused by coloc's parser at line %ld of "
			     "its text (%s): a check of the importer is missing, please report it",
			     name, line, strerror(perr->code ? -perr->code : EINVAL));
}

/* The parsed text must have exactly the shapes the ONNX graph gives. */
static int check_parsed(struct onnx_ctx *c, const struct model *m)
{
	if (m->nr_layers != c->nr_layers)
		return coloc_err_set(c->err, -EPROTO, "%s: the lowered text has %d layers, not %d",
				     c->file, m->nr_layers, c->nr_layers);
	for (int i = 0; i < m->nr_layers; i++) {
		const struct model_shape *a = &m->layers[i].out, *b = &c->layers[i].l.out;

		if (a->ndims != b->ndims ||
		    memcmp(a->dims, b->dims, (size_t)a->ndims * sizeof(int64_t))) {
			char sa[96], sb[96];

			onnx_shape_str(a, sa, sizeof(sa));
			onnx_shape_str(b, sb, sizeof(sb));
			return coloc_err_set(
				c->err, -EOPNOTSUPP,
				"%s: layer '%s' (from %s) has shape %s in coloc but %s "
				"in ONNX: this construct has no exact coloc equivalent",
				c->file, m->layers[i].name, c->layers[i].origin, sa, sb);
		}
	}
	return 0;
}

int onnx_import_buffer(const char *name, const void *buf, size_t len,
		       const struct onnx_import_opts *opts, struct onnx_import *out,
		       struct coloc_err *err)
{
	struct onnx_ctx c = { .file = name, .opts = opts, .err = err };
	struct coloc_err perr = { 0 };
	bool *skip = NULL;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = onnx_graph_open(&c, buf, len);
	if (!ret) {
		skip = calloc(c.g->n_node, sizeof(*skip));
		ret = skip ? walk_nodes(&c, skip) : coloc_err_set(err, -ENOMEM, "out of memory");
	}
	if (!ret)
		ret = collect_outputs(&c, out);
	if (!ret)
		onnx_graph_drop_constants(&c);
	if (!ret)
		ret = onnx_emit_text(&c, &out->text, &out->text_len);
	if (!ret)
		ret = onnx_emit_weights(&c, &out->weights, &out->weights_len);
	if (!ret) {
		out->model = model_parse(name, out->text, out->text_len, &perr);
		if (!out->model)
			ret = refused_by_parser(name, &perr, err);
	}
	if (!ret)
		ret = check_parsed(&c, out->model);
	out->int_inputs = c.int_inputs;
	onnx_graph_close(&c);
	free(skip);
	if (ret)
		onnx_import_free(out);
	return ret;
}

int onnx_import_file(const char *path, const struct onnx_import_opts *opts, struct onnx_import *out,
		     struct coloc_err *err)
{
	struct onnx_import_opts o = opts ? *opts : (struct onnx_import_opts){ 0 };
	struct model_file mf;
	void *buf;
	size_t got = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = model_file_open(path, o.owner_rule, &mf, err);
	if (ret)
		return ret;
	if ((unsigned long long)mf.st.st_size > ONNX_MAX_FILE_BYTES) {
		model_file_close(&mf);
		return coloc_err_set(err, -E2BIG,
				     "%s: %lld bytes; a model over 2 GiB must keep its "
				     "tensors in external data files",
				     path, (long long)mf.st.st_size);
	}
	buf = huge_alloc((size_t)mf.st.st_size);
	if (!buf) {
		model_file_close(&mf);
		return coloc_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	while (got < (size_t)mf.st.st_size) {
		ssize_t n = read(mf.fd, (char *)buf + got, (size_t)mf.st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = coloc_err_set(err, n < 0 ? -errno : -EIO, "%s: read failed", path);
			model_file_close(&mf);
			free(buf);
			return ret;
		}
		got += (size_t)n;
	}
	o.has_dir_fd = true;
	o.dir_fd = mf.dir_fd;
	ret = onnx_import_buffer(path, buf, got, &o, out, err);
	model_file_close(&mf);
	free(buf);
	return ret;
}

void onnx_import_free(struct onnx_import *out)
{
	free(out->text);
	free(out->weights);
	model_free(out->model);
	memset(out, 0, sizeof(*out));
}
