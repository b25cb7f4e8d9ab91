/* SPDX-License-Identifier: MIT */
/*
 * The marker fast path as the CPU runs it (docs/markers.md "Cost"): the
 * machine code of spmtap_region_begin and spmtap_region_end in the
 * libspmtap.so applications link, disassembled with libcapstone.
 *
 * Found as an application would find it: dlopen + dlsym give the address,
 * dladdr the file and its load base, the file's ELF .symtab the function's
 * size and the names of the local functions it jumps to.  Then every
 * instruction reachable from the entry (both ways at each conditional
 * branch, into the compiler's NAME.cold fragment too) is decoded:
 *   - none is a call, a syscall, sysenter or int, and none jumps through a
 *     register or memory (a PLT stub or a table could hide a call);
 *   - the only jumps out go to mk_*_slow (a thread's first call, the
 *     clock_gettime fallback), which this test leaves alone;
 *   - outside a recording: from the entry, one load of mk_live, one
 *     conditional branch, and on one side of it `ret` with nothing between;
 *   - under a recording: rdtsc is on a path from the entry to a ret.
 * Under a sanitizer every function gains calls into its runtime: skipped.
 */
#include <CUnit/CUnit.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_CAPSTONE
#include <capstone/capstone.h>
#endif

#include "testenv.h"

#if defined(HAVE_CAPSTONE) && defined(__x86_64__)

/* ---- the library's ELF symbol table ---------------------------------------------------------- */

struct sym {
	char name[96];
	uint64_t value, size;
};

static struct sym *syms;
static size_t nsyms;

/* Every defined function and object of .symtab (the local ones included: .cold, mk_*_slow, mk_live). */
static int load_symtab(const char *file)
{
	int fd = open(file, O_RDONLY);
	if (fd < 0)
		return -1;
	struct stat st;
	fstat(fd, &st);
	const uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)m;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(m + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *s = (const Elf64_Sym *)(m + sh[i].sh_offset);
		const char *str = (const char *)(m + sh[sh[i].sh_link].sh_offset);
		size_t n = sh[i].sh_size / sizeof(*s);
		syms = calloc(n, sizeof(*syms));
		for (size_t k = 0; k < n; k++) {
			int t = ELF64_ST_TYPE(s[k].st_info);
			if ((t != STT_FUNC && t != STT_OBJECT) || !s[k].st_value)
				continue;
			struct sym *y = &syms[nsyms++];
			snprintf(y->name, sizeof(y->name), "%s", str + s[k].st_name);
			y->value = s[k].st_value;
			y->size = s[k].st_size;
		}
	}
	munmap((void *)m, (size_t)st.st_size);
	return nsyms ? 0 : -1;
}

static const struct sym *sym_named(const char *name)
{
	for (size_t i = 0; i < nsyms; i++)
		if (!strcmp(syms[i].name, name))
			return &syms[i];
	return NULL;
}

/* The symbol whose [value, value + size) holds the link-time address a. */
static const struct sym *sym_at(uint64_t a)
{
	for (size_t i = 0; i < nsyms; i++)
		if (a >= syms[i].value && a < syms[i].value + (syms[i].size ? syms[i].size : 1))
			return &syms[i];
	return NULL;
}

/* ---- the walk ------------------------------------------------------------------------------- */

static uintptr_t base;           /* load base: runtime address = base + link-time address */
static csh cs;

#define MAXI 1024

struct walk {
	const struct sym *fn, *cold; /* the function and its NAME.cold fragment, if any */
	uint64_t seen[MAXI];         /* link-time addresses decoded */
	size_t nseen;
	int calls, indirect, bad_exits, rdtsc, rets;
	char why[512];
};

static bool inside(const struct walk *w, uint64_t a)
{
	return (a >= w->fn->value && a < w->fn->value + w->fn->size) ||
	       (w->cold && a >= w->cold->value && a < w->cold->value + w->cold->size);
}

static const struct sym *region_of(const struct walk *w, uint64_t a)
{
	return a >= w->fn->value && a < w->fn->value + w->fn->size ? w->fn : w->cold;
}

static void note(struct walk *w, const char *fmt, const char *a, uint64_t at)
{
	size_t n = strlen(w->why);
	snprintf(w->why + n, sizeof(w->why) - n, fmt, a, (unsigned long long)at);
}

/* One instruction at link-time address a (NULL past the region's end); the caller frees it. */
static cs_insn *decode(const struct walk *w, uint64_t a)
{
	const struct sym *r = region_of(w, a);
	uint64_t end = r->value + r->size;
	const uint8_t *code = (const uint8_t *)(base + a);
	cs_insn *insn = NULL;
	size_t n = cs_disasm(cs, code, end - a, a, 1, &insn);
	return n == 1 ? insn : NULL;
}

static uint64_t imm_target(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	return x->op_count == 1 && x->operands[0].type == X86_OP_IMM ? (uint64_t)x->operands[0].imm : 0;
}

static void walk_all(struct walk *w)
{
	uint64_t todo[MAXI];
	size_t ntodo = 0;
	todo[ntodo++] = w->fn->value;
	while (ntodo) {
		uint64_t a = todo[--ntodo];
		for (;;) {
			bool dup = false;
			for (size_t i = 0; i < w->nseen && !dup; i++)
				dup = w->seen[i] == a;
			if (dup || w->nseen == MAXI)
				break;
			w->seen[w->nseen++] = a;
			cs_insn *in = decode(w, a);
			if (!in) {
				note(w, "undecodable %s at %#llx; ", "", a);
				w->indirect++;
				break;
			}
			uint64_t next = a + in->size;
			bool call = cs_insn_group(cs, in, CS_GRP_CALL) || in->id == X86_INS_SYSCALL ||
				    in->id == X86_INS_SYSENTER || in->id == X86_INS_INT || in->id == X86_INS_INT3;
			if (call) {
				w->calls++;
				note(w, "%s at %#llx; ", in->mnemonic, a);
			}
			if (in->id == X86_INS_RDTSC || in->id == X86_INS_RDTSCP)
				w->rdtsc++;
			bool ret = cs_insn_group(cs, in, CS_GRP_RET);
			bool jump = cs_insn_group(cs, in, CS_GRP_JUMP);
			bool uncond = in->id == X86_INS_JMP;
			uint64_t t = jump ? imm_target(in) : 0;
			cs_free(in, 1);
			if (ret) {
				w->rets++;
				break;
			}
			if (!jump) {
				if (!inside(w, next))
					break;
				a = next;
				continue;
			}
			if (!t) {
				w->indirect++;
				note(w, "%s through a register or memory at %#llx; ", "jump", a);
				break;
			}
			if (inside(w, t)) {
				if (ntodo < MAXI)
					todo[ntodo++] = t;
			} else {
				const struct sym *s = sym_at(t);
				bool slow = s && !strncmp(s->name, "mk_", 3) && strstr(s->name, "_slow");
				if (!slow) {
					w->bad_exits++;
					note(w, "jump out to %s at %#llx; ", s ? s->name : "?", a);
				}
			}
			if (uncond)
				break;
			if (!inside(w, next))
				break;
			a = next;
		}
	}
}

/*
 * Outside a recording: from the entry, straight-line code up to a first
 * conditional branch that reads mk_live (a RIP-relative load of its
 * address before it), and one side of that branch is `ret` at once.
 */
static int outside_path(struct walk *w, int *ninsn)
{
	const struct sym *live = sym_named("mk_live");
	if (!live)
		return -1;
	uint64_t a = w->fn->value;
	bool loads_live = false;
	*ninsn = 0;
	for (int k = 0; k < 8; k++) {
		cs_insn *in = decode(w, a);
		if (!in)
			return -1;
		(*ninsn)++;
		const cs_x86 *x = &in->detail->x86;
		for (int o = 0; o < x->op_count; o++)
			if (x->operands[o].type == X86_OP_MEM && x->operands[o].mem.base == X86_REG_RIP &&
			    a + in->size + (uint64_t)x->operands[o].mem.disp == live->value)
				loads_live = true;
		bool jump = cs_insn_group(cs, in, CS_GRP_JUMP), ret = cs_insn_group(cs, in, CS_GRP_RET);
		bool cond = jump && in->id != X86_INS_JMP;
		uint64_t t = jump ? imm_target(in) : 0, next = a + in->size;
		cs_free(in, 1);
		if (ret || (jump && !cond))
			return -1; /* no branch at all, or an unconditional one first */
		if (!cond) {
			a = next;
			continue;
		}
		if (!loads_live)
			return -1;
		/* one side returns at once */
		for (int side = 0; side < 2; side++) {
			uint64_t b = side ? next : t;
			if (!inside(w, b))
				continue;
			cs_insn *r = decode(w, b);
			bool is_ret = r && cs_insn_group(cs, r, CS_GRP_RET);
			if (r)
				cs_free(r, 1);
			if (is_ret) {
				(*ninsn)++;
				return 0;
			}
		}
		return -1;
	}
	return -1;
}

static void check_function(const char *name)
{
	char lib[PATH_MAX];
	snprintf(lib, sizeof(lib), "%s/libspmtap.so.0", testenv_build_dir());
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	void *f = dlsym(h, name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	Dl_info di;
	CU_ASSERT_FATAL(dladdr(f, &di) != 0);
	base = (uintptr_t)di.dli_fbase;
	if (!nsyms)
		CU_ASSERT_EQUAL_FATAL(load_symtab(di.dli_fname), 0);
	struct walk *w = calloc(1, sizeof(*w));
	w->fn = sym_named(name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w->fn);
	CU_ASSERT_EQUAL_FATAL(base + w->fn->value, (uintptr_t)f); /* the symbol table and dlsym agree */
	char cold[128];
	snprintf(cold, sizeof(cold), "%s.cold", name);
	w->cold = sym_named(cold);
	CU_ASSERT_EQUAL_FATAL(cs_open(CS_ARCH_X86, CS_MODE_64, &cs), CS_ERR_OK);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	walk_all(w);
	int nout = 0, out = outside_path(w, &nout);
	printf("\n    %s: %llu bytes%s, %zu instructions reachable: %d call/syscall, %d indirect, %d other exits, "
	       "%d rdtsc, %d ret; outside a recording %s (%d instructions) %s",
	       name, (unsigned long long)w->fn->size, w->cold ? " + .cold" : "", w->nseen, w->calls, w->indirect,
	       w->bad_exits, w->rdtsc, w->rets, out ? "NOT one branch then ret" : "one branch then ret", nout,
	       w->why);
	CU_ASSERT_EQUAL(w->calls, 0);
	CU_ASSERT_EQUAL(w->indirect, 0);
	CU_ASSERT_EQUAL(w->bad_exits, 0);
	CU_ASSERT(w->rdtsc >= 1);
	CU_ASSERT(w->rets >= 2); /* the early one and the one after the store */
	CU_ASSERT_EQUAL(out, 0);
	CU_ASSERT(nout <= 4); /* load, test, jcc, ret */
	cs_close(&cs);
	free(w);
	dlclose(h);
}

static void test_begin(void)
{
	check_function("spmtap_region_begin");
}

static void test_end(void)
{
	check_function("spmtap_region_end");
}

#else

static void test_begin(void)
{
}

static void test_end(void)
{
}

#endif

static const char *need_capstone(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return "instrumented build: the sanitizer adds calls to every function";
#elif !defined(__x86_64__)
	return "x86-64 only (the TSC fast path)";
#elif !defined(HAVE_CAPSTONE)
	return "libcapstone-dev not installed (make deps)";
#else
	return NULL;
#endif
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "begin", test_begin, need_capstone },
		{ "end", test_end, need_capstone },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("marker_code", cases, argc, argv);
}
