/* SPDX-License-Identifier: MIT */
/* Headless Chromium runs and screenshot analysis for tests (see browser.h). */
#include "browser.h"

/*
 * <cairo/cairo.h>, not <cairo.h>: tests/lib objects are compiled without
 * pkg-config's cairo flags (only the analysis archive and the test mains
 * get them), and cairo.h needs nothing from glib or pixman.
 */
#include <cairo/cairo.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "files.h"

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
}

const char *browser_path(void)
{
	const char *env = getenv("SPMTAP_CHROMIUM");
	if (env && *env)
		return access(env, X_OK) ? NULL : env;
	static const char *const cand[] = { "/usr/bin/chromium", "/usr/bin/chromium-browser" };
	for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++)
		if (!access(cand[i], X_OK))
			return cand[i];
	return NULL;
}

const char *browser_requires(void)
{
	if (browser_path())
		return NULL;
	const char *env = getenv("SPMTAP_CHROMIUM");
	return env && *env ? "SPMTAP_CHROMIUM is set but is not an executable"
			   : "no headless Chromium: /usr/bin/chromium is not installed (Debian package chromium)";
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* file:// URL of a local path, absolute, with unusual bytes percent-encoded. */
static int file_url(const char *path, char *url, size_t len)
{
	char abs[PATH_MAX];
	if (!realpath(path, abs))
		return -errno;
	size_t o = snprintf(url, len, "file://");
	for (const unsigned char *p = (const unsigned char *)abs; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     strchr("/._-~", *p);
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		o += snprintf(url + o, len - o, plain ? "%c" : "%%%02X", *p);
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/*
 * Run Chromium with the common flags, then `extra` (NULL-terminated), then
 * url; stdout to out_path (or /dev/null), stderr to log_path.  The browser
 * and all its children are one process group, killed if it outlives the
 * timeout, and killed while the leader is still unreaped (so the group id
 * cannot have been reused) when it exits: no stray renderer stays behind.
 */
static int run_chromium(const char *const *extra, const char *url, const char *out_path, const char *log_path,
			char *err, size_t errlen)
{
	const char *bin = browser_path();
	if (!bin) {
		seterr(err, errlen, "%s", browser_requires());
		return -ENOENT;
	}
	const char *tmp = getenv("TMPDIR");
	char prof[PATH_MAX], udd[PATH_MAX + 32];
	snprintf(prof, sizeof(prof), "%s/spmtap-chromium-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(prof)) {
		int e = errno;
		seterr(err, errlen, "cannot create a profile directory %s: %s", prof, strerror(e));
		return -e;
	}
	snprintf(udd, sizeof(udd), "--user-data-dir=%s", prof);
	const char *argv[24] = { bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
				 "--no-first-run", "--disable-background-networking", "--disable-component-update",
				 "--disable-sync", "--disable-dev-shm-usage", "--force-device-scale-factor=1",
				 udd, "--hide-scrollbars" };
	int argc = 13;
	for (const char *const *e = extra; *e && argc < 22; e++)
		argv[argc++] = *e;
	argv[argc++] = url;
	argv[argc] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		rm_tree(prof);
		seterr(err, errlen, "fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		setpgid(0, 0);
		int in = open("/dev/null", O_RDONLY);
		int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int log = open(log_path ? log_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0 || log < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(log, 2);
		/* keep it out of the user's home: caches and crash reports go to the profile */
		setenv("HOME", prof, 1);
		setenv("XDG_CONFIG_HOME", prof, 1);
		setenv("XDG_CACHE_HOME", prof, 1);
		/* A suite under the emulator preloads its shim (sanitized in check-asan): not the browser's business. */
		unsetenv("LD_PRELOAD");
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	setpgid(pid, pid); /* also here: whichever runs first, the group exists before any kill */
	const char *tenv = getenv("SPMTAP_CHROMIUM_TIMEOUT");
	int limit = tenv && atoi(tenv) >= 1 && atoi(tenv) <= 600 ? atoi(tenv) : BROWSER_TIMEOUT_S;
	long waited = 0;
	siginfo_t si;
	int rc = 0;
	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
			break;
		if (waited >= limit * 1000L) {
			kill(-pid, SIGKILL);
			rc = -ETIMEDOUT;
			break;
		}
		sleep_ms(20);
		waited += 20;
	}
	kill(-pid, SIGKILL); /* leftovers of the group; the leader is a zombie or killed */
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rm_tree(prof);
	char why[64];
	if (rc) {
		seterr(err, errlen, "chromium took longer than %d s and was killed; its log: %s", limit,
		       log_path ? log_path : "(none)");
		return rc;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		if (WIFEXITED(st))
			snprintf(why, sizeof(why), "exited with status %d", WEXITSTATUS(st));
		else
			snprintf(why, sizeof(why), "was killed by signal %d", WTERMSIG(st));
		seterr(err, errlen, "chromium %s; its log: %s", why, log_path ? log_path : "(none)");
		return -EIO;
	}
	return 0;
}

int browser_load(const char *path, int w, int h, const char *png, char **dom, char *err, size_t errlen)
{
	char url[PATH_MAX * 3 + 16], size[64], shot[PATH_MAX + 16], log[PATH_MAX + 16], out[PATH_MAX + 16];
	const char *extra[4] = { NULL };
	int n = 0;
	if (dom)
		*dom = NULL;
	int rc = file_url(path, url, sizeof(url));
	if (rc) {
		seterr(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	snprintf(size, sizeof(size), "--window-size=%d,%d", w, h);
	extra[n++] = size;
	if (png) {
		snprintf(shot, sizeof(shot), "--screenshot=%s", png);
		extra[n++] = shot;
		unlink(png);
	}
	if (dom)
		extra[n++] = "--dump-dom";
	snprintf(log, sizeof(log), "%s.chromium.log", png ? png : path);
	snprintf(out, sizeof(out), "%s.dom", path);
	if ((rc = run_chromium(extra, url, dom ? out : NULL, log, err, errlen)))
		return rc;
	struct stat st;
	if (png && (stat(png, &st) || st.st_size == 0)) {
		seterr(err, errlen, "chromium wrote no screenshot %s; its log: %s", png, log);
		return -EIO;
	}
	if (!dom)
		return 0;
	errno = 0;
	if (!(*dom = tf_slurp(out, NULL))) {
		rc = errno ? -errno : -EIO;
		seterr(err, errlen, "reading chromium's DOM %s: %s", out, strerror(-rc));
		return rc;
	}
	if (!**dom) {
		free(*dom);
		*dom = NULL;
		seterr(err, errlen, "chromium printed no DOM; its log: %s", log);
		return -EIO;
	}
	return 0;
}

/* ---- pixels ------------------------------------------------------------- */

static int from_surface(cairo_surface_t *s, const char *what, struct browser_image *img, char *err,
			size_t errlen)
{
	img->px = NULL;
	img->w = img->h = 0;
	if (cairo_surface_status(s)) {
		seterr(err, errlen, "cannot read PNG %s: %s", what, cairo_status_to_string(cairo_surface_status(s)));
		cairo_surface_destroy(s);
		return -EINVAL;
	}
	cairo_surface_flush(s);
	int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
	int stride = cairo_image_surface_get_stride(s);
	cairo_format_t fmt = cairo_image_surface_get_format(s);
	const unsigned char *data = cairo_image_surface_get_data(s);
	if (fmt != CAIRO_FORMAT_ARGB32 && fmt != CAIRO_FORMAT_RGB24) {
		seterr(err, errlen, "PNG %s: unexpected pixel format after loading", what);
		cairo_surface_destroy(s);
		return -EINVAL;
	}
	img->px = malloc((size_t)w * (size_t)h * sizeof(*img->px) + 1);
	if (!img->px) {
		cairo_surface_destroy(s);
		return -ENOMEM;
	}
	for (int y = 0; y < h; y++) {
		const uint32_t *row = (const uint32_t *)(data + (size_t)y * (size_t)stride);
		for (int x = 0; x < w; x++) {
			uint32_t p = row[x];
			uint32_t a = fmt == CAIRO_FORMAT_ARGB32 ? p >> 24 : 255;
			/* premultiplied colour over white: c + (255 - a) */
			uint32_t r = ((p >> 16) & 255) + 255 - a, g = ((p >> 8) & 255) + 255 - a, b = (p & 255) + 255 - a;
			img->px[(size_t)y * (size_t)w + (size_t)x] = (r > 255 ? 255 : r) << 16 |
								    (g > 255 ? 255 : g) << 8 | (b > 255 ? 255 : b);
		}
	}
	img->w = w;
	img->h = h;
	cairo_surface_destroy(s);
	return 0;
}

int browser_image_load(const char *png, struct browser_image *img, char *err, size_t errlen)
{
	return from_surface(cairo_image_surface_create_from_png(png), png, img, err, errlen);
}

struct mem_reader {
	const unsigned char *p;
	size_t left;
};

static cairo_status_t mem_read(void *closure, unsigned char *data, unsigned int len)
{
	struct mem_reader *m = closure;
	if (len > m->left)
		return CAIRO_STATUS_READ_ERROR;
	memcpy(data, m->p, len);
	m->p += len;
	m->left -= len;
	return CAIRO_STATUS_SUCCESS;
}

int browser_image_load_mem(const void *png, size_t len, struct browser_image *img, char *err,
			   size_t errlen)
{
	struct mem_reader m = { png, len };
	return from_surface(cairo_image_surface_create_from_png_stream(mem_read, &m), "(in memory)", img, err,
			    errlen);
}

void browser_image_free(struct browser_image *img)
{
	free(img->px);
	img->px = NULL;
	img->w = img->h = 0;
}

bool browser_rgb_near(uint32_t a, uint32_t b, int tol)
{
	for (int sh = 0; sh <= 16; sh += 8) {
		int d = (int)((a >> sh) & 255) - (int)((b >> sh) & 255);
		if (d > tol || d < -tol)
			return false;
	}
	return true;
}

/*
 * Lines along one direction.  `vert` swaps the roles of x and y; runs in
 * the next row (column) extend a line that ended in the one before.
 */
static int find_lines(const struct browser_image *img, bool vert, uint32_t c, int tol, int min_len,
		      struct browser_line *out, int max)
{
	int rows = vert ? img->w : img->h, cols = vert ? img->h : img->w;
	int found = 0;
	/* lines still growing: indices into out (only stored lines can grow) */
	for (int r = 0; r < rows; r++) {
		int k = 0;
		while (k < cols) {
			while (k < cols && !browser_rgb_near(vert ? browser_px(img, r, k) : browser_px(img, k, r), c, tol))
				k++;
			int a = k;
			while (k < cols && browser_rgb_near(vert ? browser_px(img, r, k) : browser_px(img, k, r), c, tol))
				k++;
			int b = k - 1;
			if (k == a || b - a + 1 < min_len)
				continue;
			bool merged = false;
			for (int i = 0; i < found && i < max && !merged; i++) {
				struct browser_line *l = &out[i];
				if (l->pos + l->thickness == r && abs(l->from - a) <= 2 && abs(l->to - b) <= 2) {
					l->thickness++;
					merged = true;
				}
			}
			if (merged)
				continue;
			if (found < max)
				out[found] = (struct browser_line){ r, 1, a, b };
			found++;
		}
	}
	return found;
}

int browser_find_hlines(const struct browser_image *img, uint32_t c, int tol, int min_len,
			struct browser_line *out, int max)
{
	return find_lines(img, false, c, tol, min_len, out, max);
}

int browser_find_vlines(const struct browser_image *img, uint32_t c, int tol, int min_len,
			struct browser_line *out, int max)
{
	return find_lines(img, true, c, tol, min_len, out, max);
}

int browser_count_runs(const struct browser_image *img, int y, int x0, int x1, uint32_t c, int tol,
		       int min_len, int max_gap, struct browser_run *out, int max)
{
	if (y < 0 || y >= img->h)
		return 0;
	x0 = x0 < 0 ? 0 : x0;
	x1 = x1 >= img->w ? img->w - 1 : x1;
	int n = 0, from = -1, to = -1;
	for (int x = x0; x <= x1 + max_gap + 1; x++) {
		bool on = x <= x1 && browser_rgb_near(browser_px(img, x, y), c, tol);
		if (on) {
			if (from < 0)
				from = x;
			to = x;
			continue;
		}
		/* a run ends once the gap after it reaches max_gap, or at the end */
		if (from >= 0 && (x - to >= max_gap || x > x1)) {
			if (to - from + 1 >= min_len) {
				if (out && n < max)
					out[n] = (struct browser_run){ from, to };
				n++;
			}
			from = -1;
		}
	}
	return n;
}

double browser_ink(const struct browser_image *img, int x0, int y0, int x1, int y1, uint32_t bg, int tol)
{
	x0 = x0 < 0 ? 0 : x0;
	y0 = y0 < 0 ? 0 : y0;
	x1 = x1 >= img->w ? img->w - 1 : x1;
	y1 = y1 >= img->h ? img->h - 1 : y1;
	long all = 0, ink = 0;
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++) {
			all++;
			ink += !browser_rgb_near(browser_px(img, x, y), bg, tol);
		}
	return all ? (double)ink / (double)all : 0;
}

/* ---- DOM text ----------------------------------------------------------- */

/* s is at "<tag" followed by a space, '>' or '/'. */
static bool at_open(const char *s, const char *tag, size_t n)
{
	return s[0] == '<' && !strncmp(s + 1, tag, n) && (s[n + 1] == ' ' || s[n + 1] == '>' || s[n + 1] == '/' ||
							 s[n + 1] == '\n' || s[n + 1] == '\t');
}

/* Does the start tag [s, gt) have attr with `value` among its tokens? */
static bool has_token(const char *s, const char *gt, const char *attr, const char *value)
{
	char pat[128];
	snprintf(pat, sizeof(pat), " %s=\"", attr);
	size_t pn = strlen(pat), vn = strlen(value);
	for (const char *p = s; p + pn < gt; p++) {
		if (strncmp(p, pat, pn))
			continue;
		const char *v = p + pn, *q = memchr(v, '"', (size_t)(gt - v));
		if (!q)
			return false;
		while (v < q) {
			while (v < q && *v == ' ')
				v++;
			const char *e = v;
			while (e < q && *e != ' ')
				e++;
			if ((size_t)(e - v) == vn && !strncmp(v, value, vn))
				return true;
			v = e;
		}
		return false;
	}
	return false;
}

const char *browser_dom_find(const char *s, const char *tag, const char *attr, const char *value,
			     const char **end)
{
	size_t n = strlen(tag);
	char close[64];
	snprintf(close, sizeof(close), "</%s>", tag);
	for (const char *p = strchr(s, '<'); p; p = strchr(p + 1, '<')) {
		if (!at_open(p, tag, n))
			continue;
		const char *gt = strchr(p, '>');
		if (!gt)
			return NULL;
		if (attr && !has_token(p, gt, attr, value))
			continue;
		/* the matching close, counting nested elements of the same tag */
		int depth = 1;
		const char *q = gt + 1;
		while (depth && (q = strchr(q, '<'))) {
			if (!strncmp(q, close, strlen(close)))
				depth--;
			else if (at_open(q, tag, n))
				depth++;
			q++;
		}
		*end = q ? q - 1 + strlen(close) : p + strlen(p);
		return p;
	}
	return NULL;
}

int browser_dom_count(const char *s, const char *end, const char *tag)
{
	size_t n = strlen(tag);
	int c = 0;
	for (const char *p = s; p < end && (p = memchr(p, '<', (size_t)(end - p))); p++)
		c += at_open(p, tag, n);
	return c;
}

void browser_dom_text(const char *s, const char *end, char *buf, size_t len)
{
	static const char *const ent[][2] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" },
					      { "&quot;", "\"" }, { "&#39;", "'" } };
	size_t o = 0;
	bool in_tag = false;
	if (!len)
		return;
	for (const char *p = s; p < end && o + 1 < len; p++) {
		if (in_tag) {
			in_tag = *p != '>';
			continue;
		}
		if (*p == '<') {
			in_tag = true;
			continue;
		}
		size_t k;
		for (k = 0; k < sizeof(ent) / sizeof(ent[0]); k++)
			if (!strncmp(p, ent[k][0], strlen(ent[k][0])))
				break;
		if (k < sizeof(ent) / sizeof(ent[0])) {
			buf[o++] = ent[k][1][0];
			p += strlen(ent[k][0]) - 1;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool browser_dom_dup_id(const char *dom, char *buf, size_t len)
{
	size_t n = 0, cap = 0;
	char **ids = NULL;
	bool dup = false;
	for (const char *p = strstr(dom, " id=\""); p; p = strstr(p + 1, " id=\"")) {
		const char *v = p + 5, *q = strchr(v, '"');
		if (!q)
			break;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **ni = realloc(ids, cap * sizeof(*ni));
			if (!ni)
				break;
			ids = ni;
		}
		ids[n] = strndup(v, (size_t)(q - v));
		if (!ids[n])
			break;
		n++;
	}
	qsort(ids, n, sizeof(*ids), cmp_str);
	for (size_t i = 1; i < n && !dup; i++)
		if (!strcmp(ids[i], ids[i - 1])) {
			dup = true;
			snprintf(buf, len, "%s", ids[i]);
		}
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	return dup;
}

int browser_find_panels(const struct browser_image *img, uint32_t axis, int tol, struct browser_panel *out, int max)
{
	struct browser_line v[32], h[32];
	int nv = browser_find_vlines(img, axis, tol, 50, v, 32);
	int nh = browser_find_hlines(img, axis, tol, 200, h, 32);
	int n = 0;
	for (int i = 0; i < nv && i < 32; i++)
		for (int j = 0; j < nh && j < 32; j++) {
			bool foot = abs(h[j].pos - v[i].to) <= 3 && abs(h[j].from - v[i].pos) <= 3;
			if (!foot || n >= max)
				continue;
			out[n++] = (struct browser_panel){ v[i].pos + v[i].thickness, v[i].from, h[j].pos, h[j].to };
		}
	return n;
}

int browser_panel_bands(const struct browser_image *img, const struct browser_panel *p, uint32_t band, int tol,
			struct browser_run *runs, int max)
{
	return browser_count_runs(img, p->top + 5, p->left + 1, p->right - 3, band, tol, 4, 4, runs, max);
}
