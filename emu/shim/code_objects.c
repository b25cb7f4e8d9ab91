/* SPDX-License-Identifier: MIT */
/* Kernel descriptor names from code-object uploads (code_objects.h). */
#include "emu/shim/code_objects.h"
#include "emu/shim/shim.h"

#include <elf.h>
#include <stdbool.h>
#include <string.h>

#define EMU_CO_MAX 4096 /* kernels remembered per process; the oldest go first */
#define EMU_CO_NAMELEN 128
#define EMU_EM_AMDGPU 224

struct emu_co_kernel {
	uint64_t kd;
	char name[EMU_CO_NAMELEN];
};

static struct emu_co_kernel emu_co[EMU_CO_MAX];
static unsigned emu_co_next, emu_co_n;

/* A pointer to [off, off+n) of the image, or NULL when it lies outside. */
static const uint8_t *emu_co_at(const uint8_t *img, uint64_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off ? img + off : NULL;
}

static void emu_co_add(uint64_t kd, const char *name, size_t nlen)
{
	for (unsigned i = 0; i < emu_co_n; i++)
		if (emu_co[i].kd == kd) {
			emu_co[i].kd = 0; /* a new upload at the same address replaces the old one */
		}
	struct emu_co_kernel *k = &emu_co[emu_co_next];
	emu_co_next = (emu_co_next + 1) % EMU_CO_MAX;
	if (emu_co_n < EMU_CO_MAX)
		emu_co_n++;
	k->kd = kd;
	if (nlen >= sizeof(k->name))
		nlen = sizeof(k->name) - 1;
	memcpy(k->name, name, nlen);
	k->name[nlen] = 0;
}

/* Copy [off, off+n) of the image into out (any alignment: the image may start anywhere); false if outside. */
static bool emu_co_read(const uint8_t *img, uint64_t len, uint64_t off, void *out, uint64_t n)
{
	const uint8_t *p = emu_co_at(img, len, off, n);
	if (p)
		memcpy(out, p, n);
	return p != NULL;
}

void emu_co_note_copy(uint64_t dst, const void *src, uint64_t len)
{
	const uint8_t *img = src;
	Elf64_Ehdr eh;
	if (!emu_co_read(img, len, 0, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EMU_EM_AMDGPU || eh.e_phentsize != sizeof(Elf64_Phdr))
		return;
	emu_co_forget(dst, len);
	/* The image is laid out by p_vaddr (lld puts the first PT_LOAD at vaddr 0), so vaddrs are offsets. */
	uint64_t dyn = 0, dynsz = 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (emu_co_read(img, len, eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph)) &&
		    ph.p_type == PT_DYNAMIC) {
			dyn = ph.p_vaddr;
			dynsz = ph.p_memsz;
		}
	}
	uint64_t symtab = 0, strtab = 0, strsz = 0, hash = 0;
	for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= dynsz; o += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		if (!emu_co_read(img, len, dyn + o, &d, sizeof(d)) || d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_SYMTAB)
			symtab = d.d_un.d_ptr;
		else if (d.d_tag == DT_STRTAB)
			strtab = d.d_un.d_ptr;
		else if (d.d_tag == DT_STRSZ)
			strsz = d.d_un.d_val;
		else if (d.d_tag == DT_HASH)
			hash = d.d_un.d_ptr;
	}
	uint32_t h[2];
	const char *str = (const char *)emu_co_at(img, len, strtab, strsz);
	if (!symtab || !hash || !emu_co_read(img, len, hash, h, sizeof(h)) || !str || !strsz)
		return;
	uint32_t nsyms = h[1]; /* DT_HASH nchain = the number of dynamic symbols */
	unsigned found = 0;
	for (uint32_t i = 1; i < nsyms; i++) {
		Elf64_Sym sym;
		if (!emu_co_read(img, len, symtab + (uint64_t)i * sizeof(sym), &sym, sizeof(sym)))
			break;
		if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_name >= strsz || sym.st_size != 64)
			continue;
		const char *nm = str + sym.st_name;
		size_t n = strnlen(nm, strsz - sym.st_name);
		if (n > 3 && n < strsz - sym.st_name && !strcmp(nm + n - 3, ".kd")) {
			emu_co_add(dst + sym.st_value, nm, n - 3);
			found++;
		}
	}
	EMU_DBG("  code object image of %llu bytes at 0x%llx: %u kernels\n", (unsigned long long)len,
		(unsigned long long)dst, found);
}

const char *emu_co_kernel_name(uint64_t kd)
{
	for (unsigned i = 0; kd && i < emu_co_n; i++)
		if (emu_co[i].kd == kd)
			return emu_co[i].name;
	return NULL;
}

void emu_co_forget(uint64_t va, uint64_t len)
{
	for (unsigned i = 0; i < emu_co_n; i++)
		if (emu_co[i].kd >= va && emu_co[i].kd - va < len)
			emu_co[i].kd = 0;
}
