// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The raw hardware event table: for each CPU generation coloc knows, the
 * core PMU code of cycles, instructions, LLC references, LLC misses and a
 * DRAM-fill event (bytes = fills x 64), each with where the code comes from.
 * pmu.c picks a table by vendor/family/model; pmu_event_table_lookup()
 * exposes the choice so tests can check every table without that CPU.
 *
 * Intel: cycles, instructions and the LLC pair are architectural (SDM Vol.
 * 3B, "Pre-defined Architectural Performance Events", Table 20-1; Table 18-1
 * in editions before 2023). The DRAM-fill proxy is generation specific and
 * taken from the perfmon JSON files Linux ships in
 * tools/perf/pmu-events/arch/x86/<gen>/.
 *
 * AMD Zen: the L3 belongs to the CCX, and its counters live in the separate
 * amd_l3 uncore PMU, which cannot attribute to a core or a task. So the core
 * PMU stands in: "LLC references" are core requests that missed the L2 (and
 * therefore went to the L3), PMCx064 l2_cache_req_stat.ic_dc_miss_in_l2;
 * "LLC misses" are L1D fills whose data came from outside this CCX (another
 * CCX's cache or DRAM), PMCx043/PMCx044 with the non-local source unit
 * masks; DRAM fills are the same event with only the DRAM/IO masks. Zen 1/2
 * have only the demand-fill event (PMCx043 LsRefillsFromSys); Zen 3 added
 * PMCx044, which also counts prefetch fills, the bulk of a streaming
 * kernel's traffic. Sources: the AMD PPR (Processor Programming Reference)
 * of each family and Linux's perf JSON files amdzen1..amdzen5.
 *
 * Any other CPU falls back to the kernel's generic hardware events and has
 * no DRAM fill: the kernel picks what "cache-misses" means there.
 */
#include <errno.h>
#include <string.h>
#include <linux/perf_event.h>
#include "pmu.h"

/* AMD PerfEvtSel: EventSelect[7:0] at 7:0, UnitMask at 15:8, EventSelect[11:8] at 35:32. */
#define AMD_RAW(ev, umask) \
	((__u64)((ev)&0xff) | ((__u64)((umask)&0xff) << 8) | ((__u64)(((ev) >> 8) & 0xf) << 32))
/* Intel IA32_PERFEVTSELx: event select 7:0, unit mask 15:8. */
#define INTEL_RAW(ev, umask) ((__u64)((ev)&0xff) | ((__u64)((umask)&0xff) << 8))

#define EV(c, t, cfg, nm, src) \
	[c] = { .ctr = (c), .type = (t), .config = (cfg), .name = (nm), .source = (src) }
#define NO_EV(c, why) \
	[c] = { .ctr = (c), .type = PERF_TYPE_RAW, .config = 0, .name = NULL, .source = (why) }

#define SW_EVENTS                                                                          \
	EV(COLOC_CTR_CTX_SWITCHES, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,     \
	   "context-switches", "perf_event_open(2): PERF_COUNT_SW_CONTEXT_SWITCHES"),      \
		EV(COLOC_CTR_MIGRATIONS, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, \
		   "cpu-migrations", "perf_event_open(2): PERF_COUNT_SW_CPU_MIGRATIONS"),  \
		EV(COLOC_CTR_PAGE_FAULTS, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,   \
		   "page-faults", "perf_event_open(2): PERF_COUNT_SW_PAGE_FAULTS")

#define SDM_ARCH "Intel SDM Vol. 3B, Pre-defined Architectural Performance Events, Table 20-1"

/* The four architectural events every Intel table shares; src names the perfmon files. */
#define INTEL_ARCH_EVENTS(src)                                                                  \
	EV(COLOC_CTR_CYCLES, PERF_TYPE_RAW, INTEL_RAW(0x3c, 0x00), "CPU_CLK_UNHALTED.THREAD_P", \
	   SDM_ARCH ": UnHalted Core Cycles"),                                                  \
		EV(COLOC_CTR_INSTRUCTIONS, PERF_TYPE_RAW, INTEL_RAW(0xc0, 0x00),                \
		   "INST_RETIRED.ANY_P", SDM_ARCH ": Instructions Retired"),                    \
		EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, INTEL_RAW(0x2e, 0x4f),                    \
		   "LONGEST_LAT_CACHE.REFERENCE", SDM_ARCH ": LLC Reference; " src),            \
		EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, INTEL_RAW(0x2e, 0x41),                  \
		   "LONGEST_LAT_CACHE.MISS", SDM_ARCH ": LLC Misses; " src)

/* The kernel's own map for family 17h and later uses the same two codes. */
#define AMD_CORE_EVENTS(ppr)                                                                    \
	EV(COLOC_CTR_CYCLES, PERF_TYPE_RAW, AMD_RAW(0x076, 0x00), "ls_not_halted_cyc",          \
	   "PMCx076 cycles not in halt; " ppr "; Linux amd_f17h_perfmon_event_map"),            \
		EV(COLOC_CTR_INSTRUCTIONS, PERF_TYPE_RAW, AMD_RAW(0x0c0, 0x00), "ex_ret_instr", \
		   "PMCx0C0 retired instructions; " ppr "; Linux amd_f17h_perfmon_event_map")

struct pmu_event_table {
	const char *name;
	struct pmu_event events[COLOC_NR_COUNTERS];
};

enum pmu_table_id {
	TBL_INTEL_SKYLAKE,
	TBL_INTEL_SKYLAKEX,
	TBL_INTEL_ICELAKE,
	TBL_INTEL_ICELAKEX,
	TBL_INTEL_SAPPHIRERAPIDS,
	TBL_INTEL_ARCH,
	TBL_AMD_ZEN1,
	TBL_AMD_ZEN2,
	TBL_AMD_ZEN3,
	TBL_AMD_ZEN4,
	TBL_AMD_ZEN5,
	TBL_GENERIC,
};

static const struct pmu_event_table pmu_tables[] = {
	[TBL_INTEL_SKYLAKE] = {
		"intel-skylake",
		{
			INTEL_ARCH_EVENTS("perfmon skylake/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, INTEL_RAW(0xb0, 0x10),
			   "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD",
			   "perfmon skylake/memory.json (demand data reads that miss L3)"),
			SW_EVENTS,
		},
	},
	[TBL_INTEL_SKYLAKEX] = {
		"intel-skylakex",
		{
			INTEL_ARCH_EVENTS("perfmon skylakex/cache.json, cascadelakex/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, INTEL_RAW(0xb0, 0x10),
			   "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD",
			   "perfmon skylakex/memory.json, cascadelakex/memory.json"),
			SW_EVENTS,
		},
	},
	[TBL_INTEL_ICELAKE] = {
		"intel-icelake",
		{
			INTEL_ARCH_EVENTS("perfmon icelake/cache.json, tigerlake/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, INTEL_RAW(0xb0, 0x10),
			   "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD",
			   "perfmon icelake/memory.json, tigerlake/memory.json"),
			SW_EVENTS,
		},
	},
	[TBL_INTEL_ICELAKEX] = {
		"intel-icelakex",
		{
			INTEL_ARCH_EVENTS("perfmon icelakex/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, INTEL_RAW(0xb0, 0x10),
			   "OFFCORE_REQUESTS.L3_MISS_DEMAND_DATA_RD",
			   "perfmon icelakex/memory.json"),
			SW_EVENTS,
		},
	},
	/* Golden Cove moved OFFCORE_REQUESTS to 0x21; its JSON has no L3-miss umask for it. */
	[TBL_INTEL_SAPPHIRERAPIDS] = {
		"intel-sapphirerapids",
		{
			INTEL_ARCH_EVENTS("perfmon sapphirerapids/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, INTEL_RAW(0xd3, 0x01),
			   "MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM",
			   "perfmon sapphirerapids/cache.json, emeraldrapids/cache.json "
			   "(retired loads served from local DRAM)"),
			SW_EVENTS,
		},
	},
	[TBL_INTEL_ARCH] = {
		"intel-architectural",
		{
			INTEL_ARCH_EVENTS("architectural, no model-specific table"),
			NO_EV(COLOC_CTR_DRAM_FILLS,
			      "none: DRAM-fill events are model specific and this model has no "
			      "table"),
			SW_EVENTS,
		},
	},
	[TBL_AMD_ZEN1] = {
		"amd-zen1",
		{
			AMD_CORE_EVENTS("AMD PPR Family 17h Model 01h"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, AMD_RAW(0x064, 0x09),
			   "l2_cache_req_stat.ic_dc_miss_in_l2",
			   "PMCx064 L2 misses (requests sent to the L3); perf amdzen1/cache.json"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, AMD_RAW(0x043, 0x58),
			   "ls_refills_from_sys.ls_mabresp_lcl_dram+rmt_cache+rmt_dram",
			   "PMCx043 LsRefillsFromSys, demand fills from beyond the CCX; AMD PPR "
			   "Family 17h Model 01h; umasks as perf amdzen2/memory.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, AMD_RAW(0x043, 0x48),
			   "ls_refills_from_sys.ls_mabresp_lcl_dram+rmt_dram",
			   "PMCx043 LsRefillsFromSys, demand fills from DRAM; AMD PPR Family 17h "
			   "Model 01h; umasks as perf amdzen2/memory.json"),
			SW_EVENTS,
		},
	},
	[TBL_AMD_ZEN2] = {
		"amd-zen2",
		{
			AMD_CORE_EVENTS("AMD PPR Family 17h Model 31h"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, AMD_RAW(0x064, 0x09),
			   "l2_cache_req_stat.ic_dc_miss_in_l2",
			   "PMCx064 L2 misses (requests sent to the L3); perf amdzen2/cache.json"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, AMD_RAW(0x043, 0x58),
			   "ls_refills_from_sys.ls_mabresp_lcl_dram+rmt_cache+rmt_dram",
			   "PMCx043 LsRefillsFromSys, demand fills from beyond the CCX; perf "
			   "amdzen2/memory.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, AMD_RAW(0x043, 0x48),
			   "ls_refills_from_sys.ls_mabresp_lcl_dram+rmt_dram",
			   "PMCx043 LsRefillsFromSys, demand fills from DRAM; perf "
			   "amdzen2/memory.json"),
			SW_EVENTS,
		},
	},
	[TBL_AMD_ZEN3] = {
		"amd-zen3",
		{
			AMD_CORE_EVENTS("AMD PPR Family 19h Model 01h"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, AMD_RAW(0x064, 0x09),
			   "l2_cache_req_stat.ic_dc_miss_in_l2",
			   "PMCx064 L2 misses (requests sent to the L3); perf amdzen3/cache.json"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, AMD_RAW(0x044, 0x5c),
			   "ls_any_fills_from_sys.ext_cache_local+mem_io_local+"
			   "ext_cache_remote+mem_io_remote",
			   "PMCx044 any fills from beyond the CCX; perf amdzen3/memory.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, AMD_RAW(0x044, 0x48),
			   "ls_any_fills_from_sys.mem_io_local+mem_io_remote",
			   "PMCx044 any fills from DRAM or IO; perf amdzen3/memory.json"),
			SW_EVENTS,
		},
	},
	[TBL_AMD_ZEN4] = {
		"amd-zen4",
		{
			AMD_CORE_EVENTS("AMD PPR Family 19h Model 11h"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, AMD_RAW(0x064, 0x09),
			   "l2_cache_req_stat.ic_dc_miss_in_l2",
			   "PMCx064 L2 misses (requests sent to the L3); perf amdzen4/cache.json"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, AMD_RAW(0x044, 0x5c),
			   "ls_any_fills_from_sys.near_cache+dram_io_near+far_cache+dram_io_far",
			   "PMCx044 any fills from beyond the CCX; perf amdzen4/cache.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, AMD_RAW(0x044, 0x48),
			   "ls_any_fills_from_sys.dram_io_all",
			   "PMCx044 any fills from DRAM or MMIO in any node; perf "
			   "amdzen4/cache.json"),
			SW_EVENTS,
		},
	},
	[TBL_AMD_ZEN5] = {
		"amd-zen5",
		{
			AMD_CORE_EVENTS("AMD PPR Family 1Ah Model 02h"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_RAW, AMD_RAW(0x064, 0x09),
			   "l2_cache_req_stat.ic_dc_miss_in_l2",
			   "PMCx064 L2 misses (requests sent to the L3); perf "
			   "amdzen5/recommended.json all_l2_cache_misses_pti"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_RAW, AMD_RAW(0x044, 0x5c),
			   "ls_any_fills_from_sys.near_cache+dram_io_near+far_cache+dram_io_far",
			   "PMCx044 any fills from beyond the CCX; perf amdzen5/load-store.json"),
			EV(COLOC_CTR_DRAM_FILLS, PERF_TYPE_RAW, AMD_RAW(0x044, 0x48),
			   "ls_any_fills_from_sys.dram_io_all",
			   "PMCx044 any fills from DRAM or MMIO in any node; perf "
			   "amdzen5/load-store.json"),
			SW_EVENTS,
		},
	},
	[TBL_GENERIC] = {
		"generic",
		{
			EV(COLOC_CTR_CYCLES, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles",
			   "perf_event_open(2): PERF_COUNT_HW_CPU_CYCLES, event chosen by the "
			   "kernel"),
			EV(COLOC_CTR_INSTRUCTIONS, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
			   "instructions",
			   "perf_event_open(2): PERF_COUNT_HW_INSTRUCTIONS, event chosen by the "
			   "kernel"),
			EV(COLOC_CTR_LLC_REFS, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES,
			   "cache-references",
			   "perf_event_open(2): PERF_COUNT_HW_CACHE_REFERENCES, event chosen by "
			   "the kernel, not necessarily the LLC"),
			EV(COLOC_CTR_LLC_MISSES, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
			   "cache-misses",
			   "perf_event_open(2): PERF_COUNT_HW_CACHE_MISSES, event chosen by the "
			   "kernel, not necessarily the LLC"),
			NO_EV(COLOC_CTR_DRAM_FILLS,
			      "none: no generic DRAM-fill event and no table for this CPU"),
			SW_EVENTS,
		},
	},
};

struct pmu_model_range {
	const char *vendor;
	int family;
	int model_lo, model_hi;
	enum pmu_table_id table;
};

/*
 * Intel models as in perf's pmu-events/arch/x86/mapfile.csv; AMD Zen
 * generations by family/model as the kernel's X86_FEATURE_ZEN1..5 split them
 * (arch/x86/kernel/cpu/amd.c), Zen 1 vs 2 as perf's mapfile. Hygon's
 * Dhyana (family 18h) is a Zen 1 core.
 */
static const struct pmu_model_range pmu_models[] = {
	{ "GenuineIntel", 6, 0x4e, 0x4e, TBL_INTEL_SKYLAKE },
	{ "GenuineIntel", 6, 0x5e, 0x5e, TBL_INTEL_SKYLAKE },
	{ "GenuineIntel", 6, 0x8e, 0x8e, TBL_INTEL_SKYLAKE },
	{ "GenuineIntel", 6, 0x9e, 0x9e, TBL_INTEL_SKYLAKE },
	{ "GenuineIntel", 6, 0xa5, 0xa6, TBL_INTEL_SKYLAKE },
	{ "GenuineIntel", 6, 0x55, 0x55, TBL_INTEL_SKYLAKEX },
	{ "GenuineIntel", 6, 0x7d, 0x7e, TBL_INTEL_ICELAKE },
	{ "GenuineIntel", 6, 0xa7, 0xa7, TBL_INTEL_ICELAKE },
	{ "GenuineIntel", 6, 0x8c, 0x8d, TBL_INTEL_ICELAKE },
	{ "GenuineIntel", 6, 0x6a, 0x6a, TBL_INTEL_ICELAKEX },
	{ "GenuineIntel", 6, 0x6c, 0x6c, TBL_INTEL_ICELAKEX },
	{ "GenuineIntel", 6, 0x8f, 0x8f, TBL_INTEL_SAPPHIRERAPIDS },
	{ "GenuineIntel", 6, 0xcf, 0xcf, TBL_INTEL_SAPPHIRERAPIDS },
	{ "AuthenticAMD", 0x17, 0x00, 0x2f, TBL_AMD_ZEN1 },
	{ "AuthenticAMD", 0x17, 0x30, 0xff, TBL_AMD_ZEN2 },
	{ "HygonGenuine", 0x18, 0x00, 0xff, TBL_AMD_ZEN1 },
	{ "AuthenticAMD", 0x19, 0x00, 0x0f, TBL_AMD_ZEN3 },
	{ "AuthenticAMD", 0x19, 0x20, 0x5f, TBL_AMD_ZEN3 },
	{ "AuthenticAMD", 0x19, 0x10, 0x1f, TBL_AMD_ZEN4 },
	{ "AuthenticAMD", 0x19, 0x60, 0xaf, TBL_AMD_ZEN4 },
	{ "AuthenticAMD", 0x1a, 0x00, 0x2f, TBL_AMD_ZEN5 },
	{ "AuthenticAMD", 0x1a, 0x40, 0x4f, TBL_AMD_ZEN5 },
	{ "AuthenticAMD", 0x1a, 0x60, 0x7f, TBL_AMD_ZEN5 },
};

__u64 pmu_amd_raw_config(unsigned int event, unsigned int umask)
{
	return AMD_RAW(event, umask);
}

__u64 pmu_intel_raw_config(unsigned int event, unsigned int umask)
{
	return INTEL_RAW(event, umask);
}

int pmu_event_table_lookup(const char *vendor, int family, int model,
			   const struct pmu_event **events, const char **table)
{
	enum pmu_table_id id = TBL_GENERIC;

	if (!vendor || !events || !table)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(pmu_models) / sizeof(pmu_models[0]); i++) {
		const struct pmu_model_range *r = &pmu_models[i];

		if (!strcmp(vendor, r->vendor) && family == r->family && model >= r->model_lo &&
		    model <= r->model_hi) {
			id = r->table;
			break;
		}
	}
	/* The architectural events exist on every Intel core that has a PMU at all. */
	if (id == TBL_GENERIC && !strcmp(vendor, "GenuineIntel"))
		id = TBL_INTEL_ARCH;
	*events = pmu_tables[id].events;
	*table = pmu_tables[id].name;
	return 0;
}
