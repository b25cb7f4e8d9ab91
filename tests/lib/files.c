/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"

char *tf_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	/* Read to EOF rather than trust a size: pipes and sysfs report none. */
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap + 1);
	while (b) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		char *nb = realloc(b, 2 * cap + 1);
		if (!nb)
			free(b);
		b = nb;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!b || bad) {
		free(b);
		return NULL;
	}
	b[n] = '\0';
	if (len)
		*len = n;
	return b;
}

char *tf_text(const char *path)
{
	char *t = tf_slurp(path, NULL);
	return t ? t : strdup("");
}

const char *tf_peek(const char *path)
{
	static char *last;
	free(last);
	last = tf_text(path);
	return last ? last : "";
}

ssize_t tf_slurp_into(const char *path, char *buf, size_t cap)
{
	if (!cap)
		return -1;
	buf[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	int err = 0;
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = 1;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return err && !n ? -1 : (ssize_t)n;
}
