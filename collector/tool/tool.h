/* SPDX-License-Identifier: MIT */
/*
 * libspmtap-tool.so's two halves: tool_onload.cpp (the only C++, because
 * ROCr's hsa_api_trace.h is C++) copies the runtime's functions into
 * struct tool_hsa and installs the wrappers below; tool.c (C11) does the work.
 */
#ifndef SPMTAP_COLLECTOR_TOOL_H
#define SPMTAP_COLLECTOR_TOOL_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>

/* hsa_api_trace.h's intercept types (C++ header), the same signatures. */
typedef void (*tool_packet_writer)(const void *pkts, uint64_t count);
typedef void (*tool_intercept_handler)(const void *pkts, uint64_t count, uint64_t user_index, void *data,
				       tool_packet_writer writer);

/* The runtime's own functions, saved before the wrappers replace them in its table. */
struct tool_hsa {
	hsa_status_t (*queue_create)(hsa_agent_t, uint32_t, hsa_queue_type32_t,
				     void (*)(hsa_status_t, hsa_queue_t *, void *), void *, uint32_t, uint32_t,
				     hsa_queue_t **);
	hsa_status_t (*executable_freeze)(hsa_executable_t, const char *);
	hsa_status_t (*executable_iterate_symbols)(hsa_executable_t,
						   hsa_status_t (*)(hsa_executable_t, hsa_executable_symbol_t, void *),
						   void *);
	hsa_status_t (*symbol_get_info)(hsa_executable_symbol_t, hsa_executable_symbol_info_t, void *);
	hsa_status_t (*signal_create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
	void (*signal_store_relaxed)(hsa_signal_t, hsa_signal_value_t);
	hsa_status_t (*signal_destroy)(hsa_signal_t);
	void (*signal_subtract_screlease)(hsa_signal_t, hsa_signal_value_t);
	hsa_status_t (*intercept_create)(hsa_agent_t, uint32_t, hsa_queue_type32_t,
					 void (*)(hsa_status_t, hsa_queue_t *, void *), void *, uint32_t, uint32_t,
					 hsa_queue_t **);
	hsa_status_t (*intercept_register)(hsa_queue_t *, tool_intercept_handler, void *);
	hsa_status_t (*profiler_enable)(hsa_queue_t *, int);
	hsa_status_t (*agent_get_info)(hsa_agent_t, hsa_agent_info_t, void *);
	hsa_status_t (*async_handler)(hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t,
				      hsa_amd_signal_handler, void *);
};

extern struct tool_hsa tool_rt;

/* Maps the collector's channel (SPMTAP_KERNELS_FD); false: no channel, ROCr should unload the tool. */
bool tool_init(void);
hsa_status_t tool_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
			       void (*cb)(hsa_status_t, hsa_queue_t *, void *), void *data, uint32_t priv,
			       uint32_t group, hsa_queue_t **queue);
hsa_status_t tool_executable_freeze(hsa_executable_t ex, const char *opts);
/* ROCr's OnUnload: the idle tool signals go back (those still in flight cannot). */
void tool_fini(void);

#endif
