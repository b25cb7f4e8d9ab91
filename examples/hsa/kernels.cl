// SPDX-License-Identifier: MIT
// Kernels for hsa_dispatch.c (examples/hsa/README.md).  Built without device libraries
// (-nogpulib), so work-item ids come from clang's builtins, not get_global_id.
__kernel void add1(__global int *p)
{
	unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
		     __builtin_amdgcn_workitem_id_x();
	p[i] += 1;
}

__kernel void scale(__global float *p, float f)
{
	unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
		     __builtin_amdgcn_workitem_id_x();
	p[i] *= f;
}

__kernel void nop(void)
{
}

__kernel void saxpy(__global float *y, float a)
{
	unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
		     __builtin_amdgcn_workitem_id_x();
	y[i] = a * y[i] + 1.0f;
}

__kernel void zero(__global int *p)
{
	unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
		     __builtin_amdgcn_workitem_id_x();
	p[i] = 0;
}
