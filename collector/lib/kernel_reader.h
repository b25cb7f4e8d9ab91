/* SPDX-License-Identifier: MIT */
/*
 * The recorder's end of the kernel dispatch channel (kernel_shm.h): makes
 * the memfd the application inherits, drains the tool's records into
 * memory, counts what was lost.  One thread polls; not thread-safe.
 */
#ifndef SPMTAP_COLLECTOR_KERNEL_READER_H
#define SPMTAP_COLLECTOR_KERNEL_READER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/lib/kernel_shm.h"

struct kd_reader;

/* The ring length is SPMTAP_KERNELS_CHANNEL_EVENTS (a power of two, 2..65536) or 4096. */
int kd_reader_create(struct kd_reader **out, int *fd, char *err, size_t errlen);
/* Drains every ring; returns the fullest ring's fill before draining, or -ENOMEM. */
int kd_reader_poll(struct kd_reader *r);
const struct kd_record *kd_reader_records(const struct kd_reader *r, size_t *n);
/* {received, dropped_channel_full, threads_refused, untimed, unnamed, queues, channel_events}. */
json_t *kd_reader_json(const struct kd_reader *r);
uint64_t kd_reader_dropped(const struct kd_reader *r);
void kd_reader_free(struct kd_reader *r);

#endif
