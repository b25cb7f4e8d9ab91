# spmtap — see README.md.  `make` builds the library, the CLI and the
# emulator into build/; `make test` runs the CUnit suites and integration tests.
# `make` alone builds `all`, whatever rule a variable section above it names first.
.DEFAULT_GOAL := all
PREFIX   ?= /usr/local
LIBDIR   ?= $(PREFIX)/lib
B        ?= build
CC       ?= cc
VERSION_MAJOR := 0
VERSION_MINOR := 1
VERSION  := $(VERSION_MAJOR).$(VERSION_MINOR).0

OPT      ?= -O2 -g
# Messages are built with snprintf into fixed buffers on purpose: a cut
# message is safe, so GCC's guesses about truncation are not errors.
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wno-format-truncation
CPPFLAGS += -I. -Iinclude -Iuapi/compat -D_GNU_SOURCE
CFLAGS   += -std=c11 $(OPT) $(WARN) -fPIC -fvisibility=hidden $(SAN)
LDFLAGS  += $(SAN)
LIBS     := -ldl -lpthread -ljansson -lm -lsqlite3 -lprotobuf-c

# Library: acquisition, decoding, collection.  The CLI is in collector/cli/.
# The ground floor (include/log.c: the log sink and error strings) is below
# spm/ and decoder/, which call it; nothing in it calls up.
GROUND_SRC := include/log.c
LIB_SRC  := $(GROUND_SRC) $(wildcard spm/*.c decoder/*.c collector/lib/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/obj/%.o)
# Protocol buffers (collector/proto/*.proto, e.g. the Perfetto trace format):
# protoc-c generates C into $(B)/gen, compiled into the library.
PROTO_SRC := $(wildcard collector/proto/*.proto)
PROTO_GEN := $(PROTO_SRC:%.proto=$(B)/gen/%.pb-c.c) $(PROTO_SRC:%.proto=$(B)/gen/%.pb-c.h)
PROTO_OBJ := $(PROTO_SRC:%.proto=$(B)/obj/gen/%.pb-c.o)
LIB_OBJ  += $(PROTO_OBJ)
CPPFLAGS += -I$(B)/gen
CLI_SRC  := $(wildcard collector/cli/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/obj/%.o)
# Offline analysis (collector/analysis/): sensor-trace characterisation and
# reports, derived metrics, plots (cairo) and the HTML report.  An archive of
# its own, linked into the CLI and the tests, so that libspmtap.so, which
# applications link for the marker API, carries no drawing library.
ANA_SRC  := $(wildcard collector/analysis/*.c)
ANA_OBJ  := $(ANA_SRC:%.c=$(B)/obj/%.o)
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS   := $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)
$(ANA_OBJ): CPPFLAGS += $(CAIRO_CFLAGS)
# emu/common: profiles and the topology generator, used by the shim and by
# `spmtap --emulate`; emu/shim: the LD_PRELOAD library itself.
EMUC_SRC := $(wildcard emu/common/*.c)
EMUC_OBJ := $(EMUC_SRC:%.c=$(B)/obj/%.o)
SHIM_SRC := $(wildcard emu/shim/*.c)
SHIM_OBJ := $(SHIM_SRC:%.c=$(B)/obj/%.o)
# emu/launcher: spmtap-emu, which `spmtap --emulate` and `spmtap emulate` exec.
LAUNCH_SRC := $(wildcard emu/launcher/*.c)
LAUNCH_OBJ := $(LAUNCH_SRC:%.c=$(B)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
TESTLIB_SRC := $(wildcard tests/lib/*.c)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(B)/obj/%.o)
HELPER_SRC := $(wildcard tests/helpers/*.c)
HELPER_BIN := $(HELPER_SRC:tests/helpers/%.c=$(B)/tests/helpers/%)
# What the libhsakmt helpers share (tests/helpers/lib): linked into helpers only, which link -lhsakmt.
HELPERLIB_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard tests/helpers/lib/*.c))
# Named here so that make knows the objects are to be built: otherwise, in a fresh build, the
# suites' pattern rule $(B)/tests/% (whose prerequisites all exist) wins over the helpers' one.
$(HELPER_BIN): $(HELPERLIB_OBJ)
BENCH_SRC := $(wildcard tests/bench/*.c)
BENCH_BIN := $(BENCH_SRC:tests/bench/%.c=$(B)/bench/%)

LIB_A    := $(B)/libspmtap.a
ANA_A    := $(B)/libspmtap-analysis.a
LIB_SO   := $(B)/libspmtap.so.$(VERSION_MAJOR)
EMU_A    := $(B)/libspmtap-emucommon.a
SHIM_SO  := $(B)/libspmtap-emu.so
LAUNCHER := $(B)/spmtap-emu
DEVICE   := $(B)/spmtap-emu-device
CLI      := $(B)/spmtap

# Keep intermediate objects (test helpers share tests/lib objects).
.SECONDARY:

MPICC ?= mpicc
MERGE_MPI := $(if $(shell command -v $(MPICC) 2>/dev/null),$(B)/spmtap-merge-mpi)
.PHONY: all test check-asan check-tsan bench fuzz soak install clean
# spmtap-job (collector/job/): `spmtap record --job` as one MPI rank per node; the only program that
# links MPI (spmtap execs it; docs/howto-job.md says why it is a binary and not a dlopen'd MPI).
# Built where mpicc is installed; elsewhere `spmtap record --job` says it is missing.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
JOB_SRC  := $(wildcard collector/job/*.c)
JOB_OBJ  := $(JOB_SRC:%.c=$(B)/obj/%.o)
JOB_BIN  := $(if $(MPI_LIBS),$(B)/spmtap-job)
$(JOB_OBJ): CPPFLAGS += $(MPI_CFLAGS)
$(JOB_OBJ): | $(PROTO_GEN)
TOOL_SO  := $(if $(wildcard /usr/include/hsa/hsa_api_trace.h),$(B)/libspmtap-tool.so)
all: $(LIB_A) $(LIB_SO) $(B)/libspmtap.so $(B)/spmtap.pc $(SHIM_SO) $(LAUNCHER) $(DEVICE) $(ANA_A) $(CLI) $(TOOL_SO) $(MERGE_MPI) $(JOB_BIN)

# spmtap-merge-mpi (collector/merge/mpi_main.c): `spmtap merge` as an MPI job, for
# many recordings (docs/cli/spmtap-merge.md).  Built where mpicc is; spmtap
# itself never links MPI.
$(B)/spmtap-merge-mpi: collector/merge/mpi_main.c $(ANA_A) $(LIB_A)
	@mkdir -p $(B)/obj/collector/merge
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -MF $(B)/obj/collector/merge/mpi_main.d -o $@ $< $(ANA_A) $(LIB_A) $(LDFLAGS) $(LIBS) $(CAIRO_LIBS)

# libspmtap-tool.so, loaded into the application by ROCr (HSA_TOOLS_LIB) under
# `spmtap record -- app` (docs/architecture.md "Kernels").  Built where ROCr's
# tools header is installed, without $(SAN): the application and ROCr that
# load it are not instrumented (a sanitizer runtime cannot come in by dlopen).
# One C++ file, because hsa_api_trace.h is C++.
TOOL_CFLAGS := $(CPPFLAGS) $(OPT) $(WARN) -fPIC -fvisibility=hidden
$(B)/libspmtap-tool.so: collector/tool/tool.c collector/tool/tool_onload.cpp collector/tool/tool.h \
		collector/lib/kernel_shm.h collector/lib/marker_job.c collector/lib/marker_job.h
	@mkdir -p $(B)/obj/collector/tool
	$(CC) -std=c11 $(TOOL_CFLAGS) -c -o $(B)/obj/collector/tool/tool.o collector/tool/tool.c
	$(CC) -std=c11 $(TOOL_CFLAGS) -c -o $(B)/obj/collector/tool/marker_job.o collector/lib/marker_job.c
	$(CXX) -std=c++17 -DAMD_INTERNAL_BUILD $(filter-out -Wstrict-prototypes -Wmissing-prototypes,$(TOOL_CFLAGS)) \
	  -c -o $(B)/obj/collector/tool/tool_onload.o collector/tool/tool_onload.cpp
	$(CXX) -shared -o $@ $(B)/obj/collector/tool/tool.o $(B)/obj/collector/tool/marker_job.o \
	  $(B)/obj/collector/tool/tool_onload.o -lpthread

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(B)/gen/%.pb-c.c $(B)/gen/%.pb-c.h: %.proto
	@mkdir -p $(B)/gen
	protoc-c -I. --c_out=$(B)/gen $<

# Generated code: its warnings are protoc-c's, so they are not errors.
$(B)/obj/gen/%.pb-c.o: $(B)/gen/%.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-error -MMD -MP -c -o $@ $<

# Sources may include the generated headers: generate them first.
$(LIB_OBJ) $(CLI_OBJ) $(ANA_OBJ) $(TESTLIB_OBJ): | $(PROTO_GEN)

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(B)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIB_OBJ) include/libspmtap.map
	$(CC) -shared -Wl,-soname,libspmtap.so.$(VERSION_MAJOR) \
	  -Wl,--version-script=include/libspmtap.map $(LDFLAGS) -o $@ $(LIB_OBJ) $(LIBS)

# Floors that only look down: spm/ and decoder/ with the ground floor alone,
# linked with --no-undefined and only the system libraries they need.  A call
# from a lower floor up into collector/ makes this link fail;
# tests/test_floors.c checks the result and the objects' symbols.
FLOOR_OBJ := $(GROUND_SRC:%.c=$(B)/obj/%.o) $(filter $(B)/obj/spm/% $(B)/obj/decoder/%,$(LIB_OBJ))
FLOOR_LIBS := -ldl -lpthread -lm -ljansson
FLOORS_SO := $(B)/floors/libspmtap-floors.so
$(FLOORS_SO): $(FLOOR_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined $(LDFLAGS) -o $@ $(FLOOR_OBJ) $(FLOOR_LIBS) || \
	  { echo "spm/ or decoder/ calls a symbol outside the ground floor and $(FLOOR_LIBS): floors must only look down (docs/architecture.md)"; rm -f $@; exit 1; }
floors: $(FLOORS_SO)
.PHONY: floors

$(B)/libspmtap.so: $(LIB_SO)
	ln -sf libspmtap.so.$(VERSION_MAJOR) $@

$(B)/spmtap.pc: include/spmtap.pc.in Makefile
	@mkdir -p $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

$(ANA_A): $(ANA_OBJ)
	@mkdir -p $(B)
	rm -f $@ && ar rcs $@ $^

$(EMU_A): $(EMUC_OBJ)
	@mkdir -p $(B)
	rm -f $@ && ar rcs $@ $^

# The shim runs before the sanitizer runtime is initialised (it is preloaded),
# so under ThreadSanitizer it stays uninstrumented: TSan checks spmtap, not
# the emulated kernel.
ifeq ($(TSAN),1)
$(SHIM_OBJ) $(EMUC_OBJ) $(SHIM_SO) $(LAUNCH_OBJ) $(LAUNCHER): override SAN :=
endif

# Its libc entry points run in programs that are not instrumented, possibly before ASan's runtime has
# mapped its shadow memory (rocminfo: libnuma calls fopen from a constructor), where an instrumented
# stack frame faults; they only check emu_p.active before going further, which is false until the
# shim's own constructor, which runs after the sanitizer's (a dependency).
$(B)/obj/emu/shim/shim_libc.o: CFLAGS += -fno-sanitize=address

$(SHIM_SO): $(SHIM_OBJ) $(EMU_A)
	$(CC) -shared $(LDFLAGS) -o $@ $(SHIM_OBJ) $(EMU_A) -ldl -lpthread

$(LAUNCHER): $(LAUNCH_OBJ) $(EMU_A)
	$(CC) $(LDFLAGS) -o $@ $(LAUNCH_OBJ) $(EMU_A) -lm

# The emulated SPM device process (emu/shim/spm_device.h): the shim starts it beside itself at
# ACQUIRE, preloaded; the program only enters the shim.
# Uninstrumented like the programs the shim is preloaded into: the sanitizer, if any, comes with the shim.
$(DEVICE) $(B)/obj/emu/device/main.o: override SAN :=
$(DEVICE): $(B)/obj/emu/device/main.o
	$(CC) $(LDFLAGS) -o $@ $< -ldl

$(B)/spmtap-job: $(JOB_OBJ) $(filter-out $(B)/obj/collector/cli/main.o,$(CLI_OBJ)) $(ANA_A) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) $(CAIRO_LIBS) $(MPI_LIBS)

# No emulator code: --emulate and `spmtap emulate` exec $(LAUNCHER) (test_emu_launch checks with nm).
$(CLI): $(CLI_OBJ) $(ANA_A) $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(ANA_A) $(LIB_A) $(LIBS) $(CAIRO_LIBS)

$(B)/tests/%: tests/%.c $(TESTLIB_OBJ) $(ANA_A) $(LIB_A) $(EMU_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CAIRO_CFLAGS) $(CFLAGS) -Itests -Itests/lib -MMD -MP -MF $@.d -o $@ $< $(TESTLIB_OBJ) $(ANA_A) $(LIB_A) $(EMU_A) $(LDFLAGS) -lcunit $(LIBS) $(CAIRO_LIBS)

# libcapstone disassembles the marker fast path in one suite (tests/test_marker_code.c) and is
# linked into nothing else; without it that suite says so and skips.
CAPSTONE_LIBS := $(shell pkg-config --libs capstone 2>/dev/null)
$(B)/tests/test_marker_code: private CPPFLAGS += $(if $(CAPSTONE_LIBS),-DHAVE_CAPSTONE)
$(B)/tests/test_marker_code: private LIBS += $(CAPSTONE_LIBS)

$(B)/bench/%: tests/bench/%.c $(ANA_A) $(LIB_A) $(EMU_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests -Itests/lib -MMD -MP -MF $@.d -o $@ $< $(ANA_A) $(LIB_A) $(EMU_A) $(LDFLAGS) $(LIBS) $(CAIRO_LIBS)

$(B)/tests/helpers/%: tests/helpers/%.c $(TESTLIB_OBJ) $(HELPERLIB_OBJ) $(ANA_A) $(LIB_A) $(EMU_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Itests -Itests/lib -Itests/helpers/lib -MMD -MP -MF $@.d -o $@ $< $(TESTLIB_OBJ) $(HELPERLIB_OBJ) $(ANA_A) $(LIB_A) $(EMU_A) $(LDFLAGS) -lcunit -lhsakmt $(LIBS) $(CAIRO_LIBS)

# Test doubles of vendor libraries: libamd_smi in its 6.x and 7.x symbol and
# struct variants, so the fallback binding in collector/lib/smi_amdsmi.c runs.
DOUBLE_SO := $(B)/doubles/libamd_smi_v6.so $(B)/doubles/libamd_smi_v7.so
$(B)/doubles/libamd_smi_v%.so: tests/doubles/libamd_smi_double.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DAMDSMI_V$* -shared -o $@ $<
# A file system that refuses O_DIRECT writes after the open (test_journal direct_refused).
DOUBLE_SO += $(B)/doubles/libnodirect.so
$(B)/doubles/libnodirect.so: tests/doubles/nodirect.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -shared -o $@ $< -ldl

# examples/hsa_copy: an HSA C program (ROCr's hsa_amd_memory_async_copy, the SDMA path), run by
# test_emu_sdma on the emulated MI210; built like a helper, as the sanitized shim is preloaded into it.
HSA_EXAMPLE_BIN := $(B)/examples/hsa_copy
$(B)/examples/hsa_copy: examples/hsa_copy/hsa_copy.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(LDFLAGS) -lhsa-runtime64

tests-build: all $(TEST_BIN) $(HELPER_BIN) $(HSA_EXAMPLE_BIN) $(DOUBLE_SO) $(FLOORS_SO)
.PHONY: tests-build

# The README's test command.  Every suite runs under the emulator it needs.
test: tests-build
	B=$(B) sh tests/run.sh

# A suite's time limit under a sanitizer (tests/run.sh; 300 s otherwise): the limit is there to catch
# a hang, and TSan runs 5-50x slower; test_stop's five interval-32 stops, each bounded at 30 s for the
# catch-up, took 17-24 s each there and the suite met 300 s (CI, 2026-11-27).
SAN_TEST_TIMEOUT ?= 600
check-asan:
	ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 TEST_TIMEOUT=$(SAN_TEST_TIMEOUT) $(MAKE) B=build-asan OPT="-O1 -g" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

check-tsan:
	TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp" TEST_TIMEOUT=$(SAN_TEST_TIMEOUT) $(MAKE) B=build-tsan OPT="-O1 -g" SAN="-fsanitize=thread" TSAN=1 test

# bench_merge runs the synthetic-job helper (tests/lib/synjob.c).
$(B)/bench/bench_merge: | $(B)/tests/helpers/mk_job
bench: all $(BENCH_BIN)
	B=$(B) sh tests/bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/spmtap $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/spmtap
	# spmtap record --job execs spmtap-job from spmtap's own directory (docs/howto-job.md)
	$(if $(JOB_BIN),install -m 755 $(JOB_BIN) $(DESTDIR)$(PREFIX)/bin/spmtap-job)
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libspmtap.so.$(VERSION_MAJOR) $(DESTDIR)$(LIBDIR)/libspmtap.so
	install -m 755 $(SHIM_SO) $(LAUNCHER) $(DEVICE) $(TOOL_SO) $(DESTDIR)$(LIBDIR)/spmtap/
	install -m 644 include/spmtap.h include/spmtap_markers.f90 $(DESTDIR)$(PREFIX)/include/
	# Generated here, not copied from $(B): $(B)/spmtap.pc keeps the PREFIX of
	# the build, and `make install PREFIX=...` must point pkg-config at this one.
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	  include/spmtap.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/spmtap.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/spmtap.pc

# examples/*.c against the build tree's shared library (docs: examples/README.md
# builds them the installed way, with pkg-config).
EXAMPLE_BIN := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
$(B)/examples/%: examples/%.c $(B)/libspmtap.so include/spmtap.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) $(WARN) -Iinclude -o $@ $< -L$(B) -lspmtap -Wl,-rpath,$(abspath $(B))
examples: $(EXAMPLE_BIN)
.PHONY: examples

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include $(shell find $(B)/obj $(B)/tests $(B)/bench build-fuzz/obj -name '*.d' 2>/dev/null)

# Install the Debian packages the build and the tests need (README, .ci/run).
deps:
	sh .ci/install-deps
.PHONY: deps

# libFuzzer targets for every parser of external bytes (tests/fuzz/*.c).
# FUZZ_SECONDS per target; corpora are kept in build-fuzz/corpus/<target>.
# The library is compiled once, with coverage but without libFuzzer's main
# (fuzzer-no-link), into build-fuzz/libspmtap-fuzz.a; every target links it.
FUZZ_SECONDS ?= 60
FUZZ_B   := build-fuzz
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_B)/%)
FUZZ_LIBSRC := $(GROUND_SRC) $(wildcard decoder/*.c collector/lib/*.c collector/analysis/*.c spm/*.c)
FUZZ_OBJ := $(FUZZ_LIBSRC:%.c=$(FUZZ_B)/obj/%.o) $(PROTO_SRC:%.proto=$(FUZZ_B)/obj/$(B)/gen/%.pb-c.o)
FUZZ_A   := $(FUZZ_B)/libspmtap-fuzz.a
FUZZ_CC  := clang -std=c11 -g -O1 -D_GNU_SOURCE -I. -Iinclude -Iuapi/compat -I$(B)/gen $(CAIRO_CFLAGS)
FUZZ_LIBS := -ldl -lpthread -ljansson -lm -lsqlite3 -lprotobuf-c $(CAIRO_LIBS)

$(FUZZ_B)/obj/%.o: %.c | $(PROTO_GEN)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c -o $@ $<

$(FUZZ_A): $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_A)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_A) $(FUZZ_LIBS)

fuzz-build: $(PROTO_GEN)
	@command -v clang >/dev/null || { echo "make fuzz needs clang (apt-get install clang)"; exit 1; }
	$(MAKE) $(FUZZ_BIN)

fuzz: fuzz-build
	@mkdir -p $(FUZZ_B)/corpus
	@for b in $(FUZZ_BIN); do \
	  n=$$(basename $$b); \
	  mkdir -p $(FUZZ_B)/corpus/$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$b -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_B)/$$n- $(FUZZ_B)/corpus/$$n > $(FUZZ_B)/$$n.log 2>&1; rc=$$?; \
	  grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" $(FUZZ_B)/$$n.log; \
	  test $$rc = 0 || exit 1; \
	done
.PHONY: fuzz fuzz-build

# Long runs live here, not in make test: SOAK_SECONDS of streaming at a high
# rate with injected stalls, every byte accounted against the emulator's truth.
SOAK_SECONDS ?= 60
soak: tests-build
	SPMTAP_SOAK_SECONDS=$(SOAK_SECONDS) $(B)/tests/test_record soak
.PHONY: soak
