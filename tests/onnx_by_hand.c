// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * ONNX models written by hand for the tests (onnx_by_hand.h): the protobuf
 * wire format is small enough to write here, so a test needs no Python.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "onnx_by_hand.h"

struct pb {
	uint8_t *b;
	size_t len, cap;
};

static void pb_raw(struct pb *p, const void *data, size_t n)
{
	if (p->len + n > p->cap) {
		p->cap = (p->len + n) * 2 + 64;
		p->b = realloc(p->b, p->cap);
		if (!p->b)
			abort();
	}
	memcpy(p->b + p->len, data, n);
	p->len += n;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	uint8_t c;

	do {
		c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		pb_raw(p, &c, 1);
	} while (v);
}

static void pb_uint(struct pb *p, int field, uint64_t v)
{
	pb_varint(p, (uint64_t)field << 3);
	pb_varint(p, v);
}

static void pb_bytes(struct pb *p, int field, const void *data, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	pb_raw(p, data, n);
}

static void pb_str(struct pb *p, int field, const char *s)
{
	pb_bytes(p, field, s, strlen(s));
}

/* Appends sub as message field `field` of p, and frees sub. */
static void pb_msg(struct pb *p, int field, struct pb *sub)
{
	pb_bytes(p, field, sub->b, sub->len);
	free(sub->b);
	*sub = (struct pb){ 0 };
}

enum { T_FLOAT = 1, T_INT8 = 3, T_INT32 = 6 };

/* A TensorProto of one dimension n whose bytes are at offset 0 of external file loc. */
static void tensor_external(struct pb *graph, const char *name, int type, int64_t n,
			    const char *loc, size_t bytes)
{
	struct pb t = { 0 }, e = { 0 };
	char len[32];

	pb_uint(&t, 1, (uint64_t)n);
	pb_uint(&t, 2, (uint64_t)type);
	pb_str(&t, 8, name);
	pb_str(&e, 1, "location");
	pb_str(&e, 2, loc);
	pb_msg(&t, 13, &e);
	pb_str(&e, 1, "offset");
	pb_str(&e, 2, "0");
	pb_msg(&t, 13, &e);
	snprintf(len, sizeof(len), "%zu", bytes);
	pb_str(&e, 1, "length");
	pb_str(&e, 2, len);
	pb_msg(&t, 13, &e);
	pb_uint(&t, 14, 1); /* data_location EXTERNAL */
	pb_msg(graph, 5, &t);
}

/* A float TensorProto of shape [1] holding 0. */
static void tensor_zero(struct pb *graph, const char *name)
{
	struct pb t = { 0 };
	float zero = 0;

	pb_uint(&t, 1, 1);
	pb_uint(&t, 2, T_FLOAT);
	pb_bytes(&t, 4, &zero, sizeof(zero)); /* packed float_data */
	pb_str(&t, 8, name);
	pb_msg(graph, 5, &t);
}

/* A graph input or output: float of shape [1]. */
static void value_info(struct pb *graph, int field, const char *name)
{
	struct pb vi = { 0 }, type = { 0 }, tensor = { 0 }, shape = { 0 }, dim = { 0 };

	pb_uint(&dim, 1, 1);
	pb_msg(&shape, 1, &dim);
	pb_uint(&tensor, 1, T_FLOAT);
	pb_msg(&tensor, 2, &shape);
	pb_msg(&type, 1, &tensor);
	pb_str(&vi, 1, name);
	pb_msg(&vi, 2, &type);
	pb_msg(graph, field, &vi);
}

static void node(struct pb *graph, const char *op, const char *in0, const char *in1,
		 const char *out)
{
	struct pb n = { 0 };

	pb_str(&n, 1, in0);
	if (in1)
		pb_str(&n, 1, in1);
	pb_str(&n, 2, out);
	pb_str(&n, 3, out);
	pb_str(&n, 4, op);
	pb_msg(graph, 1, &n);
}

/* The ModelProto around graph (opset 13), written to dir/name. */
static int write_model(struct pb *graph, const char *dir, const char *name, char *path, size_t len)
{
	struct pb m = { 0 }, opset = { 0 };
	int fd, ok;

	pb_uint(&m, 1, 8); /* ir_version */
	pb_str(graph, 2, "g");
	pb_msg(&m, 7, graph);
	pb_str(&opset, 1, "");
	pb_uint(&opset, 2, 13);
	pb_msg(&m, 8, &opset);
	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && write(fd, m.b, m.len) == (ssize_t)m.len;
	if (fd >= 0)
		close(fd);
	free(m.b);
	return ok ? 0 : -EIO;
}

int onnx_by_hand_gather(const char *dir, const char *loc, char *path, size_t len)
{
	struct pb g = { 0 };

	node(&g, "Gather", "d", "i", "gi");
	node(&g, "Add", "x", "gi", "y");
	tensor_zero(&g, "d");
	tensor_external(&g, "i", T_INT32, 1, loc, 4);
	value_info(&g, 11, "x");
	value_info(&g, 12, "y");
	return write_model(&g, dir, "gather.onnx", path, len);
}

int onnx_by_hand_huge(const char *dir, const char *loc, int nr, int64_t n, char *path, size_t len)
{
	struct pb g = { 0 };
	char name[32];

	node(&g, "Relu", "x", NULL, "y");
	for (int i = 0; i < nr; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		tensor_external(&g, name, T_INT8, n, loc, (size_t)n);
	}
	value_info(&g, 11, "x");
	value_info(&g, 12, "y");
	return write_model(&g, dir, "huge.onnx", path, len);
}
