/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "jobbed.h"
#include "testenv.h"

char *jb_fmt(const char *fmt, ...)
{
	static char buf[8][1024];
	static int k;
	char *b = buf[k++ % 8];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(buf[0]), fmt, ap);
	va_end(ap);
	return b;
}

const char *jb_need_bed(void)
{
	if (TESTENV_SANITIZED && !getenv("SPMTAP_TEST_JOB_SANITIZED"))
		return "sanitized build: Open MPI is not instrumented (the plain build runs this suite; "
		       "SPMTAP_TEST_JOB_SANITIZED=1 runs it here anyway)";
	if (geteuid())
		return "needs root (time namespaces)";
	if (system("command -v mpirun >/dev/null 2>&1"))
		return "mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)";
	const char *b = testenv_build_dir();
	if (access(jb_fmt("%s/spmtap-job", b), X_OK))
		return "build/spmtap-job not built (needs mpicc)";
	if (system(jb_fmt("%s/tests/helpers/timens_node --boot-ns 0 -- true 2>/dev/null", b)))
		return "time namespaces unavailable (Linux >= 5.6, root)";
	return NULL;
}
