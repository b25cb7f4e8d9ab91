/* SPDX-License-Identifier: MIT */
/* spm/discover.c against a KFD topology tree written here with fixed contents. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testenv.h"
#include "spm/spm.h"

static char root[PATH_MAX];

static void put(const char *text, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	/* mkdir -p of the parent */
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void node(unsigned n, const char *gpu_id, const char *name, const char *props)
{
	if (gpu_id)
		put(gpu_id, "%s/topology/nodes/%u/gpu_id", root, n);
	put(name, "%s/topology/nodes/%u/name", root, n);
	put(props, "%s/topology/nodes/%u/properties", root, n);
}

/*
 * Node 0 CPU; 1 MI300A-like (6 XCCs); 2 gfx90a without num_xcc; 3 gpu_id but
 * no SIMDs (CPU); 4 gfx1101; 5 no gpu_id file (end of topology); 6 a GPU
 * beyond the end that must not be seen.
 */
static void make_tree(void)
{
	snprintf(root, sizeof(root), "%s/spmtap-discover-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	put("1\n", "%s/topology/generation_id", root);
	node(0, "0\n", "\n", "cpu_cores_count 16\nsimd_count 0\narray_count 0\n"
	     "simd_arrays_per_engine 0\nsimd_per_cu 0\ngfx_target_version 0\n");
	node(1, "10753\n", "ip discovery\n",
	     "cpu_cores_count 24\nsimd_count 912\narray_count 24\nsimd_arrays_per_engine 1\n"
	     "cu_per_simd_array 10\nsimd_per_cu 4\ngfx_target_version 90402\nvendor_id 4098\n"
	     "device_id 29856\nlocation_id 49920\ndomain 1\ndrm_render_minor 128\nnum_xcc 6\n");
	node(2, "4660\n", "aldebaran\n",
	     "cpu_cores_count 0\nsimd_count 416\narray_count 8\nsimd_arrays_per_engine 1\n"
	     "cu_per_simd_array 13\nsimd_per_cu 4\ngfx_target_version 90010\nvendor_id 4098\n"
	     "device_id 29711\nlocation_id 768\ndomain 0\ndrm_render_minor 129\n");
	node(3, "7\n", "\n", "cpu_cores_count 8\nsimd_count 0\ngfx_target_version 0\n");
	node(4, "39321\n", "navi32\n",
	     "simd_count 120\narray_count 6\nsimd_arrays_per_engine 2\nsimd_per_cu 2\n"
	     "gfx_target_version 110001\nvendor_id 4098\ndevice_id 29824\nlocation_id 1024\n"
	     "drm_render_minor 130\n");
	node(5, NULL, "gone\n", "simd_count 4\ngfx_target_version 90010\n");
	node(6, "4661\n", "aldebaran\n", "simd_count 416\nsimd_per_cu 4\ngfx_target_version 90010\n");
}

static void rm_tree(void)
{
	char cmd[PATH_MAX + 16];
	if (!root[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CU_ASSERT_EQUAL(system(cmd), 0);
	root[0] = '\0';
}

static void test_fields(void)
{
	struct spm_device *d = NULL;
	size_t n = 0;
	char err[SPM_ERRLEN] = "";

	make_tree();
	CU_ASSERT_EQUAL_FATAL(spm_discover(root, &d, &n, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(n, 3);

	CU_ASSERT_EQUAL(d[0].index, 0);
	CU_ASSERT_EQUAL(d[0].node, 1);
	CU_ASSERT_EQUAL(d[0].gpu_id, 0x2a01);
	CU_ASSERT_EQUAL(d[0].gfx_target_version, 90402);
	CU_ASSERT_STRING_EQUAL(d[0].gfx, "gfx942");
	CU_ASSERT_EQUAL(d[0].num_xcc, 6);
	CU_ASSERT_EQUAL(d[0].num_se, 4); /* 24 arrays / 1 per SE / 6 XCCs */
	CU_ASSERT_EQUAL(d[0].cu_count, 228);
	CU_ASSERT_EQUAL(d[0].device_id, 0x74a0);
	CU_ASSERT_EQUAL(d[0].vendor_id, 0x1002);
	CU_ASSERT_EQUAL(d[0].domain, 1);
	CU_ASSERT_EQUAL(d[0].location_id, 0xc300);
	CU_ASSERT_EQUAL(d[0].drm_render_minor, 128);
	CU_ASSERT_STRING_EQUAL(d[0].name, "ip discovery");
	CU_ASSERT_STRING_EQUAL(d[0].marketing_name, "");

	CU_ASSERT_EQUAL(d[1].index, 1);
	CU_ASSERT_EQUAL(d[1].node, 2);
	CU_ASSERT_EQUAL(d[1].gpu_id, 0x1234);
	CU_ASSERT_STRING_EQUAL(d[1].gfx, "gfx90a");
	CU_ASSERT_EQUAL(d[1].num_xcc, 1);
	CU_ASSERT_EQUAL(d[1].num_se, 8);
	CU_ASSERT_EQUAL(d[1].cu_count, 104);
	CU_ASSERT_EQUAL(d[1].device_id, 0x740f);
	CU_ASSERT_EQUAL(d[1].location_id, 768);
	CU_ASSERT_EQUAL(d[1].drm_render_minor, 129);
	CU_ASSERT_STRING_EQUAL(d[1].name, "aldebaran");

	/* node 3 has a gpu_id but no SIMDs: skipped, and not counted in index */
	CU_ASSERT_EQUAL(d[2].index, 2);
	CU_ASSERT_EQUAL(d[2].node, 4);
	CU_ASSERT_EQUAL(d[2].gpu_id, 0x9999);
	CU_ASSERT_STRING_EQUAL(d[2].gfx, "gfx1101");
	CU_ASSERT_EQUAL(d[2].num_xcc, 1);
	CU_ASSERT_EQUAL(d[2].num_se, 3);
	CU_ASSERT_EQUAL(d[2].cu_count, 60);

	char label[96];
	CU_ASSERT_STRING_EQUAL(spm_device_label(&d[1], label, sizeof(label)),
			       "GPU 1 (gpu_id 0x1234, gfx90a)");
	free(d);
	rm_tree();
}

static void test_lookup(void)
{
	struct spm_device *d = NULL;
	size_t n = 0;
	char err[SPM_ERRLEN] = "";

	make_tree();
	CU_ASSERT_EQUAL_FATAL(spm_discover(root, &d, &n, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "0", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "2", err, sizeof(err)), 2);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "0x1234", err, sizeof(err)), 1);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "gpu_id:0x9999", err, sizeof(err)), 2);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "gpu_id:4660", err, sizeof(err)), 1);

	err[0] = '\0';
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "3", err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no GPU \"3\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "0 or gpu_id:0x2a01 (gfx942)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "1 or gpu_id:0x1234 (gfx90a)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "2 or gpu_id:0x9999 (gfx1101)"));
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "0x4661", err, sizeof(err)), -ENODEV);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "gpu", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "1x", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(spm_device_lookup(d, n, "", err, sizeof(err)), -EINVAL);
	free(d);
	rm_tree();
}

static void test_missing_tree(void)
{
	struct spm_device *d = (void *)1;
	size_t n = 7;
	char err[SPM_ERRLEN] = "";

	CU_ASSERT_EQUAL(spm_discover("/nonexistent/kfd", &d, &n, err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NULL(d);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_STRING_EQUAL(err, "no KFD device (no /nonexistent/kfd); on a machine without "
			       "an AMD GPU use --emulate PROFILE");
}

static void test_cpu_only(void)
{
	struct spm_device *d = NULL;
	size_t n = 0;
	char err[SPM_ERRLEN] = "";

	snprintf(root, sizeof(root), "/tmp/spmtap-discover-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	node(0, "0\n", "\n", "simd_count 0\n");
	CU_ASSERT_EQUAL(spm_discover(root, &d, &n, err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no GPU in the KFD topology"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--emulate PROFILE"));
	rm_tree();
}

/* No render node there: best effort means an empty name, never a failure. */
static void test_marketing_absent(void)
{
	struct spm_device d = { .drm_render_minor = 250 };
	strcpy(d.marketing_name, "stale");
	spm_device_marketing_name(&d);
	CU_ASSERT_STRING_EQUAL(d.marketing_name, "");
}

static const char *no_renderd250(void)
{
	return access("/dev/dri/renderD250", F_OK) == 0 ? "/dev/dri/renderD250 exists here" : NULL;
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "discover/fields", test_fields, NULL },
		{ "discover/lookup", test_lookup, NULL },
		{ "discover/missing_tree", test_missing_tree, NULL },
		{ "discover/cpu_only", test_cpu_only, NULL },
		{ "discover/marketing_absent", test_marketing_absent, no_renderd250 },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("spm_discover", cases, argc, argv);
}
