/* SPDX-License-Identifier: MIT */
/* The self-contained HTML report (see html.h): a document built in memory. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/analysis/html.h"
#include "collector/analysis/plot_internal.h"
#include "log.h"
#include "spmtap.h"

struct html_doc {
	FILE *fp;        /* open_memstream over buf until closed */
	char *buf;
	size_t len;
	bool closed;
	int err;         /* sticky */
	char errmsg[256];
	char **ids;      /* every id used, to refuse repeats */
	size_t nids, cap_ids;
	unsigned nfig;
};

/* Readable on any screen, and fixed, so screenshots compare across runs. */
static const char css[] =
	"body{font-family:\"DejaVu Sans\",sans-serif;color:#222;background:#fff;margin:16px;"
	"max-width:1240px}\n"
	"h1{font-size:22px;margin:0 0 12px}\n"
	"h2{font-size:18px;margin:28px 0 8px;padding-bottom:2px;border-bottom:1px solid #ddd}\n"
	"h3,h4{font-size:15px;margin:20px 0 6px}\n"
	"p{line-height:1.45;max-width:90ch}\n"
	"table{border-collapse:collapse;margin:8px 0 18px;font-size:13px}\n"
	"caption{text-align:left;font-weight:bold;padding:4px 0}\n"
	"th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\n"
	"th{background:#f0f0f0}\n"
	"tbody tr:nth-child(even){background:#fafafa}\n"
	".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	".ctr{text-align:center}\n"
	"figure{margin:12px 0 24px}\n"
	"figure svg,figure img{display:block;max-width:100%;height:auto}\n"
	"figcaption{font-size:13px;color:#555;margin-top:4px}\n"
	"footer{margin-top:32px;font-size:12px;color:#777}\n"
	/* what the numbers stand on: missing data is said before any table (docs/analysis.md) */
	".banner{background:#fff4d6;border:1px solid #d9a400;border-left:6px solid #d9a400;padding:8px 12px;"
	"max-width:none;font-size:13px}\n"
	".coverage-ok{color:#276b3a;font-size:13px}\n";

/* Record a failure once; every later call returns it. */
static int fail(struct html_doc *d, int e, const char *msg, char *err, size_t errlen)
{
	if (!d->err) {
		d->err = e > 0 ? -e : e;
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", msg);
	}
	return spmtap_seterr(err, errlen, d->err, "%s", d->errmsg);
}

/* Check the stream after writing a block: memstream writes fail only for memory. */
static int done(struct html_doc *d, char *err, size_t errlen)
{
	if (ferror(d->fp))
		return fail(d, ENOMEM, "html: out of memory building the document", err, errlen);
	return 0;
}

static int usable(struct html_doc *d, char *err, size_t errlen)
{
	if (d->err)
		return spmtap_seterr(err, errlen, d->err, "%s", d->errmsg);
	if (d->closed)
		return spmtap_seterr(err, errlen, EINVAL, "html: the document is already closed");
	return 0;
}

/* Text as HTML: markup characters as entities, bad UTF-8 as U+FFFD, control characters dropped. */
static void esc(FILE *fp, const char *s, bool br)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		size_t n = plot_utf8_len(p);
		if (!n) {
			fputs("\xef\xbf\xbd", fp);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, fp);
			p += n;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", fp); break;
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '"': fputs("&quot;", fp); break;
		case '\'': fputs("&#39;", fp); break;
		case '\n': fputs(br ? "<br>" : " ", fp); break;
		case '\t': fputc(' ', fp); break;
		default:
			if (*p >= 0x20 && *p != 0x7F)
				fputc(*p, fp);
		}
		p++;
	}
}

/* An id or class list is made of tokens; ids must be new to the document. */
static int check_name(struct html_doc *d, const char *s, bool is_id, char *err, size_t errlen)
{
	if (!s)
		return 0;
	bool ok = *s != 0;
	for (const char *p = s; *p && ok; p++)
		ok = isalnum((unsigned char)*p) || *p == '-' || *p == '_' || (!is_id && *p == ' ');
	if (!ok)
		return spmtap_seterr(err, errlen, EINVAL, "html: %s '%s': use letters, digits, '-' and '_'",
				     is_id ? "id" : "class", s);
	if (!is_id)
		return 0;
	for (size_t i = 0; i < d->nids; i++)
		if (!strcmp(d->ids[i], s))
			return spmtap_seterr(err, errlen, EEXIST, "html: id '%s' is already in the document", s);
	if (d->nids == d->cap_ids) {
		size_t ncap = d->cap_ids ? 2 * d->cap_ids : 16;
		char **n = realloc(d->ids, ncap * sizeof(*n));
		if (!n)
			return fail(d, ENOMEM, "html: out of memory", err, errlen);
		d->ids = n;
		d->cap_ids = ncap;
	}
	if (!(d->ids[d->nids] = strdup(s)))
		return fail(d, ENOMEM, "html: out of memory", err, errlen);
	d->nids++;
	return 0;
}

static void attrs(FILE *fp, const char *id, const char *cls)
{
	if (id)
		fprintf(fp, " id=\"%s\"", id);
	if (cls)
		fprintf(fp, " class=\"%s\"", cls);
}

int html_doc_new(struct html_doc **out, const char *title, char *err, size_t errlen)
{
	*out = NULL;
	struct html_doc *d = calloc(1, sizeof(*d));
	if (!d)
		return spmtap_seterr(err, errlen, ENOMEM, "html: out of memory");
	d->fp = open_memstream(&d->buf, &d->len);
	if (!d->fp) {
		int e = errno;
		free(d);
		return spmtap_seterr(err, errlen, e, "html: open_memstream: %s", strerror(e));
	}
	check_name(d, "title", true, NULL, 0);
	check_name(d, "generator", true, NULL, 0);
	FILE *fp = d->fp;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", fp);
	/* the file stands alone: the browser must not fetch anything for it */
	fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "img-src data:; style-src 'unsafe-inline'\">\n",
	      fp);
	fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n", fp);
	fprintf(fp, "<meta name=\"generator\" content=\"spmtap %s\">\n<title>", spmtap_version_string());
	esc(fp, title, false);
	fprintf(fp, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1 id=\"title\">", css);
	esc(fp, title, false);
	fputs("</h1>\n", fp);
	int rc = d->err ? spmtap_seterr(err, errlen, d->err, "%s", d->errmsg) : done(d, err, errlen);
	if (rc) {
		html_doc_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

void html_doc_free(struct html_doc *d)
{
	if (!d)
		return;
	if (d->fp)
		fclose(d->fp);
	free(d->buf);
	for (size_t i = 0; i < d->nids; i++)
		free(d->ids[i]);
	free(d->ids);
	free(d);
}

int html_heading(struct html_doc *d, int level, const char *id, const char *text, char *err, size_t errlen)
{
	int rc = usable(d, err, errlen);
	if (rc)
		return rc;
	if (level < 2 || level > 4)
		return spmtap_seterr(err, errlen, EINVAL, "html: heading level %d: use 2..4 (h1 is the title)",
				     level);
	if ((rc = check_name(d, id, true, err, errlen)))
		return rc;
	fprintf(d->fp, "<h%d", level);
	attrs(d->fp, id, NULL);
	fputc('>', d->fp);
	esc(d->fp, text, false);
	fprintf(d->fp, "</h%d>\n", level);
	return done(d, err, errlen);
}

int html_paragraph(struct html_doc *d, const char *cls, const char *text, char *err, size_t errlen)
{
	int rc = usable(d, err, errlen);
	if (rc || (rc = check_name(d, cls, false, err, errlen)))
		return rc;
	fputs("<p", d->fp);
	attrs(d->fp, NULL, cls);
	fputc('>', d->fp);
	esc(d->fp, text, true);
	fputs("</p>\n", d->fp);
	return done(d, err, errlen);
}

static bool is_blank(const char *s)
{
	return !s || !*s || !strcmp(s, "-") || !strcmp(s, "n/a") || !strcmp(s, "\xe2\x80\x94");
}

/* A number, optionally followed by a space and a short unit ("12.5 W", "3 %", "-4e-3"). */
static bool is_number(const char *s)
{
	const char *p = s + (*s == '+' || *s == '-');
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return false; /* also keeps strtod's "nan"/"inf" words out */
	char *end;
	strtod(s, &end);
	if (*end == 0)
		return true;
	if (*end != ' ' || !end[1] || strlen(end + 1) > 8)
		return false;
	for (const unsigned char *u = (const unsigned char *)end + 1; *u; u++)
		if (!isalpha(*u) && *u != '%' && *u != '/' && *u < 0x80)
			return false;
	return true;
}

static char column_align(const struct html_table *t, size_t c)
{
	if (t->align && strlen(t->align) > c && strchr("lrc", t->align[c]))
		return t->align[c];
	bool any = false;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *s = t->cells[r * t->ncols + c];
		if (is_blank(s))
			continue;
		if (!is_number(s))
			return 'l';
		any = true;
	}
	return any ? 'r' : 'l';
}

static void cell(FILE *fp, const char *tag, char align, const char *s)
{
	fprintf(fp, "<%s%s>", tag, align == 'r' ? " class=\"num\"" : align == 'c' ? " class=\"ctr\"" : "");
	esc(fp, s, false);
	fprintf(fp, "</%s>", tag);
}

int html_table(struct html_doc *d, const struct html_table *t, char *err, size_t errlen)
{
	int rc = usable(d, err, errlen);
	if (rc)
		return rc;
	if (!t->ncols || !t->header || (t->nrows && !t->cells))
		return spmtap_seterr(err, errlen, EINVAL, "html: table '%s' has no %s",
				     t->id ? t->id : t->cls ? t->cls : "", !t->ncols || !t->header ? "columns" : "cells");
	if ((rc = check_name(d, t->cls, false, err, errlen)) || (rc = check_name(d, t->id, true, err, errlen)))
		return rc;
	char *al = malloc(t->ncols);
	if (!al)
		return fail(d, ENOMEM, "html: out of memory", err, errlen);
	for (size_t c = 0; c < t->ncols; c++)
		al[c] = column_align(t, c);
	FILE *fp = d->fp;
	fputs("<table", fp);
	attrs(fp, t->id, t->cls);
	fputs(">\n", fp);
	if (t->caption) {
		fputs("<caption>", fp);
		esc(fp, t->caption, false);
		fputs("</caption>\n", fp);
	}
	fputs("<thead><tr>", fp);
	for (size_t c = 0; c < t->ncols; c++)
		cell(fp, "th", al[c], t->header[c]);
	fputs("</tr></thead>\n<tbody>\n", fp);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs("<tr>", fp);
		for (size_t c = 0; c < t->ncols; c++)
			cell(fp, "td", al[c], t->cells[r * t->ncols + c]);
		fputs("</tr>\n", fp);
	}
	fputs("</tbody>\n</table>\n", fp);
	free(al);
	return done(d, err, errlen);
}

static void figure_open(struct html_doc *d, const char *id, const char *cls)
{
	fputs("<figure", d->fp);
	attrs(d->fp, id, cls);
	fputs(">\n", d->fp);
}

static void figure_close(struct html_doc *d, const char *caption)
{
	if (caption) {
		fputs("<figcaption>", d->fp);
		esc(d->fp, caption, false);
		fputs("</figcaption>\n", d->fp);
	}
	fputs("</figure>\n", d->fp);
}

/*
 * Copy the SVG with its internal ids prefixed.  cairo names them the same
 * in every document (glyph0-1, clip1, surface5), and ids are global in an
 * HTML page: a second figure's <use href="#glyph0-1"> would draw the first
 * figure's glyph.  cairo refers to ids only as id="...", href="#..." and
 * url(#...), so those three are rewritten.
 */
static void svg_copy(FILE *fp, const char *s, size_t len, const char *pfx)
{
	static const char *const pat[] = { "id=\"", "href=\"#", "url(#" };
	const char *end = s + len;
	while (s < end) {
		size_t k, n = 0;
		for (k = 0; k < 3; k++) {
			n = strlen(pat[k]);
			if ((size_t)(end - s) >= n && !memcmp(s, pat[k], n))
				break;
		}
		if (k < 3) {
			fwrite(s, 1, n, fp);
			fprintf(fp, "%s-", pfx);
			s += n;
		} else {
			fputc(*s++, fp);
		}
	}
}

int html_figure_svg(struct html_doc *d, const char *id, const char *cls, const char *svg, size_t len,
		    const char *caption, char *err, size_t errlen)
{
	int rc = usable(d, err, errlen);
	if (rc)
		return rc;
	if (!id)
		return spmtap_seterr(err, errlen, EINVAL, "html: an SVG figure needs an id (it prefixes the SVG's ids)");
	const char *s = svg, *end = svg + len;
	/* the XML prolog and comments before the root have no place inside HTML */
	for (;;) {
		while (s < end && isspace((unsigned char)*s))
			s++;
		const char *close = NULL;
		if (end - s >= 2 && (!memcmp(s, "<?", 2) || !memcmp(s, "<!", 2)))
			close = memchr(s, '>', (size_t)(end - s));
		if (!close)
			break;
		s = close + 1;
	}
	if (end - s < 5 || memcmp(s, "<svg", 4) || !(isspace((unsigned char)s[4]) || s[4] == '>'))
		return spmtap_seterr(err, errlen, EINVAL, "html: figure '%s': not an SVG document", id);
	if ((rc = check_name(d, cls, false, err, errlen)) || (rc = check_name(d, id, true, err, errlen)))
		return rc;
	figure_open(d, id, cls);
	fputs("<svg role=\"img\" aria-label=\"", d->fp);
	esc(d->fp, caption ? caption : id, false);
	fputc('"', d->fp);
	svg_copy(d->fp, s + 4, (size_t)(end - s - 4), id);
	fputc('\n', d->fp);
	figure_close(d, caption);
	return done(d, err, errlen);
}

static void base64(FILE *fp, const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		fputc(tab[(v >> 18) & 63], fp);
		fputc(tab[(v >> 12) & 63], fp);
		fputc(i + 1 < n ? tab[(v >> 6) & 63] : '=', fp);
		fputc(i + 2 < n ? tab[v & 63] : '=', fp);
	}
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int html_figure_png(struct html_doc *d, const char *id, const char *cls, const void *png, size_t len,
		    const char *alt, const char *caption, char *err, size_t errlen)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
	const unsigned char *p = png;
	int rc = usable(d, err, errlen);
	if (rc)
		return rc;
	/* the size comes from IHDR, the first chunk, so the page lays out before decoding */
	if (len < 24 || memcmp(p, sig, 8) || memcmp(p + 12, "IHDR", 4))
		return spmtap_seterr(err, errlen, EINVAL, "html: figure '%s': not a PNG image", id ? id : "");
	if ((rc = check_name(d, cls, false, err, errlen)) || (rc = check_name(d, id, true, err, errlen)))
		return rc;
	figure_open(d, id, cls);
	fprintf(d->fp, "<img width=\"%u\" height=\"%u\" alt=\"", be32(p + 16), be32(p + 20));
	esc(d->fp, alt ? alt : caption, false);
	fputs("\" src=\"data:image/png;base64,", d->fp);
	base64(d->fp, p, len);
	fputs("\">\n", d->fp);
	figure_close(d, caption);
	return done(d, err, errlen);
}

int html_figure_plot(struct html_doc *d, const char *id, const char *cls, const struct plot_figure *f,
		     enum plot_format fmt, const char *caption, char *err, size_t errlen)
{
	int rc = usable(d, err, errlen);
	if (rc)
		return rc;
	if (fmt != PLOT_FMT_SVG && fmt != PLOT_FMT_PNG)
		return spmtap_seterr(err, errlen, EINVAL, "html: figures go in as SVG or PNG, not format %d",
				     (int)fmt);
	char *buf;
	size_t len;
	if ((rc = plot_render_mem(f, fmt, &buf, &len, err, errlen)))
		return rc;
	if (fmt == PLOT_FMT_SVG)
		rc = html_figure_svg(d, id, cls, buf, len, caption, err, errlen);
	else
		rc = html_figure_png(d, id, cls, buf, len, caption, caption, err, errlen);
	free(buf);
	return rc;
}

static int close_doc(struct html_doc *d, char *err, size_t errlen)
{
	if (d->err)
		return spmtap_seterr(err, errlen, d->err, "%s", d->errmsg);
	if (d->closed)
		return 0;
	fprintf(d->fp, "<footer id=\"generator\">Generated by spmtap %s.</footer>\n</body>\n</html>\n",
		spmtap_version_string());
	int rc = done(d, err, errlen);
	if (rc)
		return rc;
	if (fclose(d->fp)) {
		d->fp = NULL;
		return fail(d, ENOMEM, "html: out of memory closing the document", err, errlen);
	}
	d->fp = NULL;
	d->closed = true;
	return 0;
}

int html_doc_text(struct html_doc *d, const char **text, size_t *len, char *err, size_t errlen)
{
	int rc = close_doc(d, err, errlen);
	if (rc)
		return rc;
	*text = d->buf;
	*len = d->len;
	return 0;
}

int html_doc_write(struct html_doc *d, const char *path, char *err, size_t errlen)
{
	const char *text;
	size_t len;
	int rc = html_doc_text(d, &text, &len, err, errlen);
	if (rc)
		return rc;
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return spmtap_seterr(err, errlen, errno, "html: cannot create %s: %s", path, strerror(errno));
	int e = fwrite(text, 1, len, fp) == len ? 0 : errno ? errno : EIO;
	if (fclose(fp) && !e)
		e = errno ? errno : EIO;
	if (e) {
		unlink(path);
		return spmtap_seterr(err, errlen, e, "html: writing %s: %s", path, strerror(e));
	}
	return 0;
}
