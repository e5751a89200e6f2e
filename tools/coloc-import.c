// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-import: converts an ONNX model into coloc's own model text and a
 * weights file (executor/include/model/onnx_import.h), for inspection and diffing, and
 * for coloc-run MODEL --weights FILE. See models/ONNX.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "model_file.h"
#include "onnx_import.h"

static const char *prog = "coloc-import";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s MODEL.onnx [-o OUT.model] [-w OUT.weights] [--batch N] "
		"[--dim NAME=VALUE]...\n"
		"\n"
		"Reads an ONNX model, folds its constant and shape subgraphs, fuses\n"
		"Conv+BatchNormalization, biases and activations, and writes the equivalent\n"
		"coloc model (text, models/README.md) and its weights (models/WEIGHTS.md).\n"
		"Run the result with: coloc-run OUT.model --weights OUT.weights\n"
		"and profile it for colocd with the same weights (they are in the profile's\n"
		"key): coloc-profile OUT.model --weights OUT.weights -o OUT.profile\n"
		"\n"
		"  -o, --output FILE    the model text (default: MODEL with .model for .onnx)\n"
		"  -w, --weights FILE   the weights (default: MODEL with .weights for .onnx)\n"
		"  -b, --batch N        the batch, for inputs whose first dim is symbolic (default 1)\n"
		"  -d, --dim NAME=VALUE the value of a symbolic dim, e.g. --dim sequence=128\n"
		"      --allow-foreign-owner  as root, read a MODEL or external data another\n"
		"                       user owns, or keeps below a directory of theirs or one\n"
		"                       others may write, such as /tmp, and write there\n"
		"                       (refused without it: work below directories only\n"
		"                       root may write)\n"
		"  -h, --help           this text\n"
		"  -V, --version        the version\n"
		"\n"
		"Unsupported ops are refused with the node, its op, the opset and its input\n"
		"shapes (models/ONNX.md lists what is supported).\n"
		"Exit status: 0 written, 1 the model could not be imported or written, 2 bad usage.\n",
		prog);
}

static char *with_suffix(const char *path, const char *suffix)
{
	size_t n = strlen(path);
	char *s;

	if (n > 5 && !strcmp(path + n - 5, ".onnx"))
		n -= 5;
	s = malloc(n + strlen(suffix) + 1);
	if (s) {
		memcpy(s, path, n);
		strcpy(s + n, suffix);
	}
	return s;
}

/* As root (owner_rule) only below directories no other user may write, and not through a link. */
static int write_file(const char *path, const void *data, size_t len, bool owner_rule)
{
	struct coloc_err err = { 0 };
	int fd = model_file_create(path, owner_rule, &err);
	size_t done = 0;

	if (fd < 0) {
		fprintf(stderr, "%s: %s\n", prog, coloc_err_str(&err));
		return -1;
	}
	while (done < len) {
		ssize_t n = write(fd, (const char *)data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (close(fd) || done < len) {
		fprintf(stderr, "%s: %s: writing failed\n", prog, path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "weights", required_argument, NULL, 'w' },
		{ "batch", required_argument, NULL, 'b' },
		{ "dim", required_argument, NULL, 'd' },
		{ "allow-foreign-owner", no_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct onnx_import_opts io = { .batch = 1 };
	struct coloc_err err = { 0 };
	struct onnx_import im;
	char *out = NULL, *wout = NULL;
	const char *o_arg = NULL, *w_arg = NULL;
	bool allow_foreign_owner = false;
	long v;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "o:w:b:d:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o_arg = optarg;
			break;
		case 'w':
			w_arg = optarg;
			break;
		case 'b':
			if (cli_parse_flag(prog, "--batch", optarg, 1, 1 << 24, &v))
				return 2;
			io.batch = v;
			break;
		case 'd':
			if (onnx_dim_parse(&io, optarg, &err)) {
				fprintf(stderr, "%s: %s\n", prog, coloc_err_str(&err));
				return 2;
			}
			break;
		case 'O':
			allow_foreign_owner = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			cli_print_version(prog);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "%s: give exactly one ONNX model\n", prog);
		usage(stderr);
		return 2;
	}
	out = o_arg ? strdup(o_arg) : with_suffix(argv[optind], ".model");
	wout = w_arg ? strdup(w_arg) : with_suffix(argv[optind], ".weights");
	if (!out || !wout) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto done;
	}
	/* as root, nothing another user could have written or swapped is read or written */
	io.owner_rule = geteuid() == 0 && !allow_foreign_owner;
	if (onnx_import_file(argv[optind], &io, &im, &err)) {
		fprintf(stderr, "%s: %s\n", prog, coloc_err_str(&err));
		goto done;
	}
	if (!write_file(out, im.text, im.text_len, io.owner_rule) &&
	    !write_file(wout, im.weights, im.weights_len, io.owner_rule)) {
		printf("%s: %d layers, %.3f GMACs, %llu params -> %s, %s\n", argv[optind],
		       im.model->nr_layers, (double)im.model->macs / 1e9,
		       (unsigned long long)im.model->params, out, wout);
		rc = 0;
	}
	onnx_import_free(&im);
done:
	free(out);
	free(wout);
	return rc;
}
