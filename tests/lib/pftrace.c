/* SPDX-License-Identifier: MIT */
/* Perfetto traces read back by trace_processor's rules (pftrace.h). */
#include "pftrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"

static struct pft_seq *seq_of(struct pft_state *st, uint32_t id)
{
	for (size_t i = 0; i < st->nseqs; i++)
		if (st->seqs[i].seq == id)
			return &st->seqs[i];
	if (st->nseqs == PFT_MAX_SEQS)
		return NULL;
	st->seqs[st->nseqs] = (struct pft_seq){ .seq = id };
	return &st->seqs[st->nseqs++];
}

int pft_resolve(struct pft_state *st, const Perfetto__Protos__TracePacket *p, uint64_t *ts,
		uint64_t *track)
{
	if (!p->has_trusted_packet_sequence_id)
		return -1;
	struct pft_seq *s = seq_of(st, p->trusted_packet_sequence_id);
	if (!s)
		return -1;
	if (p->has_sequence_flags && (p->sequence_flags & 1)) /* SEQ_INCREMENTAL_STATE_CLEARED */
		*s = (struct pft_seq){ .seq = s->seq, .cleared = 1 };
	if (p->has_sequence_flags && (p->sequence_flags & 2) && !s->cleared)
		return -1; /* SEQ_NEEDS_INCREMENTAL_STATE before any */
	if (p->trace_packet_defaults) {
		const Perfetto__Protos__TracePacketDefaults *d = p->trace_packet_defaults;
		s->def_clock = d->has_timestamp_clock_id ? d->timestamp_clock_id : 0;
		s->def_track = d->track_event_defaults && d->track_event_defaults->has_track_uuid
				       ? d->track_event_defaults->track_uuid : 0;
	}
	if (p->clock_snapshot) {
		uint64_t boot = 0, inc = 0;
		int has_boot = 0, has_inc = 0;
		for (size_t k = 0; k < p->clock_snapshot->n_clocks; k++) {
			const Perfetto__Protos__ClockSnapshot__Clock *c = p->clock_snapshot->clocks[k];
			if (c->clock_id == 6) {
				boot = c->timestamp;
				has_boot = 1;
			} else if (c->clock_id == 64) {
				if (!c->is_incremental || (c->has_unit_multiplier_ns && c->unit_multiplier_ns != 1))
					return -1;
				inc = c->timestamp;
				has_inc = 1;
			}
		}
		if (!has_boot || !has_inc || boot != inc)
			return -1;
		s->has_inc = 1;
		s->inc_ns = inc;
	}
	uint32_t clock = p->has_timestamp_clock_id ? p->timestamp_clock_id
			 : s->def_clock		   ? s->def_clock
						   : 6;
	*ts = 0;
	if (p->has_timestamp) {
		if (clock == 6) {
			*ts = p->timestamp;
		} else if (clock == 64 && s->has_inc) {
			s->inc_ns += p->timestamp;
			*ts = s->inc_ns;
		} else {
			return -1;
		}
	}
	*track = p->track_event && p->track_event->has_track_uuid ? p->track_event->track_uuid
								  : s->def_track;
	return 0;
}

int pft_counters(const char *path, struct pft_counter *out, size_t max)
{
	size_t len;
	uint8_t *b = (uint8_t *)tf_slurp(path, &len);
	if (!b)
		return -1;
	Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, len, b);
	free(b);
	if (!t)
		return -1;
	struct pft_state *st = calloc(1, sizeof(*st));
	size_t n = 0;
	int rc = st ? 0 : -1;
	for (size_t i = 0; i < t->n_packet && !rc; i++) {
		const Perfetto__Protos__TracePacket *p = t->packet[i];
		uint64_t ts, track;
		if (pft_resolve(st, p, &ts, &track)) {
			rc = -1;
			break;
		}
		const Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
		if (d && d->counter && n < max) {
			out[n] = (struct pft_counter){ .uuid = d->uuid };
			snprintf(out[n].name, sizeof(out[n].name), "%s", d->name ? d->name : "");
			n++;
		}
		const Perfetto__Protos__TrackEvent *e = p->track_event;
		if (!e || e->type != PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER)
			continue;
		struct pft_counter *c = NULL;
		for (size_t k = 0; k < n && !c; k++)
			if (out[k].uuid == track)
				c = &out[k];
		if (!c) {
			rc = -1; /* a sample before its track, or on no counter track */
			break;
		}
		if (!c->n)
			c->first_ts = ts;
		c->last_ts = ts;
		c->n++;
		c->sum_ts += ts;
		c->sum += e->has_double_counter_value ? e->double_counter_value : (double)e->counter_value;
	}
	free(st);
	perfetto__protos__trace__free_unpacked(t, NULL);
	return rc ? -1 : (int)n;
}
