/*
 * train/comm/net_allreduce.h - the all-reduce between nodes: a group of K
 * peers (one per node, each node's leader after the in-node shm reduce)
 * over TCP, one generation at a time.
 *
 * Setup. Every peer calls comm_net_listen (an ephemeral port on the
 * address it is reached at) and hands comm_net_port to the caller, who
 * gives every peer the whole list of (address, port) in rank order, its
 * rank, the generation and the job's 32-byte secret; comm_net_connect
 * then links the ring: each peer connects to its right neighbour
 * (rank + 1) and accepts its left one (rank - 1). Both ends of each link
 * prove they hold the secret: each sends a fresh random nonce and answers
 * the other's with HMAC-SHA256(secret, the nonces, both ranks, the world
 * size and the generation), compared in constant time. A peer that cannot
 * prove it is refused and named (LOOM_E_UNAUTHENTICATED); a connection
 * that does not speak the protocol, claims another rank, world size or
 * generation, or says nothing for COMM_NET_HELLO_WAIT_MS, is closed and
 * the wait for the right one goes on. A peer whose right neighbour closes
 * the link before saying hello (it was still forming an older generation)
 * connects again until the deadline. A peer that takes part in generation
 * after generation keeps one port: it opens a comm_net_listener once and
 * links each generation's group on it with comm_net_connect_on.
 *
 * All-reduce. comm_net_allreduce adds `count` float32 or float64 elements
 * in place across the peers, then multiplies by `scale` (1 / K for the
 * average): a ring reduce-scatter then all-gather, each peer sending and
 * receiving 2 (K-1)/K of the buffer, both directions of every link busy at
 * once: the group's own thread sends while the caller's thread receives
 * and adds, and a peer sends a part on as soon as its reduction arrived.
 * Sockets have TCP_NODELAY and the kernel's autotuned buffers; the hot
 * path allocates nothing.
 *
 * Element order. The buffer is cut into K segments, segment j being
 * elements [j*count/K, (j+1)*count/K). Segment j is summed in ring order
 * starting at rank j: ((x_j + x_j+1) + x_j+2) + ... + x_j-1 (ranks mod K),
 * multiplied by `scale` once by rank j-1, and its bits are copied to every
 * other peer: every peer ends with bitwise-equal results, the same for
 * the same inputs and K whatever the timing. The order is not the shm
 * back end's (ascending slots), so the two may differ in the last bits.
 *
 * Deadlines and errors. Every call that waits takes an absolute deadline on
 * CLOCK_MONOTONIC in nanoseconds (comm_deadline_after_ms, comm.h):
 *  LOOM_ERR_DEADLINE_EXCEEDED  a neighbour sent or took nothing in time;
 *                              the message names its rank.
 *  LOOM_ERR_UNAVAILABLE        a neighbour closed its link, died, or its
 *                              link was cut (no acknowledgement within
 *                              `link_timeout_ms`); the message names its
 *                              rank. A peer that fails shuts its links, so
 *                              the failure travels round the ring: peers
 *                              beyond the neighbours learn it within the
 *                              deadline, naming the neighbour that passed
 *                              it on.
 *  LOOM_E_UNAUTHENTICATED      setup: a neighbour did not prove the secret.
 * A write never raises SIGPIPE. After any error the group is unusable (its
 * streams are out of step): close it; the next generation builds a new one.
 *
 * Threading: one group is used by one thread at a time (a connected group
 * of 2 or more peers runs one sender thread of its own, ended by close).
 */
#ifndef LOOM_TRAIN_NET_ALLREDUCE_H
#define LOOM_TRAIN_NET_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include <loom/abi.h>

/* The most peers a group has: EDT_MAX_WORKERS (train/coordinator.h), the
 * most workers a job has, so at most that many nodes. */
#define COMM_NET_MAX_PEERS 1024u
#define COMM_NET_SECRET_BYTES 32u
/* Room for a numeric IPv4 or IPv6 address (INET6_ADDRSTRLEN). */
#define COMM_NET_ADDRESS_BYTES 46u
/* Unacknowledged data older than this drops the link (TCP_USER_TIMEOUT):
 * how soon a cut link shows as UNAVAILABLE rather than as a deadline. */
#define COMM_NET_DEFAULT_LINK_TIMEOUT_MS 5000u

/* How long an accepted connection has to say hello before it is closed
 * and the wait for the left neighbour goes on: a peer says it at once on
 * connecting, so only a stray client that says nothing waits this out
 * (and a peer turned away connects again). */
#define COMM_NET_HELLO_WAIT_MS 1000u

typedef struct comm_net comm_net;
typedef struct comm_net_listener comm_net_listener;

typedef struct comm_net_peer {
    char address[COMM_NET_ADDRESS_BYTES]; /* numeric: "10.0.0.2", "::1" */
    uint16_t port;
} comm_net_peer;

typedef enum comm_net_type {
    COMM_NET_F32 = 1,
    COMM_NET_F64 = 2,
} comm_net_type;

/* A group listening on an ephemeral port of `bind_address` (numeric IPv4
 * or IPv6; "0.0.0.0" for every interface). `link_timeout_ms` 0 picks
 * COMM_NET_DEFAULT_LINK_TIMEOUT_MS. */
loom_error *comm_net_listen(const char *bind_address, uint32_t link_timeout_ms,
                            comm_net **out);
/* The port the group listens on, for the caller to hand to the others. */
uint16_t comm_net_port(const comm_net *g);

/* Links this peer into the ring of `count` peers (1 .. COMM_NET_MAX_PEERS;
 * peers[i] is rank i; this peer is `rank`) for `generation`, authenticated
 * with `secret` (COMM_NET_SECRET_BYTES). A right neighbour that refuses
 * the connection (not listening yet) is tried again until the deadline.
 * Called once per group; the group's own listening socket closes then. */
loom_error *comm_net_connect(comm_net *g, const comm_net_peer *peers,
                             uint32_t count, uint32_t rank, uint32_t generation,
                             const uint8_t *secret, uint64_t deadline_ns);

/* A listening socket that outlives groups: a peer that takes part in
 * generation after generation listens once, and every generation's group
 * accepts its left neighbour there (comm_net_connect_on), so the others
 * learn its port once. Arguments as comm_net_listen's. */
loom_error *comm_net_listener_open(const char *bind_address, uint32_t link_timeout_ms,
                                   comm_net_listener **out);
uint16_t comm_net_listener_port(const comm_net_listener *l);
/* Closes the socket: connections not yet accepted are reset. NULL is fine. */
void comm_net_listener_close(comm_net_listener *l);
/* comm_net_listen + comm_net_connect on a borrowed listener, which the
 * group neither closes nor keeps: *out is the linked group (close it with
 * comm_net_close), NULL on an error. While it forms, connections for
 * another generation (a slower peer still linking the previous ring) are
 * closed and the wait goes on, as comm_net_connect's. */
loom_error *comm_net_connect_on(comm_net_listener *l, const comm_net_peer *peers,
                                uint32_t count, uint32_t rank, uint32_t generation,
                                const uint8_t *secret, uint64_t deadline_ns, comm_net **out);

/* Sums `count` elements of `type` at `buf` across the peers, then
 * multiplies them by `scale` (1.0: the sum; 1.0 / K: the average). Every
 * peer calls it with the same count, type and scale. */
loom_error *comm_net_allreduce(comm_net *g, void *buf, size_t count,
                               comm_net_type type, double scale, uint64_t deadline_ns);

/* Copies `bytes` (any count) from rank `root`'s `buf` into every other
 * peer's: a pass along the ring from the root, each peer forwarding to its
 * right what it received while the rest still arrives, so a large buffer
 * streams. Every peer calls it with the same bytes and root. Errors and
 * the group's state after one as comm_net_allreduce's. */
loom_error *comm_net_broadcast(comm_net *g, void *buf, size_t bytes, uint32_t root,
                               uint64_t deadline_ns);
/* Nanoseconds the calling thread spent blocked on the bytes of its left
 * neighbour inside calls: waiting for slower peers and for the network
 * alike (over TCP the two cannot be told apart). */
uint64_t comm_net_blocked_ns(const comm_net *g);

uint32_t comm_net_rank(const comm_net *g);       /* 0 before connect */
uint32_t comm_net_world_size(const comm_net *g); /* 0 before connect */

/* Closes every socket (neighbours inside a call get UNAVAILABLE) and frees
 * the group. NULL is fine. */
void comm_net_close(comm_net *g);

#endif
