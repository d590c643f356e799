/* Chapter 13's completion server in C: uring_server.py's loop without Python, and with a buffer ring.
 *
 * One thread, one io_uring set up with the raw system calls (io_uring_setup, mmap, io_uring_enter,
 * io_uring_register: no liburing). One multishot accept takes every connection; one multishot
 * receive per connection takes its bytes into a provided buffer the kernel picks from a buffer ring
 * (IORING_REGISTER_PBUF_RING, Linux 5.19), and giving a buffer back is a store into shared memory,
 * no submission (the Python binding cannot set such a ring up, so uring_server.py gives each back
 * with a submission). Each answer is one send. One io_uring_enter per turn hands over the turn's
 * sends and waits for the next completion. Counted as the Python server counts: calls are every
 * io_uring_enter, shutdown and close; waits the io_uring_enters that wait. */
#include "tiny_http.h"

#include <linux/io_uring.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ENTRIES 4096 /* submission slots; completions get twice as many */
#define BUFFERS 1024 /* provided receive buffers, a power of two (the buffer ring's size) */
#define BUFFER_BYTES 4096 /* a request head is a few dozen bytes; a longer one arrives in pieces */
#define GROUP 1

/* What a completion is for, in the low bits of its user_data; the connection's address above them:
 * a connection's memory lives until its last request in flight has completed, so a late completion
 * never finds another connection in its place. */
enum { ACCEPT, RECV, SEND };

struct connection {
    int fd;
    int armed; /* the multishot receive is still in flight */
    int ended; /* shut down and closed: freed once nothing is in flight */
    int closing; /* answered 400: end once the answer has gone */
    char *pending; /* the start of a request not complete yet */
    size_t length;
    char *sending; /* the answer the kernel is sending: one in flight at a time, so they go in order */
    size_t sending_length, sent;
    char *queued; /* answers owed after it */
    size_t queued_length;
};

static struct counts counts;
static int ring;
static unsigned *sq_head, *sq_tail, sq_mask, *cq_head, *cq_tail, cq_mask, unsubmitted;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
static struct io_uring_buf_ring *buffer_ring;
static char *buffers;
static char *answers;

static int enter(unsigned submit, unsigned wait, unsigned flags) {
    counts.calls++;
    /* The kernel's signal set is _NSIG / 8 bytes, the first of glibc's larger sigset_t. */
    return (int)syscall(__NR_io_uring_enter, ring, submit, wait, flags, wait ? &waiting_mask : NULL, _NSIG / 8);
}

static struct io_uring_sqe *next_sqe(uint64_t user_data) {
    unsigned tail = *sq_tail;
    if (tail - __atomic_load_n(sq_head, __ATOMIC_ACQUIRE) > sq_mask) { /* full: hand it over first */
        enter(unsubmitted, 0, 0);
        unsubmitted = 0;
    }
    struct io_uring_sqe *sqe = &sqes[tail & sq_mask];
    memset(sqe, 0, sizeof *sqe);
    sqe->user_data = user_data;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
    unsubmitted++;
    return sqe;
}

static void give_back(unsigned short bid) {
    struct io_uring_buf *slot = &buffer_ring->bufs[buffer_ring->tail & (BUFFERS - 1)];
    slot->addr = (uint64_t)(uintptr_t)(buffers + (size_t)bid * BUFFER_BYTES);
    slot->len = BUFFER_BYTES;
    slot->bid = bid;
    __atomic_store_n(&buffer_ring->tail, (unsigned short)(buffer_ring->tail + 1), __ATOMIC_RELEASE);
}

static void accept_all(int listener) {
    struct io_uring_sqe *sqe = next_sqe(ACCEPT);
    sqe->opcode = IORING_OP_ACCEPT;
    sqe->fd = listener;
    sqe->ioprio = IORING_ACCEPT_MULTISHOT;
}

static void receive(struct connection *conn) {
    struct io_uring_sqe *sqe = next_sqe((uint64_t)(uintptr_t)conn | RECV);
    sqe->opcode = IORING_OP_RECV;
    sqe->fd = conn->fd;
    sqe->ioprio = IORING_RECV_MULTISHOT;
    sqe->flags = IOSQE_BUFFER_SELECT;
    sqe->buf_group = GROUP;
    conn->armed = 1;
}

static void send_next(struct connection *conn) {
    struct io_uring_sqe *sqe = next_sqe((uint64_t)(uintptr_t)conn | SEND);
    sqe->opcode = IORING_OP_SEND;
    sqe->fd = conn->fd;
    sqe->addr = (uint64_t)(uintptr_t)(conn->sending + conn->sent);
    sqe->len = (unsigned)(conn->sending_length - conn->sent);
    sqe->msg_flags = MSG_NOSIGNAL;
}

static void owe(struct connection *conn, const char *data, size_t size) {
    if (conn->sending == NULL) {
        conn->sending = malloc(size);
        memcpy(conn->sending, data, size);
        conn->sending_length = size;
        conn->sent = 0;
        send_next(conn);
        return;
    }
    conn->queued = realloc(conn->queued, conn->queued_length + size);
    memcpy(conn->queued + conn->queued_length, data, size);
    conn->queued_length += size;
}

/* shutdown ends the armed receive (close alone would leave it waiting); its last completion frees. */
static void end(struct connection *conn) {
    if (!conn->ended) {
        shutdown(conn->fd, SHUT_RDWR);
        close(conn->fd);
        counts.calls += 2;
        conn->ended = 1;
    }
    if (!conn->armed && conn->sending == NULL) {
        free(conn->pending);
        free(conn->queued);
        free(conn);
    }
}

static void sent(struct connection *conn, int res) {
    if (res > 0 && !conn->ended && conn->sent + (size_t)res < conn->sending_length) {
        conn->sent += (size_t)res; /* the socket took only part of it: send the rest */
        send_next(conn);
        return;
    }
    free(conn->sending);
    conn->sending = NULL;
    if (res >= 0 && !conn->ended && conn->queued_length) {
        conn->sending = conn->queued;
        conn->sending_length = conn->queued_length;
        conn->sent = 0;
        conn->queued = NULL;
        conn->queued_length = 0;
        send_next(conn);
    } else if (res < 0 || conn->closing || conn->ended) {
        end(conn);
    }
}

static void received(struct connection *conn, int res, unsigned flags) {
    if (!(flags & IORING_CQE_F_MORE))
        conn->armed = 0;
    if (res > 0) {
        unsigned short bid = (unsigned short)(flags >> IORING_CQE_BUFFER_SHIFT);
        if (!conn->ended && !conn->closing) {
            conn->pending = realloc(conn->pending, conn->length + (size_t)res);
            memcpy(conn->pending + conn->length, buffers + (size_t)bid * BUFFER_BYTES, (size_t)res);
            conn->length += (size_t)res;
        }
        give_back(bid);
        if (conn->ended || conn->closing) {
            if (conn->ended)
                end(conn);
            return;
        }
        int close_after;
        size_t size = answer(conn->pending, &conn->length, answers, &counts.requests, &close_after);
        if (size)
            owe(conn, answers, size);
        conn->closing = close_after;
        if (!conn->armed)
            receive(conn);
    } else if (res == -ENOBUFS && !conn->ended) { /* every buffer was in use: they come back as we read; re-arm */
        receive(conn);
    } else { /* end of stream, or an error: the connection is over */
        end(conn);
    }
}

static void accepted(int listener, int fd, unsigned flags) {
    if (fd >= 0) {
        struct connection *conn = calloc(1, sizeof *conn);
        conn->fd = fd;
        counts.connections++;
        receive(conn);
    }
    if (!(flags & IORING_CQE_F_MORE)) /* the kernel ended the multishot accept (out of descriptors...): ask again */
        accept_all(listener);
}

static void *map(size_t size, off_t offset) {
    void *at = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, offset);
    if (at == MAP_FAILED) {
        perror("mmap of the ring");
        exit(1);
    }
    return at;
}

/* The flags fio 3.33 and later use, where the kernel takes them, as uring_server.py's _setup. */
static void set_up(void) {
    static const unsigned tries[] = {
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN, 0};
    struct io_uring_params params;
    for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
        memset(&params, 0, sizeof params);
        params.flags = tries[i];
        ring = (int)syscall(__NR_io_uring_setup, ENTRIES, &params);
        if (ring >= 0 || errno != EINVAL)
            break;
    }
    if (ring < 0) {
        perror("io_uring_setup");
        exit(1);
    }
    size_t sq_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    size_t cq_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    if (params.features & IORING_FEAT_SINGLE_MMAP)
        sq_size = cq_size = sq_size > cq_size ? sq_size : cq_size;
    char *sq = map(sq_size, IORING_OFF_SQ_RING);
    char *cq = params.features & IORING_FEAT_SINGLE_MMAP ? sq : map(cq_size, IORING_OFF_CQ_RING);
    sqes = map(params.sq_entries * sizeof(struct io_uring_sqe), IORING_OFF_SQES);
    sq_head = (unsigned *)(sq + params.sq_off.head);
    sq_tail = (unsigned *)(sq + params.sq_off.tail);
    sq_mask = *(unsigned *)(sq + params.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + params.sq_off.array);
    for (unsigned i = 0; i < params.sq_entries; i++)
        array[i] = i; /* slot i is submission i: the indirection is unused */
    cq_head = (unsigned *)(cq + params.cq_off.head);
    cq_tail = (unsigned *)(cq + params.cq_off.tail);
    cq_mask = *(unsigned *)(cq + params.cq_off.ring_mask);
    cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);

    buffer_ring = mmap(NULL, BUFFERS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    buffers = malloc((size_t)BUFFERS * BUFFER_BYTES);
    struct io_uring_buf_reg reg = {.ring_addr = (uint64_t)(uintptr_t)buffer_ring, .ring_entries = BUFFERS, .bgid = GROUP};
    if (buffer_ring == MAP_FAILED || buffers == NULL || syscall(__NR_io_uring_register, ring, IORING_REGISTER_PBUF_RING, &reg, 1) < 0) {
        perror("registering the buffer ring");
        exit(1);
    }
    for (unsigned short bid = 0; bid < BUFFERS; bid++)
        give_back(bid);
}

int main(int argc, char **argv) {
    int listener = listener_from(argc, argv);
    start_counting(&counts);
    stop_on_signals();
    answers = malloc(BUFFER_BYTES / 4 * OK_LEN + MAX_HEAD / 4 * OK_LEN + BAD_LEN);
    /* As the epoll server does per connection; here the listener's setting, which every accepted
     * socket inherits (Linux), so that no call per connection is needed. */
    int on = 1;
    setsockopt(listener, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    set_up();
    accept_all(listener);
    announce(listener);
    while (!stopping) {
        int done = enter(unsubmitted, 1, IORING_ENTER_GETEVENTS);
        counts.waits++;
        if (done < 0 && errno != EINTR && errno != EBUSY) {
            perror("io_uring_enter");
            return 1;
        }
        if (done >= 0)
            unsubmitted -= (unsigned)done < unsubmitted ? (unsigned)done : unsubmitted;
        unsigned head = *cq_head, tail = __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            struct io_uring_cqe *cqe = &cqes[head & cq_mask];
            uint64_t tag = cqe->user_data & 3;
            struct connection *conn = (struct connection *)(uintptr_t)(cqe->user_data & ~(uint64_t)3);
            if (tag == ACCEPT)
                accepted(listener, cqe->res, cqe->flags);
            else if (tag == SEND)
                sent(conn, cqe->res);
            else
                received(conn, cqe->res, cqe->flags);
        }
        __atomic_store_n(cq_head, head, __ATOMIC_RELEASE);
    }
    send_result(&counts);
    return 0;
}
