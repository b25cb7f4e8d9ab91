/* SPDX-License-Identifier: MIT */
/*
 * A HIP application on the emulated GPUs (docs/emulator.md "HIP"):
 * examples/hip built with Debian's hipcc (HIP/ROCclr 5.2 on ROCr 5.2.3), run
 * with HSA_ENABLE_SDMA unset, directly on the MI210 and under
 * `spmtap record --spm SQ_WAVES` on the MI210 and the MI250X, checked
 * against the per-dispatch truth file (SPMTAP_EMU_DISPATCH_TRUTH):
 *  - every hipMemcpy round trip (aligned and misaligned sizes, at odd
 *    offsets, beyond one SDMA packet's 0x3fffe0 bytes) returns the bytes sent
 *    (the example compares them; the emulator runs no GPU code, so only
 *    copies can be checked by content);
 *  - the truth has, for each size copied through SDMA, COPY_LINEAR packets on
 *    one queue whose bytes add up to the size, in both directions, none over
 *    0x3fffe0 bytes;
 *  - the truth has the example's 2 kernels x 4 sizes, by their mangled names,
 *    with the launched grid, each taking time, on the GPU asked for;
 *  - under record, the recording has samples;
 *  - blit_mi210: with HSA_ENABLE_SDMA=0 the same round trips hold and ROCr's blit kernels, not SDMA, copy;
 *  - on an MI300A (gfx942) Debian's ROCr 5.2.3 makes no agent: HIP finds no device.
 * The suite's cases are skipped with the reason when hipcc is absent.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/common/emu.h"
#include "jline.h"
#include "proc.h"
#include "testenv.h"

#define SPEC "mi210,mi250x" /* three GPU nodes: the MI250X card has two GCDs; its first is ROCr's GPU 1 */
#define NGPU 3
#define SDMA_SPLIT 0x3fffe0ull /* ROCr 5.2's largest COPY_LINEAR (amd_blit_sdma.cpp) */
#define NSIZES 4
/* The example's default sizes (examples/hip/hip_example.hip): keep in step. */
static const unsigned long long sizes[NSIZES] = { 4096, 1000003, 8388608, 12595161 };
#define NWORK 65536 /* the example's kernel grid */

static struct emu_gpu_desc G[4];
static const char *truth;


/* Runs argv (stdout into out); exit status. */
static int run(char *const argv[], char *out, size_t outlen)
{
	return tp_capture_buf((const char *const *)argv, NULL, out, outlen);
}

/* ---- building examples/hip ----------------------------------------------------------------------- */

static const char *hip_skip;
static char hip_exe[PATH_MAX + 32];

/* Builds examples/hip into the suite's temporary directory once; NULL when ready, else why not. */
static const char *need_hip_example(void)
{
	static bool tried;
	if (tried)
		return hip_skip;
	tried = true;
	char src[PATH_MAX + 32];
	if (access("examples/hip/hip_example.hip", R_OK)) {
		char *r = realpath(testenv_path(testenv_build_dir(), ".."), NULL);
		snprintf(src, sizeof(src), "%s/examples/hip/hip_example.hip", r ? r : ".");
		free(r);
	} else {
		snprintf(src, sizeof(src), "examples/hip/hip_example.hip");
	}
	if (access(src, R_OK))
		return hip_skip = "examples/hip not found from the working directory or $B/..";
	if (system("env -u LD_PRELOAD sh -c 'command -v hipcc' >/dev/null 2>&1"))
		return hip_skip = "hipcc not installed (.ci/install-deps: hipcc libamdhip64-dev rocm-device-libs)";
	snprintf(hip_exe, sizeof(hip_exe), "%s", testenv_path(testenv_tmpdir(), "hip_example"));
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD hipcc --offload-arch=gfx90a -O1 -o %s %s >&2", hip_exe, src);
	if (system(cmd))
		return hip_skip = "examples/hip/hip_example.hip does not build with hipcc";
	return NULL;
}

/* ---- the truth ------------------------------------------------------------------------------------ */

struct seen {
	int copies[NSIZES];     /* runs of COPY_LINEAR on one queue adding up to sizes[i] */
	int split;              /* packets of exactly SDMA_SPLIT bytes */
	int oversize;           /* packets over SDMA_SPLIT */
	int fill, add;          /* the example's dispatches */
	int sdma, blits;        /* SDMA lines; ROCr blit-kernel copies (kind blit_copy) */
	int bad_dispatch;       /* one of them on another GPU, with another grid or taking no time */
};

static void read_truth(unsigned int gpu_id, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	unsigned long long run_bytes[64] = { 0 }; /* per SDMA queue: the current run of copies */
	FILE *f = fopen(truth, "r");
	char line[2048];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long gid = 0, q = 0, bytes = 0, grid = 0, st = 0, en = 0;
		char op[32] = "", name[64] = "";
		jget_u64(line, "gpu_id", &gid);
		if (strstr(line, "\"engine\":\"sdma\"") && jget_u64(line, "queue", &q) && q < 64 &&
		    jget_str(line, "op", op, sizeof(op))) {
			if (gid != gpu_id)
				continue; /* the recorder's GPUs are not the app's */
			s->sdma++;
			if (strcmp(op, "COPY_LINEAR")) {
				run_bytes[q] = 0; /* a copy's end: ROCr's fence/atomic/trap follow it */
				continue;
			}
			jget_u64(line, "bytes", &bytes);
			s->split += bytes == SDMA_SPLIT;
			s->oversize += bytes > SDMA_SPLIT;
			run_bytes[q] += bytes;
			for (int i = 0; i < NSIZES; i++)
				s->copies[i] += run_bytes[q] == sizes[i];
		} else if (strstr(line, "\"engine\":\"cp\"") && strstr(line, "\"kind\":\"blit_copy\"")) {
			s->blits += gid == gpu_id;
		} else if (strstr(line, "\"engine\":\"cp\"") && jget_str(line, "name", name, sizeof(name))) {
			bool fill = !strcmp(name, "_Z10fill_indexPjm"), add = !strcmp(name, "_Z7add_onePjm");
			if (!fill && !add)
				continue;
			s->fill += fill;
			s->add += add;
			const char *g = strstr(line, "\"grid\":[");
			if (gid != gpu_id || !g || sscanf(g + 8, "%llu", &grid) != 1 || grid != NWORK ||
			    !jget_u64(line, "start_ts", &st) || !jget_u64(line, "end_ts", &en) || en <= st) {
				fprintf(stderr, "  unexpected dispatch: %s", line);
				s->bad_dispatch++;
			}
		}
	}
	if (f)
		fclose(f);
}

/*
 * Runs examples/hip on GPU gi (ROCr's GPU index = the spec's node order) with HSA_ENABLE_SDMA unset
 * (or, !sdma, HSA_ENABLE_SDMA=0: ROCr's blit kernels copy), directly or under
 * `spmtap record --spm SQ_WAVES` on the same GPU, and checks it against the truth.
 */
static void hip_example(int gi, bool record, bool sdma)
{
	char spmtap[PATH_MAX + 32], dev[32], dir[PATH_MAX], vis[32];
	static char out[65536];
	snprintf(spmtap, sizeof(spmtap), "%s/spmtap", testenv_build_dir());
	snprintf(dev, sizeof(dev), "gpu_id:0x%x", G[gi].gpu_id);
	snprintf(dir, sizeof(dir), "%s", testenv_path(testenv_tmpdir(), "rec"));
	snprintf(vis, sizeof(vis), "ROCR_VISIBLE_DEVICES=%d", gi);
	/* ROCR_VISIBLE_DEVICES and no HSA_ENABLE_SDMA for the app only: the recorder's ROCr sees every GPU. */
	char *direct[] = { "/usr/bin/env", "-u", "HSA_ENABLE_SDMA", vis, hip_exe, NULL };
	if (!sdma) {
		direct[1] = "HSA_ENABLE_SDMA=0";
		direct[2] = vis;
		direct[3] = hip_exe;
		direct[4] = NULL;
	}
	char *rec[] = { spmtap, "record", "--spm", "SQ_WAVES", "--device", dev, "-d", dir, "-o", "r", "--",
			"/usr/bin/env", "-u", "HSA_ENABLE_SDMA", vis, hip_exe, NULL };
	unlink(truth);
	CU_ASSERT_EQUAL_FATAL(run(record ? rec : direct, out, sizeof(out)), 0);
	/* The round trips: the example compared the bytes; every size said so. */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, G[gi].profile->gfx_name));
	for (int i = 0; i < NSIZES; i++) {
		char want[96];
		snprintf(want, sizeof(want), "size %llu host+%d dev+%d: ok\n", sizes[i], (int)(sizes[i] % 2),
			 sizes[i] % 2 ? 3 : 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	}
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "all sizes ok"));

	struct seen s;
	read_truth(G[gi].gpu_id, &s);
	/* The CP: both kernels once per size, on this GPU, with the launched grid, taking time. */
	CU_ASSERT_EQUAL(s.fill, NSIZES);
	CU_ASSERT_EQUAL(s.add, NSIZES);
	CU_ASSERT_EQUAL(s.bad_dispatch, 0);
	if (!sdma) {
		/* No SDMA at all: every copy but the CPU's first 4 KiB one is a ROCr blit kernel (+ code upload). */
		CU_ASSERT_EQUAL(s.sdma, 0);
		CU_ASSERT(s.blits >= 2 * NSIZES - 1 + 1);
		fprintf(stderr, "  [%s: %d blit copies, %d+%d dispatches]\n", G[gi].profile->name, s.blits, s.fill,
			s.add);
		return;
	}
	/*
	 * SDMA: both directions of every size went through COPY_LINEAR packets, split at 0x3fffe0.  The
	 * first 4096-byte host-to-device copy is the exception HIP makes: ROCclr writes small copies to
	 * (CPU-visible) VRAM with the CPU, so only its way back is on SDMA.
	 */
	for (int i = 0; i < NSIZES; i++)
		CU_ASSERT(s.copies[i] >= (sizes[i] == 4096 ? 1 : 2));
	CU_ASSERT(s.split >= 2 * (2 + 3)); /* 8 MiB: 2 full packets, 12,595,161: 3, each way */
	CU_ASSERT_EQUAL(s.oversize, 0);
	fprintf(stderr, "  [%s: copies %d/%d/%d/%d, %d split packets, %d+%d dispatches]\n", G[gi].profile->name,
		s.copies[0], s.copies[1], s.copies[2], s.copies[3], s.split, s.fill, s.add);
	if (record) {
		/* The recording of the same run is there and has samples. */
		FILE *f = fopen(testenv_path(dir, "r_spm.csv"), "r");
		int lines = 0;
		char l[4096];
		while (f && fgets(l, sizeof(l), f))
			lines++;
		if (f)
			fclose(f);
		CU_ASSERT(lines > 10);
	}
}

static void test_direct_mi210(void)
{
	hip_example(0, false, true);
}

static void test_blit_mi210(void)
{
	hip_example(0, false, false);
}

static void test_record_mi210(void)
{
	hip_example(0, true, true);
}

static void test_record_mi250x(void)
{
	hip_example(1, true, true);
}

/*
 * gfx942 with Debian's ROCr 5.2.3 (docs/emulator.md "HIP applications"): ROCr makes no agent for the
 * MI300A, so HIP sees no device, and says so.  `spmtap list` tells the user beforehand (test_cli
 * list_gfx942_apps).  Its own emulated session, outside this suite's MI210/MI250X one.
 */
static void test_mi300a_no_agent(void)
{
	char cmd[4 * PATH_MAX], log[PATH_MAX];
	snprintf(log, sizeof(log), "%s", testenv_path(testenv_tmpdir(), "mi300a.out"));
	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD -u SPMTAP_EMU_ACTIVE -u SPMTAP_EMULATE -u HSA_ENABLE_SDMA "
		 "SPMTAP_EMU_STATE_DIR='%s' '%s/spmtap' emulate mi300a -- '%s' >'%s' 2>&1",
		 testenv_path(testenv_tmpdir(), "st300"), testenv_build_dir(), hip_exe, log);
	int st = system(cmd);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	char out[8192] = "";
	FILE *f = fopen(log, "r");
	size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Agent creation failed")); /* ROCr's own words */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "FAIL: hipGetDeviceCount: hipErrorNoDevice, 0 devices"));
	CU_ASSERT_PTR_NULL(strstr(out, "size 4096"));
}

static const struct testenv_case cases[] = {
	{ "direct_mi210", test_direct_mi210, need_hip_example },
	{ "blit_mi210", test_blit_mi210, need_hip_example },
	{ "record_mi210", test_record_mi210, need_hip_example },
	{ "record_mi250x", test_record_mi250x, need_hip_example },
	{ "mi300a_no_agent", test_mi300a_no_agent, need_hip_example },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	char err[256];
	if (argc > 1 && !strcmp(argv[1], "--list"))
		return testenv_run_suite("emu_hip", cases, argc, argv);
	testenv_under_emu(argc, argv, SPEC, NULL);
	if (emu_spec_parse(SPEC, G, 4, err, sizeof(err)) != NGPU)
		return 2;
	truth = testenv_dispatch_truth();
	return testenv_run_suite("emu_hip", cases, argc, argv);
}
