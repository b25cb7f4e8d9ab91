/* SPDX-License-Identifier: MIT */
/* spm/stream.c against a scripted backend: generation probe, rotation, stop, release. */
#include <errno.h>
#include <string.h>

#include "spm/backend_priv.h"
#include "testenv.h"

/* What the fake kernel answers, and what it was asked. */
static struct {
	int first_acquire, second_acquire; /* results of ACQUIRE #1 and #2 */
	int set_dest_result, release_result;
	int acquires, releases, set_dests;
	void *last_buf;
	uint32_t last_size, last_timeout;
	uint32_t copied, loss;          /* what the next set_dest reports */
} fk;

static int fake_acquire(struct spm_backend *b, const struct spm_device *dev)
{
	(void)b, (void)dev;
	return fk.acquires++ == 0 ? fk.first_acquire : fk.second_acquire;
}

static int fake_release(struct spm_backend *b, const struct spm_device *dev)
{
	(void)b, (void)dev;
	fk.releases++;
	return fk.release_result;
}

static int fake_set_dest(struct spm_backend *b, const struct spm_device *dev, void *buf,
			 uint32_t size, uint32_t *timeout_ms, uint32_t *bytes_copied,
			 uint32_t *data_loss)
{
	(void)b, (void)dev;
	fk.set_dests++;
	fk.last_buf = buf;
	fk.last_size = size;
	fk.last_timeout = *timeout_ms;
	*bytes_copied = fk.copied;
	*data_loss = fk.loss;
	return fk.set_dest_result;
}

static const struct spm_backend_ops fake_ops = {
	.name = "fake",
	.acquire = fake_acquire,
	.set_dest = fake_set_dest,
	.release = fake_release,
};
static struct spm_backend fake_backend = { &fake_ops };

static const struct spm_device mi300a = { .index = 0, .gpu_id = 0x1001, .gfx = "gfx942", .num_xcc = 6 };
static const struct spm_device mi210 = { .index = 1, .gpu_id = 0x2001, .gfx = "gfx90a", .num_xcc = 1 };

static struct spm_stream *open_with(int second, const struct spm_device *dev, enum spm_gen force)
{
	memset(&fk, 0, sizeof(fk));
	fk.second_acquire = second;
	struct spm_stream_opts o = { .gen_override = force };
	struct spm_stream *s = NULL;
	char err[SPM_ERRLEN] = "";
	CU_ASSERT_EQUAL(spm_stream_open(&s, &fake_ops, &fake_backend, dev, &o, err, sizeof(err)), 0);
	return s;
}

static void test_probe(void)
{
	struct spm_stream *s = open_with(-EINVAL, &mi210, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_gen(s), SPM_GEN_A);
	CU_ASSERT_EQUAL(fk.acquires, 2);
	spm_stream_close(s);

	s = open_with(-EBUSY, &mi210, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_gen(s), SPM_GEN_B); /* behaviour beats num_xcc */
	spm_stream_close(s);

	/* Neither answer: fall back on the topology. */
	s = open_with(-EIO, &mi300a, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_gen(s), SPM_GEN_B);
	spm_stream_close(s);
	s = open_with(-EIO, &mi210, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_gen(s), SPM_GEN_A);
	spm_stream_close(s);

	/* An override skips the probe entirely. */
	s = open_with(-EINVAL, &mi210, SPM_GEN_B);
	CU_ASSERT_EQUAL(spm_stream_gen(s), SPM_GEN_B);
	CU_ASSERT_EQUAL(fk.acquires, 1);
	CU_ASSERT_EQUAL(spm_stream_close(s), 0);
	CU_ASSERT_EQUAL(fk.releases, 1);
}

static void test_acquire_fails(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.first_acquire = -ENOTTY;
	struct spm_stream *s = (void *)1;
	char err[SPM_ERRLEN] = "";
	CU_ASSERT_EQUAL(spm_stream_open(&s, &fake_ops, &fake_backend, &mi210, NULL, err,
					sizeof(err)), -ENOTTY);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "the kernel rejected the SPM ioctl"));
	CU_ASSERT_EQUAL(fk.acquires, 1); /* no probe, no release of what was never acquired */
	CU_ASSERT_EQUAL(fk.releases, 0);
}

static void test_rotate(void)
{
	static char a[4096], b[4096];
	struct spm_retired r;
	char err[SPM_ERRLEN];
	struct spm_stream *s = open_with(-EBUSY, &mi300a, SPM_GEN_UNKNOWN);

	CU_ASSERT_EQUAL(spm_stream_overhead(s, sizeof(a)), 32); /* per region */
	CU_ASSERT_EQUAL(spm_stream_overhead(s, 16), 16);

	fk.copied = 999;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, a, sizeof(a), 0, &r, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(r.buf); /* nothing was armed before */
	CU_ASSERT_PTR_EQUAL(fk.last_buf, a);
	CU_ASSERT_EQUAL(fk.last_size, sizeof(a));

	fk.copied = 1234;
	fk.loss = 2;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, b, 2048, 7, &r, err, sizeof(err)), 0);
	CU_ASSERT_PTR_EQUAL(r.buf, a);
	CU_ASSERT_EQUAL(r.size, sizeof(a));
	CU_ASSERT_EQUAL(r.args_bytes, 1234);
	CU_ASSERT_EQUAL(r.args_loss, 2);
	CU_ASSERT_EQUAL(fk.last_timeout, 7);

	/* Re-arming the buffer the kernel owns is refused before the kernel sees it. */
	int calls = fk.set_dests;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, b, 2048, 0, &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(fk.set_dests, calls);

	/* A failed rotate retires nothing; b stays armed. */
	fk.set_dest_result = -EFAULT;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, a, sizeof(a), 0, &r, err, sizeof(err)), -EFAULT);
	CU_ASSERT_PTR_NULL(r.buf);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "EFAULT"));
	fk.set_dest_result = 0;

	/* Stop: size 0 becomes the 64·num_xcc gen B insists on; b is retired. */
	fk.copied = 10;
	fk.loss = 0;
	CU_ASSERT_EQUAL(spm_stream_rotate(s, NULL, 0, 0, &r, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(fk.last_buf);
	CU_ASSERT_EQUAL(fk.last_size, 64 * 6);
	CU_ASSERT_PTR_EQUAL(r.buf, b);
	CU_ASSERT_EQUAL(r.size, 2048);
	CU_ASSERT_EQUAL(r.args_bytes, 10);
	/* A caller's larger stop size is passed through. */
	CU_ASSERT_EQUAL(spm_stream_rotate(s, NULL, 8192, 0, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(fk.last_size, 8192);
	CU_ASSERT_PTR_NULL(r.buf);

	fk.release_result = -EINVAL;
	CU_ASSERT_EQUAL(spm_stream_close(s), -EINVAL); /* reported, and still freed */
	CU_ASSERT_EQUAL(fk.releases, 1);
}

static void test_gen_a_overhead(void)
{
	struct spm_stream *s = open_with(-EINVAL, &mi210, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_overhead(s, 4096), 0);
	spm_stream_close(s);
}

/* What each generation's stream is, said once (spm/shape.c), and what an open stream answers. */
static void test_shape(void)
{
	struct spm_stream_shape a, b, u;
	CU_ASSERT_EQUAL(spm_stream_shape_of(SPM_GEN_A, 6, &a), 0);
	CU_ASSERT_EQUAL(a.nstreams, 1); /* one ring whatever the XCC count */
	CU_ASSERT_FALSE(a.headers);
	CU_ASSERT_FALSE(a.loss_per_region);
	CU_ASSERT_EQUAL(a.loss, SPM_LOSS_CUTS_LINES);
	CU_ASSERT_EQUAL(a.loss_align, 32);
	CU_ASSERT_EQUAL(spm_stream_shape_of(SPM_GEN_B, 6, &b), 0);
	CU_ASSERT_EQUAL(b.nstreams, 6);
	CU_ASSERT_TRUE(b.headers);
	CU_ASSERT_EQUAL(b.header_bytes, 32);
	CU_ASSERT_TRUE(b.loss_per_region);
	CU_ASSERT_EQUAL(b.loss, SPM_LOSS_WHOLE_SAMPLES);
	CU_ASSERT_EQUAL(spm_stream_shape_of(SPM_GEN_UNKNOWN, 6, &u), -EINVAL);
	CU_ASSERT_EQUAL(u.nstreams, 0);
	/* an open stream's shape is its generation's, and its overhead the header */
	struct spm_stream *s = open_with(-EINVAL, &mi210, SPM_GEN_UNKNOWN);
	CU_ASSERT_EQUAL(spm_stream_shape(s)->gen, spm_stream_gen(s));
	CU_ASSERT_EQUAL(spm_stream_shape(s)->nstreams, 1);
	CU_ASSERT_EQUAL(spm_stream_overhead(s, 4096), spm_stream_shape(s)->header_bytes);
	spm_stream_close(s);
	s = open_with(-EBUSY, &mi300a, SPM_GEN_UNKNOWN); /* gen B: one stream per XCC */
	CU_ASSERT_EQUAL(spm_stream_shape(s)->gen, SPM_GEN_B);
	CU_ASSERT_EQUAL(spm_stream_shape(s)->nstreams, 6);
	CU_ASSERT_EQUAL(spm_stream_overhead(s, 4096), 32);
	spm_stream_close(s);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "stream/probe", test_probe, NULL },
		{ "stream/acquire_fails", test_acquire_fails, NULL },
		{ "stream/rotate", test_rotate, NULL },
		{ "stream/gen_a_overhead", test_gen_a_overhead, NULL },
		{ "stream/shape", test_shape, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("spm_stream", cases, argc, argv);
}
