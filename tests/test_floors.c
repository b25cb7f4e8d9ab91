/* SPDX-License-Identifier: MIT */
/*
 * Floors that only look down (docs/architecture.md): spm/ and decoder/ use
 * the ground floor (include/log.c) and system libraries, never collector/ or
 * emu/.  Two independent checks on this build's objects:
 *
 *  - the Makefile links spm/ + decoder/ + the ground objects into
 *    $B/floors/libspmtap-floors.so with -Wl,--no-undefined; it must exist,
 *    be newer than every object it is made of, need only the allowed system
 *    libraries and load with every symbol bound (RTLD_NOW);
 *  - nm: no undefined symbol of a spm/ or decoder/ object is defined by an
 *     object of collector/ (or emu/common: the
 *    shim in emu/shim defines libc's names on purpose, as an interposer).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testenv.h"

/* A set of symbol names with the object that defines or needs each. */
struct syms {
	char (*name)[128];
	char (*obj)[160];
	size_t n, cap;
};

static void syms_add(struct syms *s, const char *name, const char *obj)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->name = realloc(s->name, s->cap * sizeof(*s->name));
		s->obj = realloc(s->obj, s->cap * sizeof(*s->obj));
		CU_ASSERT_FATAL(s->name && s->obj);
	}
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
	snprintf(s->obj[s->n], sizeof(s->obj[0]), "%s", obj);
	s->n++;
}

static const char *syms_find(const struct syms *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->name[i], name))
			return s->obj[i];
	return NULL;
}

static void syms_free(struct syms *s)
{
	free(s->name);
	free(s->obj);
}

/*
 * Global symbols of every object under $B/obj/<dir>: undefined ones
 * (`want_undef`) or defined ones.  Returns the number of objects read.
 */
static int collect(const char *dir, int want_undef, struct syms *out)
{
	char cmd[PATH_MAX + 256], line[512];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/obj' 2>/dev/null && find %s -name '*.o' 2>/dev/null | sort | xargs -r nm -P -A -g",
		 testenv_build_dir(), dir);
	FILE *p = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	int objs = 0;
	char last[160] = "";
	while (fgets(line, sizeof(line), p)) {
		/* "spm/stream.o: spmtap_log U" or "x.o: name T 0000 0010" */
		char obj[160], name[128], type[8];
		if (sscanf(line, "%159[^:]: %127s %7s", obj, name, type) != 3)
			continue;
		if (strcmp(obj, last)) {
			snprintf(last, sizeof(last), "%s", obj);
			objs++;
		}
		int undef = type[0] == 'U' || type[0] == 'w' || type[0] == 'v';
		if (undef == want_undef)
			syms_add(out, name, obj);
	}
	pclose(p);
	return objs;
}

static void test_no_upward_symbol(void)
{
	struct syms above = { 0 }, below = { 0 };
	int n_above = collect("collector gen emu/common", 0, &above);
	int n_below = collect("spm decoder include", 1, &below);
	/* Not vacuous: both sides of the check are this build's objects. */
	CU_ASSERT(n_above >= 20);
	CU_ASSERT(n_below >= 10);
	CU_ASSERT(above.n >= 100);
	int upward = 0;
	for (size_t i = 0; i < below.n; i++) {
		const char *def = syms_find(&above, below.name[i]);
		if (def) {
			fprintf(stderr, "\n  %s needs %s, defined by %s (not on a floor below)", below.obj[i],
				below.name[i], def);
			upward++;
		}
	}
	CU_ASSERT_EQUAL(upward, 0);
	syms_free(&above);
	syms_free(&below);
}

static time_t mtime_of(const char *path)
{
	struct stat st;
	return stat(path, &st) ? 0 : st.st_mtime;
}

/* The newest object under $B/obj/<sub>, so a stale .so is noticed. */
static time_t newest_obj(const char *sub)
{
	char dir[PATH_MAX], path[PATH_MAX + 300];
	snprintf(dir, sizeof(dir), "%s/obj/%s", testenv_build_dir(), sub);
	DIR *d = opendir(dir);
	time_t newest = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		if (l < 3 || strcmp(e->d_name + l - 2, ".o"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		time_t t = mtime_of(path);
		if (t > newest)
			newest = t;
	}
	closedir(d);
	return newest;
}

/* What the lower floors may need: the C library and the JSON library. */
static int allowed_needed(const char *lib)
{
	static const char *const ok[] = { "libc.so", "libdl.so", "libpthread.so", "libm.so",
					  "libjansson.so", "ld-linux",
					  /* the runtime of a sanitized build */
					  "libasan.so", "libubsan.so", "libtsan.so", "libgcc_s.so",
					  "libstdc++.so", NULL };
	for (int i = 0; ok[i]; i++)
		if (!strncmp(lib, ok[i], strlen(ok[i])))
			return 1;
	return 0;
}

static void test_floors_so_links_alone(void)
{
	char so[PATH_MAX + 64], cmd[PATH_MAX + 128], line[512];
	snprintf(so, sizeof(so), "%s/floors/libspmtap-floors.so", testenv_build_dir());
	time_t t = mtime_of(so);
	if (!t)
		fprintf(stderr, "\n  %s missing: `make floors` links it with -Wl,--no-undefined", so);
	CU_ASSERT_FATAL(t != 0);
	CU_ASSERT(t >= newest_obj("spm"));
	CU_ASSERT(t >= newest_obj("decoder"));
	CU_ASSERT(t >= newest_obj("include"));

	snprintf(cmd, sizeof(cmd), "readelf -d '%s'", so);
	FILE *p = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	int needed = 0, bad = 0;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "(NEEDED)");
		char *l = b ? strchr(b, '[') : NULL;
		if (!l)
			continue;
		l++;
		l[strcspn(l, "]")] = '\0';
		needed++;
		if (!allowed_needed(l)) {
			fprintf(stderr, "\n  %s needs %s", so, l);
			bad++;
		}
	}
	pclose(p);
	CU_ASSERT(needed >= 1);
	CU_ASSERT_EQUAL(bad, 0);

	/* Every symbol binds now, without anything of the test program's. */
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "\n  dlopen: %s", dlerror());
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	/* The ground floor is in it, and nothing of collector/ is. */
	CU_ASSERT_PTR_NOT_NULL(dlsym(h, "spmtap_strerror"));
	CU_ASSERT_PTR_NULL(dlsym(h, "spmtap_version_string"));
	dlclose(h);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "floors/no_upward_symbol", test_no_upward_symbol, NULL },
		{ "floors/so_links_alone", test_floors_so_links_alone, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("floors", cases, argc, argv);
}
