// SPDX-License-Identifier: MIT
/*
 * Evaluation of a compiled metric on a frame (metrics.h).  A scope (one
 * XCC or all; one SE or all) is what a reduction narrows: counters and
 * inst() sum only what lies in it, and so do the geometry variables, so a
 * metric means the same thing per XCC as over the GPU.  Anything missing,
 * a division by zero or a non-finite step makes the whole value missing.
 */
#include <errno.h>
#include <math.h>

#include "collector/analysis/metrics_priv.h"

struct ectx {
	const struct mx_set *s;
	const struct mx_frame *f;
};

struct scope {
	int xcc; /* -1: all */
	int se;  /* -1: all; set only together with xcc */
};

static unsigned int xcc_lo(const struct ectx *c, struct scope sc)
{
	(void)c;
	return sc.xcc < 0 ? 0 : (unsigned int)sc.xcc;
}

static unsigned int xcc_hi(const struct ectx *c, struct scope sc)
{
	return sc.xcc < 0 ? c->f->nxcc : (unsigned int)sc.xcc + 1;
}

static bool known(double v)
{
	return v > 0 && isfinite(v);
}

static bool var(const struct ectx *c, int v, struct scope sc, double *out)
{
	const struct mx_frame *f = c->f;
	double nx = sc.xcc < 0 ? f->nxcc : 1;

	switch (v) {
	case MX_V_INTERVAL:
		*out = f->interval;
		return known(f->interval);
	case MX_V_DT:
		*out = f->dt;
		return known(f->dt);
	case MX_V_SCLK:
		*out = f->interval / f->dt;
		return known(f->interval) && known(f->dt);
	case MX_V_NXCC:
		*out = nx;
		return true;
	case MX_V_NSE:
		*out = sc.se >= 0 ? 1 : nx * f->se_per_xcc;
		return f->se_per_xcc > 0;
	case MX_V_NCU: {
		/* harvesting leaves SEs uneven: an SE's share is the mean */
		double per_xcc = (double)f->cu_count / f->nxcc;
		*out = sc.se >= 0 ? per_xcc / f->se_per_xcc : nx * per_xcc;
		return f->cu_count > 0 && (sc.se < 0 || f->se_per_xcc > 0);
	}
	default:
		return false;
	}
}

static const size_t *ref_cols(const struct mx_ref *r, struct scope sc, size_t *n)
{
	*n = sc.se < 0 ? r->ntop : r->nperse;
	return sc.se < 0 ? r->top : r->perse;
}

static bool ref(const struct ectx *c, const struct mx_ref *r, struct scope sc, double *out)
{
	const struct mx_frame *f = c->f;
	size_t n;
	const size_t *cols = ref_cols(r, sc, &n);
	double sum = 0;
	bool any = false;

	for (unsigned int x = xcc_lo(c, sc); x < xcc_hi(c, sc); x++) {
		for (size_t i = 0; i < n; i++) {
			const struct mx_col *col = &c->s->cols[cols[i]];
			double v;
			if (sc.se >= 0 && col->se != sc.se)
				continue;
			any = true;
			if (!f->value(f->user, cols[i], col->name, x, &v) || !isfinite(v))
				return false;
			sum += v;
		}
	}
	*out = sum;
	return any;
}

/* Hardware counters behind the columns a reference sums, in scope. */
static bool inst(const struct ectx *c, const struct mx_ref *r, struct scope sc, double *out)
{
	const struct mx_frame *f = c->f;
	size_t n;
	const size_t *cols = ref_cols(r, sc, &n);
	double per_xcc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct mx_col *col = &c->s->cols[cols[i]];
		double k = 1;
		if (sc.se >= 0 && col->se != sc.se)
			continue;
		if (col->inst < 0) {
			/* NAME sums every instance of its block (TCC: 16 per XCC) */
			unsigned int ni = spm_catalog_instances(c->s->cat, (enum spm_block)col->block, f->cus_per_se);
			if (!ni)
				return false;
			k *= ni;
		}
		if (col->se < 0 && col->se_block) {
			if (!f->se_per_xcc)
				return false;
			k *= f->se_per_xcc;
		}
		per_xcc += k;
	}
	*out = per_xcc * (xcc_hi(c, sc) - xcc_lo(c, sc));
	return per_xcc > 0;
}

static bool ev(const struct ectx *c, const struct mx_metric *m, int32_t i, struct scope sc, double *out);

static bool reduce(const struct ectx *c, const struct mx_metric *m, const struct mx_node *n, struct scope sc,
		   double *out)
{
	double acc = 0;
	unsigned int cnt = 0;

	for (unsigned int x = xcc_lo(c, sc); x < xcc_hi(c, sc); x++) {
		for (int s = 0; s < MX_MAX_SE; s++) {
			struct scope in = { (int)x, sc.se };
			double v;
			if (n->dim == MX_D_SE) {
				if (!((n->semask >> s) & 1) || (sc.se >= 0 && s != sc.se))
					continue;
				in.se = s;
			} else if (s > 0) {
				break;
			}
			if (!ev(c, m, n->a, in, &v))
				return false;
			if (n->sub == MX_F_MIN)
				acc = cnt == 0 || v < acc ? v : acc;
			else if (n->sub == MX_F_MAX)
				acc = cnt == 0 || v > acc ? v : acc;
			else
				acc += v;
			cnt++;
		}
	}
	if (!cnt)
		return false;
	*out = n->sub == MX_F_AVG ? acc / cnt : acc;
	return isfinite(*out);
}

static bool ev(const struct ectx *c, const struct mx_metric *m, int32_t i, struct scope sc, double *out)
{
	const struct mx_node *n = &m->nodes[i];
	double a, b;

	switch (n->op) {
	case MX_N_NUM:
		*out = n->num;
		return true;
	case MX_N_VAR:
		return var(c, n->sub, sc, out);
	case MX_N_REF:
		return ref(c, &c->s->refs[n->a], sc, out);
	case MX_N_INST:
		return inst(c, &c->s->refs[n->a], sc, out);
	case MX_N_METRIC: {
		const struct mx_metric *mm = &c->s->m[n->a];
		return ev(c, mm, mm->root, sc, out);
	}
	case MX_N_NEG:
		if (!ev(c, m, n->a, sc, &a))
			return false;
		*out = -a;
		return true;
	case MX_N_RED:
		return reduce(c, m, n, sc, out);
	default:
		break;
	}
	if (!ev(c, m, n->a, sc, &a) || !ev(c, m, n->b, sc, &b))
		return false;
	switch (n->op) {
	case MX_N_ADD:
		*out = a + b;
		break;
	case MX_N_SUB:
		*out = a - b;
		break;
	case MX_N_MUL:
		*out = a * b;
		break;
	case MX_N_DIV:
		if (b == 0)
			return false;
		*out = a / b;
		break;
	default:
		return false;
	}
	return isfinite(*out);
}

int mx_eval(const struct mx_set *s, size_t i, const struct mx_frame *f, struct mx_value *out)
{
	const struct ectx c = { s, f };
	double v;

	out->v = 0;
	out->missing = true;
	if (i >= s->n || !f || !f->value || f->nxcc == 0 || f->nxcc > MX_MAX_XCC)
		return -EINVAL;
	if (ev(&c, &s->m[i], s->m[i].root, (struct scope){ -1, -1 }, &v) && isfinite(v)) {
		out->v = v;
		out->missing = false;
	}
	return 0;
}
