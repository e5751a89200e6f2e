/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The colocd control protocol, spoken over a Unix stream socket (default
 * COLOC_DEFAULT_SOCKET, mode 0660, root or members of the `coloc` group,
 * checked with SO_PEERCRED).
 *
 * Framing: one request per line, a JSON object ending in '\n'; one response
 * per request, also a single JSON line, in order. A request line longer than
 * COLOC_MAX_REQUEST bytes gets an error response and the connection is
 * closed (the stream cannot be resynchronised); any other bad request gets an
 * error response and the connection stays usable. JSON is read and written
 * with json-c, never by hand.
 *
 * Every response has "ok": true | false; on false, "error" says what was
 * wrong in words an operator can act on.
 *
 * Requests ("cmd" selects):
 *   {"cmd":"ping"}
 *     -> {"ok":true,"version":"...","pid":N}
 *   {"cmd":"signals"}
 *     -> {"ok":true,"window_ms":N,"span_ms":N,"signals":"<colocd's one-line
 *         summary of live and absent signals>","pmu":bool,
 *         "cpus":[{"cpu":N,"socket":N,"windows":N,"busy":F,"ctx_switches_per_s":F,
 *                  "migrations_per_s":F,"page_faults_per_s":F,
 *                  and only where the PMU counts them: "ipc","llc_mpki",
 *                  "llc_miss_ratio","dram_gbps"}],
 *         "sockets":[{"socket":N (0..n-1 in package-id order, as in "cpus"),
 *                  "package_id":N,"cpus":N,"busy":F, "dram_gbps" (sum of
 *                  cores, PMU only), "uncore_read_gbps","uncore_write_gbps"
 *                  (uncore PMU only)}],
 *         "tenants":[<tenant object, below>],
 *         "sensor":{"samples":N,"switches":N,"records":N,"drops":N}}
 *   {"cmd":"tenant-add","name":"NAME","pids":[PID,...],"cgroup":"/sys/fs/cgroup/..."}
 *     Attributes the processes (all their threads) and/or the cgroup v2 to
 *     tenant NAME, creating it if new ("pids" or "cgroup" required).
 *     -> {"ok":true,"tenant":<tenant object>}
 *   {"cmd":"tenant-remove","name":"NAME"}
 *     -> {"ok":true}
 *   {"cmd":"tenants"}
 *     -> {"ok":true,"tenants":[<tenant object>...]}
 *
 * A tenant object: {"name":S,"id":N,"pids":[...],"cgroup":S|null,
 *   "busy":F (CPUs' worth over the span),"on_cpu_ns":N (since added; by
 *   the clock, so in a VM it includes time the hypervisor stole while the
 *   tenant held the vCPU, which /proc's utime+stime leave out),
 *   and where live: "llc_misses_per_s","dram_gbps","llc_misses","dram_bytes"}
 *
 * Names: 1..COLOC_MAX_NAME-1 characters of [A-Za-z0-9_.-].
 */
#ifndef COLOC_PROTOCOL_H
#define COLOC_PROTOCOL_H

#define COLOC_DEFAULT_SOCKET "/run/coloc/colocd.sock"
#define COLOC_DEFAULT_PIN_DIR "/sys/fs/bpf/coloc"
#define COLOC_GROUP "coloc"
#define COLOC_MAX_REQUEST 65536
#define COLOC_MAX_NAME 64
#define COLOC_MAX_PIDS_PER_REQUEST 1024

#endif /* COLOC_PROTOCOL_H */
