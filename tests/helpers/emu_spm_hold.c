/* SPDX-License-Identifier: MIT */
/*
 * Test helper: through the real libhsakmt, acquire SPM on the GPU with the
 * given gpu_id, start streaming, print one line "acquired" or
 * "failed <HSAKMT status>" to stdout, then (on success) sleep SECONDS and
 * exit without releasing, so that process exit does it.
 * Usage: emu_spm_hold GPU_ID SECONDS
 */
#include <hsakmt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s GPU_ID SECONDS\n", argv[0]);
		return 2;
	}
	HSAuint32 gpu_id = (HSAuint32)strtoul(argv[1], NULL, 0);
	unsigned secs = (unsigned)strtoul(argv[2], NULL, 0);
	if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) {
		printf("failed openkfd\n");
		return 1;
	}
	/* libhsakmt's SPM calls take the node index; find the node with this gpu_id. */
	HsaSystemProperties sp;
	HSAuint32 node = 0;
	int found = 0;
	if (hsaKmtAcquireSystemProperties(&sp) == HSAKMT_STATUS_SUCCESS) {
		for (HSAuint32 n = 0; n < sp.NumNodes && !found; n++) {
			HSAuint32 id = 0;
			char path[128];
			snprintf(path, sizeof(path), "/sys/devices/virtual/kfd/kfd/topology/nodes/%u/gpu_id", n);
			FILE *f = fopen(path, "r");
			if (f) {
				if (fscanf(f, "%u", &id) == 1 && id == gpu_id) {
					node = n;
					found = 1;
				}
				fclose(f);
			}
		}
	}
	if (!found) {
		printf("failed nogpu\n");
		return 1;
	}
	HSAKMT_STATUS st = hsaKmtSPMAcquire(node);
	if (st != HSAKMT_STATUS_SUCCESS) {
		printf("failed %d\n", (int)st);
		return 1;
	}
	static unsigned char buf[1 << 20];
	HSAuint32 timeout = 0, copied = 0;
	bool loss = false;
	hsaKmtSPMSetDestBuffer(node, sizeof(buf), &timeout, &copied, buf, &loss);
	printf("acquired\n");
	fflush(stdout);
	sleep(secs);
	return 0;
}
