/* SPDX-License-Identifier: MIT */
/* What the trace CSV reader (sensor_trace_csv.c) needs of the trace itself (sensor_trace.c). */
#ifndef SPMTAP_ANALYSIS_SENSOR_TRACE_PRIV_H
#define SPMTAP_ANALYSIS_SENSOR_TRACE_PRIV_H

#include "collector/analysis/sensor_trace.h"

/* Cells quoted in messages are cut here: enough to recognise, short enough to read. */
#define QUOTE_MAX 40

/* The file name later warnings name; 0 or -ENOMEM. */
int sa_trace_set_what(struct sa_trace *tr, const char *what);
/* A warning is advice: when memory runs out it is lost, the trace is not. */
void sa_trace_warn(struct sa_trace *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A signal NAME: [A-Za-z0-9_.:-]+. */
bool sa_valid_name(const char *p, size_t len);

#endif
