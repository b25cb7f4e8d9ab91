/* SPDX-License-Identifier: MIT */
/*
 * The public C API (include/spmtap.h) on the emulated MI300A: opts
 * validation (sz), devices and counters, a short session whose callback
 * gets chunks with monotonic host times, and errors with suggestions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spmtap.h"
#include "testenv.h"

static const char *need_emulator(void)
{
	static char shim[4096];
	snprintf(shim, sizeof(shim), "%s/libspmtap-emu.so", testenv_build_dir());
	return access(shim, R_OK) ? "libspmtap-emu.so not built" : NULL;
}

static void test_opts_sz(void)
{
	struct spmtap_devices *L = NULL;
	CU_ASSERT_EQUAL_FATAL(spmtap_devices_open(&L, NULL), 0);
	struct spmtap_session *s = NULL;
	struct spmtap_session_opts o = SPMTAP_SESSION_OPTS_INIT;
	const char *ctr[] = { "SQ_WAVES" };
	o.devices = L;
	o.counters = ctr;
	o.ncounters = 1;
	o.sz = sizeof(size_t); /* short */
	errno = 0;
	CU_ASSERT_EQUAL(spmtap_session_open(&s, &o), -EINVAL);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(spmtap_session_errmsg(NULL), "sz"));
	/* a newer caller's struct: unknown non-zero tail refused, zero tail accepted */
	struct { struct spmtap_session_opts o; uint64_t future; } big;
	memset(&big, 0, sizeof(big));
	big.o = (struct spmtap_session_opts)SPMTAP_SESSION_OPTS_INIT;
	big.o.sz = sizeof(big);
	big.o.devices = L;
	big.o.counters = ctr;
	big.o.ncounters = 1;
	big.future = 1;
	CU_ASSERT_EQUAL(spmtap_session_open(&s, &big.o), -EINVAL);
	big.future = 0;
	CU_ASSERT_EQUAL(spmtap_session_open(&s, &big.o), 0);
	spmtap_session_close(s);
	struct spmtap_discover_opts d = SPMTAP_DISCOVER_OPTS_INIT;
	struct spmtap_devices *L2 = NULL;
	d.sz = 1;
	CU_ASSERT_EQUAL(spmtap_devices_open(&L2, &d), -EINVAL);
	spmtap_devices_close(L);
}

static void test_devices(void)
{
	struct spmtap_devices *L = NULL;
	struct spmtap_discover_opts d = SPMTAP_DISCOVER_OPTS_INIT;
	CU_ASSERT_EQUAL_FATAL(spmtap_devices_open(&L, &d), 0);
	CU_ASSERT_EQUAL(spmtap_devices_count(L), 1);
	CU_ASSERT_STRING_EQUAL(spmtap_device_gfx(L, 0), "gfx942");
	CU_ASSERT_EQUAL(spmtap_device_num_xcc(L, 0), 6);
	CU_ASSERT(spmtap_device_gpu_id(L, 0) != 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(spmtap_device_name(L, 0), "MI300A"));
	CU_ASSERT_PTR_NULL(spmtap_device_gfx(L, 1));
	int n = spmtap_device_counter_count(L, 0);
	CU_ASSERT(n > 50);
	bool found = false;
	for (int k = 0; k < n; k++)
		if (!strcmp(spmtap_device_counter_name(L, 0, (unsigned)k), "SQ_WAVES")) {
			found = true;
			CU_ASSERT(strlen(spmtap_device_counter_description(L, 0, (unsigned)k)) > 0);
			CU_ASSERT_EQUAL(spmtap_device_counter_streamable(L, 0, (unsigned)k), 1);
		}
	CU_ASSERT(found);
	fprintf(stderr, "\n    %s (%s, gpu_id %u, %u XCCs), %d counters ", spmtap_device_name(L, 0),
		spmtap_device_gfx(L, 0), spmtap_device_gpu_id(L, 0), spmtap_device_num_xcc(L, 0), n);
	spmtap_devices_close(L);
}

struct seen {
	long chunks, samples, bad_order, smi;
	int64_t last[16];
	uint64_t sum;
	int cols_ok;
};

static int on_chunk(const struct spmtap_chunk *c, void *user)
{
	struct seen *s = user;
	s->chunks++;
	if (strcmp(spmtap_chunk_source(c), "spm")) {
		s->smi += spmtap_chunk_n(c);
		return 0;
	}
	int32_t x = spmtap_chunk_xcc(c);
	const int64_t *h = spmtap_chunk_host_ns(c);
	for (uint32_t i = 0; i < spmtap_chunk_n(c); i++) {
		if (x >= 0 && x < 16) {
			if (h[i] <= s->last[x])
				s->bad_order++;
			s->last[x] = h[i];
		}
	}
	s->samples += spmtap_chunk_n(c);
	if (spmtap_chunk_ncols(c) == 2 && !strcmp(spmtap_chunk_col_name(c, 0), "SQ_WAVES") &&
	    spmtap_chunk_col_type(c, 0) == SPMTAP_TYPE_U64 && spmtap_chunk_u64(c, 0) &&
	    !spmtap_chunk_f64(c, 0) && spmtap_chunk_ticks(c))
		s->cols_ok = 1;
	const uint64_t *v = spmtap_chunk_u64(c, 0);
	for (uint32_t i = 0; v && i < spmtap_chunk_n(c); i++)
		s->sum += v[i];
	return 0;
}

static void test_session(void)
{
	struct spmtap_devices *L = NULL;
	CU_ASSERT_EQUAL_FATAL(spmtap_devices_open(&L, NULL), 0);
	const char *ctr[] = { "SQ_WAVES", "TCC_HIT" };
	static struct seen seen;
	memset(&seen, 0, sizeof(seen));
	struct spmtap_session_opts o = SPMTAP_SESSION_OPTS_INIT;
	o.devices = L;
	o.counters = ctr;
	o.ncounters = 2;
	o.smi = "power";
	o.dir = testenv_tmpdir();
	o.name = "api";
	o.formats = "sqlite";
	o.on_chunk = on_chunk;
	o.user = &seen;
	struct spmtap_session *s = NULL;
	int rc = spmtap_session_open(&s, &o);
	if (rc)
		fprintf(stderr, "\n%s\n", spmtap_session_errmsg(NULL));
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL_FATAL(spmtap_session_start(s), 0);
	struct timespec ts = { 0, 500 * 1000000L };
	nanosleep(&ts, NULL);
	rc = spmtap_session_stop(s);
	if (rc)
		fprintf(stderr, "\n%s\n", spmtap_session_errmsg(s));
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT_STRING_EQUAL(spmtap_session_errmsg(s), "");
	spmtap_session_close(s);
	fprintf(stderr, "\n    %ld chunks, %ld SPM samples (SQ_WAVES total %llu), %ld sensor samples, "
		"%ld out of order ", seen.chunks, seen.samples, (unsigned long long)seen.sum, seen.smi,
		seen.bad_order);
	CU_ASSERT(seen.samples > 1000);
	CU_ASSERT(seen.smi > 10);
	CU_ASSERT_EQUAL(seen.bad_order, 0);
	CU_ASSERT(seen.cols_ok);
	char db[4200];
	snprintf(db, sizeof(db), "%s/api.db", testenv_tmpdir());
	CU_ASSERT_EQUAL(access(db, R_OK), 0);
	spmtap_devices_close(L);
}

static void test_errors(void)
{
	struct spmtap_devices *L = NULL;
	CU_ASSERT_EQUAL_FATAL(spmtap_devices_open(&L, NULL), 0);
	const char *ctr[] = { "SQ_WAVE" };
	struct spmtap_session_opts o = SPMTAP_SESSION_OPTS_INIT;
	o.devices = L;
	o.counters = ctr;
	o.ncounters = 1;
	struct spmtap_session *s = NULL;
	int rc = spmtap_session_open(&s, &o);
	CU_ASSERT(rc < 0);
	CU_ASSERT_EQUAL(errno, -rc);
	CU_ASSERT_PTR_NULL(s);
	const char *m = spmtap_session_errmsg(NULL);
	fprintf(stderr, "\n    unknown counter: %d (%s): %s ", rc, spmtap_strerror(rc), m);
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "SQ_WAVE"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "did you mean"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m, "SQ_WAVES"));
	o.counters = (const char *[]){ "SQ_WAVES" };
	o.formats = "csv,xml";
	CU_ASSERT_EQUAL(spmtap_session_open(&s, &o), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(spmtap_session_errmsg(NULL), "xml"));
	o.formats = NULL;
	o.gpus = (const unsigned int[]){ 3 };
	o.ngpus = 1;
	CU_ASSERT(spmtap_session_open(&s, &o) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(spmtap_session_errmsg(NULL), "GPU 3"));
	spmtap_devices_close(L);
}

int main(int argc, char **argv)
{
	testenv_under_emu(argc, argv, "mi300a", NULL);
	static const struct testenv_case cases[] = {
		{ "opts_sz", test_opts_sz, need_emulator },
		{ "devices", test_devices, need_emulator },
		{ "session", test_session, need_emulator },
		{ "errors", test_errors, need_emulator },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("api", cases, argc, argv);
}
