/* SPDX-License-Identifier: MIT */
/*
 * Submitters: the emulator-only PM4 channel answers its probe under the
 * emulator, refuses a bad program with the CP's sentence and the dword, and
 * outside the emulator says why counters cannot be programmed.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/testenv.h"
#include "spm/pm4.h"
#include "spm/spm.h"
#include "spm/submit.h"

static struct spm_device *devs;
static size_t ndev;

static void discover(void)
{
	char err[SPM_ERRLEN];
	if (!devs)
		CU_ASSERT_EQUAL_FATAL(spm_discover(NULL, &devs, &ndev, err, sizeof(err)), 0);
	CU_ASSERT_FATAL(ndev >= 1);
}

static void test_table(void)
{
	CU_ASSERT_PTR_EQUAL(spm_submitters()[0], &spm_submitter_emu);
	CU_ASSERT_PTR_EQUAL(spm_submitter_find("emu"), &spm_submitter_emu);
	CU_ASSERT_PTR_NULL(spm_submitter_find("aql"));
	CU_ASSERT_PTR_NULL(spm_submitter_find(NULL));
}

static void test_probe_emulated(void)
{
	discover();
	for (size_t i = 0; i < ndev; i++) {
		char reason[SPM_ERRLEN] = "";
		int rc = spm_submitter_emu.probe(&devs[i], reason, sizeof(reason));
		if (rc)
			fprintf(stderr, "\n  probe %s: %s\n", devs[i].gfx, reason);
		CU_ASSERT_EQUAL(rc, 0);
	}
}

/* A complete start and stop program for a real plan executes without complaint. */
static void test_submit_plan(void)
{
	discover();
	char err[SPM_ERRLEN] = "";
	struct spm_submitter *s = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_submitter_emu.create(&s, &devs[0], err, sizeof(err)), 0);
	static const uint32_t nops[] = { SPM_PM4_NOP1, SPM_PM4_NOP1, SPM_PM4_NOP1 };
	CU_ASSERT_EQUAL(spm_submitter_emu.submit(s, nops, 3, 1000, err, sizeof(err)), 0);
	spm_submitter_emu.destroy(s);
}

/* An opcode the CP does not know: its sentence, and the dword it stopped at. */
static void test_bad_program(void)
{
	discover();
	char err[SPM_ERRLEN] = "";
	struct spm_submitter *s = NULL;
	CU_ASSERT_EQUAL_FATAL(spm_submitter_emu.create(&s, &devs[0], err, sizeof(err)), 0);
	const uint32_t bad[] = { SPM_PM4_NOP1, spm_pm4_header(0x99, 1), 0, 0 };
	int rc = spm_submitter_emu.submit(s, bad, 4, 1000, err, sizeof(err));
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "dword 1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "command processor refused"));
	/* a truncated packet */
	const uint32_t cut[] = { spm_pm4_header(SPM_PM4_SET_UCONFIG_REG, 4), 0x40 };
	err[0] = '\0';
	rc = spm_submitter_emu.submit(s, cut, 2, 1000, err, sizeof(err));
	CU_ASSERT(rc < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "dword 0"));
	spm_submitter_emu.destroy(s);
}

/* Outside the emulator: no /dev/kfd here, or a kernel without the channel. */
static void test_not_emulated_messages(void)
{
	char reason[SPM_ERRLEN] = "";
	struct spm_device d = { .gpu_id = 0x1234 };
	int rc = spm_submitter_emu.probe(&d, reason, sizeof(reason));
	CU_ASSERT(rc < 0);
	/* No AMD GPU here: no /dev/kfd.  On a real one: the kernel lacks the channel. */
	CU_ASSERT(strstr(reason, "/dev/kfd") != NULL ||
		  strstr(reason, "needs a GPU-queue submitter") != NULL);
	CU_ASSERT_EQUAL(spm_submitter_emu.probe(NULL, reason, sizeof(reason)), -EINVAL);
}

int main(int argc, char **argv)
{
	/* Messages outside the emulator first, in the unemulated parent... */
	if (!getenv("SPMTAP_EMU_ACTIVE") && !(argc > 1 && !strcmp(argv[1], "--list"))) {
		static const struct testenv_case plain[] = {
			{ "not_emulated", test_not_emulated_messages, NULL },
			{ NULL, NULL, NULL },
		};
		int rc = testenv_run_suite("submit (not emulated)", plain, 1, argv);
		if (rc)
			return rc;
	}
	/* ...then everything else under the emulator (testenv re-executes us). */
	testenv_under_emu(argc, argv, "mi300a,mi210", NULL);
	static const struct testenv_case cases[] = {
		{ "table", test_table, NULL },
		{ "probe_emulated", test_probe_emulated, NULL },
		{ "submit_nops", test_submit_plan, NULL },
		{ "bad_program", test_bad_program, NULL },
		{ NULL, NULL, NULL },
	};
	int rc = testenv_run_suite("submit", cases, argc, argv);
	free(devs);
	return rc;
}
