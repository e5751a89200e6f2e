// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * coloc-bench-transfer: the kernel's part of what coloc-gateway adds to a
 * query, each part timed alone on this machine. A child process is the
 * receiver, blocked in recv() as the gateway and colocd are; this process
 * sends it a message (BYTES, default MobileNet-V2's 602,112-byte input, or
 * one byte; in one send, its length first) over loopback TCP (TCP_NODELAY,
 * as coloc-bench-gateway's HTTP client) or a Unix stream socket (colocd's),
 * and the receiver answers 8 bytes once it has the whole message. A third
 * pair, TCP too, has a receiver that takes the message as libmicrohttpd and
 * the gateway take an HTTP body: poll(), a recv() of at most 64 KiB into
 * one buffer, a copy of it on. The six kinds alternate within every round,
 * so a loaded machine hits them alike. Printed per kind: the round trip's
 * p50 and p90 and the receiver's own CPU per message (its thread's CPU
 * clock around the receive, p50); then a few bytes one way with the
 * receiver's wake-up (half the one-byte round trip), the big message one
 * way (its round trip less that), and a memcpy of it in this process.
 * docs/measurements/gateway.md has runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "cli.h"

#define PROG "coloc-bench-transfer"

/* kind k goes over socket pair k / 2; the third pair's receiver reads in pieces */
enum { K_TCP_BYTE, K_TCP_BIG, K_UNIX_BYTE, K_UNIX_BIG, K_PIECES_BYTE, K_PIECES_BIG, NR_KINDS };
#define NR_PAIRS (NR_KINDS / 2)
#define PIECE (64u << 10) /* libmicrohttpd's read with the gateway's 128 KiB buffer */

static const char *const kind_names[NR_KINDS] = { "tcp 1 B",  "tcp big",    "unix 1 B",
						  "unix big", "pieces 1 B", "pieces big" };

static struct {
	long bytes, rounds;
} opts = { .bytes = 602112, .rounds = 400 };

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *v, long n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return (double)v[(long)(p * (double)(n - 1))] / 1000.0;
}

static int send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static int recv_all(int fd, char *b, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, b, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * As libmicrohttpd's connection thread and the gateway's handler take a
 * body: poll(), then a recv() of at most PIECE bytes into one buffer, then
 * a copy of what came to where it goes (dst), until all len bytes are in.
 */
static int recv_pieces(int fd, char *piece, char *dst, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (len) {
		ssize_t r;

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -1;
		r = recv(fd, piece, len < PIECE ? len : PIECE, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		memcpy(dst, piece, (size_t)r);
		dst += r;
		len -= (size_t)r;
	}
	return 0;
}

/*
 * The receiver: for each message, its 8-byte length and then its bytes,
 * read into buf with recv() as they come (with pieces, recv_pieces into
 * buf through a buffer of PIECE bytes); answers with its CPU time on the
 * message (8 bytes, one send), once it has all of it.
 */
static void receiver(int fd, char *buf, bool pieces)
{
	static char piece[PIECE];

	for (;;) {
		uint64_t len, t0, cpu;

		if (recv_all(fd, (char *)&len, sizeof(len)))
			break;
		t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if (pieces ? recv_pieces(fd, piece, buf, (size_t)len) :
			     recv_all(fd, buf, (size_t)len))
			break;
		cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (send_all(fd, (char *)&cpu, sizeof(cpu)))
			break;
	}
	_exit(0);
}

/* A connected loopback TCP pair (both TCP_NODELAY); 0 or -1. */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		return -1;
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof(a)))
		return -1;
	sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	close(l);
	if (sv[1] < 0)
		return -1;
	setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/*
 * One message of len bytes (msg: its 8-byte length, then the bytes) to fd's
 * receiver, in one send, and its answer: the round trip, the receiver's CPU.
 */
static int round_trip(int fd, char *msg, uint64_t len, uint64_t *rtt, uint64_t *cpu)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	memcpy(msg, &len, sizeof(len));
	if (send_all(fd, msg, sizeof(len) + (size_t)len) || recv_all(fd, (char *)cpu, sizeof(*cpu)))
		return -1;
	*rtt = clock_ns(CLOCK_MONOTONIC) - t0;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " [--bytes N] [--rounds N]\n"
		   "The round trip of a message and an 8-byte answer between this process and\n"
		   "a child blocked in recv(), over loopback TCP and a Unix stream socket, for\n"
		   "one byte and for N bytes, and over TCP to a child that polls and reads in\n"
		   "64 KiB pieces as libmicrohttpd does, the six alternated in every round.\n"
		   "  -b, --bytes N    the big message (default 602112: MobileNet-V2's input)\n"
		   "  -r, --rounds N   rounds (default 400)\n"
		   "  -h, --help       this help\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int fds[NR_PAIRS][2], c, status;
	uint64_t *rtt[NR_KINDS], *cpu[NR_KINDS], *copy;
	double p50[NR_KINDS];
	pid_t kids[NR_PAIRS];
	char *buf, *dst;

	while ((c = getopt_long(argc, argv, "b:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (cli_parse_long(optarg, 1, 64l << 20, &opts.bytes)) {
				fprintf(stderr,
					PROG ": --bytes '%s': a whole number from 1 to %ld\n",
					optarg, 64l << 20);
				return 2;
			}
			break;
		case 'r':
			if (cli_parse_long(optarg, 10, 1000000, &opts.rounds)) {
				fprintf(stderr,
					PROG ": --rounds '%s': a whole number from 10 to 1000000\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;
	buf = malloc(8 + (size_t)opts.bytes);
	dst = malloc((size_t)opts.bytes);
	copy = calloc((size_t)opts.rounds, sizeof(uint64_t));
	if (!buf || !dst || !copy)
		return 1;
	memset(buf, 7, 8 + (size_t)opts.bytes);
	memset(dst, 0, (size_t)opts.bytes);
	for (int k = 0; k < NR_KINDS; k++) {
		rtt[k] = calloc((size_t)opts.rounds, sizeof(uint64_t));
		cpu[k] = calloc((size_t)opts.rounds, sizeof(uint64_t));
		if (!rtt[k] || !cpu[k])
			return 1;
	}
	if (tcp_pair(fds[0]) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds[1]) ||
	    tcp_pair(fds[2])) {
		fprintf(stderr, PROG ": cannot make the sockets: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < NR_PAIRS; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 1;
		if (!kids[i]) {
			/* only its own end open: each receiver sees its sender close */
			for (int j = 0; j < NR_PAIRS; j++) {
				close(fds[j][0]);
				if (j != i)
					close(fds[j][1]);
			}
			receiver(fds[i][1], buf, i == 2);
		}
		close(fds[i][1]);
	}
	/* one unmeasured round: the receivers' buffers and the sockets warm */
	for (long r = -1; r < opts.rounds; r++) {
		for (int j = 0; j < NR_KINDS; j++) {
			/* the order flips every round */
			int k = r % 2 ? NR_KINDS - 1 - j : j;
			uint64_t t, u;

			if (round_trip(fds[k / 2][0], buf, k % 2 ? (uint64_t)opts.bytes : 1, &t,
				       &u)) {
				fprintf(stderr, PROG ": the receiver is gone\n");
				return 1;
			}
			if (r >= 0) {
				rtt[k][r] = t;
				cpu[k][r] = u;
			}
		}
		if (r >= 0) {
			uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

			memcpy(dst, buf + 8, (size_t)opts.bytes);
			__asm__ volatile("" : : "r"(dst) : "memory");
			copy[r] = clock_ns(CLOCK_MONOTONIC) - t0;
		}
	}
	printf("%-9s %12s %12s %22s\n", "kind", "rtt_p50_us", "rtt_p90_us", "receiver_cpu_p50_us");
	for (int k = 0; k < NR_KINDS; k++) {
		double c50 = pct_us(cpu[k], opts.rounds, 0.5);

		p50[k] = pct_us(rtt[k], opts.rounds, 0.5);
		printf("%-9s %12.1f %12.1f %22.1f\n", kind_names[k], p50[k],
		       pct_us(rtt[k], opts.rounds, 0.9), c50);
	}
	printf("one way, a few bytes with their wake-up (half the 1 B round trip): tcp %.1f us, unix %.1f us\n",
	       p50[K_TCP_BYTE] / 2, p50[K_UNIX_BYTE] / 2);
	printf("%ld B one way with its wake-up (big round trip less half the 1 B one): tcp %.1f us, "
	       "unix %.1f us\n",
	       opts.bytes, p50[K_TCP_BIG] - p50[K_TCP_BYTE] / 2,
	       p50[K_UNIX_BIG] - p50[K_UNIX_BYTE] / 2);
	printf("tcp in %u B pieces, each polled for and copied on: receiver CPU %.2f x the plain "
	       "receive's, big round trip %.2f x\n",
	       PIECE,
	       pct_us(cpu[K_PIECES_BIG], opts.rounds, 0.5) /
		       pct_us(cpu[K_TCP_BIG], opts.rounds, 0.5),
	       p50[K_PIECES_BIG] / p50[K_TCP_BIG]);
	printf("memcpy of %ld B: p50 %.1f us\n", opts.bytes, pct_us(copy, opts.rounds, 0.5));
	for (int i = 0; i < NR_PAIRS; i++) {
		close(fds[i][0]);
		waitpid(kids[i], &status, 0);
	}
	for (int k = 0; k < NR_KINDS; k++) {
		free(rtt[k]);
		free(cpu[k]);
	}
	free(copy);
	free(dst);
	free(buf);
	return 0;
bad:
	usage(stderr);
	return 2;
}
