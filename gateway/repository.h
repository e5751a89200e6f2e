/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The gateway's model repository, in Triton's layout:
 *
 *   REPO/NAME/config.json
 *   REPO/NAME/VERSION/model.model   (coloc's text format)   or
 *   REPO/NAME/VERSION/model.onnx    (+ optional weights file, see below)
 *
 * NAME is the served model's name and colocd's tenant name (1..63 of
 * [A-Za-z0-9_.-], not starting with '.'); VERSION a whole number, the
 * highest one present is served. config.json (at most GW_REPO_MAX_CONFIG
 * bytes, strict JSON) holds coloc's settings:
 *
 *   {"qos_ms": 50,                      required: the tenant's QoS target
 *    "executors": 2,                    optional, 1..COLOC_MAX_EXECUTORS
 *    "weights": "weights.bin",          optional, a file in VERSION/
 *    "input":  [{"name":"data","data_type":"TYPE_FP32","dims":[1,3,224,224]}],
 *    "output": [{"name":"prob","data_type":"TYPE_FP32","dims":[1,1000]}]}
 *
 * "input"/"output" (Triton's names; optional, FP32 only) name the tensors
 * and their shapes as clients see them, in the model's order (shm.h's
 * layout). Without "input", a model.model's `input NAME shape=AxB...` lines
 * are used, and a model.onnx gets one input "input" of [input_bytes/4];
 * without "output", one output "output" of [output_bytes/4]. The sums of
 * the shapes are checked against colocd's input_bytes/output_bytes once the
 * tenant is submitted (gw_repo_check_sizes).
 *
 * This module reads files only (no colocd, no I/O beyond the repository);
 * errors name the file, relative to the repository, and what is wrong.
 * Every file is opened below the repository's folder (openat2, no
 * symbolic links) unless the repository follows links.
 */
#ifndef COLOC_GATEWAY_REPOSITORY_H
#define COLOC_GATEWAY_REPOSITORY_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include "error.h"

#define GW_REPO_MAX_MODELS 64
#define GW_REPO_MAX_TENSORS 16 /* inputs, and outputs, of one model */
#define GW_REPO_MAX_DIMS 8
#define GW_REPO_MAX_CONFIG 65536
#define GW_NAME_MAX 64

struct gw_tensor {
	char name[GW_NAME_MAX];
	int nr_dims;
	int64_t dims[GW_REPO_MAX_DIMS];
	uint64_t elems; /* product of dims */
};

struct gw_model_config {
	char name[GW_NAME_MAX];
	char tenant[GW_NAME_MAX]; /* colocd's name for it: --tenant-prefix + name */
	char version[24];
	char path[PATH_MAX]; /* absolute: the model file, as colocd is told */
	char weights[PATH_MAX]; /* absolute, or "" */
	char model_rel[GW_NAME_MAX + 32]; /* NAME/VERSION/model.*: where it is opened */
	char weights_rel[GW_NAME_MAX + 32 + 256]; /* NAME/VERSION/FILE, or "" */
	double qos_ms;
	int executors; /* 0: colocd's default */
	int nr_inputs, nr_outputs; /* 0: derived from colocd's sizes */
	struct gw_tensor inputs[GW_REPO_MAX_TENSORS];
	struct gw_tensor outputs[GW_REPO_MAX_TENSORS];
};

struct gw_repo {
	char path[PATH_MAX]; /* absolute: in the logs, never in an answer */
	/*
	 * coloc-gateway --repository-links: symbolic links are followed
	 * wherever they lead; off, every file is opened below the repository
	 * without links, and a link is refused or skipped (docs/gateway.md)
	 */
	bool follow_links;
};

/* repo for the folder at path (made absolute). 0, or -errno with err filled. */
int gw_repo_init(struct gw_repo *repo, const char *path, bool follow_links, struct coloc_err *err);

/* The repository's folder, opened (O_DIRECTORY): the fd, or -errno with err filled. */
int gw_repo_open(const struct gw_repo *repo, struct coloc_err *err);

/* Whether s is a valid model (tenant) name. */
int gw_repo_name_ok(const char *s);

/*
 * Reads REPO/NAME (its config.json and highest version) into cfg. 0, or a
 * negative errno with the reason in err.
 */
int gw_repo_read_model(const struct gw_repo *repo, const char *name, struct gw_model_config *cfg,
		       struct coloc_err *err);

/*
 * The names of REPO's model folders (those holding a config.json), sorted,
 * at most max of them. The count, or a negative errno with err filled.
 */
int gw_repo_list(const struct gw_repo *repo, char (*names)[GW_NAME_MAX], int max,
		 struct coloc_err *err);

/*
 * Fills the tensors config.json left out (see above) and checks that the
 * shapes add up to colocd's sizes. 0, or -EINVAL with err filled.
 */
int gw_repo_check_sizes(struct gw_model_config *cfg, uint64_t input_bytes, uint64_t output_bytes,
			struct coloc_err *err);

#endif /* COLOC_GATEWAY_REPOSITORY_H */
