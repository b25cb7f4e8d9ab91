/* SPDX-License-Identifier: MIT */
/*
 * emu/common: profiles, the profile-spec parser, the generated topology tree
 * and the launch helpers.  Runs without the shim.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu/common/emu.h"
#include "testenv.h"

static char tree_tmp[PATH_MAX];

/* Value of `key` in a "key value" properties file, or -1. */
static long long prop(const char *dir, const char *file, const char *key)
{
	char path[PATH_MAX + 128], k[128];
	long long v, found = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%127s %lld", k, &v) == 2)
		if (!strcmp(k, key))
			found = v;
	fclose(f);
	return found;
}

static int read_line(const char *dir, const char *file, char *out, size_t len)
{
	char path[PATH_MAX + 128];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(out, (int)len, f))
		out[0] = 0;
	fclose(f);
	out[strcspn(out, "\n")] = 0;
	return 0;
}

static void test_profiles_table(void)
{
	CU_ASSERT_EQUAL(emu_profile_count(), 4);
	const struct emu_profile *a = emu_profile_find("mi300a"), *x = emu_profile_find("mi300x");
	const struct emu_profile *c = emu_profile_find("mi250x"), *d = emu_profile_find("mi210");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(a->gfx_target_version, 90402);
	CU_ASSERT_EQUAL(a->num_xcc, 6);
	CU_ASSERT_EQUAL(a->array_count, 24);
	CU_ASSERT_EQUAL(a->cu_count, 228);
	CU_ASSERT_EQUAL(a->device_id, 0x74A0);
	CU_ASSERT_EQUAL(a->default_gen, EMU_GEN_B);
	CU_ASSERT_STRING_EQUAL(a->marketing_name, "AMD Instinct MI300A");
	CU_ASSERT_EQUAL(x->num_xcc, 8);
	CU_ASSERT_EQUAL(x->array_count, 32);
	CU_ASSERT_EQUAL(x->cu_count, 304);
	CU_ASSERT_EQUAL(x->device_id, 0x74A1);
	CU_ASSERT_EQUAL(c->gfx_target_version, 90010);
	CU_ASSERT_EQUAL(c->gpus_per_card, 2);
	CU_ASSERT_EQUAL(c->cu_count, 110);
	CU_ASSERT_EQUAL(c->cu_per_simd_array, 14);
	CU_ASSERT_EQUAL(c->device_id, 0x740C);
	CU_ASSERT_EQUAL(c->default_gen, EMU_GEN_A);
	CU_ASSERT_EQUAL(d->cu_count, 104);
	CU_ASSERT_EQUAL(d->cu_per_simd_array, 13);
	CU_ASSERT_EQUAL(d->device_id, 0x740F);
	CU_ASSERT_STRING_EQUAL(d->topology_name, "aldebaran");
	CU_ASSERT_PTR_NULL(emu_profile_find("mi100"));
}

static void test_spec_parse(void)
{
	struct emu_gpu_desc g[EMU_MAX_GPUS];
	char err[256];
	CU_ASSERT_EQUAL(emu_spec_parse("mi250x:4", g, EMU_MAX_GPUS, err, sizeof(err)), 8);
	CU_ASSERT_EQUAL(g[7].node, 8);
	CU_ASSERT_EQUAL(g[7].render_minor, 135);
	CU_ASSERT_EQUAL(emu_spec_parse("mi300a,mi210", g, EMU_MAX_GPUS, err, sizeof(err)), 2);
	CU_ASSERT_STRING_EQUAL(g[0].profile->name, "mi300a");
	CU_ASSERT_STRING_EQUAL(g[1].profile->name, "mi210");
	CU_ASSERT_EQUAL(g[0].render_minor, 128);
	CU_ASSERT_EQUAL(g[1].render_minor, 129);
	CU_ASSERT_EQUAL(emu_spec_parse("mi300x:2,mi250x", g, EMU_MAX_GPUS, err, sizeof(err)), 4);

	CU_ASSERT_EQUAL(emu_spec_parse("mi300a,gfx1100", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "gfx1100"));
	for (size_t i = 0; i < emu_profile_count(); i++)
		CU_ASSERT_PTR_NOT_NULL(strstr(err, emu_profile_at(i)->name));
	CU_ASSERT_EQUAL(emu_spec_parse("mi210:0", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(emu_spec_parse("mi210:x", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(emu_spec_parse("mi210,,mi210", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(emu_spec_parse("", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
	CU_ASSERT_EQUAL(emu_spec_parse("mi250x:33", g, EMU_MAX_GPUS, err, sizeof(err)), -1);
}

static void test_gpu_ids_distinct(void)
{
	struct emu_gpu_desc g[EMU_MAX_GPUS];
	char err[256];
	int n = emu_spec_parse("mi300a:2,mi300x:2,mi250x:4,mi210:3", g, EMU_MAX_GPUS, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(n, 2 + 2 + 8 + 3);
	for (int i = 0; i < n; i++) {
		CU_ASSERT(g[i].gpu_id != 0 && g[i].gpu_id <= 0xFFFF);
		CU_ASSERT(g[i].gpu_id != g[i].node);
		for (int j = i + 1; j < n; j++) {
			CU_ASSERT(g[i].gpu_id != g[j].gpu_id);
			CU_ASSERT(g[i].location_id != g[j].location_id);
		}
	}
	/* Deterministic: the same spec gives the same ids. */
	struct emu_gpu_desc h[EMU_MAX_GPUS];
	CU_ASSERT_EQUAL(emu_spec_parse("mi300a:2,mi300x:2,mi250x:4,mi210:3", h, EMU_MAX_GPUS, err, sizeof(err)), n);
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(g[i].gpu_id, h[i].gpu_id);
	/* A profile's ids do not depend on what precedes it in another spec. */
	emu_spec_parse("mi210", h, EMU_MAX_GPUS, err, sizeof(err));
	CU_ASSERT_EQUAL(h[0].gpu_id, g[12].gpu_id);
}

static void test_tree_contents(void)
{
	char dir[PATH_MAX + 16], t[PATH_MAX + 32], buf[128], err[256];
	struct emu_gpu_desc g[EMU_MAX_GPUS];
	snprintf(dir, sizeof(dir), "%s/tree", tree_tmp);
	CU_ASSERT_EQUAL_FATAL(emu_tree_write(dir, "mi300a,mi250x", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(emu_spec_parse("mi300a,mi250x", g, EMU_MAX_GPUS, err, sizeof(err)), 3);
	snprintf(t, sizeof(t), "%s/topology", dir);

	CU_ASSERT_EQUAL(read_line(t, "generation_id", buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "1");
	CU_ASSERT_EQUAL(prop(t, "system_properties", "platform_oem"), 0);
	CU_ASSERT_EQUAL(read_line(dir, "emu-profile", buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "mi300a,mi250x");

	/* CPU node */
	CU_ASSERT_EQUAL(read_line(t, "nodes/0/gpu_id", buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "0");
	CU_ASSERT_EQUAL(prop(t, "nodes/0/properties", "cpu_cores_count"), sysconf(_SC_NPROCESSORS_ONLN));
	CU_ASSERT_EQUAL(prop(t, "nodes/0/properties", "io_links_count"), 3);
	CU_ASSERT_EQUAL(prop(t, "nodes/0/io_links/2/properties", "node_to"), 3);

	/* MI300A node */
	CU_ASSERT_EQUAL(read_line(t, "nodes/1/gpu_id", buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(strtoul(buf, NULL, 10), g[0].gpu_id);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "gfx_target_version"), 90402);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "num_xcc"), 6);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "array_count"), 24);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "simd_count"), 228 * 4);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "device_id"), 0x74A0);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "drm_render_minor"), 128);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "domain"), 0);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/properties", "location_id"), g[0].location_id);
	CU_ASSERT_EQUAL(prop(t, "nodes/1/mem_banks/0/properties", "heap_type"), 1);
	CU_ASSERT(prop(t, "nodes/1/caches/0/properties", "size") > 0);
	/* What Debian's ROCr asserts on once asked for caches (rocminfo), as KFD writes them */
	CU_ASSERT_EQUAL(prop(t, "nodes/1/caches/0/properties", "type"), 9);
	CU_ASSERT_EQUAL(prop(t, "nodes/0/properties", "caches_count"), 0);
	char mods[256];
	CU_ASSERT_EQUAL(read_line(dir, "proc/modules", mods, sizeof(mods)), 0);
	CU_ASSERT_EQUAL(strncmp(mods, "amdgpu ", 7), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(mods, " Live "));
	CU_ASSERT_EQUAL(prop(t, "nodes/1/io_links/0/properties", "node_to"), 0);

	/* MI250X: two GCD nodes, no num_xcc line (single XCC) */
	CU_ASSERT_EQUAL(read_line(t, "nodes/2/name", buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "aldebaran");
	CU_ASSERT_EQUAL(prop(t, "nodes/3/properties", "gfx_target_version"), 90010);
	CU_ASSERT_EQUAL(prop(t, "nodes/3/properties", "num_xcc"), -1);
	CU_ASSERT_EQUAL(prop(t, "nodes/3/properties", "cu_per_simd_array"), 14);
	CU_ASSERT_EQUAL(prop(t, "nodes/3/properties", "drm_render_minor"), 130);
	struct stat st;
	char p4[PATH_MAX + 64];
	snprintf(p4, sizeof(p4), "%s/nodes/4", t);
	CU_ASSERT_NOT_EQUAL(stat(p4, &st), 0);

	/* Unknown profile: no tree, a message naming the valid profiles. */
	snprintf(dir, sizeof(dir), "%s/bad", tree_tmp);
	CU_ASSERT_EQUAL(emu_tree_write(dir, "mi999", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "mi999"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "mi300a"));
	CU_ASSERT_NOT_EQUAL(stat(dir, &st), 0);
}

static void test_env_setup_and_remove(void)
{
	char tmp[PATH_MAX], err[512], p[PATH_MAX + 64], shim[PATH_MAX];
	struct stat st;
	const char *old = getenv("LD_PRELOAD");
	char *saved = old ? strdup(old) : NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(emu_shim_path(shim, sizeof(shim)));
	CU_ASSERT_PTR_NOT_NULL(strstr(shim, "libspmtap-emu.so"));
	setenv("LD_PRELOAD", "/nonexistent/other.so", 1);
	CU_ASSERT_EQUAL_FATAL(emu_env_setup("mi210", tmp, sizeof(tmp), err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/kfd/topology/nodes/1/gpu_id", tmp);
	CU_ASSERT_EQUAL(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s/kfd", tmp);
	CU_ASSERT_STRING_EQUAL(getenv("SPMTAP_EMU_SYSFS"), p);
	CU_ASSERT_STRING_EQUAL(getenv("SPMTAP_EMU_PROFILE"), "mi210");
	CU_ASSERT_STRING_EQUAL(getenv("SPMTAP_EMU_ACTIVE"), "1");
	snprintf(p, sizeof(p), "%s:/nonexistent/other.so", shim);
	CU_ASSERT_STRING_EQUAL(getenv("LD_PRELOAD"), p);
	/* ROCm SMI's mutexes under the tree's own tag go with it; another tag's stay. */
	char tag[16], mine[PATH_MAX], other[PATH_MAX];
	snprintf(p, sizeof(p), "%s/kfd", tmp);
	snprintf(mine, sizeof(mine), "/dev/shm/spmtap-emu-%s-rocm_smi_card0", emu_shm_tag(p, tag, sizeof(tag)));
	snprintf(other, sizeof(other), "/dev/shm/spmtap-emu-test-tree-%d-rocm_smi_card0", (int)getpid());
	FILE *f1 = fopen(mine, "w"), *f2 = fopen(other, "w");
	CU_ASSERT(f1 && f2);
	if (f1)
		fclose(f1);
	if (f2)
		fclose(f2);
	CU_ASSERT_EQUAL(emu_tree_remove(tmp), 0);
	CU_ASSERT_NOT_EQUAL(stat(tmp, &st), 0);
	CU_ASSERT_NOT_EQUAL(stat(mine, &st), 0);
	CU_ASSERT_EQUAL(stat(other, &st), 0);
	unlink(other);

	/* Never delete a directory we did not create. */
	snprintf(p, sizeof(p), "%s/notours", tree_tmp);
	mkdir(p, 0700);
	CU_ASSERT_EQUAL(emu_tree_remove(p), -1);
	CU_ASSERT_EQUAL(stat(p, &st), 0);

	/* SPMTAP_EMU_LIB overrides the search and must name a file. */
	setenv("SPMTAP_EMU_LIB", "/nonexistent/libspmtap-emu.so", 1);
	CU_ASSERT_PTR_NULL(emu_shim_path(shim, sizeof(shim)));
	CU_ASSERT_PTR_NOT_NULL(strstr(shim, "SPMTAP_EMU_LIB"));
	unsetenv("SPMTAP_EMU_LIB");

	unsetenv("SPMTAP_EMU_SYSFS");
	unsetenv("SPMTAP_EMU_PROFILE");
	unsetenv("SPMTAP_EMU_ACTIVE");
	if (saved)
		setenv("LD_PRELOAD", saved, 1);
	else
		unsetenv("LD_PRELOAD");
	free(saved);
}

/*
 * A session directory made under base by a child (emu_env_setup records it as the owner); the child's
 * pid.  With `stay`, the child lives until its stdin pipe closes; otherwise it exits at once
 * (unreaped: the caller reaps it, so both "zombie" and "gone" can be checked).
 */
static pid_t owned_tree(const char *base, bool stay, char *tmp, size_t len, int *hold)
{
	int p[2], q[2];
	if (pipe(p) || pipe(q))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char err[512], t[PATH_MAX];
		close(p[0]);
		close(q[1]);
		setenv("TMPDIR", base, 1);
		if (emu_env_setup("mi210", t, sizeof(t), err, sizeof(err)))
			snprintf(t, sizeof(t), "!%s", err);
		if (write(p[1], t, strlen(t) + 1) < 0)
			_exit(1);
		close(p[1]);
		char c;
		if (stay)
			while (read(q[0], &c, 1) > 0)
				;
		_exit(0);
	}
	close(p[1]);
	close(q[0]);
	ssize_t n = read(p[0], tmp, len - 1);
	tmp[n > 0 ? n : 0] = 0;
	close(p[0]);
	*hold = q[1];
	return pid;
}

static bool exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

/* Rewrite one "key value" line of a directory's owner record. */
static void owner_set(const char *dir, const char *key, const char *val)
{
	char p[PATH_MAX + 64], lines[8][128];
	int n = 0;
	snprintf(p, sizeof(p), "%s/" EMU_OWNER_FILE, dir);
	FILE *f = fopen(p, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (n < 8 && fgets(lines[n], sizeof(lines[n]), f))
		n++;
	fclose(f);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (int i = 0; i < n; i++) {
		if (!strncmp(lines[i], key, strlen(key)) && lines[i][strlen(key)] == ' ')
			fprintf(f, "%s %s\n", key, val);
		else
			fputs(lines[i], f);
	}
	fclose(f);
}

/* Only directories whose owner is provably gone are swept: dead, a zombie, reused pid, another boot. */
static void test_sweep_dead_owners(void)
{
	char base[PATH_MAX], live[PATH_MAX], dead[PATH_MAX], zomb[PATH_MAX], reused[PATH_MAX], boot[PATH_MAX],
		ns[PATH_MAX], legacy[PATH_MAX + 32], other[PATH_MAX + 32], err[256];
	int hl, hd, hz, hr, hb, hn;
	snprintf(base, sizeof(base), "%s/sweep", tree_tmp);
	CU_ASSERT_EQUAL_FATAL(mkdir(base, 0700), 0);

	pid_t pl = owned_tree(base, true, live, sizeof(live), &hl);
	pid_t pd = owned_tree(base, false, dead, sizeof(dead), &hd);
	pid_t pz = owned_tree(base, false, zomb, sizeof(zomb), &hz);
	pid_t pr = owned_tree(base, true, reused, sizeof(reused), &hr);
	pid_t pb = owned_tree(base, true, boot, sizeof(boot), &hb);
	pid_t pn = owned_tree(base, true, ns, sizeof(ns), &hn);
	CU_ASSERT_FATAL(pl > 0 && pd > 0 && pz > 0 && pr > 0 && pb > 0 && pn > 0);
	CU_ASSERT_FATAL(live[0] == '/' && dead[0] == '/' && zomb[0] == '/' && reused[0] == '/' && boot[0] == '/' &&
			ns[0] == '/');
	waitpid(pd, NULL, 0);
	/* pz exits but stays unreaped: a zombie is dead. */
	for (int i = 0; i < 500 && !emu_owner_gone(zomb); i++)
		usleep(2000);
	char start[32];
	snprintf(start, sizeof(start), "%llu", emu_proc_start(pr) + 1);
	owner_set(reused, "start", start); /* the same pid, a later process */
	owner_set(boot, "boot", "00000000-0000-0000-0000-000000000000");
	owner_set(ns, "pidns", "1");
	/* Not a session's: the marker without an owner (older spmtap, or a crash before the record), no marker. */
	snprintf(legacy, sizeof(legacy), "%s/spmtap-emu-legacy", base);
	snprintf(other, sizeof(other), "%s/spmtap-emu-1000", base);
	mkdir(legacy, 0700);
	mkdir(other, 0700);
	char m[PATH_MAX + 64];
	snprintf(m, sizeof(m), "%s/" EMU_TMP_MARKER, legacy);
	fclose(fopen(m, "w"));

	CU_ASSERT_EQUAL(emu_owner_gone(live), 0);
	CU_ASSERT_EQUAL(emu_owner_gone(dead), 1);
	CU_ASSERT_EQUAL(emu_owner_gone(zomb), 1);
	CU_ASSERT_EQUAL(emu_tree_sweep(base, err, sizeof(err)), 4);
	CU_ASSERT(exists(live));
	CU_ASSERT(!exists(dead));
	CU_ASSERT(!exists(zomb));
	CU_ASSERT(!exists(reused));
	CU_ASSERT(!exists(boot));
	CU_ASSERT(exists(ns));
	CU_ASSERT(exists(legacy));
	CU_ASSERT(exists(other));
	CU_ASSERT_EQUAL(emu_tree_sweep(base, err, sizeof(err)), 0);

	close(hl);
	close(hd);
	close(hz);
	close(hr);
	close(hb);
	close(hn);
	waitpid(pl, NULL, 0);
	waitpid(pz, NULL, 0);
	waitpid(pr, NULL, 0);
	waitpid(pb, NULL, 0);
	waitpid(pn, NULL, 0);
	/* Its owner gone now, the live one goes on the next sweep. */
	CU_ASSERT_EQUAL(emu_tree_sweep(base, err, sizeof(err)), 1);
	CU_ASSERT(!exists(live));
	CU_ASSERT_EQUAL(emu_tree_remove(ns), 0);
	CU_ASSERT_EQUAL(emu_tree_sweep("/nonexistent/dir", err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/dir"));
}

static const struct testenv_case cases[] = {
	{ "profiles_table", test_profiles_table, NULL },
	{ "spec_parse", test_spec_parse, NULL },
	{ "gpu_ids_distinct", test_gpu_ids_distinct, NULL },
	{ "tree_contents", test_tree_contents, NULL },
	{ "env_setup_and_remove", test_env_setup_and_remove, NULL },
	{ "sweep_dead_owners", test_sweep_dead_owners, NULL },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/spmtap-test-tree-XXXXXX";
	if (!mkdtemp(tmpl))
		return 2;
	snprintf(tree_tmp, sizeof(tree_tmp), "%s", tmpl);
	int rc = testenv_run_suite("emu_tree", cases, argc, argv);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree_tmp);
	if (system(cmd))
		rc = rc ? rc : 1;
	return rc;
}
