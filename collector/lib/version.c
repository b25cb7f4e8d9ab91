/* SPDX-License-Identifier: MIT */
#include "spmtap.h"

#define STR2(x) #x
#define STR(x) STR2(x)

SPMTAP_API const char *spmtap_version_string(void)
{
	return STR(SPMTAP_VERSION_MAJOR) "." STR(SPMTAP_VERSION_MINOR) ".0";
}

SPMTAP_API unsigned int spmtap_version_major(void) { return SPMTAP_VERSION_MAJOR; }
SPMTAP_API unsigned int spmtap_version_minor(void) { return SPMTAP_VERSION_MINOR; }
