/* An independent reference for the CLOCK_MONOTONIC -> CLOCK_MONOTONIC_RAW mapping, written from
 * the clocks' definition and nothing of fieldcap's: every PERIOD_US it reads BURST brackets
 * RAW, MONOTONIC, RAW, keeps the narrowest and prints "raw_midpoint monotonic width" (ns), until
 * SIGTERM or SIGINT. A test interpolates between its lines to map a kernel timestamp.
 *
 *   clock-reference [PERIOD_US [BURST]] > samples.txt
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile sig_atomic_t stopping;
static void stop(int sig) { (void)sig; stopping = 1; }

static int64_t read_ns(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv) {
	long period_us = argc > 1 ? atol(argv[1]) : 1000;
	int burst = argc > 2 ? atoi(argv[2]) : 20;
	signal(SIGTERM, stop);
	signal(SIGINT, stop);
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	struct timespec pause = { period_us / 1000000, (period_us % 1000000) * 1000 };
	while (!stopping) {
		int64_t best_width = INT64_MAX, best_raw = 0, best_mono = 0;
		for (int i = 0; i < burst; i++) {
			int64_t before = read_ns(CLOCK_MONOTONIC_RAW);
			int64_t mono = read_ns(CLOCK_MONOTONIC);
			int64_t after = read_ns(CLOCK_MONOTONIC_RAW);
			if (after - before < best_width) {
				best_width = after - before;
				best_raw = before + (after - before) / 2;
				best_mono = mono;
			}
		}
		printf("%lld %lld %lld\n", (long long)best_raw, (long long)best_mono, (long long)best_width);
		nanosleep(&pause, NULL);
	}
	fflush(stdout);
	return 0;
}
