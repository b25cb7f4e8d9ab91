// SPDX-License-Identifier: MIT
/* spmtap list --smi (cmd-list-smi.h): what the probe found, per GPU. */
#include <errno.h>
#include <string.h>

#include "collector/cli/cmd-list-smi.h"
#include "collector/lib/smi_cray_pm.h"

static void print_metrics(FILE *out, uint32_t mask, const char *source)
{
	for (int m = 0; m < SMI_M_COUNT; m++)
		if (mask & SMI_M_BIT(m))
			fprintf(out, "      %-14s %-5s %s\n", smi_metric_name((enum smi_metric)m),
				smi_metric_unit((enum smi_metric)m), source);
}

/*
 * The node-level source (smi_cray_pm.h): available with its series and one
 * consistent read, or why not.
 */
static void list_cray(FILE *out, const struct smi_env *env)
{
	struct cray_pm *pm;
	char why[320];
	fprintf(out, "node\n");
	if (cray_pm_open(env ? env->sysfs_root : NULL, &pm, why, sizeof(why))) {
		fprintf(out, "    cray_pm      unavailable: %s\n", why);
		return;
	}
	struct cray_pm_snap s;
	uint64_t torn = 0;
	int rc = cray_pm_read(pm, &s, &torn);
	if (rc)
		fprintf(out, "    cray_pm      unavailable: no consistent read (%s)\n",
			rc == -EAGAIN ? "freshness moved during every pass" : "freshness unreadable");
	else
		fprintf(out, "  * cray_pm      available (--cray), /sys/cray/pm_counters, raw_scan_hz %llu, %u accel; "
			"timestamps: realtime_us; accelN -> GPU mapping not documented publicly: "
			"--cray-accel-map\n", (unsigned long long)cray_pm_raw_scan_hz(pm), cray_pm_naccel(pm));
	for (unsigned i = 0; !rc && i < cray_pm_nseries(pm); i++)
		if (s.val[i].present)
			fprintf(out, "      pm.%-14s %-5c cray_pm\n", cray_pm_series_name(pm, i),
				cray_pm_series_unit(pm, i));
	cray_pm_close(pm);
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
	list_cray(out, env);
	return ferror(out) ? -EIO : 0;
}
