/* SPDX-License-Identifier: MIT */
/*
 * PM4 type-3 encoder for gfx9 and the SPM start/stop programs a command
 * processor must execute before anything useful streams (the KFD ioctl only
 * moves bytes).  Encodings: shared/ref/PROGRAMMING.md §1; sequences: §2.4
 * and §2.6, AQP-NEW column.  The program is the same for every XCC: on
 * gfx942 each XCC executes the whole IB on its own registers (§6.1).
 */
#ifndef SPMTAP_SPM_PM4_H
#define SPMTAP_SPM_PM4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spm_plan;

/* IT_OPCODEs (PROGRAMMING.md §1.2) [V]. */
enum spm_pm4_op {
	SPM_PM4_NOP = 0x10,
	SPM_PM4_PRED_EXEC = 0x23,
	SPM_PM4_WRITE_DATA = 0x37,
	SPM_PM4_INDIRECT_BUFFER = 0x3F,
	SPM_PM4_COPY_DATA = 0x40,
	SPM_PM4_EVENT_WRITE = 0x46,
	SPM_PM4_SET_SH_REG = 0x76,
	SPM_PM4_SET_UCONFIG_REG = 0x79,
};

#define SPM_PM4_NOP1 0xFFFF1000u             /* NOP with COUNT 0x3FFF: exactly 1 dword */
#define SPM_PM4_WRITE_DATA_REG_CTRL 0x00110000u /* register dst, no increment, confirm */
#define SPM_PM4_EV_CS_PARTIAL_FLUSH 0x00000407u /* EVENT_TYPE 7 | EVENT_INDEX 4 */
#define SPM_PM4_IB_CTRL 0x10800000u          /* VALID | CACHE_POLICY STREAM; | size in dwords */
#define SPM_AQL_PM4_IB_HEADER 0x00010100u    /* VENDOR | BARRIER, format 1 = PM4_IB */

/* PACKET3(op, n): n = total dwords - 2. */
static inline uint32_t spm_pm4_header(unsigned int op, unsigned int n)
{
	return 0xC0000000u | (n & 0x3FFFu) << 16 | (op & 0xFFu) << 8;
}

/* A growing dword stream.  Errors are sticky: check spm_pm4.err at the end. */
struct spm_pm4 {
	uint32_t *dw;
	size_t n, cap;
	int err;          /* first -errno */
	uint32_t grbm;    /* last GRBM_GFX_INDEX written by spm_pm4_grbm() */
	bool grbm_known;
};

void spm_pm4_init(struct spm_pm4 *b);
void spm_pm4_fini(struct spm_pm4 *b);

int spm_pm4_set_uconfig(struct spm_pm4 *b, uint32_t reg, uint32_t value); /* reg absolute */
int spm_pm4_set_sh(struct spm_pm4 *b, uint32_t reg, uint32_t value);      /* reg absolute */
/* WRITE_DATA of n dwords to one register (no increment); odd n gets a 1-dword NOP. */
int spm_pm4_write_data_reg(struct spm_pm4 *b, uint32_t reg, const uint32_t *data, size_t n);
int spm_pm4_event_write(struct spm_pm4 *b, uint32_t event_dword);
int spm_pm4_cs_partial_flush(struct spm_pm4 *b);
int spm_pm4_nop1(struct spm_pm4 *b);
int spm_pm4_indirect_buffer(struct spm_pm4 *b, uint64_t addr, uint32_t size_dw);
/* GRBM_GFX_INDEX through a cache that skips a write equal to the last one. */
int spm_pm4_grbm(struct spm_pm4 *b, uint32_t value);

/* The start and stop IBs for a plan, appended to b; 0 or b->err. */
int spm_pm4_build_start(const struct spm_plan *plan, struct spm_pm4 *b);
int spm_pm4_build_stop(const struct spm_plan *plan, struct spm_pm4 *b);

/*
 * The 64-byte AQL vendor packet that carries an IB (PROGRAMMING.md §5.1):
 * header 0x00010100, INDIRECT_BUFFER, dw_count_remain 10, signal.  The
 * caller stores dword 0 last, with release ordering.
 */
void spm_pm4_aql_packet(uint32_t pkt[16], uint64_t ib_addr, uint32_t ib_dw, uint64_t completion_signal);

/* "RLC_SPM_PERFMON_CNTL", "TCC_PERFCOUNTER0_SELECT1", or "reg 0x1234". */
const char *spm_gfx9_reg_name(uint32_t addr, char *buf, size_t len);

/*
 * A PM4 stream as text, one packet per line ("0003  SET_UCONFIG_REG
 * GRBM_GFX_INDEX = 0xe0000000  broadcast").  malloc'd; NULL on ENOMEM.
 */
char *spm_pm4_disasm(const uint32_t *dw, size_t n);

#endif
