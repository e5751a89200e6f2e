// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Tests of common/huge_alloc.c: small sizes are plain malloc, large ones
 * 2 MiB aligned and, where the kernel's THP mode lets a process ask
 * (/sys/kernel/mm/transparent_hugepage/enabled says "always" or
 * "madvise"), really backed by huge pages once written, as
 * /proc/self/smaps' AnonHugePages for that range shows.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "huge_alloc.h"
#include "testutil.h"

/* The THP mode in force ("always", "madvise", "never"), or "" if unknown. */
static void thp_mode(char *mode, size_t len)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char line[128], *open, *close;

	mode[0] = '\0';
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && (open = strchr(line, '[')) &&
	    (close = strchr(open, ']')) && (size_t)(close - open - 1) < len) {
		memcpy(mode, open + 1, (size_t)(close - open - 1));
		mode[close - open - 1] = '\0';
	}
	fclose(f);
}

/*
 * Why this process gets no huge pages whatever the global mode says, or
 * NULL: THP turned off for it (prctl PR_SET_THP_DISABLE, /proc/self/status
 * THP_enabled: 0) or for the 2 MiB size (hugepages-2048kB/enabled "never").
 */
static const char *thp_off_here(void)
{
	char line[256];
	FILE *f;

	if (!tu_proc_status_field(0, "THP_enabled", line, sizeof(line)) && !strcmp(line, "0"))
		return "THP is disabled for this process (THP_enabled: 0)";
	f = fopen("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled", "r");
	if (f) {
		bool never = fgets(line, sizeof(line), f) && strstr(line, "[never]");

		fclose(f);
		if (never)
			return "2 MiB transparent huge pages are 'never' here";
	}
	return NULL;
}

/* AnonHugePages (kB) of the smaps entries that overlap [p, p + len). */
static long huge_kb_in(const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool in = false;
	long kb = 0, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = a < hi && b > lo;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	return kb;
}

/* /proc/vmstat's thp_fault_fallback: huge page faults the kernel served small. */
static long thp_fallbacks(void)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char line[128];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "thp_fault_fallback %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

TEST(huge_alloc__small_sizes_are_plain_memory)
{
	char *p = huge_alloc(0), *q = huge_alloc(HUGE_ALLOC_MIN_BYTES - 1);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	p[0] = 1;
	memset(q, 7, HUGE_ALLOC_MIN_BYTES - 1);
	free(p);
	free(q);
}

TEST(huge_alloc__refuses_a_size_it_cannot_allocate)
{
	ASSERT_EQ(NULL, huge_alloc(SIZE_MAX - HUGE_ALLOC_MIN_BYTES + 1));
	ASSERT_EQ(NULL, huge_alloc(SIZE_MAX - 1));
}

TEST(huge_alloc__large_is_aligned_and_on_huge_pages_where_the_kernel_allows)
{
	const size_t len = 3 * HUGE_ALLOC_MIN_BYTES + 12345;
	char mode[32];
	long kb, fallbacks = thp_fallbacks();
	char *p = huge_alloc(len);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, (uintptr_t)p % HUGE_ALLOC_MIN_BYTES);
	memset(p, 1, len);
	kb = huge_kb_in(p, len);
	thp_mode(mode, sizeof(mode));
	TH_LOG("THP mode '%s': %ld kB of the %zu bytes on huge pages", mode, kb, len);
	free(p);
	if (strcmp(mode, "always") && strcmp(mode, "madvise"))
		SKIP(return, "transparent huge pages are '%s' here: nothing to ask for", mode);
	if (thp_off_here())
		SKIP(return, "%s", thp_off_here());
	if (kb < 3 * (long)(HUGE_ALLOC_MIN_BYTES >> 10) && thp_fallbacks() > fallbacks)
		SKIP(return, "the kernel served these faults with small pages (thp_fault_fallback "
			     "rose: memory too fragmented now)");
#ifdef __SANITIZE_ADDRESS__
	/* ASan's own allocator maps the chunk: 4 MiB of the 6 measured huge there */
	ASSERT_GE(kb, (long)(HUGE_ALLOC_MIN_BYTES >> 10));
#else
	/* glibc: the three whole 2 MiB pages */
	ASSERT_GE(kb, 3 * (long)(HUGE_ALLOC_MIN_BYTES >> 10));
#endif
}

TEST_HARNESS_MAIN
