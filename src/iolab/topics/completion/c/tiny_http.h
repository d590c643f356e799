/* The tiny HTTP of chapter 13 (tiny_http.py), in C, shared by epoll.c and uring.c.
 *
 * Every complete request head (ending in a blank line) that starts "GET " gets OK; any other head,
 * or a head over MAX_HEAD bytes, gets BAD and the connection is closed. The counts are printed as
 * the kit's RESULT line (iolab.kit.channel) when SIGTERM or SIGINT stops the server. */
#ifndef TINY_HTTP_H
#define TINY_HTTP_H

#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n";
static const char BAD[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n";
#define OK_LEN (sizeof OK - 1)
#define BAD_LEN (sizeof BAD - 1)
#define MAX_HEAD 8192
#define RECV_BYTES 65536

struct counts {
    long long requests, connections, calls, waits;
    double start_cpu;
};

static volatile sig_atomic_t stopping = 0;
/* The signal mask during a wait: SIGTERM and SIGINT are blocked everywhere else, and a wait given this
 * mask (epoll_pwait, io_uring_enter's sigset) lets them in and ends with EINTR. A signal that came
 * between the check of `stopping` and the wait is held until the wait, which it then ends at once:
 * unblocked all the time, it could come in that gap and leave an idle server waiting for ever. */
static sigset_t waiting_mask;

static void on_stop(int signum) { (void)signum; stopping = 1; }

static void stop_on_signals(void) {
    struct sigaction action;
    sigset_t stops;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop; /* no SA_RESTART: the wait must end with EINTR */
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, &waiting_mask);
    sigdelset(&waiting_mask, SIGTERM);
    sigdelset(&waiting_mask, SIGINT);
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/* This process was Python until its execve, and the kernel's clock kept running across it: count from here. */
static void start_counting(struct counts *counts) {
    memset(counts, 0, sizeof *counts);
    counts->start_cpu = cpu_seconds();
}

static void announce(int listener) {
    struct sockaddr_in address;
    socklen_t size = sizeof address;
    char host[INET_ADDRSTRLEN];
    getsockname(listener, (struct sockaddr *)&address, &size);
    inet_ntop(AF_INET, &address.sin_addr, host, sizeof host);
    printf("listening on http://%s:%d\n", host, ntohs(address.sin_port));
    fflush(stdout);
}

static void send_result(const struct counts *counts) {
    printf("RESULT {\"requests\": %lld, \"connections\": %lld, \"calls\": %lld, \"waits\": %lld, \"cpu_s\": %.6f}\n",
           counts->requests, counts->connections, counts->calls, counts->waits, cpu_seconds() - counts->start_cpu);
    fflush(stdout);
}

/* Consume the complete heads at the front of pending[0..*length) and write their answers into out
 * (room for *length / 4 + 1 answers, since a head is at least 4 bytes). Returns the bytes written;
 * *answered counts the 200s, *close is set after a 400; *length keeps what is left. */
static size_t answer(char *pending, size_t *length, char *out, long long *answered, int *close) {
    size_t written = 0, start = 0;
    *close = 0;
    for (;;) {
        char *end = memmem(pending + start, *length - start, "\r\n\r\n", 4);
        if (end == NULL)
            break;
        if (*length - start < 4 || memcmp(pending + start, "GET ", 4) != 0) {
            memcpy(out + written, BAD, BAD_LEN);
            *close = 1;
            *length = 0;
            return written + BAD_LEN;
        }
        memcpy(out + written, OK, OK_LEN);
        written += OK_LEN;
        ++*answered;
        start = (size_t)(end - pending) + 4;
    }
    memmove(pending, pending + start, *length - start);
    *length -= start;
    if (*length > MAX_HEAD) {
        memcpy(out + written, BAD, BAD_LEN);
        *close = 1;
        *length = 0;
        written += BAD_LEN;
    }
    return written;
}

/* The listening socket is descriptor argv[1], inherited from the Python process that exec'd this one. */
static int listener_from(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s LISTENING_FD (started by iolab.topics.completion.server_process)\n", argv[0]);
        exit(2);
    }
    return atoi(argv[1]);
}

#endif
