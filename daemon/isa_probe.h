/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The ISA oneDNN dispatches to on this machine (the profile cache key's
 * part only oneDNN can say), asked once of the executor binary
 * (`coloc-executor --print-isa`), so that colocd links no oneDNN.
 */
#ifndef COLOC_DAEMON_ISA_PROBE_H
#define COLOC_DAEMON_ISA_PROBE_H

#include <stddef.h>
#include "error.h"

#define ISA_PROBE_TIMEOUT_MS 10000

/*
 * Runs executor (NULL: coloc-executor beside this program) with
 * --print-isa, an empty environment (as execproc starts executors, so the
 * ISA is theirs) and stdin /dev/null, and reads its one line: 1 to len - 1
 * of [a-z0-9_] into isa. Blocks up to ISA_PROBE_TIMEOUT_MS (then kills
 * it). 0, or -errno with err saying what went wrong.
 */
int isa_probe(const char *executor, char *isa, size_t len, struct coloc_err *err);

#endif /* COLOC_DAEMON_ISA_PROBE_H */
