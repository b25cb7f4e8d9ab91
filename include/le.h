/* SPDX-License-Identifier: MIT */
/*
 * Little-endian loads and stores at any alignment.  Every byte format spmtap
 * reads or writes (SPM samples, gen-B headers, the raw container) is
 * little-endian; memcpy keeps unaligned access defined and compiles to a
 * plain load on x86.
 */
#ifndef SPMTAP_LE_H
#define SPMTAP_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t le_get16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t le_get32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t le_get64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static inline void le_put16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void le_put32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void le_put64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

#endif
