/* SPDX-License-Identifier: MIT */
/*
 * collector/lib/spsc.c, the one queue of the recorder: the feeder's
 * non-blocking push (a full queue refuses and counts) and the session's
 * blocking push (a full queue makes the producer wait: the back-pressure).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "collector/lib/spsc.h"
#include "testenv.h"

static void test_push_pop_order(void)
{
	struct spsc q;
	CU_ASSERT_EQUAL_FATAL(spsc_init(&q, 2), 0);
	int a, b, c;
	void *p;
	CU_ASSERT_EQUAL(spsc_push(&q, &a), 0);
	CU_ASSERT_EQUAL(spsc_push(&q, &b), 0);
	CU_ASSERT_EQUAL(spsc_push(&q, &c), -ENOSPC);
	CU_ASSERT_EQUAL(q.full, 1);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 0), 0);
	CU_ASSERT_PTR_EQUAL(p, &a);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 0), 0);
	CU_ASSERT_PTR_EQUAL(p, &b);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 0), -EAGAIN);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 10), -EAGAIN);
	spsc_close(&q);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, -1), -ENODATA);
	CU_ASSERT_EQUAL(spsc_push(&q, &a), -EPIPE);
	spsc_destroy(&q);
}

struct producer {
	struct spsc *q;
	uintptr_t n;
	int last_rc;
};

/* Until the producer waits for room with `count` items queued (bounded: 5 s). */
static bool wait_blocked(struct spsc *q, uint32_t count)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&q->lock);
		bool yes = q->count == count && q->blocked > 0;
		pthread_mutex_unlock(&q->lock);
		if (yes)
			return true;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

static void *produce(void *arg)
{
	struct producer *pr = arg;
	for (uintptr_t i = 1; i <= pr->n; i++)
		pr->last_rc = spsc_push_wait(pr->q, (void *)i);
	return NULL;
}

/* A full queue blocks the producer, loses nothing, and keeps the order. */
static void test_push_wait_blocks(void)
{
	struct spsc q;
	CU_ASSERT_EQUAL_FATAL(spsc_init(&q, 4), 0);
	struct producer pr = { .q = &q, .n = 1000 };
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, produce, &pr), 0);
	CU_ASSERT_TRUE(wait_blocked(&q, 4)); /* the producer filled the queue and waits */
	uintptr_t want = 1;
	void *p;
	while (want <= pr.n && spsc_pop(&q, &p, 1000) == 0)
		CU_ASSERT_EQUAL((uintptr_t)p, want++);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(want, pr.n + 1);
	CU_ASSERT_EQUAL(pr.last_rc, 0);
	CU_ASSERT(q.blocked >= 1);
	CU_ASSERT_EQUAL(q.full, 0);
	spsc_destroy(&q);
}

/* Close wakes a producer waiting for room; its item is refused, not lost silently. */
static void test_close_wakes_producer(void)
{
	struct spsc q;
	CU_ASSERT_EQUAL_FATAL(spsc_init(&q, 1), 0);
	struct producer pr = { .q = &q, .n = 2 };
	pthread_t t;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, produce, &pr), 0);
	CU_ASSERT_TRUE(wait_blocked(&q, 1));
	spsc_close(&q);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(pr.last_rc, -EPIPE);
	void *p;
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 0), 0); /* what was in stays readable */
	CU_ASSERT_EQUAL((uintptr_t)p, 1);
	CU_ASSERT_EQUAL(spsc_pop(&q, &p, 0), -ENODATA);
	spsc_destroy(&q);
}

int main(int argc, char **argv)
{
	static const struct testenv_case cases[] = {
		{ "spsc/push_pop_order", test_push_pop_order, NULL },
		{ "spsc/push_wait_blocks", test_push_wait_blocks, NULL },
		{ "spsc/close_wakes_producer", test_close_wakes_producer, NULL },
		{ NULL, NULL, NULL },
	};
	return testenv_run_suite("spsc", cases, argc, argv);
}
