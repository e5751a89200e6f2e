# coloc — the one Makefile.
#
#   make                 build everything: binaries in bin/, the rest in build/
#   make check           build and run every test (as root: real BPF is loaded)
#   make check-unit      build and run the tests that need neither root nor BPF
#                        (policy, simulator, parsers, executor, ...), as any user;
#                        both first run tools/check-sizes.sh (files <= 1,000 lines,
#                        functions <= 150) and tools/check-links.py (every relative
#                        link of the Markdown files resolves)
#   SANITIZE=1 make check   the same under ASan+UBSan (objects in build/san/)
#   make deps            install the Debian packages coloc needs, create the
#                        coloc group and user (as root; idempotent)
#   make demo            tenants served by colocd, driven by coloc-load under each policy
#   make install         binaries, systemd unit, man pages, models under PREFIX
#                        (/usr/local), below DESTDIR if set; make uninstall
#   make bench-sensing   colocd's sampling overhead, as a ratio to no sampling
#   make bench-executor  executor latency and GFLOP/s, as ratios to oneDNN's default
#   make bench-sim       simulated QoS-QPS: this machine against bench-qos, then 64 cores
#                        (make bench-sim-2core: the check against bench-qos alone)
#   make bench-qos       measured QoS-QPS of every policy on each tenant mix, as root (a long
#                        run; ARGS=--quick for a first look in minutes, ARGS=--help for more)
#   make bench-onnx      coloc against ONNX Runtime on the same ONNX files, as ratios
#   make ort             ONNX Runtime (npm onnxruntime-node) into build/ort, if missing
#   make ort-models      the npm packages with real ONNX models the tests run, if missing
#   make grpc-node       the Node gRPC client (npm @grpc/grpc-js) the gateway's test runs
#   make profiles        a latency profile for every model, in build/profiles/
#   make image           coloc's container image from Debian packages (mmdebstrap,
#                        podman; as root): localhost/coloc:VERSION, build/image/coloc.oci.tar
#   make check-image     run colocd and the gateway from that image, check them with curl
#                        (slow, not part of make check; docs/operators.md)
#   make check-systemd   colocd under a real systemd in a container, its unit as installed
#   make format          clang-format every C file in place
#   V=1                  show full commands
#
# Run as root, or prefix sudo: make check, make demo, make deps, make install.
#
# The BPF pipeline is libbpf-bootstrap's: vmlinux.h from the kernel's BTF,
# clang -target bpf, `bpftool gen object` (strips DWARF), `bpftool gen skeleton`.

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:
.DEFAULT_GOAL := all

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
endif

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
OBJ := build/san
BIN := build/san/bin
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
OBJ := build/obj
BIN := bin
SANFLAGS :=
endif
GEN := build/gen

CC ?= gcc
CLANG ?= clang
# Debian installs bpftool in /usr/sbin, off a normal user's PATH
BPFTOOL ?= $(or $(shell command -v bpftool),/usr/sbin/bpftool)
PKGS := libbpf liburing hwloc json-c libseccomp

# The goals that build here. check and demo do not: they install what is
# missing (tools/deps.sh, as root), then build and run in a make of their
# own (run-check, run-demo), which reads the packages' flags afresh. Nothing
# is installed while the Makefile is read; building goals only check.
BUILD_GOALS := $(if $(MAKECMDGOALS),$(filter-out deps clean format uninstall check demo,$(MAKECMDGOALS)),all)
ifneq ($(BUILD_GOALS),)
ifneq ($(shell tools/deps.sh --check >&2 && echo ok),ok)
$(error coloc: required Debian packages are missing (see above))
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
endif

ARCH := x86
# executor/'s three libraries each have a folder of public headers
# (DEVELOPERS.md); the headers private to one stay beside its sources.
INC_MODEL := -Iexecutor/include/model
INC_EXEC := -Iexecutor/include/exec
INC_PROFILE := -Iexecutor/include/profile
# The headers an object may include: everything, unless its library says
# less (below: colocd's objects see only what colocd links). Recursive, so
# that those target-specific values reach CFLAGS.
LIB_INCLUDES = -Idaemon -Iexecutor $(INC_MODEL) $(INC_EXEC) $(INC_PROFILE) -Ipolicy -Isim
OPENMP = -fopenmp
DEPFLAGS = -MMD -MP
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Wformat=2 -Werror $(OPENMP) -pthread $(SANFLAGS) \
	  -Iinclude -Icommon $(LIB_INCLUDES) -I$(GEN) -isystem $(GEN)/kselftest \
	  $(PKG_CFLAGS) $(DEPFLAGS)
LDFLAGS += -fopenmp -pthread $(SANFLAGS)
LDLIBS := $(PKG_LIBS) -ldnnl -lprotobuf-c -lm
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Iinclude -I$(GEN)

# ---- sources, found by folder ------------------------------------------------
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(GEN)/%.skel.h,$(BPF_SRCS))

COMMON_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard common/*.c))
DAEMON_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(filter-out daemon/colocd.c,$(wildcard daemon/*.c)))
# executor/ is three libraries, one job each (DEVELOPERS.md): the model format and
# ONNX import (protobuf-c); profiles and the level model (what colocd links: no
# oneDNN, no parser); oneDNN execution and the tools' parts (the rest).
MODEL_SRCS := $(wildcard executor/model_*.c executor/onnx_*.c executor/window.c)
PROFILE_SRCS := executor/profile.c executor/profile_cache.c executor/profile_key.c \
	executor/profile_parse.c \
	executor/profile_save.c executor/profile_machine.c executor/profile_table.c \
	executor/profile_versions.c \
	$(wildcard executor/level_model*.c)
MODEL_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(MODEL_SRCS)) $(OBJ)/$(GEN)/onnx.pb-c.o
PROFILE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(PROFILE_SRCS))
EXEC_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(filter-out $(MODEL_SRCS) $(PROFILE_SRCS), \
	$(wildcard executor/*.c)))
POLICY_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard policy/*.c))
SIM_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard sim/*.c))
CLIENT_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard client/*.c))
# programs the tests start (a hostile executor), not linked into them
TEST_PROGS := $(OBJ)/tests/hostile_executor
TESTLIB_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(filter-out %_test.c $(patsubst $(OBJ)/%,%.c,$(TEST_PROGS)),$(wildcard tests/*.c)))

LIB_COMMON := $(OBJ)/libcoloc_common.a
LIB_DAEMON := $(OBJ)/libcolocd.a
LIB_EXEC := $(OBJ)/libcoloc_exec.a
LIB_MODEL := $(OBJ)/libcoloc_model.a
LIB_PROFILE := $(OBJ)/libcoloc_profile.a
LIB_POLICY := $(OBJ)/libcoloc_policy.a
LIB_SIM := $(OBJ)/libcoloc_sim.a
LIB_TEST := $(OBJ)/libcoloc_test.a
LIB_CLIENT := $(OBJ)/libcoloc_client.a
# in link order: executor/profile_table.c turns a profile into a policy table
LIBS := $(LIB_CLIENT) $(LIB_DAEMON) $(LIB_SIM) $(LIB_EXEC) $(LIB_MODEL) $(LIB_PROFILE) \
	$(LIB_POLICY) $(LIB_COMMON)

TOOL_BINS := $(patsubst tools/%.c,$(BIN)/%,$(wildcard tools/*.c))
BINS := $(BIN)/colocd $(TOOL_BINS)
TEST_BINS := $(patsubst tests/%.c,$(OBJ)/tests/%,$(wildcard tests/*_test.c))
# The tests that load BPF, start colocd or executors, or act as other users,
# and onnx_ort (it runs ONNX Runtime's downloads, make ort-models, and writes
# exports into build/ort), fuzz (the fuzzers write into build/fuzz, one
# starts a daemon core) and state_writer (colocd keeps a tenant's files only
# in a directory of root's): only make check runs them, as root. Every other
# test is a unit test: make check-unit runs it as any user, and it must pass
# as nobody in a tree it cannot write.
SYSTEM_TESTS := $(patsubst %,$(OBJ)/tests/%_test,bpffs cgroup cgroup_kill colocctl colocctl_serving colocd colocd_closer colocd_closer_backlog colocd_closer_stall colocd_closer_table colocd_conns colocd_fd_limit colocd_payload \
	colocd_faults colocd_kill colocd_profile_load colocd_serving colocd_slow_state \
	colocd_tenant control \
	exec_team_cpuset execproc execproc_hostile executor_memory execproc_isolation execproc_lanes fuzz hostile_executor infer_memfd \
	install level_source serving_level load member_executor onnx_ort owners owners_room owners_share owners_wire pmu profile_key_serving sandbox sensor \
	server serving serving_cpu_wait serving_cpu_wait_crowd serving_executors serving_plan serving_spawn serving_tenants state_file state_writer tenants \
	submit gateway gateway_faults gateway_grpc gateway_h2 gateway_hostile gateway_http_limits gateway_repo \
	gateway_squat gateway_stream_limit gateway_tenants gateway_core_limits uncore \
	uid_range colocd_uids)
UNIT_TESTS := $(filter-out $(SYSTEM_TESTS),$(TEST_BINS))

KSFT_HDRS := $(GEN)/kselftest/kselftest.h $(GEN)/kselftest/kselftest_harness.h

.PHONY: all check check-build check-unit run-check deps demo run-demo bench-sensing bench-executor bench-sim bench-sim-2core bench-qos profiles format clean tests \
	bench-onnx ort ort-models grpc-node \
	install uninstall image check-image check-systemd
all: $(BINS)
tests: $(TEST_BINS) $(TEST_PROGS)

# ---- generated: vmlinux.h, BPF objects, skeletons, kselftest headers --------
$(GEN)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(GEN)/%.bpf.o: bpf/%.bpf.c $(GEN)/vmlinux.h $(wildcard include/coloc/*.h)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $(@:.o=.full.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.full.o)

$(GEN)/%.skel.h: $(GEN)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The harness ships only inside the kernel source tarball; take the two headers.
# A test's default time limit goes from 30 to 120 s: fixtures that start
# executors and load models run under ASan on two loaded vCPUs.
$(KSFT_HDRS) &:
	$(call msg,EXTRACT,kselftest headers)
	$(Q)mkdir -p $(GEN)/kselftest
	$(Q)tar -I 'xz -T0' -xf /usr/src/linux-source-6.1.tar.xz -C $(GEN)/kselftest \
		--strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h
	$(Q)sed -i 's/^#define TEST_TIMEOUT_DEFAULT 30$$/#define TEST_TIMEOUT_DEFAULT 120/' \
		$(GEN)/kselftest/kselftest_harness.h
	$(Q)grep -q '^#define TEST_TIMEOUT_DEFAULT 120$$' $(GEN)/kselftest/kselftest_harness.h
	$(Q)touch $(KSFT_HDRS)

# ONNX's schema as Debian's libonnx-dev ships it, compiled to C with protobuf-c.
ONNX_PROTO := /usr/include/onnx/onnx.proto
$(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h &: $(ONNX_PROTO)
	$(call msg,PROTOC-C,$@)
	$(Q)mkdir -p $(GEN)
	$(Q)protoc-c --proto_path=$(dir $(ONNX_PROTO)) --c_out=$(GEN) $(ONNX_PROTO)
$(patsubst %.c,$(OBJ)/%.o,$(wildcard executor/onnx_*.c tests/onnx_*.c tools/coloc-import.c)): \
	| $(GEN)/onnx.pb-c.h

# ---- C objects and libraries -------------------------------------------------
$(OBJ)/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OBJ)/tests/%.o: tests/%.c $(KSFT_HDRS) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Each library's objects see their own headers and those of the libraries it
# links, no more: the model library the profile library's hash (model_open.c);
# the profile library the policy's table, and no model (the tools turn a
# parsed model into a table in the exec library: profile_host.h).
$(MODEL_OBJS): LIB_INCLUDES = $(INC_MODEL) $(INC_PROFILE)
$(PROFILE_OBJS): LIB_INCLUDES = $(INC_PROFILE) -Ipolicy
# colocd's objects see include/, common/, daemon/, policy/ and the profile
# library's headers, the libraries colocd links, and are built without
# OpenMP; their dependency files list the system's headers too, which
# tools/check-daemon-includes.sh then checks (no oneDNN, protobuf-c or
# OpenMP header, no other library's header by a relative path).
$(OBJ)/daemon/%.o: LIB_INCLUDES = -Idaemon -Ipolicy $(INC_PROFILE)
$(OBJ)/daemon/%.o: OPENMP =
$(OBJ)/daemon/%.o: DEPFLAGS = -MD -MP
$(OBJ)/daemon/%.o: daemon/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@
	$(Q)tools/check-daemon-includes.sh $(@:.o=.d)

$(LIB_COMMON): $(COMMON_OBJS)
$(LIB_DAEMON): $(DAEMON_OBJS)
$(LIB_EXEC): $(EXEC_OBJS)
$(LIB_MODEL): $(MODEL_OBJS)
$(LIB_PROFILE): $(PROFILE_OBJS)
$(LIB_POLICY): $(POLICY_OBJS)
$(LIB_SIM): $(SIM_OBJS)
$(LIB_TEST): $(TESTLIB_OBJS)
$(LIB_CLIENT): $(CLIENT_OBJS)
$(LIB_COMMON) $(LIB_DAEMON) $(LIB_EXEC) $(LIB_MODEL) $(LIB_PROFILE) $(LIB_POLICY) $(LIB_SIM) \
	$(LIB_TEST) $(LIB_CLIENT):
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# colocd parses no model and runs none (docs/security-submit.md): it reads
# profiles, its executors describe the models and coloc-executor --print-isa
# names the ISA. So it links the profile library alone of executor/'s, and
# neither oneDNN, protobuf-c nor OpenMP (tests/colocd_link_test.c checks).
# colocctl and coloc-load need none of it.
$(BIN)/colocd: $(OBJ)/daemon/colocd.o $(LIB_DAEMON) $(LIB_PROFILE) $(LIB_POLICY) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -pthread $(SANFLAGS) $^ $(PKG_LIBS) -lm -o $@

LIGHT_TOOLS := $(BIN)/coloc-bench-sensing $(BIN)/coloc-bench-transfer
$(LIGHT_TOOLS): $(BIN)/%: $(OBJ)/tools/%.o $(LIB_CLIENT) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(PKG_LIBS) $(LIGHT_LIBS) -lm -o $@
# coloc-load and coloc-bench-gateway also speak KServe v2 gRPC to the gateway
# (client/kserve_grpc.c, in the client library): gRPC's C core and the messages
$(BIN)/coloc-load $(BIN)/coloc-bench-gateway: $(OBJ)/$(GEN)/grpc_service.pb-c.o
$(BIN)/coloc-load $(BIN)/coloc-bench-gateway: LIGHT_LIBS = $(GW_PKG_LIBS)
# coloc-load: tools/coloc-load.c (the command line) and its parts in tools/coloc-load/
# (colocd's status, the arrivals, the answers, the report)
LOADCLI_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tools/coloc-load/*.c))
$(BIN)/coloc-load: $(OBJ)/tools/coloc-load.o $(LOADCLI_OBJS) $(LIB_CLIENT) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(PKG_LIBS) $(LIGHT_LIBS) -lm -o $@
$(OBJ)/client/kserve_grpc.o: | $(GEN)/grpc_service.pb-c.h
# the raw gRPC client (client/kserve_h2.c) speaks HTTP/2 with the gateway's HPACK and frames
$(OBJ)/client/kserve_h2.o: CFLAGS += -Igateway
$(OBJ)/client/kserve_h2.o: | $(GEN)/grpc_service.pb-c.h
# colocctl: tools/colocctl.c (the command line) and its commands in tools/colocctl/
COLOCCTL_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tools/colocctl/*.c))
$(BIN)/colocctl: $(OBJ)/tools/colocctl.o $(COLOCCTL_OBJS) $(LIB_CLIENT) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(PKG_LIBS) -lm -o $@

# ---- coloc-gateway (docs/gateway.md): KServe v2 over HTTP and gRPC in front of colocd --
# gateway/*.c -> libcoloc_gateway.a; bin/coloc-gateway links it with the client
# library, common, json-c, libmicrohttpd, gRPC's C core and protobuf-c: never
# oneDNN or the daemon. The gRPC messages are the protocol's .proto
# (gateway/proto/) compiled by protoc-c into build/gen at build time.
GW_PROTO := gateway/proto/grpc_service.proto
$(GEN)/grpc_service.pb-c.c $(GEN)/grpc_service.pb-c.h &: $(GW_PROTO)
	$(call msg,PROTOC-C,$@)
	$(Q)mkdir -p $(GEN)
	$(Q)protoc-c --proto_path=$(dir $(GW_PROTO)) --c_out=$(GEN) $(GW_PROTO)
GATEWAY_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard gateway/*.c)) $(OBJ)/$(GEN)/grpc_service.pb-c.o
LIB_GATEWAY := $(OBJ)/libcoloc_gateway.a
GW_PKG_CFLAGS := $(shell pkg-config --cflags libmicrohttpd grpc libprotobuf-c 2>/dev/null)
GW_PKG_LIBS := $(shell pkg-config --libs libmicrohttpd json-c grpc gpr libprotobuf-c 2>/dev/null)
GW_TESTS := $(OBJ)/tests/gateway_test $(OBJ)/tests/gateway_grpc_test $(OBJ)/tests/gateway_parse_test \
	$(OBJ)/tests/h2_conn_test $(OBJ)/tests/h2_conn_rules_test \
	$(OBJ)/tests/gateway_proto_test $(OBJ)/tests/gateway_client_key_test $(OBJ)/tests/gateway_json_data_test \
	$(OBJ)/tests/gateway_answer_test
GW_USERS := $(GATEWAY_OBJS) $(OBJ)/tools/coloc-gateway.o $(addsuffix .o,$(GW_TESTS))
$(GW_USERS): CFLAGS += -Igateway $(GW_PKG_CFLAGS)
$(GW_USERS): | $(GEN)/grpc_service.pb-c.h
$(LIB_GATEWAY): $(GATEWAY_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^
$(BIN)/coloc-gateway: $(BIN)/%: $(OBJ)/tools/%.o $(LIB_GATEWAY) $(LIB_CLIENT) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(GW_PKG_LIBS) -o $@
# the gateway's HPACK and HTTP/2 frames alone, for what links them without the gateway
HPACK_OBJS := $(OBJ)/gateway/hpack.o $(OBJ)/gateway/hpack_huffman.o $(OBJ)/gateway/h2_frame.o
# coloc-load's --grpc goes through the raw client (client/kserve_h2.c), on them
$(BIN)/coloc-load: $(HPACK_OBJS)
# what the gateway adds to a query, beside colocd's socket (not installed: a benchmark);
# its raw HTTP/2 gRPC client is the client library's (client/kserve_h2.c), on the gateway's
# HPACK and frames
$(BIN)/coloc-bench-gateway: $(HPACK_OBJS)
$(BIN)/coloc-bench-gateway: $(BIN)/%: $(OBJ)/tools/%.o $(LIB_CLIENT) $(LIB_COMMON)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(PKG_LIBS) $(LIGHT_LIBS) -lm -o $@
# its tests drive the parsers directly too
$(GW_TESTS): $(LIB_GATEWAY)
$(GW_TESTS): LDLIBS := $(LIB_GATEWAY) \
	$(LIB_CLIENT) $(LIB_COMMON) $(LDLIBS) $(GW_PKG_LIBS)
# HPACK and HTTP/2 frames on their own (unit tests): only those objects
$(OBJ)/tests/hpack_test.o $(OBJ)/tests/h2_frame_test.o: CFLAGS += -Igateway
$(OBJ)/tests/hpack_test $(OBJ)/tests/h2_frame_test: $(HPACK_OBJS)
# a submit copy whose read never returns, in this test binary only (not in colocd)
$(OBJ)/tests/submit_copy_test: LDFLAGS += -Wl,--wrap=sendfile
# the client library's infer lines without json-c, held to json-c's readings
$(OBJ)/tests/infer_line_test.o: CFLAGS += -Iclient
# ---- end of coloc-gateway -------------------------------------------------------

# coloc-sim's parts (tools/coloc-sim/: its option table, runs, reports)
SIMCLI_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tools/coloc-sim/*.c))
$(BIN)/coloc-sim: $(OBJ)/tools/coloc-sim.o $(SIMCLI_OBJS) $(LIBS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# coloc-profile: tools/coloc-profile.c (the command line, the cache) and its
# measuring in tools/coloc-profile/ (the cells, the whole-model runs)
PROFILECLI_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(wildcard tools/coloc-profile/*.c))
$(BIN)/coloc-profile: $(OBJ)/tools/coloc-profile.o $(PROFILECLI_OBJS) $(LIBS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BIN)/%: $(OBJ)/tools/%.o $(LIBS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OBJ)/tests/%: $(OBJ)/tests/%.o $(LIB_TEST) $(LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# ---- running -----------------------------------------------------------------
deps:
	$(Q)tools/deps.sh
	@echo "coloc: the required packages are installed"

# build/fuzz/ is one sanitized build for both halves of CI, seeded alike: the
# SANITIZE=1 half only replays the seeds (tests/fuzz_test.c)
FUZZ_CHECK_ENV := $(if $(filter 1,$(SANITIZE)),COLOC_FUZZ_CHECK_SECONDS=1)
# make check builds on every CPU unless given -jN itself (CI runs it plain);
# tests/run.sh runs two test binaries at a time whatever -j says, those that
# must run alone after the rest (COLOC_TEST_JOBS=1: one at a time).
CHECK_JOBS := $(shell nproc 2>/dev/null || echo 1)
check:
	$(Q)tests/run.sh --root
	$(Q)tools/deps.sh
	$(Q)+$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(CHECK_JOBS)) \
		run-check
# what make check runs, built (.ci/run builds the SANITIZE=1 half's while the first half's run)
check-build: $(BINS) $(TEST_BINS) $(TEST_PROGS) ort-models
run-check: check-build
	$(Q)tools/check-sizes.sh
	$(Q)/usr/bin/python3 tools/check-links.py
	$(Q)COLOC_BIN=$(abspath $(BIN)) COLOC_ROOT=$(CURDIR) $(FUZZ_CHECK_ENV) \
		tests/run.sh --root $(TEST_BINS)
check-unit: $(BINS) $(UNIT_TESTS)
	$(Q)tools/check-sizes.sh
	$(Q)/usr/bin/python3 tools/check-links.py
	$(Q)COLOC_BIN=$(abspath $(BIN)) COLOC_ROOT=$(CURDIR) tests/run.sh $(UNIT_TESTS)

demo:
	$(Q)tools/deps.sh
	$(Q)+$(MAKE) --no-print-directory run-demo
run-demo: $(BINS)
	$(Q)COLOC_BIN=$(abspath $(BIN)) tools/demo.sh

bench-sensing: $(BINS)
	$(Q)$(BIN)/coloc-bench-sensing

# Every policy on each mix of tools/qos-mixes.conf; results in build/bench-qos/.
bench-qos: $(BINS)
	$(Q)COLOC_BIN=$(abspath $(BIN)) tools/bench-qos.sh $(ARGS)

bench-executor: $(BINS)
	$(Q)$(BIN)/coloc-bench-executor

# First the fidelity check (tools/bench-sim-2core.sh): this machine
# simulated with coloc's own profiles, every policy on every mix, next to
# what make bench-qos measured; SIM_QOS_DIR=DIR checks another bench-qos run,
# SIM_ARGS adds coloc-sim options (the script's header lists the rest). Then
# 64, 128 and 256 cores (tools/bench-sim-cores.sh): the same mixes with
# VELTAIR's QoS targets and tables, the ablations, the policy's decision
# cost and a plot per mix. sim/README.md says what every number rests on.
bench-sim-2core: $(BINS)
	$(Q)COLOC_BIN=$(abspath $(BIN)) tools/bench-sim-2core.sh
bench-sim: bench-sim-2core
	@echo "== many cores: not results to quote before the fidelity check above passes"
	$(Q)COLOC_BIN=$(abspath $(BIN)) tools/bench-sim-cores.sh

# ONNX Runtime and the real ONNX models, pinned in tools/ort/ (models/ONNX.md)
ort:
	$(Q)tools/ort/install.sh
ort-models:
	$(Q)tools/ort/install.sh --models
# the Node gRPC client tests/gateway_grpc_test.c runs (it installs it itself when it can)
grpc-node:
	$(Q)tools/grpc-node/install.sh
bench-onnx: $(BINS)
	$(Q)COLOC_BIN=$(abspath $(BIN)) tools/bench-onnx.sh

MODELS := $(wildcard models/*.model)
profiles: $(BINS)
	$(Q)mkdir -p build/profiles
	$(Q)for m in $(MODELS); do \
		n=$$(basename $$m .model); \
		echo "  PROFILE   $$n"; \
		$(BIN)/coloc-profile $$m -o build/profiles/$$n.profile || exit 1; \
	done

# ---- fuzzing (tests/fuzz/, docs/fuzzing.md) ---------------------------------
# libFuzzer targets, one per parser of user bytes (tests/fuzz/fuzz_NAME.c ->
# build/fuzz/bin/fuzz_NAME), built with clang under ASan+UBSan from their own
# objects of the library code (built without OpenMP: the parsers use none, so
# files that do are left out). make fuzz runs each for FUZZ_SECONDS against a
# corpus kept in build/fuzz/corpus/, seeded from tests/fuzz/seeds/; make check
# runs each briefly from its seeds (tests/fuzz_test.c).
FUZZ := build/fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst %,$(FUZZ)/bin/fuzz_%,$(FUZZ_TARGETS))
FUZZ_SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -std=gnu11 -Wall -Wextra -Werror -pthread $(FUZZ_SANFLAGS) \
	-fsanitize=fuzzer-no-link -Iinclude -Icommon -Idaemon -Iexecutor $(INC_MODEL) $(INC_EXEC) \
	$(INC_PROFILE) -Ipolicy -Isim -I$(GEN) -isystem $(GEN)/kselftest $(PKG_CFLAGS) -MMD -MP
FUZZ_LIB_SRCS := $(shell grep -L 'pragma omp' common/*.c executor/*.c policy/*.c \
	$(filter-out daemon/colocd.c,$(wildcard daemon/*.c)))
FUZZ_LIB := $(FUZZ)/libcoloc_fuzz.a
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ)/obj/%.o,$(FUZZ_LIB_SRCS)) $(FUZZ)/obj/$(GEN)/onnx.pb-c.o

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
tests check-build: $(FUZZ_BINS)

$(FUZZ)/obj/%.o: %.c $(KSFT_HDRS) | $(SKELS) $(GEN)/onnx.pb-c.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

# the gateway's request parsers (fuzz_gateway): the JSON and gRPC infer bodies
FUZZ_GW_OBJS := $(FUZZ)/obj/gateway/infer_request.o $(FUZZ)/obj/gateway/infer_answer.o $(FUZZ)/obj/gateway/json_data.o $(FUZZ)/obj/gateway/infer_proto.o \
	$(FUZZ)/obj/$(GEN)/grpc_service.pb-c.o
$(FUZZ_GW_OBJS) $(FUZZ)/obj/tests/fuzz/fuzz_gateway.o: FUZZ_CFLAGS += -Igateway
$(FUZZ_GW_OBJS) $(FUZZ)/obj/tests/fuzz/fuzz_gateway.o: | $(GEN)/grpc_service.pb-c.h
$(FUZZ)/bin/fuzz_gateway: $(FUZZ_GW_OBJS)
# one HTTP/2 connection of the gateway's own gRPC server (fuzz_h2_conn)
FUZZ_H2_OBJS := $(FUZZ)/obj/gateway/h2_conn.o $(FUZZ)/obj/gateway/h2_conn_out.o \
	$(FUZZ)/obj/gateway/h2_conn_answer.o $(FUZZ)/obj/gateway/h2_conn_data.o \
	$(FUZZ)/obj/gateway/h2_conn_frames.o $(FUZZ)/obj/gateway/h2_streams.o \
	$(FUZZ)/obj/gateway/h2_frame.o \
	$(FUZZ)/obj/gateway/hpack.o $(FUZZ)/obj/gateway/hpack_huffman.o \
	$(FUZZ)/obj/gateway/h2_fields.o
$(FUZZ_H2_OBJS) $(FUZZ)/obj/tests/fuzz/fuzz_h2_conn.o: FUZZ_CFLAGS += -Igateway
$(FUZZ)/bin/fuzz_h2_conn: $(FUZZ_H2_OBJS)

# HPACK and HTTP/2 frames (fuzz_hpack): what the gateway's own gRPC server reads
FUZZ_HPACK_OBJS := $(FUZZ)/obj/gateway/hpack.o $(FUZZ)/obj/gateway/hpack_huffman.o \
	$(FUZZ)/obj/gateway/h2_frame.o
$(FUZZ_HPACK_OBJS) $(FUZZ)/obj/tests/fuzz/fuzz_hpack.o: FUZZ_CFLAGS += -Igateway
$(FUZZ)/bin/fuzz_hpack: $(FUZZ_HPACK_OBJS)

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(FUZZ)/bin/fuzz_%: $(FUZZ)/obj/tests/fuzz/fuzz_%.o $(FUZZ)/obj/tests/fuzz/util.o $(FUZZ_LIB)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SANFLAGS) -pthread $^ $(PKG_LIBS) -ldnnl \
		-lprotobuf-c -lm -o $@

fuzz: $(FUZZ_BINS)
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The image is built from what make install stages; check-image rebuilds it first.
image: $(BINS)
	$(Q)tools/deps.sh --image
	$(Q)tools/build-image.sh
check-image: image
	$(Q)tools/check-image.sh
# colocd under a real systemd in a container, its unit as installed; builds
# its own image (WITH_SYSTEMD=1) when missing: minutes. tools/check-systemd.sh.
check-systemd: $(BINS)
	$(Q)tools/check-systemd.sh

# ---- installing --------------------------------------------------------------
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/coloc
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
# The benchmarks need the source tree (models/, colocd beside them): not installed.
INSTALL_TOOLS := $(filter-out $(BIN)/coloc-bench-%,$(TOOL_BINS))
MAN_PAGES := $(wildcard dist/man/*.[18])
INSTALLED := $(SBINDIR)/colocd $(patsubst $(BIN)/%,$(BINDIR)/%,$(INSTALL_TOOLS)) \
	$(UNITDIR)/colocd.service $(SYSUSERSDIR)/coloc.conf \
	$(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m))) \
	$(patsubst %,$(DATADIR)/%,$(MODELS))

install: $(BIN)/colocd $(INSTALL_TOOLS)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(DATADIR)/models
	$(Q)install -m 0755 $(BIN)/colocd $(DESTDIR)$(SBINDIR)/
	$(Q)install -m 0755 $(INSTALL_TOOLS) $(DESTDIR)$(BINDIR)/
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' dist/colocd.service.in > $(DESTDIR)$(UNITDIR)/colocd.service
	$(Q)chmod 0644 $(DESTDIR)$(UNITDIR)/colocd.service
	$(Q)install -m 0644 dist/coloc.sysusers $(DESTDIR)$(SYSUSERSDIR)/coloc.conf
	$(Q)for m in $(MAN_PAGES); do \
		install -m 0644 $$m $(DESTDIR)$(MANDIR)/man$${m##*.}/ || exit 1; \
	done
	$(Q)install -m 0644 $(MODELS) $(DESTDIR)$(DATADIR)/models/
ifeq ($(DESTDIR),)
	$(Q)tools/deps.sh --users
	$(Q)if [ -d /run/systemd/system ] && [ "$$(id -u)" -eq 0 ]; then systemctl daemon-reload; fi
	@echo "coloc: installed; start colocd with 'systemctl enable --now colocd'"
endif

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)rmdir --ignore-fail-on-non-empty $(DESTDIR)$(DATADIR)/models $(DESTDIR)$(DATADIR) \
		2>/dev/null || true
ifeq ($(DESTDIR),)
	$(Q)if [ -d /run/systemd/system ] && [ "$$(id -u)" -eq 0 ]; then systemctl daemon-reload; fi
	@echo "coloc: uninstalled; the coloc group and user stay ('userdel coloc', then 'groupdel coloc' if it is left, remove them)"
endif

format:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	$(call msg,CLEAN,build bin)
	$(Q)rm -rf build bin

-include $(shell find build -name '*.d' -type f 2>/dev/null)
