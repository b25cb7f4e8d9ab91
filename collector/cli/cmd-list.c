/* SPDX-License-Identifier: MIT */
/* spmtap list: what GPUs there are and which SPM backends can reach them. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/cli/cli.h"
#include "collector/cli/cmd-list-smi.h"
#include "collector/lib/writer.h"
#include "spm/submit.h"

const char cmd_list_usage[] =
	"usage: spmtap list [--probe] [--spm-backend NAME]\n"
	"       spmtap list --counters [--gfx gfx942|gfx90a | --device D]   (or --spm)\n"
	"       spmtap list --smi    power/energy sources per GPU and what each exposes\n"
	"\n"
	"List the GPUs KFD reports and the SPM backends, with the reason a backend\n"
	"cannot be used here.  With --counters: the SPM counters of a GPU (or of a\n"
	"gfx target) with their block, width, scope and instances, then the ones\n"
	"SPM cannot stream, with the reason and what to use instead.\n"
	"\n"
	"  --counters          list counters instead of GPUs\n"
	"  --gfx TARGET        counters of a gfx target (instances of a representative\n"
	"                      part); default: the GPU of --device\n"
	"  --device D          GPU for --counters (default 0)\n"
	"  --probe             also acquire SPM on each GPU for a moment to find out\n"
	"                      which kernel generation (A or B) answers; fails on a GPU\n"
	"                      whose SPM another process holds\n"
	"  --spm-backend NAME  backend for --probe (default: the first usable one)\n"
	"\n"
	"Exit status: 0 on success, 1 if discovery fails, 64 on a bad command line.\n";

static void probe_gen(const struct cli_target *t, const struct spm_device *d, char *out, size_t len)
{
	char err[SPM_ERRLEN] = "";
	struct spm_backend *b = NULL;
	struct spm_stream *s = NULL;
	int rc = t->ops->open(&b, t->devs, t->ndev, err, sizeof(err));
	if (rc == 0)
		rc = spm_stream_open(&s, t->ops, b, d, NULL, err, sizeof(err));
	if (rc == 0)
		snprintf(out, len, "%s", spm_gen_name(spm_stream_gen(s)));
	else
		snprintf(out, len, "? (%s)", err[0] ? err : spmtap_strerror(rc));
	spm_stream_close(s);
	if (b)
		t->ops->close(b);
}

struct ctr_ctx {
	const struct spm_catalog *cat;
	const struct spm_geometry *geo;
	bool streamable; /* which half of the list this pass prints */
	size_t n;
};

static int print_counter(const struct spm_counter *c, void *user)
{
	struct ctr_ctx *x = user;
	if (spm_counter_streamable(c) != x->streamable)
		return 0;
	const struct spm_block_info *bi = spm_block_info(c->block);
	if (!x->streamable) {
		printf("  %-28s %-5s %s", c->name, bi->name,
		       bi->no_spm_reason ? bi->no_spm_reason : "not streamable");
		if (c->alt)
			printf("; use %s", c->alt);
		printf("\n");
		x->n++;
		return 0;
	}
	unsigned int inst = spm_catalog_instances(x->cat, c->block, x->geo->cus_per_se);
	char where[48];
	if (spm_counter_segment(c) == SPM_SEG_SE)
		snprintf(where, sizeof(where), "%u x %u SE", inst, x->geo->num_se);
	else
		snprintf(where, sizeof(where), "%u", inst);
	printf("  %-28s %-5s %5u  %-6s %-11s %s\n", c->name, bi->name, spm_counter_width(c),
	       spm_counter_segment(c) == SPM_SEG_SE ? "SE" : "global", where, c->desc ? c->desc : "");
	x->n++;
	return 0;
}

static int list_counters(const char *gfx, const char *device)
{
	struct spm_geometry geo;
	enum spm_gfx family;
	char err[SPM_ERRLEN], label[256];
	struct cli_target t = { 0 };
	int st;
	if (gfx) {
		const char *part;
		st = cli_gfx_geometry("list", gfx, &geo, &family, &part);
		snprintf(label, sizeof(label), "%s (instances of %s)", gfx, part);
	} else {
		st = cli_target_devices(&t, "list");
		int idx = st == EXIT_OK ? spm_device_lookup(t.devs, t.ndev, device ? device : "0", err,
							     sizeof(err))
					: 0;
		if (st == EXIT_OK && idx < 0) {
			fprintf(stderr, "spmtap list: %s%s\n", err,
				t.ndev ? "" : "; list a target's counters with --gfx gfx942 or --gfx gfx90a");
			st = t.ndev ? EXIT_USAGE : EXIT_FAIL;
		}
		if (st == EXIT_OK && spm_geometry_from_device(&t.devs[idx], &geo, &family, err,
							      sizeof(err)) < 0) {
			fprintf(stderr, "spmtap list: %s\n", err);
			st = EXIT_FAIL;
		}
		if (st == EXIT_OK) {
			char dl[128];
			snprintf(label, sizeof(label), "%s, %u SE per XCC, %u CUs per SE",
				 spm_device_label(&t.devs[idx], dl, sizeof(dl)), geo.num_se,
				 geo.cus_per_se);
		}
	}
	const struct spm_catalog *cat = NULL;
	if (st == EXIT_OK && spm_catalog_get(family, &cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "spmtap list: %s\n", err);
		st = EXIT_FAIL;
	}
	cli_target_free(&t);
	if (st != EXIT_OK)
		return st;
	printf("SPM counters for %s:\n", label);
	printf("  %-28s %-5s %5s  %-6s %-11s %s\n", "name", "block", "width", "scope", "instances",
	       "description");
	struct ctr_ctx x = { .cat = cat, .geo = &geo, .streamable = true };
	spm_catalog_foreach(cat, print_counter, &x);
	printf("\nInstances are per XCC (x SEs for SE counters); NAME sums them, NAME[i] picks one.\n");
	x.streamable = false;
	x.n = 0;
	printf("\nNot streamable by SPM:\n");
	spm_catalog_foreach(cat, print_counter, &x);
	if (!x.n)
		printf("  (none)\n");
	return EXIT_OK;
}

/* One (GPU, submitter) cell of the "Counter programming" table. */
struct sub_line {
	int rc;
	char text[SPM_ERRLEN];
};

/* Make a queue with every submitter on every GPU, as `record` would, and say what happened. */
static struct sub_line *probe_submitters(const struct cli_target *t)
{
	size_t ns = 0;
	while (spm_submitters()[ns])
		ns++;
	struct sub_line *l = calloc(t->ndev * ns, sizeof(*l));
	for (size_t i = 0; l && i < t->ndev; i++) {
		for (size_t k = 0; k < ns; k++) {
			const struct spm_submitter_ops *ops = spm_submitters()[k];
			struct spm_submitter *s = NULL;
			struct sub_line *x = &l[i * ns + k];
			x->rc = ops->create(&s, &t->devs[i], x->text, sizeof(x->text));
			if (x->rc == 0) {
				ops->describe(s, x->text, sizeof(x->text));
				ops->destroy(s);
			} else if (!x->text[0]) {
				snprintf(x->text, sizeof(x->text), "%s", spmtap_strerror(x->rc));
			}
		}
	}
	return l;
}

/*
 * gfx940-942 (MI300) where the installed ROCr has no agent (Debian's 5.2.3):
 * the counters still go through libhsakmt, but an application's kernel
 * dispatches and copies (HIP, HSA) need ROCr's agent, which ROCm >= 5.7 has.
 * Said here so a user does not find out from a HIP app that sees no GPU.
 */
static void print_app_note(const struct spm_device *d, const struct sub_line *row, size_t ns, bool used)
{
	if (strncmp(d->gfx, "gfx94", 5))
		return;
	for (size_t k = 0; k < ns; k++)
		if (spm_submitters()[k] == &spm_submitter_rocr && row[k].rc != 0)
			printf("  %-6s %-7s kernel dispatch through ROCr (HIP and HSA apps) needs ROCm >= 5.7 on %s%s\n",
			       "", "apps", d->gfx,
			       used ? "; record --spm programs the counters without it" : "");
}

static void print_submitters(const struct cli_target *t, const struct sub_line *l)
{
	if (!l)
		return;
	size_t ns = 0;
	while (spm_submitters()[ns])
		ns++;
	printf("\nCounter programming (PM4 through a GPU queue; record uses the first available):\n");
	for (size_t k = 0; k < ns; k++)
		printf("  %-7s %s\n", spm_submitters()[k]->name, spm_submitters()[k]->summary);
	for (size_t i = 0; i < t->ndev; i++) {
		bool used = false;
		for (size_t k = 0; k < ns; k++) {
			const struct sub_line *x = &l[i * ns + k];
			char gpu[16] = "";
			if (k == 0)
				snprintf(gpu, sizeof(gpu), "GPU %u", t->devs[i].index);
			printf("  %-6s %-7s %-11s %s%s\n", gpu, spm_submitters()[k]->name,
			       x->rc == 0 ? "available" : "unavailable", x->text, x->rc == 0 && !used ? "  <- used" : "");
			used |= x->rc == 0;
		}
		if (!used)
			printf("  %-6s %-7s record --spm cannot program counters on this GPU\n", "", "");
		print_app_note(&t->devs[i], l + i * ns, ns, used);
	}
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "probe", no_argument, NULL, 'p' },
		{ "spm-backend", required_argument, NULL, 'b' },
		{ "counters", no_argument, NULL, 'c' },
		/* rocprofv3-avail list --spm (and not a prefix of --spm-backend missing its argument) */
		{ "spm", no_argument, NULL, 'c' },
		{ "gfx", required_argument, NULL, 'g' },
		{ "device", required_argument, NULL, 'd' },
		{ "smi", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	bool probe = false, counters = false, smi = false;
	const char *backend = NULL, *gfx = NULL, *device = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p': probe = true; break;
		case 'b': backend = optarg; break;
		case 'c': counters = true; break;
		case 'g': gfx = optarg; break;
		case 'd': device = optarg; break;
		case 's': smi = true; break;
		default:
			fputs(cmd_list_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spmtap list: unexpected argument '%s'\n", argv[optind]);
		return EXIT_USAGE;
	}
	if ((gfx || device) && !counters) {
		fprintf(stderr, "spmtap list: --gfx and --device go with --counters\n");
		return EXIT_USAGE;
	}
	if (gfx && device) {
		fprintf(stderr, "spmtap list: give --gfx or --device, not both\n");
		return EXIT_USAGE;
	}
	if (counters)
		return list_counters(gfx, device);
	if (smi) {
		struct cli_target ts;
		int st = cli_target_devices(&ts, "list");
		if (st != EXIT_OK)
			return st;
		for (size_t i = 0; i < ts.ndev; i++)
			spm_device_marketing_name(&ts.devs[i]);
		int rc = cli_list_smi(stdout, ts.devs, ts.ndev, NULL);
		cli_target_free(&ts);
		return rc < 0 ? EXIT_FAIL : EXIT_OK;
	}

	struct cli_target t;
	int st = cli_target_devices(&t, "list");
	if (st != EXIT_OK)
		return st;
	/* Before any backend opens KFD with a render fd of its own (spm/submit.h). */
	struct sub_line *subs = t.ndev ? probe_submitters(&t) : NULL;
	if (probe && t.ndev) {
		st = cli_target_backend(&t, "list", backend);
		if (st != EXIT_OK) {
			cli_target_free(&t);
			return st;
		}
	}

	printf("GPUs:\n");
	if (!t.ndev)
		printf("  (none: KFD lists no GPU; on a machine without one try --emulate mi300a)\n");
	else
		printf("  %-3s %-8s %-8s %-4s %-5s %-5s %-12s %-28s%s\n", "#", "gpu_id", "gfx", "XCCs",
		       "SE/X", "CUs", "render", "name", probe ? " SPM gen" : "");
	for (size_t i = 0; i < t.ndev; i++) {
		struct spm_device *d = &t.devs[i];
		spm_device_marketing_name(d);
		char render[24], name[200], gen[SPM_ERRLEN + 8] = "";
		snprintf(render, sizeof(render), "renderD%u", d->drm_render_minor);
		if (d->marketing_name[0])
			snprintf(name, sizeof(name), "%s (%s)", d->marketing_name, d->name);
		else
			snprintf(name, sizeof(name), "%s", d->name);
		if (probe)
			probe_gen(&t, d, gen, sizeof(gen));
		printf("  %-3u 0x%-6x %-8s %-4u %-5u %-5u %-12s %-28s%s%s\n", d->index, d->gpu_id, d->gfx,
		       d->num_xcc, d->num_se, d->cu_count, render, name, probe ? " " : "", gen);
	}

	printf("\nSPM backends:\n");
	for (const struct spm_backend_ops *const *o = spm_backends(); *o; o++) {
		char reason[SPM_ERRLEN] = "";
		int rc = (*o)->probe(reason, sizeof(reason));
		printf("  %-7s %-11s %s\n", (*o)->name, rc == 0 ? "available" : "unavailable",
		       (*o)->summary ? (*o)->summary : "");
		if (rc)
			printf("  %-7s \\-> %s\n", "", reason[0] ? reason : spmtap_strerror(rc));
	}
	/* Output formats whose library is loaded at run time can be missing here. */
	printf("\nOutput formats (-f):\n");
	for (const struct writer_ops *const *w = writers(); *w; w++) {
		char reason[256] = "";
		int rc = (*w)->probe ? (*w)->probe(reason, sizeof(reason)) : 0;
		printf("  %-9s %s%s%s\n", (*w)->name, rc == 0 ? "available" : "unavailable",
		       rc ? ": " : "", rc ? (reason[0] ? reason : spmtap_strerror(rc)) : "");
	}
	print_submitters(&t, subs);
	free(subs);
	cli_target_free(&t);
	return EXIT_OK;
}
