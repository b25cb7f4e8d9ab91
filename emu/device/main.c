/* SPDX-License-Identifier: MIT */
/*
 * spmtap-emu-device: the emulated SPM device of one GPU's session, started
 * by the emulator's shim at SPM ACQUIRE (emu/shim/spm_device.h) with the
 * shim preloaded.  All of it lives in the shim, so the device runs the same
 * engine and models as the process it serves; this program only enters it.
 * It links nothing of the emulator itself (no second copy of its state).
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int (*device_main)(int, char **) = (int (*)(int, char **))dlsym(RTLD_DEFAULT, "spmtap_emu_device_main");
	if (!device_main) {
		fprintf(stderr, "spmtap-emu-device: the emulator's shim (libspmtap-emu.so) is not preloaded; "
				"the shim starts this program at SPM ACQUIRE\n");
		return 2;
	}
	return device_main(argc, argv);
}
