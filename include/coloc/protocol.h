/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The colocd control protocol, spoken over a Unix stream socket (default
 * COLOC_DEFAULT_SOCKET, mode 0660, root or members of the `coloc` group,
 * checked with SO_PEERCRED).
 *
 * Who may connect: root, or a member of the `coloc` group (primary or
 * supplementary, as SO_PEERCRED/SO_PEERGROUPS recorded it at connect), from
 * colocd's own pid namespace: the pids a request names are read in that
 * namespace, so a client in a container (another pid namespace) is refused
 * rather than allowed to name the wrong processes. A refused peer gets one
 * error line and the connection is closed.
 *
 * Connections: at most COLOC_MAX_CONNS (64) in all, COLOC_ROOT_CONNS (8) of
 * them kept for root; no other uid holds more than COLOC_CONNS_PER_UID (16):
 * one more is refused with the reason. When the slots
 * others may use are full, a newcomer evicts the oldest idle connection of
 * the uid holding the most, if that uid holds two more than the newcomer;
 * root, when all 64 are taken, evicts the oldest idle connection of anyone.
 * An evicted connection gets an error line first. A connection that neither
 * completes a request nor takes in its answer for colocd's
 * --conn-timeout-ms (default 30 s) is closed: idle clients and slow ones
 * alike.
 *
 * Descriptors: a request line may carry up to COLOC_MAX_REQUEST_FDS
 * (SCM_RIGHTS, sent with the line's bytes); only submit and an infer with
 * "input":"memfd" take any, every other request's are closed. More waiting on one connection than that,
 * or a truncated control message, closes every one of them and the
 * connection, after an error line.
 *
 * Framing: one request per line, a JSON object ending in '\n'; one response
 * per request, also a single JSON line. A request line longer than
 * COLOC_MAX_REQUEST bytes gets an error response and the connection is
 * closed (the stream cannot be resynchronised); any other bad request gets an
 * error response and the connection stays usable. A last request cut off by
 * the client's EOF (a half-close) is still answered. JSON is read and
 * written with json-c, never by hand.
 *
 * Binary frames (infer only; tensors never travel as JSON): the request
 * line is followed by exactly "input_bytes" raw bytes, and an answer with
 * "output_bytes":M by exactly M raw bytes. Answers come in request order,
 * except infer answers, which come when their query completes (in
 * completion order, told apart by "tag"), so many infers may be in flight
 * on one connection (pipelining). colocd owes a connection at most
 * COLOC_MAX_INFLIGHT infer answers, and holds at most 4 MiB of answers the
 * client has not taken: beyond either it reads no more of that
 * connection's requests until it catches up (a client must read answers
 * while it sends; libcoloc_client does). Answers already owed still come:
 * past 64 MiB of them unsent, colocd closes the connection (their answers
 * are lost, as below). A connection owed answers is not timed out. A client that closes its connection with queries in flight
 * loses their answers; the queries still run, nothing else is affected.
 *
 * Requests are strict JSON (RFC 8259: no comments, no single quotes, no
 * trailing commas) in valid UTF-8, and no string may hold a NUL ("\u0000"):
 * such a request is refused whole. Every response is valid UTF-8: an error
 * that quotes a name or path quotes it cut between characters, never inside
 * one, and bytes that are not UTF-8 (from a file name) appear as '?'.
 *
 * Every response has "ok": true | false; on false, "error" says what was
 * wrong in words an operator can act on.
 *
 * Owners (docs/security-owners.md): every tenant, submitted or attributed,
 * belongs to the uid whose connection created it (SO_PEERCRED); --state
 * keeps it (a tenant from a file without owners is root's). Its owner and
 * root may remove, restart and query it, change or forget it (tenant-add,
 * tenant-remove) and see it in full (status NAME, and every listing).
 * Anyone else asking by name gets "tenant NAME belongs to another user"
 * and nothing more, and sees it in listings ("list", "status", "tenants",
 * "signals") as {"name","state" (serving tenants),"owner":UID} only: no
 * file names, pids, cgroup, numbers or reasons. Machine-level figures
 * stay public: every CPU's and socket's signals, and which tenant's block
 * holds each core ("cores": "cpu","busy","slowdown","tenant"; the query,
 * layers and versions only for the caller's own tenants).
 *
 * Per-uid quotas (colocd options; root is held to the global limits
 * only): a uid owns at most --max-tenants-per-uid serving tenants
 * (default 16) and as many attributed ones (a serving tenant's executors
 * are attributed to a tenant of its name and owner, counted there), at
 * most --max-executors-per-uid executors over its serving tenants (default
 * 16), and its tenants hold at most --max-queued-per-uid queries queued or
 * running (default 1024; counted against the tenant's owner, whoever sent
 * them). Past one, the request is refused with the quota and the option
 * that raises it named.
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
 *     tenant NAME, creating it if new ("pids" or "cgroup" required), owned
 *     by the caller. All or
 *     nothing: on any error the tenant is left as it was (and a new one is
 *     not created). Refused: another user's tenant; unless the caller is
 *     root, a process whose real or effective uid is not the caller's and a
 *     cgroup whose directory the caller does not own ("... belongs to
 *     another user"); a pid that is a thread (give its process), pid 1
 *     and colocd's own pid, a process or cgroup of another tenant, more than
 *     COLOC_MAX_PIDS_PER_REQUEST pids in one request or
 *     COLOC_MAX_PIDS_PER_TENANT in a tenant,
 *     and a cgroup that is not a cgroup v2 directory below /sys/fs/cgroup/,
 *     is the cgroup v2 root, is named with a ".", ".." or "-" component, or
 *     whose resolved path is not valid UTF-8.
 *     A tenant's cgroup counts the processes in it and in its descendants
 *     down to 31 levels below it (the BPF side looks 32 levels up from a
 *     task, SENSOR_CGROUP_DEPTH in bpf/sensor.bpf.c); deeper ones are not
 *     counted. colocd holds each process by a pidfd: a process leaves its
 *     tenant as soon as it exits, so its pid, if reused, is not charged to
 *     the tenant.
 *     -> {"ok":true,"tenant":<tenant object>}
 *   {"cmd":"tenant-remove","name":"NAME"}
 *     Forgets the tenant and its numbers; "no tenant named" if unknown,
 *     refused for another user's.
 *     -> {"ok":true}
 *   {"cmd":"tenants"}
 *     -> {"ok":true,"tenants":[<tenant object>...]}
 *
 *
 * Serving (tenants that colocd runs, one executor process each, or N):
 *   {"cmd":"submit","name":"NAME","model":"m.onnx","weights":"w.bin"?,
 *    "external":["LOCATION",...]?,"qos_ms":F,"executors":N?}
 *     + descriptors (SCM_RIGHTS on the bytes of this line, sent with it in
 *     one sendmsg): the model, the weights if "weights" is given, then one
 *     per "external" location, in that order and no others. colocd opens
 *     no path a client names: the client opens each file with its own
 *     permissions ("model" and "weights" are the client's names for them,
 *     shown in status and messages; "model" ending in ".onnx" means ONNX).
 *     "external": the ONNX model's external data locations, each a
 *     relative path below the model's directory (no "..", under 256
 *     bytes, at most COLOC_MAX_REQUEST_FDS - 1), as the model names them.
 *     Each descriptor must be a regular file open for reading, not empty,
 *     of at most COLOC_MAX_SUBMIT_FILE_BYTES (COLOC_MAX_SUBMIT_BYTES for
 *     all of a submit's files), on no FUSE, proc, sysfs or similar
 *     filesystem; it is refused from fstat before any read (a FIFO, a
 *     device, a socket) and otherwise copied once into a sealed memfd,
 *     which is what the model is read from. A request with descriptors it
 *     does not name, or too few, is refused and they are all closed.
 *     Then: validates the model (a malformed one: "NAME:LINE: what"; no
 *     error quotes a value read from a file), finds its latency profile in
 *     colocd's cache by the hash of those bytes (missing: the error names
 *     the coloc-profile command that makes it), rejects a QoS below the
 *     model's profiled solo latency on all served cores (both numbers in
 *     the error), and starts the executor (state "starting", then
 *     "ready"). "executors" (1 to
 *     COLOC_MAX_EXECUTORS, default 1): executor processes (with colocd
 *     --executor-lanes, lanes of one process with one copy of the model),
 *     each running a block of another query of the tenant at once; all
 *     start and fail together. The executors' processes are attributed to the tenant of
 *     the same name in the BPF maps (the "tenants" and "signals" commands
 *     show them), each leaving it with its executor, unless another user
 *     owns an attributed tenant of that name. The tenant is the caller's;
 *     its quotas apply. With --state, the file is rewritten and colocd
 *     keeps its own copy of the files' bytes beside it (a restart reads
 *     those, never the client's paths).
 *     -> {"ok":true,"tenant":<serving tenant>,"warning":S (only when --state
 *         could not take the tenant; the file is written after the answer,
 *         off colocd's loop, and a write that fails then is said in its log)}
 *   {"cmd":"list"}
 *     -> {"ok":true,"tenants":[{"name":S,"state":S,"owner":N,"qos_ms":F,"pid":N
 *         (the first executor's),"executors":N}]} (another user's: name,
 *         state, owner)
 *   {"cmd":"status"} or {"cmd":"status","name":"NAME"} ("no tenant named" if
 *   unknown, refused for another user's)
 *     -> {"ok":true,"tenants":[<serving tenant>...],
 *         "cores":[{"cpu":N,"busy":bool, when busy: "tenant":S,"query":N,
 *                   "first_layer":N,"last_layer":N (one past),
 *                   "versions":[N per layer]; under a policy that shares
 *                   cores (os) instead "shared":true,"blocks":N (blocks
 *                   running on it at once, no one holding it)}],
 *         "policy_errors":N,"last_policy_error":S|null}
 *   {"cmd":"remove","name":"NAME"}
 *     Takes no new queries for NAME and lets the accepted ones finish; the
 *     answer comes once they have and the executor is stopped (a failed
 *     or starting tenant goes at once). -> {"ok":true}
 *   {"cmd":"restart","name":"NAME"}
 *     A failed tenant starts a new executor; an error for any other state.
 *     remove and restart: the owner's or root's only.
 *     -> {"ok":true}
 *   {"cmd":"infer","tenant":"NAME","tag":N,"input_bytes":B} + B raw bytes
 *     One query: the bytes are the model's inputs as raw little-endian
 *     fp32, one after another in layer order (include/coloc/shm.h's
 *     layout), B the tenant's "input_bytes". tag: any non-negative integer
 *     of the client's, echoed in the answer. Its deadline is arrival + QoS.
 *     -> {"ok":true,"tag":N,"status":"ok","latency_ns":N (arrival to
 *         completion in colocd),"exec_ns":N (of which in the executor),
 *         "parts_ns":{"queued":N,"dispatch":N,"compute":N,"copy":N,
 *         "notice":N,"decide":N,"reply":N} (the latency part by part, adding
 *         up to it: enum coloc_latency_part below says what each is),
 *         "receive_ns":N (before arrival, not in latency_ns: colocd's first
 *         read of the request's bytes until its input was complete),
 *         "first_byte_at_ns":N,"answered_at_ns":N (colocd's CLOCK_MONOTONIC
 *         at that first read and as the answer went to the socket: a client
 *         on the same clock sees its request's way in and the answer's way
 *         out),"woke_at_ns":N (colocd's CLOCK_MONOTONIC as its event loop
 *         woke in the turn of that first read, 0 when not known: the way
 *         in's wake-up apart from colocd's work),"output_bytes":M} + M raw
 *         bytes (the outputs, fp32, shm.h's layout)
 *     -> {"ok":false,"tag":N,"status":"rejected","error":S} at once: no such
 *        tenant, another user's, a size that is not the model's, a full
 *        queue (per tenant, per owner and in all), a draining or failed
 *        tenant, colocd shutting down
 *        (a starting tenant queues the query until it is ready);
 *     -> {"ok":false,"tag":N,"status":"dropped"|"failed","error":S,
 *         "latency_ns":N,"exec_ns":N,"parts_ns":{...},"receive_ns":N,
 *         "first_byte_at_ns":N,"answered_at_ns":N,"woke_at_ns":N}: given up
 *        on past its deadline, or its executor failed.
 *     No bytes follow an ok:false answer. A line without a string "tenant"
 *     and integer "tag" and "input_bytes" is answered with an error and the
 *     connection closed (the bytes after it cannot be skipped); so is
 *     "input_bytes" over COLOC_MAX_PAYLOAD (a memfd's line is only refused:
 *     no bytes follow it), and an "input" other than "memfd". A connection that ends inside the bytes gets "truncated
 *     payload" and is closed.
 *   {"cmd":"infer","tenant":"NAME","tag":N,"input_bytes":B,"input":"memfd",
 *    "input_offset":O?}
 *     + one descriptor on the line (SCM_RIGHTS), no bytes after it: the
 *     same query, its input the B bytes from O on (default 0, at most
 *     COLOC_MAX_PAYLOAD_OFFSET) of a memfd (memfd_create) sealed against
 *     shrinking (F_SEAL_SHRINK) and at least O + B bytes long.
 *     colocd reads it with pread, straight into the query's shm slot, once
 *     the query gets one (at once when the tenant has a free slot): the
 *     client must leave those bytes as they are until the answer (one
 *     memfd may serve many queries in flight that share an input). The
 *     answer is the same as above, outputs after the line. Refused
 *     ("rejected", the connection kept): no descriptor or more than one, a
 *     descriptor that is not a regular file (a FIFO, a directory, a
 *     socket, a device: said), a regular file that is not a memfd (no
 *     seals), a memfd not sealed against shrinking, one smaller than O + B, one
 *     not open for reading; then as above. A client that never opts in
 *     sends its bytes on the socket as before (docs/design/infer-memfd.md).
 *
 * A serving tenant: {"name":S,"state":"starting"|"ready"|"draining"|"failed",
 *   "owner":N (its uid; all another user sees),
 *   "reason":S|null (why failed),"note":S|null (admission note),
 *   "isolation":S|null (how its executor is kept apart: its own pid and
 *   mount namespace, or why not),"model":S,
 *   "pid":N (the first executor's; 0 when none runs),"executors":N,
 *   "pids":[N per executor, 0 for one not running],"moved":N (queries moved
 *   to another, idle executor of the tenant before their first block),
 *   "clamped_times":N (completions whose times the executor reported out of
 *   bounds, clamped to colocd's own round trip),"qos_ms":F,"solo_ms":F
 *   (profiled alone on all served cores),"input_bytes":N,"output_bytes":N,
 *   "queued":N,"in_flight":N,"offered_rate":F,"served_rate":F (queries/s
 *   over the last 10 s),"p50_ms","p95_ms","p99_ms":F (over the last 1024
 *   served),"parts":{"queued":{"p50_ms":F,"p95_ms":F},"dispatch":...} (each
 *   part of their latency, as in infer's parts_ns, its own percentiles over
 *   the same queries),"within_qos":F (fraction of all served),"offered","served",
 *   "dropped","rejected","failed":N,"last_drop","last_reject",
 *   "last_failure":S|null}
 *
 * A tenant object: {"name":S,"owner":N (its uid; all another user sees),
 *   "id":N,"pids":[...],"cgroup":S|null,
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
#define COLOC_MAX_PIDS_PER_TENANT 256
#define COLOC_MAX_EXECUTORS 8 /* executor processes of one serving tenant */
#define COLOC_MAX_CONNS 64
#define COLOC_ROOT_CONNS 8
#define COLOC_CONNS_PER_UID 16
#define COLOC_MAX_INFLIGHT 1024 /* infer answers one connection may be owed */
#define COLOC_MAX_PAYLOAD (64u << 20) /* bytes of one infer input */
#define COLOC_MAX_PAYLOAD_OFFSET (1ull << 40) /* where in its memfd an infer input may start */
/* descriptors one request line may carry (SCM_RIGHTS): a submit's files */
#define COLOC_MAX_REQUEST_FDS 32
/* a file handed over with a submit, and all of one submit's files together */
#define COLOC_MAX_SUBMIT_FILE_BYTES (2ull << 30)
#define COLOC_MAX_SUBMIT_BYTES (4ull << 30)

/*
 * Where a served query's time went, from its arrival in colocd to its
 * completion (infer's "parts_ns", status's "parts"); the parts add up to
 * its latency. Per block, summed over its blocks: dispatch (command
 * written until the executor took it: the doorbell's wake-up), compute
 * (the executor's time in the block: re-pinning and the layers), copy
 * (the rest of the executor's work: the input into its activations, the
 * output into the slot), notice (the executor's completion until colocd
 * noticed it). Between blocks: queued (arrival until the first block's
 * command: a query slot, the policy, free cores) and decide (a block
 * noticed until the next one's command). reply: the last completion
 * noticed until the query completed.
 */
enum coloc_latency_part {
	COLOC_PART_QUEUED,
	COLOC_PART_DISPATCH,
	COLOC_PART_COMPUTE,
	COLOC_PART_COPY,
	COLOC_PART_NOTICE,
	COLOC_PART_DECIDE,
	COLOC_PART_REPLY,
	COLOC_NR_PARTS,
};

/* Their names in the protocol, in that order (an initializer for a char *[COLOC_NR_PARTS]). */
#define COLOC_PART_NAMES                                                             \
	{                                                                            \
		"queued", "dispatch", "compute", "copy", "notice", "decide", "reply" \
	}

#endif /* COLOC_PROTOCOL_H */
