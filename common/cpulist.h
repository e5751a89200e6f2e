/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel's CPU-list syntax ("0-3,8,10-11"), as sysfs files print it and
 * as people type it on command lines: the one parser coloc has.
 */
#ifndef COLOC_COMMON_CPULIST_H
#define COLOC_COMMON_CPULIST_H

#include "error.h"

/*
 * cpulist_parse() flag for text read from a sysfs file: whitespace around the
 * list (the file's trailing newline) is skipped, and an empty list is valid
 * (0 CPUs), as in a cpumask file of a PMU with no CPU online.
 */
#define CPULIST_SYSFS 1u

/*
 * Parses text into cpus[], in the order written. Every id is in
 * [0, COLOC_MAX_CPUS), a range runs upwards and no CPU appears twice;
 * without CPULIST_SYSFS the list must be non-empty with nothing around it.
 * Returns the number of CPUs stored, or -EINVAL (bad syntax, a reversed
 * range, a CPU listed twice), -ERANGE (an id of COLOC_MAX_CPUS or more) or
 * -E2BIG (more than max_cpus CPUs); err (may be NULL) says which.
 */
int cpulist_parse(const char *text, unsigned int flags, int *cpus, int max_cpus,
		  struct coloc_err *err);

#endif /* COLOC_COMMON_CPULIST_H */
