/* SPDX-License-Identifier: MIT */
/*
 * A recording's files as one set (collector/lib/outset.c): the .part name
 * each writer opens, each final name once, the set's limit, the commit that
 * renames the new files and removes the earlier run's, and the set shared
 * by a session's threads.  The last is the case CI's TSan run caught: the
 * main thread wrote NAME_kernels.csv.part while the writer thread opened
 * NAME_phases.csv.part and rewrote NAME_meta.json.part, both through
 * out_set_part.  The whole CLI is test_outputs' job.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/lib/outset.h"
#include "files.h"
#include "testenv.h"

static char dir[] = "/tmp/spmtap-test-outset-XXXXXX";

static const char *at(const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static bool exists(const char *path)
{
	struct stat sb;
	return !lstat(path, &sb);
}

static void test_part(void)
{
	char *p = out_set_part(NULL, "a.csv");
	CU_ASSERT_STRING_EQUAL(p, "a.csv"); /* a writer used alone writes where it was told */
	free(p);
	struct out_set *s;
	CU_ASSERT_EQUAL_FATAL(out_set_new(&s), 0);
	for (int k = 0; k < 3; k++) {
		p = out_set_part(s, "x/a.csv");
		CU_ASSERT_STRING_EQUAL(p, "x/a.csv" OUTSET_PART);
		free(p);
	}
	CU_ASSERT_EQUAL(out_set_count(s), 1);
	CU_ASSERT_STRING_EQUAL(out_set_final(s, 0), "x/a.csv");
	CU_ASSERT_PTR_NULL(out_set_final(s, 1));
	/* Full: a new name is refused, a known one still answers. */
	char name[32];
	for (int k = 1; k < 64; k++) {
		snprintf(name, sizeof(name), "f%d", k);
		p = out_set_part(s, name);
		CU_ASSERT_EQUAL(p == NULL, out_set_count(s) == 32 && k >= 32);
		free(p);
	}
	CU_ASSERT_EQUAL(out_set_count(s), 32);
	p = out_set_part(s, "x/a.csv");
	CU_ASSERT_PTR_NOT_NULL(p);
	free(p);
	out_set_free(s);
}

static void test_commit(void)
{
	struct out_set *s;
	CU_ASSERT_EQUAL_FATAL(out_set_new(&s), 0);
	/* An earlier run: its database (with a stale log), its CSV, and a file this run does not write. */
	put(at("run.db"), "old db");
	put(at("run.db-wal"), "old wal");
	put(at("run.csv"), "old csv");
	put(at("run_smi.csv"), "old smi");
	put(at("mine.txt"), "the user's");
	const char *names[] = { "run.db", "run.csv" };
	for (int k = 0; k < 2; k++) {
		char *p = out_set_part(s, at(names[k]));
		put(p, "new");
		free(p);
	}
	/* Before the commit the earlier run is whole. */
	CU_ASSERT_STRING_EQUAL(tf_peek(at("run.db")), "old db");
	const char *old[] = { at("run.db"), at("run.csv"), at("run_smi.csv"), NULL };
	char err[256] = "";
	CU_ASSERT_EQUAL(out_set_commit(s, old, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(tf_peek(at("run.db")), "new");
	CU_ASSERT_STRING_EQUAL(tf_peek(at("run.csv")), "new");
	CU_ASSERT_FALSE(exists(at("run.db-wal")));
	CU_ASSERT_FALSE(exists(at("run_smi.csv")));
	CU_ASSERT_FALSE(exists(at("run.db" OUTSET_PART)));
	CU_ASSERT_STRING_EQUAL(tf_peek(at("mine.txt")), "the user's");
	CU_ASSERT_EQUAL_FATAL(out_set_nremoved(s), 1);
	CU_ASSERT_STRING_EQUAL(out_set_removed(s, 0), at("run_smi.csv"));
	out_set_free(s);
	/* A run that never started leaves the earlier files and no .part. */
	CU_ASSERT_EQUAL_FATAL(out_set_new(&s), 0);
	char *p = out_set_part(s, at("run.csv"));
	put(p, "newer");
	free(p);
	out_set_discard(s);
	out_set_free(s);
	CU_ASSERT_STRING_EQUAL(tf_peek(at("run.csv")), "new");
	CU_ASSERT_FALSE(exists(at("run.csv" OUTSET_PART)));
}

#define NTHREADS 4
#define PER_THREAD 7

struct adder {
	struct out_set *s;
	int id;
	int bad;
};

/* Each thread adds names of its own and a shared one, and reads the set as the session's end does. */
static void *add_names(void *arg)
{
	struct adder *a = arg;
	char name[32];
	for (int round = 0; round < 200; round++)
		for (int k = 0; k < PER_THREAD; k++) {
			snprintf(name, sizeof(name), "t%d-%d", a->id, k);
			char *p = out_set_part(a->s, round & 1 ? "shared_meta.json" : name);
			if (!p)
				a->bad++;
			free(p);
			size_t n = out_set_count(a->s);
			for (size_t i = 0; i < n; i++)
				if (!out_set_final(a->s, i))
					a->bad++;
		}
	return NULL;
}

static void test_threads(void)
{
	struct out_set *s;
	CU_ASSERT_EQUAL_FATAL(out_set_new(&s), 0);
	pthread_t t[NTHREADS];
	struct adder a[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = (struct adder){ .s = s, .id = i };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, add_names, &a[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		CU_ASSERT_EQUAL(a[i].bad, 0);
	}
	/* Every name once: a lost or doubled entry means two threads met in the table. */
	CU_ASSERT_EQUAL(out_set_count(s), NTHREADS * PER_THREAD + 1);
	for (size_t i = 0; i < out_set_count(s); i++)
		for (size_t j = 0; j < i; j++)
			CU_ASSERT(strcmp(out_set_final(s, i), out_set_final(s, j)) != 0);
	out_set_free(s);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "part", test_part, NULL },
		{ "commit", test_commit, NULL },
		{ "threads", test_threads, NULL },
		{ NULL, NULL, NULL },
	};
	if (!mkdtemp(dir))
		return 1;
	return testenv_remove_tmp(dir, testenv_run_suite("outset", cases, argc, argv));
}
