// SPDX-License-Identifier: MIT
// libspmtap-tool.so's entry points for ROCr (HSA_TOOLS_LIB).  C++ only because
// hsa/hsa_api_trace.h, which defines the table ROCr hands OnLoad, is C++
// (decltype members); everything else is C in tool.c.  Built with
// -DAMD_INTERNAL_BUILD so the header takes Debian's <hsa/...> paths, not inc/.
// docs/architecture.md "Kernels"; ROCr 5.2.3 facts: DISPATCH.md section 9.
#include <hsa/hsa_api_trace.h>

#include <cstddef>

extern "C" {
#include "collector/tool/tool.h"
}

// True when the runtime's table (its size is in version.minor_id) holds the member at off.
static bool has(const ApiTableVersion &v, size_t off, size_t len)
{
	return off + len <= v.minor_id;
}

#define HAS(tbl, T, m) has((tbl)->version, offsetof(T, m), sizeof(((T *)nullptr)->m))

extern "C" __attribute__((visibility("default"))) bool OnLoad(HsaApiTable *table, uint64_t runtime_version,
							       uint64_t failed_tool_count,
							       const char *const *failed_tool_names)
{
	(void)runtime_version, (void)failed_tool_count, (void)failed_tool_names;
	if (!table || !table->core_ || !table->amd_ext_)
		return false;
	CoreApiTable *c = table->core_;
	AmdExtTable *a = table->amd_ext_;
	// Every member used must be inside the runtime's (possibly older, shorter) tables.
	if (!HAS(c, CoreApiTable, hsa_executable_iterate_symbols_fn) ||
	    !HAS(c, CoreApiTable, hsa_executable_symbol_get_info_fn) ||
	    !HAS(c, CoreApiTable, hsa_executable_freeze_fn) || !HAS(a, AmdExtTable, hsa_amd_queue_intercept_register_fn) ||
	    !HAS(a, AmdExtTable, hsa_amd_signal_async_handler_fn) ||
	    !HAS(a, AmdExtTable, hsa_amd_profiling_set_profiler_enabled_fn))
		return false;
	tool_rt.queue_create = c->hsa_queue_create_fn;
	tool_rt.executable_freeze = c->hsa_executable_freeze_fn;
	tool_rt.executable_iterate_symbols = c->hsa_executable_iterate_symbols_fn;
	tool_rt.symbol_get_info = c->hsa_executable_symbol_get_info_fn;
	tool_rt.agent_get_info = c->hsa_agent_get_info_fn;
	tool_rt.signal_create = c->hsa_signal_create_fn;
	tool_rt.signal_store_relaxed = c->hsa_signal_store_relaxed_fn;
	tool_rt.signal_destroy = c->hsa_signal_destroy_fn;
	tool_rt.signal_subtract_screlease = c->hsa_signal_subtract_screlease_fn;
	tool_rt.intercept_create = a->hsa_amd_queue_intercept_create_fn;
	tool_rt.intercept_register = a->hsa_amd_queue_intercept_register_fn;
	tool_rt.profiler_enable = a->hsa_amd_profiling_set_profiler_enabled_fn;
	tool_rt.async_handler = a->hsa_amd_signal_async_handler_fn;
	if (!tool_init())
		return false; // no channel from spmtap record: ROCr unloads the tool, the app runs untouched
	c->hsa_queue_create_fn = tool_queue_create;
	c->hsa_executable_freeze_fn = tool_executable_freeze;
	return true;
}

extern "C" __attribute__((visibility("default"))) void OnUnload(void)
{
	tool_fini();
}
