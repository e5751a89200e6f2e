/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The one bound on CPU ids in coloc, shared by the BPF programs (through
 * sensor.h) and every user-space part: a CPU id is in [0, COLOC_MAX_CPUS).
 * 1024 covers two-socket 256-core servers with SMT and equals glibc's
 * CPU_SETSIZE, so a cpu_set_t holds every id; arrays sized by it cost 4 KiB
 * per int, small enough for a stack frame.
 */
#ifndef COLOC_LIMITS_H
#define COLOC_LIMITS_H

#define COLOC_MAX_CPUS 1024

#endif /* COLOC_LIMITS_H */
