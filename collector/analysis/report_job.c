/* SPDX-License-Identifier: MIT */
/* `spmtap report` on a merged job recording (report_job.h). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collector/analysis/report_job.h"
#include "log.h"

bool rj_is_merged(const char *path)
{
	struct stat st;
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	sqlite3 *h = NULL;
	sqlite3_stmt *s = NULL;
	bool yes = false;
	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(h, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'node'", -1, &s,
			       NULL) == SQLITE_OK)
		yes = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	sqlite3_close(h);
	return yes;
}

void rj_free(struct rj_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nphase; i++) {
		free(r->phase[i].name);
		free(r->phase[i].cell);
	}
	free(r->phase);
	for (size_t i = 0; i < r->ncounter; i++)
		free(r->counter[i]);
	free(r->node);
	free(r);
}

struct ctx {
	sqlite3 *h;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, const char *what)
{
	return spmtap_seterr(c->err, c->errlen, EBADMSG, "%s: %s", what, sqlite3_errmsg(c->h));
}

/* The energy counter of table/col at t, linear between the readings around it; NAN outside. */
static double energy_at(struct ctx *c, const char *table, int col, int64_t t)
{
	char q[256];
	double v[2] = { NAN, NAN };
	int64_t ts[2] = { 0, 0 };
	for (int k = 0; k < 2; k++) {
		snprintf(q, sizeof(q), "SELECT host_ns, v%d FROM %s WHERE host_ns %s ?1 AND v%d IS NOT NULL "
				       "ORDER BY host_ns %s LIMIT 1",
			 col, table, k ? ">=" : "<=", col, k ? "ASC" : "DESC");
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(c->h, q, -1, &s, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(s, 1, t);
			if (sqlite3_step(s) == SQLITE_ROW) {
				ts[k] = sqlite3_column_int64(s, 0);
				v[k] = sqlite3_column_double(s, 1);
			}
		}
		sqlite3_finalize(s);
	}
	if (isnan(v[0]) || isnan(v[1]))
		return NAN;
	if (ts[1] == ts[0])
		return v[0];
	return v[0] + (v[1] - v[0]) * (double)(t - ts[0]) / (double)(ts[1] - ts[0]);
}

/* Energy of node over [a, b): every energy counter (J) of its GPUs, summed. */
static double node_energy(struct ctx *c, uint32_t node, int64_t a, int64_t b)
{
	sqlite3_stmt *s = NULL;
	double e = NAN;
	int n = 0;
	if (sqlite3_prepare_v2(c->h, "SELECT s.sample_table, m.col FROM metric m JOIN stream s ON s.id = m.stream_id "
				     "WHERE s.node = ?1 AND m.name = 'energy' AND m.unit = 'J' ORDER BY s.id",
			       -1, &s, NULL) != SQLITE_OK)
		return NAN;
	sqlite3_bind_int64(s, 1, node);
	while (sqlite3_step(s) == SQLITE_ROW) {
		char table[64];
		snprintf(table, sizeof(table), "%s", (const char *)sqlite3_column_text(s, 0));
		int col = sqlite3_column_int(s, 1);
		double d = energy_at(c, table, col, b) - energy_at(c, table, col, a);
		e = n++ ? e + d : d; /* a GPU without an answer makes the node's sum NAN: no partial sums */
	}
	sqlite3_finalize(s);
	return e;
}

/* SPM counter totals of node over [a, b) into cell (summed over its XCC streams). */
static int node_counters(struct ctx *c, const struct rj_report *r, struct rj_cell *cell)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(c->h, "SELECT s.sample_table, m.col, m.name FROM metric m JOIN stream s "
				     "ON s.id = m.stream_id WHERE s.node = ?1 AND s.source = 'spm' ORDER BY s.id, m.col",
			       -1, &s, NULL) != SQLITE_OK)
		return fail(c, "reading the metrics");
	sqlite3_bind_int64(s, 1, cell->node);
	char last[64] = "";
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *table = (const char *)sqlite3_column_text(s, 0), *name = (const char *)sqlite3_column_text(s, 2);
		int col = sqlite3_column_int(s, 1);
		size_t k = 0;
		while (k < r->ncounter && strcmp(r->counter[k], name))
			k++;
		if (k == r->ncounter)
			continue;
		char q[256];
		snprintf(q, sizeof(q), "SELECT count(*), total(v%d) FROM %s WHERE host_ns >= ?1 AND host_ns < ?2", col,
			 table);
		sqlite3_stmt *t = NULL;
		if (sqlite3_prepare_v2(c->h, q, -1, &t, NULL) != SQLITE_OK) {
			sqlite3_finalize(s);
			return fail(c, "reading samples");
		}
		sqlite3_bind_int64(t, 1, cell->start_ns);
		sqlite3_bind_int64(t, 2, cell->end_ns);
		if (sqlite3_step(t) == SQLITE_ROW) {
			cell->counter[k] = (isnan(cell->counter[k]) ? 0 : cell->counter[k]) + sqlite3_column_double(t, 1);
			/* samples: once per stream (its first counter) */
			if (strcmp(last, table)) {
				cell->samples += (uint64_t)sqlite3_column_int64(t, 0);
				snprintf(last, sizeof(last), "%s", table);
			}
		}
		sqlite3_finalize(t);
	}
	sqlite3_finalize(s);
	return 0;
}

int rj_load(const char *db, struct rj_report **out, char *err, size_t errlen)
{
	*out = NULL;
	struct ctx c = { .err = err, .errlen = errlen };
	if (sqlite3_open_v2(db, &c.h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		int rc = spmtap_seterr(err, errlen, EBADMSG, "%s: %s", db, sqlite3_errmsg(c.h));
		sqlite3_close(c.h);
		return rc;
	}
	struct rj_report *r = calloc(1, sizeof(*r));
	int rc = r ? 0 : -ENOMEM;
	sqlite3_stmt *s = NULL;
	/* nodes */
	if (!rc && sqlite3_prepare_v2(c.h, "SELECT node, rank, hostname, clock_method, max_bound_ns FROM node ORDER BY node",
				      -1, &s, NULL) != SQLITE_OK)
		rc = fail(&c, "reading the nodes");
	while (!rc && sqlite3_step(s) == SQLITE_ROW) {
		struct rj_node *n = realloc(r->node, (r->nnode + 1) * sizeof(*n));
		if (!n) {
			rc = -ENOMEM;
			break;
		}
		r->node = n;
		n = &r->node[r->nnode++];
		memset(n, 0, sizeof(*n));
		n->node = (uint32_t)sqlite3_column_int64(s, 0);
		n->rank = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 1);
		snprintf(n->hostname, sizeof(n->hostname), "%s", sqlite3_column_text(s, 2) ? (const char *)sqlite3_column_text(s, 2) : "");
		snprintf(n->clock_method, sizeof(n->clock_method), "%s",
			 sqlite3_column_text(s, 3) ? (const char *)sqlite3_column_text(s, 3) : "");
		n->max_bound_ns = sqlite3_column_type(s, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 4);
	}
	sqlite3_finalize(s);
	s = NULL;
	/* counters: the SPM counters' names over every node */
	if (!rc && sqlite3_prepare_v2(c.h, "SELECT m.name FROM metric m JOIN stream s ON s.id = m.stream_id "
					   "WHERE s.source = 'spm' GROUP BY m.name ORDER BY min(m.id)",
				      -1, &s, NULL) != SQLITE_OK)
		rc = fail(&c, "reading the metrics");
	while (!rc && sqlite3_step(s) == SQLITE_ROW && r->ncounter < RJ_MAX_COUNTERS)
		if (!(r->counter[r->ncounter++] = strdup((const char *)sqlite3_column_text(s, 0))))
			rc = -ENOMEM;
	sqlite3_finalize(s);
	s = NULL;
	/* phases: by name, in the order they start; each node's occurrences */
	if (!rc && sqlite3_prepare_v2(c.h, "SELECT name FROM slice WHERE name IS NOT NULL AND category <> 'kernel' "
					   "GROUP BY name ORDER BY min(start_ns), name",
				      -1, &s, NULL) != SQLITE_OK)
		rc = fail(&c, "reading the phases");
	while (!rc && sqlite3_step(s) == SQLITE_ROW) {
		struct rj_phase *p = realloc(r->phase, (r->nphase + 1) * sizeof(*p));
		if (!p) {
			rc = -ENOMEM;
			break;
		}
		r->phase = p;
		p = &r->phase[r->nphase++];
		memset(p, 0, sizeof(*p));
		p->name = strdup((const char *)sqlite3_column_text(s, 0));
		if (!p->name)
			rc = -ENOMEM;
	}
	sqlite3_finalize(s);
	s = NULL;
	for (size_t i = 0; !rc && i < r->nphase; i++) {
		struct rj_phase *p = &r->phase[i];
		p->energy_j = 0;
		for (size_t k = 0; k < r->ncounter; k++)
			p->counter[k] = 0;
		/* a node's first occurrence of the phase (the outermost, earliest) */
		if (sqlite3_prepare_v2(c.h, "SELECT node, min(start_ns), end_ns FROM slice WHERE name = ?1 "
					    "GROUP BY node ORDER BY node",
				       -1, &s, NULL) != SQLITE_OK) {
			rc = fail(&c, "reading the phases");
			break;
		}
		sqlite3_bind_text(s, 1, p->name, -1, SQLITE_STATIC);
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		while (!rc && sqlite3_step(s) == SQLITE_ROW) {
			struct rj_cell *cl = realloc(p->cell, (p->ncell + 1) * sizeof(*cl));
			if (!cl) {
				rc = -ENOMEM;
				break;
			}
			p->cell = cl;
			cl = &p->cell[p->ncell++];
			memset(cl, 0, sizeof(*cl));
			cl->node = (uint32_t)sqlite3_column_int64(s, 0);
			cl->start_ns = sqlite3_column_int64(s, 1);
			cl->end_ns = sqlite3_column_int64(s, 2);
			for (size_t k = 0; k < RJ_MAX_COUNTERS; k++)
				cl->counter[k] = NAN;
			if (cl->start_ns < lo)
				lo = cl->start_ns;
			if (cl->start_ns > hi)
				hi = cl->start_ns;
			cl->energy_j = node_energy(&c, cl->node, cl->start_ns, cl->end_ns);
			cl->mean_w = cl->end_ns > cl->start_ns ? cl->energy_j / ((cl->end_ns - cl->start_ns) * 1e-9) : NAN;
			rc = node_counters(&c, r, cl);
			p->energy_j += cl->energy_j; /* NAN stays NAN: a node without energy leaves no job sum */
			for (size_t k = 0; k < r->ncounter; k++)
				if (!isnan(cl->counter[k]))
					p->counter[k] += cl->counter[k];
		}
		p->start_spread_ns = p->ncell ? hi - lo : 0;
		sqlite3_finalize(s);
		s = NULL;
	}
	sqlite3_close(c.h);
	if (rc == -ENOMEM)
		spmtap_seterr(err, errlen, ENOMEM, "out of memory");
	if (rc) {
		rj_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

static const char *num(char *b, size_t n, double v, int prec)
{
	if (isnan(v))
		snprintf(b, n, "-");
	else
		snprintf(b, n, "%.*f", prec, v);
	return b;
}

void rj_print(FILE *f, const struct rj_report *r)
{
	int64_t maxb = 0;
	bool unknown = false;
	fprintf(f, "job: %zu node(s) on rank 0's CLOCK_BOOTTIME\n", r->nnode);
	fprintf(f, "%-6s %-6s %-20s %-24s %s\n", "node", "rank", "hostname", "clock", "max bound");
	for (size_t i = 0; i < r->nnode; i++) {
		const struct rj_node *n = &r->node[i];
		char rank[16], b[32];
		snprintf(rank, sizeof(rank), n->rank >= 0 ? "%d" : "-", n->rank);
		if (n->max_bound_ns >= 0)
			snprintf(b, sizeof(b), "%.3f us", n->max_bound_ns / 1e3);
		else
			snprintf(b, sizeof(b), "unknown (unaligned)");
		fprintf(f, "%-6u %-6s %-20s %-24s %s\n", n->node, rank, n->hostname, n->clock_method, b);
		if (n->max_bound_ns < 0)
			unknown = true;
		else if (n->max_bound_ns > maxb)
			maxb = n->max_bound_ns;
	}
	if (unknown)
		fprintf(f, "phase edges of unaligned nodes are on their own clock (offset 0): not comparable\n");
	else
		fprintf(f, "every time is within %.3f us of rank 0's clock (the largest bound)\n", maxb / 1e3);
	char b[4][48];
	for (size_t i = 0; i < r->nphase; i++) {
		const struct rj_phase *p = &r->phase[i];
		fprintf(f, "\nphase %s: %zu node(s), starts spread over %.3f us\n", p->name, p->ncell,
			p->start_spread_ns / 1e3);
		fprintf(f, "%-6s %-20s %18s %12s %12s %10s %10s", "node", "hostname", "start_ns", "duration_ms", "energy_j",
			"mean_w", "samples");
		for (size_t k = 0; k < r->ncounter; k++)
			fprintf(f, " %16s", r->counter[k]);
		fputc('\n', f);
		for (size_t j = 0; j < p->ncell; j++) {
			const struct rj_cell *c = &p->cell[j];
			const char *host = "";
			for (size_t n = 0; n < r->nnode; n++)
				if (r->node[n].node == c->node)
					host = r->node[n].hostname;
			fprintf(f, "%-6u %-20s %18" PRId64 " %12s %12s %10s %10llu", c->node, host, c->start_ns,
				num(b[0], sizeof(b[0]), (c->end_ns - c->start_ns) / 1e6, 3),
				num(b[1], sizeof(b[1]), c->energy_j, 4), num(b[2], sizeof(b[2]), c->mean_w, 3),
				(unsigned long long)c->samples);
			for (size_t k = 0; k < r->ncounter; k++)
				fprintf(f, " %16s", num(b[3], sizeof(b[3]), c->counter[k], 0));
			fputc('\n', f);
		}
		fprintf(f, "%-6s %-20s %18s %12s %12s %10s %10s", "job", "(sum over nodes)", "", "",
			num(b[1], sizeof(b[1]), p->energy_j, 4), "", "");
		for (size_t k = 0; k < r->ncounter; k++)
			fprintf(f, " %16s", num(b[3], sizeof(b[3]), p->counter[k], 0));
		fputc('\n', f);
	}
}

static json_t *jnum(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

json_t *rj_json(const struct rj_report *r)
{
	json_t *o = json_object(), *nodes = json_array(), *ctrs = json_array(), *phases = json_array();
	for (size_t i = 0; i < r->nnode; i++) {
		const struct rj_node *n = &r->node[i];
		json_array_append_new(nodes, json_pack("{s:I,s:o,s:s,s:s,s:o}", "node", (json_int_t)n->node, "rank",
						       n->rank >= 0 ? json_integer(n->rank) : json_null(), "hostname",
						       n->hostname, "clock_method", n->clock_method, "max_bound_ns",
						       n->max_bound_ns >= 0 ? json_integer(n->max_bound_ns) : json_null()));
	}
	for (size_t k = 0; k < r->ncounter; k++)
		json_array_append_new(ctrs, json_string(r->counter[k]));
	for (size_t i = 0; i < r->nphase; i++) {
		const struct rj_phase *p = &r->phase[i];
		json_t *cells = json_array();
		for (size_t j = 0; j < p->ncell; j++) {
			const struct rj_cell *c = &p->cell[j];
			json_t *cv = json_object();
			for (size_t k = 0; k < r->ncounter; k++)
				json_object_set_new(cv, r->counter[k], jnum(c->counter[k]));
			json_array_append_new(cells, json_pack("{s:I,s:I,s:I,s:o,s:o,s:I,s:o}", "node", (json_int_t)c->node,
							       "start_ns", (json_int_t)c->start_ns, "end_ns",
							       (json_int_t)c->end_ns, "energy_j", jnum(c->energy_j), "mean_w",
							       jnum(c->mean_w), "samples", (json_int_t)c->samples,
							       "counters", cv));
		}
		json_t *jc = json_object();
		for (size_t k = 0; k < r->ncounter; k++)
			json_object_set_new(jc, r->counter[k], jnum(p->counter[k]));
		json_array_append_new(phases, json_pack("{s:s,s:I,s:o,s:{s:o,s:o}}", "name", p->name, "start_spread_ns",
							(json_int_t)p->start_spread_ns, "nodes", cells, "job",
							"energy_j", jnum(p->energy_j), "counters", jc));
	}
	json_object_set_new(o, "nodes", nodes);
	json_object_set_new(o, "counters", ctrs);
	json_object_set_new(o, "phases", phases);
	return o;
}
