/* SPDX-License-Identifier: MIT */
/*
 * libotf2 (Debian's libopen-trace-format2, OTF2 3.x) loaded at run time, not
 * linked: libspmtap.so is loaded into applications (the marker API), and a
 * Score-P-instrumented application brings its own OTF2 build, whose symbols
 * share these names; a second copy linked in would interpose on it.  Loaded
 * only where `-f otf2` is asked for, RTLD_LOCAL, and a machine without the
 * library still runs spmtap (`spmtap list` says whether OTF2 output is
 * available).  The headers come from the -dev package at build time, so the
 * table's types are OTF2's own.  The table lives in its user's context (no
 * global state); dlopen counts the references.
 */
#ifndef SPMTAP_COLLECTOR_OTF2_LIB_H
#define SPMTAP_COLLECTOR_OTF2_LIB_H

#include <stddef.h>

#include <otf2/otf2.h>

/* The Debian library's soname first (ABI of 3.0), then the development link name. */
#define OTF2_LIB_NAMES { "libopen-trace-format2.so.10", "libopen-trace-format2.so", "libotf2.so" }

#define OTF2_LIB_FNS(X)                                                                            \
	X(OTF2_Archive_Open)                                                                       \
	X(OTF2_Archive_Close)                                                                      \
	X(OTF2_Archive_SetFlushCallbacks)                                                          \
	X(OTF2_Archive_SetMemoryCallbacks)                                                         \
	X(OTF2_Archive_SetSerialCollectiveCallbacks)                                               \
	X(OTF2_Archive_SetCreator)                                                                 \
	X(OTF2_Archive_SetDescription)                                                             \
	X(OTF2_Archive_SetMachineName)                                                             \
	X(OTF2_Archive_OpenEvtFiles)                                                               \
	X(OTF2_Archive_CloseEvtFiles)                                                              \
	X(OTF2_Archive_GetEvtWriter)                                                               \
	X(OTF2_Archive_CloseEvtWriter)                                                             \
	X(OTF2_Archive_OpenDefFiles)                                                               \
	X(OTF2_Archive_CloseDefFiles)                                                              \
	X(OTF2_Archive_GetDefWriter)                                                               \
	X(OTF2_Archive_CloseDefWriter)                                                             \
	X(OTF2_Archive_GetGlobalDefWriter)                                                         \
	X(OTF2_Archive_CloseGlobalDefWriter)                                                       \
	X(OTF2_EvtWriter_Enter)                                                                    \
	X(OTF2_EvtWriter_Leave)                                                                    \
	X(OTF2_EvtWriter_Metric)                                                                   \
	X(OTF2_EvtWriter_GetNumberOfEvents)                                                        \
	X(OTF2_DefWriter_WriteClockOffset)                                                         \
	X(OTF2_GlobalDefWriter_WriteClockProperties)                                               \
	X(OTF2_GlobalDefWriter_WriteString)                                                        \
	X(OTF2_GlobalDefWriter_WriteSystemTreeNode)                                                \
	X(OTF2_GlobalDefWriter_WriteLocationGroup)                                                 \
	X(OTF2_GlobalDefWriter_WriteLocation)                                                      \
	X(OTF2_GlobalDefWriter_WriteRegion)                                                        \
	X(OTF2_GlobalDefWriter_WriteMetricMember)                                                  \
	X(OTF2_GlobalDefWriter_WriteMetricClass)                                                   \
	X(OTF2_GlobalDefWriter_WriteMetricInstance)                                                \
	X(OTF2_Error_GetName)                                                                      \
	X(OTF2_Error_GetDescription)                                                               \
	X(OTF2_Error_RegisterCallback)

struct otf2_lib {
	void *handle;
	const char *name; /* the file that was loaded */
#define OTF2_LIB_MEMBER(f) __typeof__(&f) f;
	OTF2_LIB_FNS(OTF2_LIB_MEMBER)
#undef OTF2_LIB_MEMBER
};

/* 0, or -errno with why in err ("libopen-trace-format2.so.10: cannot open ..."). */
int otf2_lib_open(struct otf2_lib *l, char *err, size_t errlen);
void otf2_lib_close(struct otf2_lib *l);

#endif
