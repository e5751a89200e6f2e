// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * colocctl against a real colocd serving tenants (the fixture of
 * colocd_serving_fixture.h): submit, infer with files, status, remove,
 * and top's frames showing the tenant and its cores.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "colocd_serving_fixture.h"

TEST_F_TIMEOUT(wire, colocctl__submit_infer_files_status_remove, 600)
{
	char args[3 * PATH_MAX], out[8192], in_path[128], out_path[128];
	float *want, *got;
	size_t out_elems = 0, n;
	float max_err, max_ref;
	FILE *f;

	ASSERT_EQ(0, tu_colocctl(self->sock, "--help", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "submit NAME MODEL --qos-ms X"));
	EXPECT_NE(NULL, strstr(out, "infer NAME [--input FILE] [--output FILE]"));

	snprintf(args, sizeof(args), "submit c '%s' --qos-ms %d --executors 0", self->model,
		 QOS_MS);
	EXPECT_EQ(2, tu_colocctl(self->sock, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "--executors wants a whole number from 1 to 8, not '0'"))
	TH_LOG("%s", out);
	snprintf(args, sizeof(args), "submit c '%s' --qos-ms %d --executors 2", self->model,
		 QOS_MS);
	ASSERT_EQ(0, tu_colocctl(self->sock, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "tenant c admitted")) TH_LOG("%s", out);
	ASSERT_TRUE(wait_state(self, "c", "ready"));
	ASSERT_EQ(0, tu_colocctl(self->sock, "list", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "EXEC")) TH_LOG("%s", out);
	{
		const char *c = strstr(out, "\nc ");
		int executors = 0;

		ASSERT_NE(NULL, c) TH_LOG("%s", out);
		/* TENANT STATE QOS(ms) PID EXEC */
		EXPECT_EQ(1, sscanf(c, "%*s %*s %*s %*s %d", &executors)) TH_LOG("%s", out);
		EXPECT_EQ(2, executors) TH_LOG("%s", out);
	}
	ASSERT_TRUE(submit_ready(self, "d")); /* the input size, from status */

	/* the input as a raw fp32 file, the output back as one */
	snprintf(in_path, sizeof(in_path), "%s/in.f32", self->dir);
	snprintf(out_path, sizeof(out_path), "%s/out.f32", self->dir);
	f = fopen(in_path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(self->in_bytes, fwrite(self->input, 1, self->in_bytes, f));
	fclose(f);
	snprintf(args, sizeof(args), "infer c --input '%s' --output '%s'", in_path, out_path);
	ASSERT_EQ(0, tu_colocctl(self->sock, args, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ok: latency")) TH_LOG("%s", out);
	want = tu_model_outputs(self->model, self->input, &out_elems);
	ASSERT_NE(NULL, want);
	got = malloc(out_elems * sizeof(float) + 1);
	ASSERT_NE(NULL, got);
	f = fopen(out_path, "rb");
	ASSERT_NE(NULL, f);
	n = fread(got, 1, out_elems * sizeof(float) + 1, f);
	fclose(f);
	ASSERT_EQ(out_elems * sizeof(float), n);
	ref_compare(got, want, (int64_t)out_elems, &max_err, &max_ref);
	EXPECT_LE(max_err, TOL * (1.0f + max_ref)) TH_LOG("max |error| %g", max_err);

	/* an input file of the wrong size is refused with the size wanted */
	f = fopen(in_path, "wb");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(12, fwrite(self->input, 1, 12, f));
	fclose(f);
	snprintf(args, sizeof(args), "infer c --input '%s'", in_path);
	EXPECT_EQ(1, tu_colocctl(self->sock, args, out, sizeof(out)));
	snprintf(args, sizeof(args), "exactly %zu bytes", self->in_bytes);
	EXPECT_NE(NULL, strstr(out, args)) TH_LOG("%s", out);
	/* random input, printed output */
	ASSERT_EQ(0, tu_colocctl(self->sock, "infer c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "output[0..8):")) TH_LOG("%s", out);

	ASSERT_EQ(0, tu_colocctl(self->sock, "status c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "P99(ms)")) TH_LOG("%s", out);
	ASSERT_EQ(0, tu_colocctl(self->sock, "list --json", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\"name\":\"c\"")) TH_LOG("%s", out);
	EXPECT_EQ(2, tu_colocctl(self->sock, "submit c", out, sizeof(out)));
	EXPECT_EQ(1, tu_colocctl(self->sock, "infer nobody", out, sizeof(out)));
	ASSERT_EQ(0, tu_colocctl(self->sock, "remove c", out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_EQ(1, tu_colocctl(self->sock, "status c", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no tenant named 'c'")) TH_LOG("%s", out);
	free(want);
	free(got);
}

/*
 * The frame's row of tenant name, split into its numbers (QOS .. REJ+F);
 * whether it was there with state.
 */
static bool top_row(const char *frame, const char *name, const char *state, double *v)
{
	char prefix[64], st[32];
	const char *p = frame;

	snprintf(prefix, sizeof(prefix), "\n%s ", name);
	while ((p = strstr(p, prefix))) {
		if (sscanf(p + 1, "%*s %31s %lf %lf %lf %lf %lf %lf %lf %lf%% %lf %lf %lf", st,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10]) == 12 &&
		    !strcmp(st, state))
			return true;
		p++;
	}
	return false;
}

/*
 * colocctl top, piped: --frames 2 prints exactly two frames, without
 * escape codes; each has the machine's signals line, the tenant's row
 * with its QoS and its served count as status reports them, and one row
 * per core that status lists.
 */
TEST_F_TIMEOUT(wire, colocctl__top_frames_show_tenant_and_cores, 600)
{
	static char out[65536];
	struct json_object *resp, *cores, *t;
	char *frames[3] = { 0 }, *p;
	double served;
	int nr = 0;
	size_t nr_cores;

	ASSERT_EQ(0, tu_colocctl(self->sock, "--help", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "top [--interval MS] [--frames N]"));
	EXPECT_EQ(2, tu_colocctl(self->sock, "top --frames 0", out, sizeof(out)));
	EXPECT_EQ(2, tu_colocctl(self->sock, "status --frames 2", out, sizeof(out)));
	ASSERT_TRUE(submit_ready(self, "t"));
	ASSERT_EQ(0, tu_colocctl(self->sock, "infer t", out, sizeof(out))) TH_LOG("%s", out);
	t = tenant_status(self, "t");
	served = num_of(t, "served");
	json_object_put(t);
	ASSERT_GE(served, 1);
	resp = call(self, "{\"cmd\":\"status\"}");
	ASSERT_TRUE(is_ok(resp));
	ASSERT_TRUE(json_object_object_get_ex(resp, "cores", &cores));
	nr_cores = json_object_array_length(cores);
	ASSERT_GT(nr_cores, 0);

	ASSERT_EQ(0, tu_colocctl(self->sock, "top --frames 2 --interval 100", out, sizeof(out)))
	TH_LOG("%s", out);
	EXPECT_EQ(NULL, strchr(out, '\033')); /* not a terminal: no clearing */
	for (p = out; (p = strstr(p, "colocctl top ")) && nr < 3; p++)
		frames[nr++] = p;
	ASSERT_EQ(2, nr) TH_LOG("%s", out);
	frames[1][-1] = '\0'; /* the first frame ends where the second starts */
	TH_LOG("first frame:\n%s", frames[0]);
	for (int f = 0; f < 2; f++) {
		const char *core_table = strstr(frames[f], "\n CPU  BUSY% LEVEL TENANT");
		double v[11];

		EXPECT_NE(NULL, strstr(frames[f], "\nmachine: ")) TH_LOG("%s", frames[f]);
		ASSERT_TRUE(top_row(frames[f], "t", "ready", v)) TH_LOG("%s", frames[f]);
		EXPECT_EQ(QOS_MS, v[0]);
		EXPECT_EQ(served, v[8]) TH_LOG("%s", frames[f]);
		ASSERT_NE(NULL, core_table) TH_LOG("%s", frames[f]);
		for (size_t i = 0; i < nr_cores; i++) {
			char row[16];

			snprintf(row, sizeof(row), "\n%4.0f ",
				 num_of(json_object_array_get_idx(cores, i), "cpu"));
			EXPECT_NE(NULL, strstr(core_table, row)) TH_LOG("no row%s", row);
		}
	}
	json_object_put(resp);
}

TEST_HARNESS_MAIN
