/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer: the kernel dispatch channel's reader (collector/lib/kernel_reader.c)
 * against an application that writes arbitrary bytes into the shared
 * segment (collector/lib/kernel_shm.h): header, slot heads, tails, counts,
 * ring length, records, names without a NUL.  The input is the segment's
 * bytes, written in up to three rounds with a poll after each (a writer
 * that keeps changing it); the reader must not crash, must not read past
 * the segment (ASan), and must hand out at most one ring per slot per poll,
 * every name NUL-terminated.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collector/lib/kernel_reader.h"

#define NEV 8u /* a small ring: the fuzzer reaches the records and the wrap */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setenv(KD_ENV_EVENTS, "8", 1);
	struct kd_reader *r = NULL;
	int fd = -1;
	char err[256];
	if (kd_reader_create(&r, &fd, err, sizeof(err)))
		return 0;
	size_t bytes = kd_channel_bytes(NEV);
	uint8_t *seg = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (seg == MAP_FAILED) {
		kd_reader_free(r);
		return 0;
	}
	/* Round k writes the input's k-th third at the offset its first 4 bytes say (mod the segment). */
	size_t polls = 0, third = size / 3 + 1;
	for (size_t off = 0; off < size; off += third) {
		size_t len = size - off < third ? size - off : third;
		const uint8_t *p = data + off;
		size_t at = 0;
		if (len > 4) {
			uint32_t a;
			memcpy(&a, p, 4);
			at = a % bytes;
			p += 4, len -= 4;
		}
		if (len > bytes - at)
			len = bytes - at;
		memcpy(seg + at, p, len);
		if (kd_reader_poll(r) < 0)
			break;
		polls++;
	}
	size_t n;
	const struct kd_record *rec = kd_reader_records(r, &n);
	if (n > polls * KD_SLOTS * NEV)
		abort(); /* more than one ring per slot per poll */
	size_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += strlen(rec[i].name); /* ASan: each name ends inside its record */
	json_t *j = kd_reader_json(r);
	json_decref(j);
	(void)kd_reader_dropped(r);
	munmap(seg, bytes);
	kd_reader_free(r);
	if (sum == (size_t)-1)
		puts("");
	return 0;
}
