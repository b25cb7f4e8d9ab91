/* SPDX-License-Identifier: MIT */
/*
 * A figure out through one of cairo's surfaces: SVG and PDF as vector
 * streams, PNG from an image surface; to a file by its extension, or to
 * memory.  Both go through a stdio stream of ours (open_memstream for
 * memory), so errors keep their errno: cairo alone would only say
 * "error while writing to output stream".
 */
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "collector/analysis/plot_internal.h"
#include "log.h"

struct sink {
	FILE *fp;
	int err; /* first write errno */
};

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int len)
{
	struct sink *k = closure;
	if (k->err)
		return CAIRO_STATUS_WRITE_ERROR;
	if (fwrite(data, 1, len, k->fp) != len) {
		k->err = errno ? errno : EIO;
		return CAIRO_STATUS_WRITE_ERROR;
	}
	return CAIRO_STATUS_SUCCESS;
}

int plot_format_from_path(const char *path, enum plot_format *fmt, char *err, size_t errlen)
{
	const char *base = strrchr(path, '/');
	const char *dot = strrchr(base ? base + 1 : path, '.');
	if (dot && !strcasecmp(dot, ".svg"))
		*fmt = PLOT_FMT_SVG;
	else if (dot && !strcasecmp(dot, ".png"))
		*fmt = PLOT_FMT_PNG;
	else if (dot && !strcasecmp(dot, ".pdf"))
		*fmt = PLOT_FMT_PDF;
	else if (dot)
		return spmtap_seterr(err, errlen, EINVAL,
				     "plot: %s: unknown extension '%s': use .svg, .png or .pdf", path, dot);
	else
		return spmtap_seterr(err, errlen, EINVAL,
				     "plot: %s has no extension to choose the format: use .svg, .png or .pdf",
				     path);
	return 0;
}

static int cairo_err(cairo_status_t st, const struct sink *k, const char *what, char *err, size_t errlen)
{
	if (k->err)
		return spmtap_seterr(err, errlen, k->err, "plot: writing %s: %s", what, strerror(k->err));
	return spmtap_seterr(err, errlen, st == CAIRO_STATUS_NO_MEMORY ? ENOMEM : EIO,
			     "plot: cairo, writing %s: %s", what, cairo_status_to_string(st));
}

/* Frame and draw the figure on a fresh context of s; log: where its text goes, or NULL. */
static int draw_on(const struct plot_figure *f, cairo_surface_t *s, struct plot_textlog *log, char *err,
		   size_t errlen)
{
	cairo_t *cr = cairo_create(s);
	struct plot_frame fr = { 0 };
	int rc = plot_frame_make(f, cr, &fr, err, errlen);
	fr.log = log;
	if (!rc)
		rc = plot_draw(f, &fr, cr, err, errlen);
	if (!rc && log && log->err)
		rc = spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory for the text of '%s'", f->title);
	plot_frame_free(&fr);
	cairo_destroy(cr);
	return rc;
}

static void xml_text(FILE *fp, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", fp); break;
		case '<': fputs("&lt;", fp); break;
		case '>': fputs("&gt;", fp); break;
		case '"': fputs("&quot;", fp); break;
		default: fputc(*s, fp);
		}
	}
}

/*
 * The SVG cairo wrote (svg, n bytes), with the text layer (plot.h) put
 * before its closing tag: cairo draws text as glyph outlines, which no
 * browser search and no program can read.
 */
static int write_svg(FILE *fp, const char *svg, size_t n, const struct plot_textlog *log)
{
	const char *end = NULL;
	for (const char *p = svg; (p = memmem(p, n - (size_t)(p - svg), "</svg>", 6)); p += 6)
		end = p;
	if (!end)
		end = svg + n;
	fwrite(svg, 1, (size_t)(end - svg), fp);
	fputs("<g class=\"spmtap-text\" fill-opacity=\"0\" font-family=\"DejaVu Sans\">\n", fp);
	for (size_t i = 0; i < log->n; i++) {
		const struct plot_text *t = &log->v[i];
		fprintf(fp, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\"", t->cls, t->x, t->y,
			t->size);
		if (t->up)
			fprintf(fp, " transform=\"rotate(-90 %.1f %.1f)\"", t->x, t->y);
		fputc('>', fp);
		xml_text(fp, t->s);
		fputs("</text>\n", fp);
	}
	fputs("</g>\n", fp);
	fwrite(end, 1, (size_t)(svg + n - end), fp);
	return ferror(fp) ? -EIO : 0;
}

/* Render f in fmt to the stream; `what` names it in messages. */
static int render_stream(const struct plot_figure *f, enum plot_format fmt, FILE *fp, const char *what,
			 char *err, size_t errlen)
{
	struct plot_layout L;
	int rc = plot_figure_layout(f, &L, err, errlen);
	if (rc)
		return rc;
	struct sink k = { fp, 0 };
	cairo_surface_t *s;
	struct plot_textlog log = { 0 };
	char *svg = NULL;
	size_t nsvg = 0;
	if (fmt == PLOT_FMT_SVG) {
		/* into memory first, for the text layer */
		k.fp = open_memstream(&svg, &nsvg);
		if (!k.fp)
			return spmtap_seterr(err, errlen, errno, "plot: open_memstream: %s", strerror(errno));
		s = cairo_svg_surface_create_for_stream(sink_write, &k, L.width, L.height);
		/* px, not cairo's default pt: 1 user unit is 1 CSS px in a browser, as in the PNG */
		cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
	} else if (fmt == PLOT_FMT_PDF) {
		s = cairo_pdf_surface_create_for_stream(sink_write, &k, L.width, L.height);
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_TITLE, f->title);
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "spmtap");
	} else if (fmt == PLOT_FMT_PNG) {
		s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, L.width, L.height);
	} else {
		return spmtap_seterr(err, errlen, EINVAL, "plot: unknown format %d", (int)fmt);
	}
	cairo_status_t st = cairo_surface_status(s);
	if (st) {
		cairo_surface_destroy(s);
		rc = cairo_err(st, &k, what, err, errlen);
		if (svg || fmt == PLOT_FMT_SVG) {
			fclose(k.fp);
			free(svg);
		}
		return rc;
	}
	rc = draw_on(f, s, fmt == PLOT_FMT_SVG ? &log : NULL, err, errlen);
	if (!rc && fmt == PLOT_FMT_PNG) {
		cairo_surface_flush(s);
		st = cairo_surface_write_to_png_stream(s, sink_write, &k);
		if (st)
			rc = cairo_err(st, &k, what, err, errlen);
	}
	cairo_surface_finish(s); /* the vector surfaces write their document here */
	st = cairo_surface_status(s);
	if (!rc && st)
		rc = cairo_err(st, &k, what, err, errlen);
	cairo_surface_destroy(s);
	if (fmt == PLOT_FMT_SVG) {
		if (fclose(k.fp) && !rc)
			rc = spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory for the SVG of '%s'", f->title);
		if (!rc && write_svg(fp, svg, nsvg, &log))
			rc = spmtap_seterr(err, errlen, errno ? errno : EIO, "plot: writing %s: %s", what,
					   strerror(errno ? errno : EIO));
		free(svg);
		plot_textlog_free(&log);
	}
	return rc;
}

int plot_render_file(const struct plot_figure *f, const char *path, char *err, size_t errlen)
{
	enum plot_format fmt;
	int rc = plot_format_from_path(path, &fmt, err, errlen);
	if (rc)
		return rc;
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return spmtap_seterr(err, errlen, errno, "plot: cannot create %s: %s", path, strerror(errno));
	rc = render_stream(f, fmt, fp, path, err, errlen);
	if (fclose(fp) && !rc)
		rc = spmtap_seterr(err, errlen, errno, "plot: writing %s: %s", path, strerror(errno));
	if (rc)
		unlink(path); /* no half figures */
	return rc;
}

int plot_render_mem(const struct plot_figure *f, enum plot_format fmt, char **buf, size_t *len,
		    char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	char *b = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&b, &n);
	if (!fp)
		return spmtap_seterr(err, errlen, errno, "plot: open_memstream: %s", strerror(errno));
	int rc = render_stream(f, fmt, fp, "to memory", err, errlen);
	/* the buffer is NUL-terminated, which makes SVG a C string */
	if (fclose(fp) && !rc)
		rc = spmtap_seterr(err, errlen, ENOMEM, "plot: out of memory for the rendered figure");
	if (rc) {
		free(b);
		return rc;
	}
	*buf = b;
	*len = n;
	return 0;
}
