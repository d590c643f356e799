/* Chapter 13's readiness server in C: epoll_server.py's loop without Python.
 *
 * One thread: epoll_wait says which sockets have bytes, recv takes them, send answers. Every system
 * call this program makes is counted (calls; waits: the epoll_waits), as the Python server counts
 * its own, so the two can be set side by side per request. */
#include "tiny_http.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <unistd.h>

#define EVENTS 1024

struct client {
    char *pending; /* the start of a request not complete yet */
    size_t length;
    char *outbox; /* what the socket did not take yet (rare: answers are small) */
    size_t owed;
    int writing; /* whether epoll also watches for room to send the rest */
};

static struct counts counts;
static struct client **clients; /* by descriptor */
static size_t room;
static char received[RECV_BYTES];
static char *answers;

static void close_client(int epoll, int fd) {
    struct client *client = clients[fd];
    epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
    counts.calls += 2;
    free(client->pending);
    free(client->outbox);
    free(client);
    clients[fd] = NULL;
}

/* Send what the client is owed; watch for EPOLLOUT while the socket takes only part of it. 0: closed. */
static int flush_client(int epoll, int fd) {
    struct client *client = clients[fd];
    if (client->owed) {
        ssize_t sent = send(fd, client->outbox, client->owed, MSG_NOSIGNAL);
        counts.calls++;
        if (sent < 0 && errno != EAGAIN) {
            close_client(epoll, fd);
            return 0;
        }
        if (sent > 0) {
            memmove(client->outbox, client->outbox + sent, client->owed - (size_t)sent);
            client->owed -= (size_t)sent;
        }
    }
    if ((client->owed != 0) != client->writing) {
        struct epoll_event event = {.events = EPOLLIN | (client->owed ? EPOLLOUT : 0), .data.fd = fd};
        client->writing = client->owed != 0;
        epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event);
        counts.calls++;
    }
    return 1;
}

static void owe(struct client *client, const char *data, size_t size) {
    client->outbox = realloc(client->outbox, client->owed + size);
    memcpy(client->outbox + client->owed, data, size);
    client->owed += size;
}

static void receive(int epoll, int fd) {
    struct client *client = clients[fd];
    ssize_t got = recv(fd, received, sizeof received, 0);
    counts.calls++;
    if (got < 0 && errno == EAGAIN)
        return; /* readiness is a hint, not a promise */
    if (got <= 0) {
        close_client(epoll, fd);
        return;
    }
    client->pending = realloc(client->pending, client->length + (size_t)got);
    memcpy(client->pending + client->length, received, (size_t)got);
    client->length += (size_t)got;
    int close_after;
    size_t size = answer(client->pending, &client->length, answers, &counts.requests, &close_after);
    owe(client, answers, size);
    if (flush_client(epoll, fd) && close_after) /* 400: what was owed is sent (or dropped), then close */
        close_client(epoll, fd);
}

static void accept_waiting(int epoll, int listener) {
    for (;;) {
        int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        counts.calls++; /* the accept that finds the queue empty ends the batch */
        if (fd < 0)
            return;
        if ((size_t)fd >= room) {
            size_t more = (size_t)fd * 2;
            clients = realloc(clients, more * sizeof *clients);
            memset(clients + room, 0, (more - room) * sizeof *clients);
            room = more;
        }
        int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        struct epoll_event event = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
        counts.calls += 2;
        counts.connections++;
        clients[fd] = calloc(1, sizeof **clients);
    }
}

int main(int argc, char **argv) {
    int listener = listener_from(argc, argv);
    start_counting(&counts);
    stop_on_signals();
    answers = malloc((RECV_BYTES + MAX_HEAD) / 4 * OK_LEN + BAD_LEN);
    room = 1024;
    clients = calloc(room, sizeof *clients);
    fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK);
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.fd = listener};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    announce(listener);
    struct epoll_event events[EVENTS];
    while (!stopping) {
        int ready = epoll_pwait(epoll, events, EVENTS, -1, &waiting_mask);
        counts.calls++;
        counts.waits++;
        for (int i = 0; i < ready; i++) {
            int fd = events[i].data.fd;
            if (fd == listener)
                accept_waiting(epoll, listener);
            else if (clients[fd] == NULL)
                continue; /* closed earlier in this batch */
            else if (events[i].events & EPOLLOUT)
                flush_client(epoll, fd);
            else
                receive(epoll, fd);
        }
    }
    send_result(&counts);
    return 0;
}
