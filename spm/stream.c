/* SPDX-License-Identifier: MIT */
/* One GPU's SPM session: acquire, tell the kernel generation, rotate buffers, release. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "spm/spm.h"

static const char *errname(int negerr)
{
	const char *n = strerrorname_np(-negerr);
	return n ? n : "an unknown error";
}

struct spm_stream {
	const struct spm_backend_ops *ops;
	struct spm_backend *b;
	struct spm_device dev;
	enum spm_gen gen;
	struct spm_stream_shape shape;
	void *armed;          /* the buffer the kernel owns now, or NULL */
	uint32_t armed_size;
};

/*
 * SPM.md 3.2: a second ACQUIRE from the same process fails with EINVAL on
 * gen A and EBUSY on gen B, and leaves the first one valid.  It is the only
 * probe without side effects that needs no data.
 */
static enum spm_gen probe_gen(struct spm_stream *s, char *label, size_t len)
{
	int r = s->ops->acquire(s->b, &s->dev);
	if (r == -EINVAL)
		return SPM_GEN_A;
	if (r == -EBUSY)
		return SPM_GEN_B;

	/* num_xcc > 1 cannot be gen A; a single XCC says nothing, A is the older default. */
	enum spm_gen guess = s->dev.num_xcc > 1 ? SPM_GEN_B : SPM_GEN_A;
	pr_warn("stream", "%s: cannot tell the SPM generation (second ACQUIRE via %s returned %s%s, "
		"expected -EINVAL or -EBUSY); assuming %s from num_xcc %u, override with the "
		"generation option if the data looks wrong",
		spm_device_label(&s->dev, label, len), s->ops->name, r ? "-" : "",
		r ? errname(r) : "success", spm_gen_name(guess), s->dev.num_xcc);
	return guess;
}

int spm_stream_open(struct spm_stream **out, const struct spm_backend_ops *ops,
		    struct spm_backend *b, const struct spm_device *dev,
		    const struct spm_stream_opts *opts, char *err, size_t errlen)
{
	char label[96];
	*out = NULL;
	struct spm_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	s->ops = ops;
	s->b = b;
	s->dev = *dev;

	int r = ops->acquire(b, dev);
	if (r) {
		spm_explain(r, "acquire", dev, ops->name, err, errlen);
		free(s);
		return r;
	}

	if (opts && opts->gen_override != SPM_GEN_UNKNOWN) {
		s->gen = opts->gen_override;
		if (s->gen == SPM_GEN_A && dev->num_xcc > 1)
			pr_warn("stream", "%s: generation A forced on a GPU with %u XCCs; gen A "
				"kernels support one XCC only", spm_device_label(dev, label,
				sizeof(label)), dev->num_xcc);
	} else {
		s->gen = probe_gen(s, label, sizeof(label));
	}
	spm_stream_shape_of(s->gen, dev->num_xcc, &s->shape);
	pr_info("stream", "%s: SPM acquired via %s, kernel generation %s",
		spm_device_label(dev, label, sizeof(label)), ops->name, spm_gen_name(s->gen));
	*out = s;
	return 0;
}

enum spm_gen spm_stream_gen(const struct spm_stream *s)
{
	return s->gen;
}

const struct spm_stream_shape *spm_stream_shape(const struct spm_stream *s)
{
	return &s->shape;
}

uint32_t spm_stream_overhead(const struct spm_stream *s, uint32_t size)
{
	return s->shape.header_bytes < size ? s->shape.header_bytes : size;
}

int spm_stream_rotate(struct spm_stream *s, void *next, uint32_t size, uint32_t timeout_ms,
		      struct spm_retired *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	/* Re-arming what the kernel still writes into would hand it the consumer's data (SPM.md 9). */
	if (next && next == s->armed)
		return spmtap_seterr(err, errlen, EINVAL,
				     "buffer %p is already armed; rotate to a different buffer", next);

	/*
	 * A stop carries no buffer, but gen B still checks rounddown(size /
	 * num_xcc, 32) > 32 before anything else and keeps streaming on
	 * EINVAL (SPM.md 3.6); gen A ignores the size.
	 */
	uint32_t stop_min = 64u * s->dev.num_xcc;
	if (!next && size < stop_min)
		size = stop_min;

	uint32_t t = timeout_ms, copied = 0, loss = 0;
	int ret = s->ops->set_dest(s->b, &s->dev, next, size, &t, &copied, &loss);
	if (ret) {
		/* The kernel fails before retiring (gen B size check) or mid-retire (EFAULT):
		 * either way the old buffer is not handed back to us as valid data. */
		spm_explain(ret, next ? "set_dest" : "stop", &s->dev, s->ops->name, err, errlen);
		return ret;
	}
	r->buf = s->armed;
	r->size = s->armed_size;
	r->args_bytes = copied;
	r->args_loss = loss;
	s->armed = next;
	s->armed_size = next ? size : 0;
	return 0;
}

int spm_stream_close(struct spm_stream *s)
{
	if (!s)
		return 0;
	/* RELEASE stops SPM and forgets the armed buffer; nothing more to undo. */
	int r = s->ops->release(s->b, &s->dev);
	if (r) {
		char label[96];
		pr_warn("stream", "%s: SPM RELEASE via %s failed: %s; the kernel frees SPM at "
			"process exit anyway", spm_device_label(&s->dev, label, sizeof(label)),
			s->ops->name, errname(r));
	}
	free(s);
	return r;
}
