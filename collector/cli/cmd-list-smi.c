// SPDX-License-Identifier: MIT
/* spmtap list --smi (cmd-list-smi.h): what the probe found, per GPU. */
#include <errno.h>
#include <string.h>

#include "collector/cli/cmd-list-smi.h"

static void print_metrics(FILE *out, uint32_t mask, const char *source)
{
	for (int m = 0; m < SMI_M_COUNT; m++)
		if (mask & SMI_M_BIT(m))
			fprintf(out, "      %-14s %-5s %s\n", smi_metric_name((enum smi_metric)m),
				smi_metric_unit((enum smi_metric)m), source);
}

int cli_list_smi(FILE *out, const struct spm_device *devs, size_t ndev, const struct smi_env *env)
{
	if (!ndev)
		fprintf(out, "no GPUs: no sensors to probe\n");
	for (size_t i = 0; i < ndev; i++) {
		const struct spm_device *sd = &devs[i];
		struct smi_dev d = { .index = sd->index, .domain = sd->domain, .location_id = sd->location_id };
		snprintf(d.name, sizeof(d.name), "%s", sd->marketing_name[0] ? sd->marketing_name : sd->name);
		struct smi_probe p;
		smi_probe_device(&d, env, &p);
		char label[96];
		fprintf(out, "%s PCI %04x:%02x:%02x.%x\n", spm_device_label(sd, label, sizeof(label)), sd->domain,
			sd->location_id >> 8, (sd->location_id >> 3) & 0x1f, sd->location_id & 7);
		for (int k = 0; k < SMI_NSOURCES; k++) {
			const struct smi_source_report *r = &p.src[k];
			bool used = k == p.selected;
			fprintf(out, "  %c %-12s %s", used ? '*' : ' ', r->source, smi_avail_name(r->avail));
			if (r->avail == SMI_DISABLED) {
				fprintf(out, ": %s\n", r->reason);
				continue;
			}
			fprintf(out, "%s, timestamps: %s%s%s\n", used ? " (used)" : " (not used: an earlier source is)",
				smi_ts_domain_name(r->ts_domain), r->note[0] ? "; " : "", r->note);
			print_metrics(out, r->metrics, r->source);
			if (used && (r->metrics & SMI_M_BIT(SMI_M_ENERGY)) && r->ts_domain != SMI_TS_NONE)
				fprintf(out, "      %-14s %-5s %s (derived: dE/dt over the sensor timestamp)\n",
					"power_dedt", "W", r->source);
		}
		if (p.selected < 0)
			fprintf(out, "  no sensor source for this GPU\n");
		smi_probe_release(&p);
	}
	return ferror(out) ? -EIO : 0;
}
