#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A hostile HTTP/2 client of the gateway's own gRPC server, frames written
by hand (RFC 9113; header blocks as HPACK literals without Huffman), for
tests/gateway_h2_test.c:

  h2_hostile.py PORT rapid-reset N     open and reset N streams at once
  h2_hostile.py PORT continuation N    one header block of N bytes in CONTINUATIONs
  h2_hostile.py PORT slow              a ModelInfer whose message never ends
  h2_hostile.py PORT noread N S        N calls, none of the answers read, held S s
  h2_hostile.py PORT emfile PID N S     N connections held S s (past the server's
                                       RLIMIT_NOFILE): its CPU seconds meanwhile
  h2_hostile.py PORT zerowin N S        SETTINGS_INITIAL_WINDOW_SIZE 0, then N counted
                                       calls whose answers cannot be sent and one that
                                       can; S s at most: whether the connection lives
  h2_hostile.py PORT race R N          R rounds: an infer of "slow" and N connections
                                       pinging at once, the N closed while it is held
  h2_hostile.py PORT made-you-reset N wu|data  N streams the server is made to reset
                                       (a WINDOW_UPDATE of 0, or DATA after END_STREAM)
  h2_hostile.py PORT held-reset K      K infers of "slow" reset by the client while
                                       colocd holds them, then K health calls
  h2_hostile.py PORT overlimit N       N infers of "slow" at once, whatever the server's
                                       SETTINGS_MAX_CONCURRENT_STREAMS
  h2_hostile.py PORT health-mem C S H  C connections of S health calls each, every
                                       message 64 KiB but one byte short, held H s
  h2_hostile.py PORT idle-ping MS S    a connection that only pings, every MS ms, S s
                                       at most: when the server sends it away
  h2_hostile.py PORT budget C N LEN [A [K [M]]]  C connections (from A loopback addresses)
                                       of N M calls (ServerMetadata) whose prefix says LEN
                                       bytes, K of them sent (default none): the statuses
  h2_hostile.py PORT holdall C N B LEN S [O]  C connections of B ModelInfer calls whose
                                       prefix says LEN bytes and N with no message, renewed
                                       when refused, S s: whether a ServerLive and a
                                       ModelInfer from O (127.0.0.2) are answered meanwhile
  h2_hostile.py PORT healthfill A P S  A addresses (127.0.0.2 on) of P ServerLive calls
                                       that send no message, renewed when refused, S s:
                                       whether a ServerLive from 127.0.0.1 is answered
  h2_hostile.py PORT bigone N [R]      one ServerMetadata of N bytes on an idle gateway
                                       (16 KiB frames, in the server's windows, R bytes a
                                       second if given): its status
  h2_hostile.py PORT holdwhole C N S   C connections (windows 0) of N whole ServerMetadata
                                       calls, renewed when refused or reset, S s: whether
                                       another address's ServerMetadata is answered

Prints what the server did: "goaway CODE", "status CODE" (a call's
grpc-status), "closed", "stalled after K calls" (the server stopped
reading), "sent K calls", "reset CODE K" (K RST_STREAMs with CODE).
"""
import os
import select
import socket
import struct
import subprocess
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
WINDOW_UPDATE = 8
CANCEL = 8
SERVICE = "/inference.GRPCInferenceService/"

# RFC 7541 Appendix A, the names our server's encoder indexes, enough to read its answers
STATIC = {8: (":status", "200"), 31: ("content-type", "")}


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    name, value = name.encode(), value.encode()
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def request_block(method):
    return b"".join(literal(n, v) for n, v in (
        (":method", "POST"), (":scheme", "http"), (":path", SERVICE + method),
        (":authority", "gateway"), ("content-type", "application/grpc"),
        ("te", "trailers")))


def connect(port, source=None):
    """A connection to 127.0.0.1:port, from source (another loopback address) if given."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                 source_address=(source, 0) if source else None)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    return s


def read_int(b, i, prefix):
    mask = (1 << prefix) - 1
    v = b[i] & mask
    i += 1
    if v < mask:
        return v, i
    m = 0
    while True:
        v += (b[i] & 0x7F) << m
        m += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i


def fields(block):
    """Our server's blocks: indexed static fields, literals without indexing, no Huffman."""
    out, i = [], 0
    while i < len(block):
        if block[i] & 0x80:
            idx, i = read_int(block, i, 7)
            out.append(STATIC.get(idx, ("?", "?")))
            continue
        idx, i = read_int(block, i, 4)
        if idx:
            name = STATIC.get(idx, ("?", ""))[0]
        else:
            n, i = read_int(block, i, 7)
            name = block[i:i + n].decode()
            i += n
        n, i = read_int(block, i, 7)
        out.append((name, block[i:i + n].decode()))
        i += n
    return out


def frames(s, until):
    """Frames read from s (type, flags, stream, payload) until until(frame) or the end."""
    buf = b""
    while True:
        while len(buf) >= 9:
            n = struct.unpack(">I", b"\x00" + buf[:3])[0]
            if len(buf) < 9 + n:
                break
            f = (buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF, buf[9:9 + n])
            buf = buf[9 + n:]
            if until(f):
                return f
        try:
            got = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            got = b""
        if not got:
            return None
        buf += got


def read_until_quiet(socks, until, quiet_s, busy_until=0, done=lambda: False):
    """The frames of every socket of socks, each passed to until(frame) (its return value
    unused), until none has sent a byte for quiet_s (once the clock is past busy_until, or
    done() says nothing more is awaited) or each has ended."""
    bufs = {s: b"" for s in socks}
    while bufs:
        left = 0 if done() else busy_until - time.monotonic()
        ready, _, _ = select.select(list(bufs), [], [], max(quiet_s, min(left, quiet_s * 5)))
        if not ready and left <= quiet_s:
            return
        for s in ready:
            try:
                got = s.recv(65536)
            except (BlockingIOError, socket.timeout):
                continue
            except ConnectionResetError:
                got = b""
            if not got:
                del bufs[s]
                continue
            buf = bufs[s] + got
            while len(buf) >= 9:
                n = struct.unpack(">I", b"\x00" + buf[:3])[0]
                if len(buf) < 9 + n:
                    break
                until((buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF,
                       buf[9:9 + n]))
                buf = buf[9 + n:]
            bufs[s] = buf


def report_goaway(s):
    f = frames(s, lambda f: f[0] == GOAWAY)
    if f:
        print("goaway %d" % struct.unpack(">I", f[3][4:8])[0])
    if frames(s, lambda f: False) is None:
        print("closed")


def rapid_reset(port, n):
    s = connect(port)
    burst = b""
    for i in range(n):
        sid = 1 + 2 * i
        burst += frame(HEADERS, 0x4, sid, request_block("ServerLive"))
        burst += frame(RST_STREAM, 0, sid, struct.pack(">I", 8))
    try:
        s.sendall(burst)
    except (BrokenPipeError, ConnectionResetError):
        pass
    report_goaway(s)


def continuation(port, n):
    s = connect(port)
    block = request_block("ServerLive")
    try:
        s.sendall(frame(HEADERS, 0, 1, block))
        chunk = b"\x40" * 1000
        for _ in range(n // len(chunk)):
            s.sendall(frame(CONTINUATION, 0, 1, chunk))
    except (BrokenPipeError, ConnectionResetError):
        pass
    report_goaway(s)


def slow(port):
    s = connect(port)
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ModelInfer")) +
              frame(DATA, 0, 1, b"\x00" + struct.pack(">I", 1000) + b"\x0a\x04fast"))
    f = frames(s, lambda f: f[0] == HEADERS and f[2] == 1 and f[1] & 0x1)
    if f:
        for name, value in fields(f[3]):
            if name == "grpc-status":
                print("status " + value)


def noread(port, n, hold_s):
    """Calls in batches of 90, 5 ms apart (the server answers each batch and so never has
    more than its 100 streams open), with a small receive buffer never read, and windows
    opened wide at the start so that flow control does not hold the answers back."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0x7FFFFFFF)) +
              frame(8, 0, 0, struct.pack(">I", 0x7FFFFFFF - 65535)))
    s.setblocking(False)
    one = None
    sent = 0
    stalled_since = None
    for i in range(n):
        sid = 1 + 2 * i
        one = frame(HEADERS, 0x4, sid, request_block("ServerMetadata")) + \
            frame(DATA, 0x1, sid, b"\x00\x00\x00\x00\x00")
        if i % 90 == 89:
            time.sleep(0.005)
        while one:
            try:
                one = one[s.send(one):]
                stalled_since = None
            except (ConnectionResetError, BrokenPipeError):
                print("reset after %d calls" % sent, flush=True)
                return
            except BlockingIOError:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 2:
                    break
                time.sleep(0.01)
        if one:
            print("stalled after %d calls" % sent, flush=True)
            break
        sent += 1
    else:
        print("sent %d calls" % sent, flush=True)
    time.sleep(hold_s)
    s.close()


def pb_varint(v):
    out = b""
    while v >= 128:
        out += bytes([(v & 127) | 128])
        v >>= 7
    return out + bytes([v])


def pb_bytes(field, b):
    return pb_varint(field << 3 | 2) + pb_varint(len(b)) + b


def infer_message(model, n=4):
    """A ModelInfer of n FP32 zeros for model, with its 5-byte gRPC prefix."""
    tensor = pb_bytes(1, b"x") + pb_bytes(2, b"FP32") + pb_bytes(3, pb_varint(1) + pb_varint(n))
    body = pb_bytes(1, model.encode()) + pb_bytes(5, tensor) + pb_bytes(7, b"\0" * (4 * n))
    return b"\x00" + struct.pack(">I", len(body)) + body


def zerowin(port, n, hold_s):
    """A client that opens no stream window (SETTINGS_INITIAL_WINDOW_SIZE 0): the answers'
    DATA of its n counted calls can never be sent, so each would hold a call slot for ever;
    one more call, a ServerLive, has its own window opened and is answered. Prints
    "other CODE" (that answer's grpc-status), "goaway CODE" as they come, "reset K" (the
    RST_STREAM CANCELs the server sent), then "alive" if the connection answers a PING
    once all n were reset, or "closed", within hold_s."""
    s = socket.create_connection(("127.0.0.1", port), timeout=hold_s)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
    burst = b""
    for i in range(n):
        sid = 1 + 2 * i
        burst += frame(HEADERS, 0x4, sid, request_block("ServerMetadata"))
        burst += frame(DATA, 0x1, sid, b"\x00\x00\x00\x00\x00")
    other = 1 + 2 * n
    burst += frame(HEADERS, 0x4, other, request_block("ServerLive"))
    burst += frame(DATA, 0x1, other, b"\x00\x00\x00\x00\x00")
    burst += frame(WINDOW_UPDATE, 0, other, struct.pack(">I", 65535))
    s.sendall(burst)
    print("sent %d calls" % n, flush=True)
    resets, pinged = 0, False

    def until(f):
        nonlocal resets, pinged
        if f[0] == RST_STREAM and struct.unpack(">I", f[3])[0] == CANCEL:
            resets += 1
        if f[0] == GOAWAY:
            print("goaway %d" % struct.unpack(">I", f[3][4:8])[0], flush=True)
        if f[0] == HEADERS and f[1] & 0x1 and f[2] == other:
            for name, value in fields(f[3]):
                if name == "grpc-status":
                    print("other " + value, flush=True)
        if f[0] == PING and f[1] & 0x1:
            return True
        if resets == n and not pinged:
            pinged = True
            try:
                s.sendall(frame(PING, 0, 0, b"12345678"))
            except OSError:
                pass
        return False

    alive = frames(s, until) is not None
    print("reset %d" % resets)
    print("alive" if alive else "closed")


def race(port, rounds, n):
    """Each round: one connection's infer of "slow" (held by colocd: its thread is
    blocked) and a PING on n others, all ready at once, so that a thread holds the
    others' events in its batch while the rest are re-armed, closed and freed; then
    the n closed. Prints the infer's grpc-status each round, "closed" if it ended."""
    for _ in range(rounds):
        inf = connect(port)
        others = [connect(port) for _ in range(n)]
        time.sleep(0.3)
        inf.sendall(frame(HEADERS, 0x4, 1, request_block("ModelInfer")) +
                    frame(DATA, 0x1, 1, infer_message("slow")))
        for o in others:
            o.sendall(frame(PING, 0, 0, b"12345678"))
        time.sleep(0.4)
        for o in others:
            o.close()
        f = frames(inf, lambda f: f[0] == HEADERS and f[2] == 1 and f[1] & 0x1)
        status = [v for name, v in fields(f[3]) if name == "grpc-status"] if f else []
        print("status " + status[0] if status else "closed", flush=True)
        inf.close()


def count_frames(s, wait_s):
    """Frames read for wait_s (or until the end): GOAWAYs, RST_STREAM codes and
    grpc-status of the answers, printed as "goaway CODE", "reset CODE K",
    "status CODE K", then "closed" if the server closed."""
    s.settimeout(wait_s)
    resets, statuses, end = {}, {}, time.monotonic() + wait_s

    def until(f):
        if f[0] == GOAWAY:
            print("goaway %d" % struct.unpack(">I", f[3][4:8])[0], flush=True)
        elif f[0] == RST_STREAM:
            code = struct.unpack(">I", f[3])[0]
            resets[code] = resets.get(code, 0) + 1
        elif f[0] == HEADERS and f[1] & 0x1:
            for name, value in fields(f[3]):
                if name == "grpc-status":
                    statuses[value] = statuses.get(value, 0) + 1
        return time.monotonic() > end

    closed = frames(s, until) is None
    for code, k in sorted(resets.items()):
        print("reset %d %d" % (code, k))
    for code, k in sorted(statuses.items()):
        print("status %s %d" % (code, k))
    if closed:
        print("closed")


def made_you_reset(port, n, how):
    """MadeYouReset (CVE-2025-8671): n streams, each made to be reset by the server,
    100 at a time: a health call's HEADERS, then a WINDOW_UPDATE of 0 on it ("wu") or
    its message with END_STREAM and one more DATA frame ("data")."""
    s = connect(port)
    sid = 1
    try:
        for _ in range(0, n, 100):
            burst = b""
            for _ in range(100):
                burst += frame(HEADERS, 0x4, sid, request_block("ServerMetadata"))
                if how == "wu":
                    burst += frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", 0))
                else:
                    burst += frame(DATA, 0x1, sid, b"\x00\x00\x00\x00\x00") + \
                        frame(DATA, 0x1, sid, b"x")
                sid += 2
            s.sendall(burst)
    except (BrokenPipeError, ConnectionResetError):
        pass
    count_frames(s, 3)


def held_reset(port, k):
    """k infers of "slow" (colocd holds them) reset by the client once sent, then k
    health calls on the same connection: with the held infers counted as open
    streams (--grpc-max-streams k), each is refused (RST_STREAM REFUSED_STREAM)."""
    s = connect(port)
    burst = b""
    for i in range(k):
        sid = 1 + 2 * i
        burst += frame(HEADERS, 0x4, sid, request_block("ModelInfer")) + \
            frame(DATA, 0x1, sid, infer_message("slow"))
    s.sendall(burst)
    time.sleep(1)
    s.sendall(b"".join(frame(RST_STREAM, 0, 1 + 2 * i, struct.pack(">I", CANCEL))
                       for i in range(k)))
    time.sleep(0.5)
    burst = b""
    for i in range(k, 2 * k):
        sid = 1 + 2 * i
        burst += frame(HEADERS, 0x4, sid, request_block("ServerLive")) + \
            frame(DATA, 0x1, sid, b"\x00\x00\x00\x00\x00")
    s.sendall(burst)
    count_frames(s, 2)


def overlimit(port, n):
    """n infers of "slow" (colocd holds them) in one burst, past the server's
    SETTINGS_MAX_CONCURRENT_STREAMS: those past it are refused (RST_STREAM
    REFUSED_STREAM), the others held."""
    s = connect(port)
    s.sendall(b"".join(frame(HEADERS, 0x4, 1 + 2 * i, request_block("ModelInfer")) +
                       frame(DATA, 0x1, 1 + 2 * i, infer_message("slow")) for i in range(n)))
    count_frames(s, 2)


def health_mem(port, conns, streams, hold_s):
    """conns connections, each with streams health calls whose message says 65536
    bytes and brings 65535: buffers the server must not hold without bound. Prints
    "held" once all is sent, then holds them hold_s s."""
    held = []
    payload = b"\x00" + struct.pack(">I", 65536) + b"\x00" * 65535
    for _ in range(conns):
        s = connect(port)
        held.append(s)
        for i in range(streams):
            sid = 1 + 2 * i
            try:
                s.sendall(frame(HEADERS, 0x4, sid, request_block("ServerLive")) +
                          frame(DATA, 0, sid, payload))
            except (BrokenPipeError, ConnectionResetError):
                break
    print("held %d connections" % len(held), flush=True)
    time.sleep(hold_s)
    for s in held:
        s.close()


def idle_ping(port, every_ms, most_s):
    """A connection that makes no call and pings every every_ms: prints "goaway CODE
    after T s" and "closed" when the server sends it away, or "kept" after most_s."""
    s = connect(port)
    s.setblocking(False)
    t0 = time.monotonic()
    buf = b""
    while time.monotonic() - t0 < most_s:
        try:
            s.sendall(frame(PING, 0, 0, b"12345678"))
        except (BrokenPipeError, ConnectionResetError):
            pass
        time.sleep(every_ms / 1000)
        try:
            got = s.recv(65536)
        except BlockingIOError:
            continue
        except ConnectionResetError:
            got = b""
        buf += got
        i = 0
        while i + 9 <= len(buf):
            n = struct.unpack(">I", b"\x00" + buf[i:i + 3])[0]
            if i + 9 + n > len(buf):
                break
            if buf[i + 3] == GOAWAY:
                code = struct.unpack(">I", buf[i + 13:i + 17])[0]
                print("goaway %d after %.1f s" % (code, time.monotonic() - t0), flush=True)
            i += 9 + n
        buf = buf[i:]
        if not got:
            print("closed")
            return
    print("kept")


def await_windows(s):
    """Reads s until the server's SETTINGS (acked) and its connection WINDOW_UPDATE came."""
    seen = {"settings": False, "wu": False}

    def ready(f):
        if f[0] == SETTINGS and not f[1] & 0x1:
            s.sendall(frame(SETTINGS, 0x1, 0))
            seen["settings"] = True
        if f[0] == WINDOW_UPDATE and f[2] == 0:
            seen["wu"] = True
        return seen["settings"] and seen["wu"]

    frames(s, ready)


def budget(port, conns, n, length, addrs=1, sent=0, method="ServerMetadata"):
    """conns connections, each with n method calls whose 5-byte prefix announces length
    bytes, of which sent come (in 16 KiB frames, in the server's windows) and the rest
    never: the budget is taken as a message's bytes come. Connection i comes from
    127.0.0.(1 + i % addrs). Prints the grpc-status of the answers within 2 s, over all."""
    held = []
    for i in range(conns):
        s = connect(port, "127.0.0.%d" % (1 + i % addrs))
        held.append(s)
        if sent:
            s.settimeout(10)
            await_windows(s)
        for k in range(n):
            sid = 1 + 2 * k
            s.sendall(frame(HEADERS, 0x4, sid, request_block(method)) +
                      frame(DATA, 0, sid, b"\x00" + struct.pack(">I", length)))
            for j in range(0, sent, 16384):
                s.sendall(frame(DATA, 0, sid, b"\x00" * min(16384, sent - j)))
    statuses = {}

    def until(f):
        if f[0] == HEADERS and f[1] & 0x1:
            for name, value in fields(f[3]):
                if name == "grpc-status":
                    statuses[value] = statuses.get(value, 0) + 1
        return False

    # what each has had 2 s to get, read as it comes: no more comes once every call has its answer
    read_until_quiet(held, until, 0.2, time.monotonic() + 2,
                     lambda: sum(statuses.values()) >= conns * n)
    for code, k in sorted(statuses.items()):
        print("status %s %d" % (code, k))
    print("done")
    for s in held:
        s.close()


def server_sendq(port):
    """The largest Send-Q of the server's sockets on port (ss), 0 if none."""
    out = subprocess.run(["ss", "-tnH", "sport = :%d" % port], capture_output=True,
                         text=True).stdout
    q = [int(line.split()[2]) for line in out.splitlines() if line.split()]
    return max(q) if q else 0


def held_calls_ended(held):
    """One pass (50 ms at most) over the holders' connections, each a dict with "s" (its socket),
    "buf" (bytes not yet a whole frame) and "calls" (its open stream ids): SETTINGS acked, and
    (connection, stream id) for each of its calls that ended (RST_STREAM, or HEADERS with
    END_STREAM), each once; None when a connection was closed."""
    ended = []
    ready, _, _ = select.select([c["s"] for c in held], [], [], 0.05)
    for c in held:
        if c["s"] not in ready:
            continue
        try:
            data = c["s"].recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            return None
        c["buf"] += data
        while len(c["buf"]) >= 9:
            k = struct.unpack(">I", b"\x00" + c["buf"][:3])[0]
            if len(c["buf"]) < 9 + k:
                break
            ftype, flags = c["buf"][3], c["buf"][4]
            sid = struct.unpack(">I", c["buf"][5:9])[0] & 0x7FFFFFFF
            c["buf"] = c["buf"][9 + k:]
            if ftype == SETTINGS and not flags & 0x1:
                c["s"].sendall(frame(SETTINGS, 0x1, 0))
            elif (sid in c["calls"] and (c, sid) not in ended and
                  (ftype == RST_STREAM or (ftype == HEADERS and flags & 0x1))):
                ended.append((c, sid))
    return ended


def one_call(port, method, message, source=None):
    """A well-behaved client's one call on a fresh connection: its grpc-status or "none"."""
    s = connect(port, source)
    s.settimeout(5)
    s.sendall(frame(HEADERS, 0x4, 1, request_block(method)) + frame(DATA, 0x1, 1, message))
    status = []

    def until(f):
        if f[0] == SETTINGS and not f[1] & 0x1:
            s.sendall(frame(SETTINGS, 0x1, 0))
        if f[0] == HEADERS and f[1] & 0x1 and f[2] == 1:
            status.extend(v for n, v in fields(f[3]) if n == "grpc-status")
            return True
        return f[0] == GOAWAY

    frames(s, until)
    s.close()
    return status[0] if status else "none"


def xff(port, source, n, a, b):
    """On one connection from source (a proxy's address), n ModelInfer calls naming client
    a in x-forwarded-for, each with its message begun and never ended (waiting), then one
    whole call naming a and one naming b: "a STATUS" and "b STATUS", their grpc-status."""
    s = connect(port, source)
    s.settimeout(10)
    msg, last_a, last_b = infer_message("fast"), 1 + 2 * n, 3 + 2 * n
    out = b""
    for sid, who, data, end in [(1 + 2 * i, a, b"\x00" + struct.pack(">I", 1024), 0)
                                for i in range(n)] + [(last_a, a, msg, 1), (last_b, b, msg, 1)]:
        block = request_block("ModelInfer") + literal("x-forwarded-for", who)
        out += frame(HEADERS, 0x4, sid, block) + frame(DATA, end, sid, data)
    s.sendall(out)
    status = {}

    def until(f):
        if f[0] == SETTINGS and not f[1] & 0x1:
            s.sendall(frame(SETTINGS, 0x1, 0))
        if f[0] == HEADERS and f[1] & 0x1 and f[2] in (last_a, last_b):
            status[f[2]] = [v for name, v in fields(f[3]) if name == "grpc-status"] or ["none"]
        return len(status) == 2 or f[0] == GOAWAY

    frames(s, until)
    s.close()
    print("a", status.get(last_a, ["none"])[0])
    print("b", status.get(last_b, ["none"])[0])


def deadhold(port, k, wait_s):
    """The reviewer's deadhold: a client with a tiny receive buffer fills the server's
    socket with health answers it never reads (until its Send-Q stops growing) and a
    little of the server's own output, opens k ModelInfer calls with no message, then
    sends a PUSH_PROMISE (a connection error: the connection is dead with output that
    cannot go). For wait_s, while it holds on, another client's ModelInfer every 0.5 s:
    "other N" with the last one's grpc-status (0 once the dead connection let go)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect(("127.0.0.1", port))
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) +
              frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 2**31 - 1 - 65535)))
    sid, last, same, t0 = 1, -1, 0, time.monotonic()

    def health(n):
        nonlocal sid
        s.sendall(b"".join(frame(HEADERS, 0x4, sid + 2 * i, request_block("ServerLive")) +
                           frame(DATA, 0x1, sid + 2 * i, b"\x00" * 5) for i in range(n)))
        sid += 2 * n

    while time.monotonic() - t0 < 60 and same < 10:
        health(100)
        time.sleep(0.02)
        q = server_sendq(port)
        same, last = (same + 1 if q == last else 0), q
    print("filled: server Send-Q %d after %.1f s" % (last, time.monotonic() - t0), flush=True)
    for _ in range(5):  # now some stays in the server's own output, under what stops reads
        health(40)
        time.sleep(0.02)
    for _ in range(k):
        s.sendall(frame(HEADERS, 0x4, sid, request_block("ModelInfer")))
        sid += 2
    time.sleep(0.3)
    s.sendall(frame(5, 0x4, 2, struct.pack(">I", 2)))  # PUSH_PROMISE
    t0, status = time.monotonic(), "none"
    while time.monotonic() - t0 < wait_s:
        status = one_call(port, "ModelInfer", infer_message("fast"))
        print("%.1f s: other client's ModelInfer status %s" % (time.monotonic() - t0, status),
              flush=True)
        time.sleep(0.5)
    print("other %s" % status)
    s.close()


def short_deadline(port, timeout):
    """A call with no grpc-timeout and no message, then one whose grpc-timeout is timeout
    and sends no message either: "status CODE K" of the answers within 3 s (the second
    is refused DEADLINE_EXCEEDED at its deadline, though the first is still waiting)."""
    s = connect(port)
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ModelInfer")))
    time.sleep(0.2)
    s.sendall(frame(HEADERS, 0x4, 3, request_block("ModelInfer") +
                    literal("grpc-timeout", timeout)))
    count_frames(s, 3)
    s.close()


def holdall(port, conns, n, big, length, wait_s, other="127.0.0.2"):
    """The reviewer's holdall, smaller: conns connections from 127.0.0.1, each with big
    ModelInfer calls whose prefix names length bytes (on every connection first), then n
    with no message, none ever sent on; each one the server refuses is opened again. For wait_s, every 0.5 s, a
    ServerLive from 127.0.0.1 and a ModelInfer of "fast" from other, each on a fresh
    connection: "live K of M" and "other K of M" answered with status 0."""
    held = []

    def open_call(c, sid, is_big):
        c["s"].sendall(frame(HEADERS, 0x4, sid, request_block("ModelInfer")) +
                       (frame(DATA, 0, sid, b"\x00" + struct.pack(">I", length))
                        if is_big else b""))
        c["calls"][sid] = is_big

    for _ in range(conns):
        held.append({"s": connect(port), "calls": {}, "next": 1, "buf": b"", "again": []})
    for is_big, k in ((True, big), (False, n)):  # the large ones first, on every connection
        for c in held:
            for _ in range(k):
                open_call(c, c["next"], is_big)
                c["next"] += 2
        time.sleep(0.2)
    renewed, probes, t0 = 0, {"live": [], "other": []}, time.monotonic()
    next_probe = t0 + 0.5
    while time.monotonic() - t0 < wait_s:
        ended = held_calls_ended(held)
        if ended is None:
            print("closed", flush=True)
            return
        for c, sid in ended:
            c["again"].append(c["calls"].pop(sid))
        time.sleep(0.05)  # then what was refused is opened again, 20 times a second at most
        for c in held:
            for is_big in c["again"]:
                open_call(c, c["next"], is_big)
                c["next"] += 2
                renewed += 1
            c["again"] = []
        if time.monotonic() >= next_probe:
            next_probe += 0.5
            for name, method, message, source in (
                    ("live", "ServerLive", b"\x00" * 5, None),
                    ("other", "ModelInfer", infer_message("fast"), other)):
                try:
                    probes[name].append(one_call(port, method, message, source))
                except OSError as e:
                    probes[name].append("error " + str(e))
            print("%.1f s: live %s, other %s, %d renewed" % (
                time.monotonic() - t0, probes["live"][-1], probes["other"][-1], renewed),
                flush=True)
    for name, got in probes.items():
        print("%s %d of %d" % (name, got.count("0"), len(got)))
    for c in held:
        c["s"].close()


def healthfill(port, addrs, per, wait_s):
    """The reviewer's healthfill: a connection from each of addrs loopback addresses
    (127.0.0.2 on) with per ServerLive calls that send no message, each one refused or
    reset opened again. For wait_s, every 0.5 s, a ServerLive from 127.0.0.1 on a fresh
    connection: "live K of M" answered with status 0."""
    held, got = [], []

    def open_call(c):
        c["s"].sendall(frame(HEADERS, 0x4, c["next"], request_block("ServerLive")))
        c["calls"].add(c["next"])
        c["next"] += 2

    for a in range(addrs):
        c = {"s": connect(port, "127.0.0.%d" % (a + 2)), "calls": set(), "next": 1, "buf": b""}
        held.append(c)
        for _ in range(per):
            open_call(c)
    t0 = time.monotonic()
    next_probe = t0 + 0.5
    while time.monotonic() - t0 < wait_s:
        ended = held_calls_ended(held)
        if ended is None:
            print("closed", flush=True)
            return
        for c, sid in ended:
            c["calls"].discard(sid)
            open_call(c)
        if time.monotonic() >= next_probe:
            next_probe += 0.5
            try:
                got.append(one_call(port, "ServerLive", b"\x00" * 5))
            except OSError as e:
                got.append("error " + str(e))
            print("%.1f s: live %s" % (time.monotonic() - t0, got[-1]), flush=True)
    print("live %d of %d" % (got.count("0"), len(got)))
    for c in held:
        c["s"].close()


def bigone(port, n, rate=0):
    """One ServerMetadata call whose message (an unknown field) is n bytes, alone, sent in
    16 KiB frames once the server's SETTINGS and connection WINDOW_UPDATE came (n + 5 within
    its 8 MiB stream window), at rate bytes a second if not 0: prints "status CODE" or
    "status none"."""
    s = connect(port)
    s.settimeout(10)
    body = pb_bytes(15, b"\x00" * (n - 4))
    body = pb_bytes(15, b"\x00" * (n - 4 - (len(body) - n)))
    m = b"\x00" + struct.pack(">I", len(body)) + body
    await_windows(s)
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ServerMetadata")))
    for i in range(0, len(m), 16384):
        if rate:
            time.sleep(16384 / rate)
        s.sendall(frame(DATA, 0x1 if i + 16384 >= len(m) else 0, 1, m[i:i + 16384]))
    status = []

    def until(f):
        if f[0] == HEADERS and f[1] & 0x1 and f[2] == 1:
            status.extend(v for name, v in fields(f[3]) if name == "grpc-status")
            return True
        return f[0] == GOAWAY

    frames(s, until)
    print("%d bytes: status %s" % (len(body), status[0] if status else "none"))


def holdwhole(port, conns, n, wait_s, addrs=0, method="ServerMetadata"):
    """The reviewer's holdwhole, smaller: conns connections from 127.0.0.1 (or from each of
    addrs addresses, 127.0.0.2 on) with SETTINGS_INITIAL_WINDOW_SIZE 0, each with n calls of
    method whose (empty) message is whole,
    so no answer's DATA can go; each one refused or reset is opened again. Until wait_s, from
    1.5 s on, every 0.5 s, a call of method from 127.0.0.2 (from 127.0.0.1 with addrs) on a
    fresh connection: "other K of M" answered with status 0, and "renewed K"."""
    held, renewed, got = [], 0, []
    call = b"\x00\x00\x00\x00\x00"

    def open_call(c):
        sid = c["next"]
        c["next"] += 2
        c["s"].sendall(frame(HEADERS, 0x4, sid, request_block(method)) +
                       frame(DATA, 0x1, sid, call))
        c["calls"].add(sid)

    sources = ["127.0.0.%d" % (a + 2) for a in range(addrs)] or ["127.0.0.1"]
    for source in sources:
        for _ in range(conns):
            s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                         source_address=(source, 0))
            s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
            held.append({"s": s, "calls": set(), "next": 1, "buf": b"", "again": 0})
            for _ in range(n):
                open_call(held[-1])
    t0 = time.monotonic()
    next_probe = t0 + 1.5  # once the opening burst is answered or refused
    while time.monotonic() - t0 < wait_s:
        ended = held_calls_ended(held)
        if ended is None:
            print("closed", flush=True)
            return
        for c, sid in ended:
            c["calls"].discard(sid)
            c["again"] += 1
        time.sleep(0.05)
        for c in held:
            for _ in range(c["again"]):
                open_call(c)
                renewed += 1
            c["again"] = 0
        if time.monotonic() >= next_probe:
            next_probe += 0.5
            try:
                got.append(one_call(port, method, call, "127.0.0.1" if addrs else "127.0.0.2"))
            except OSError as e:
                got.append("error " + str(e))
            print("%.1f s: other %s, %d renewed" % (time.monotonic() - t0, got[-1], renewed),
                  flush=True)
    print("renewed %d" % renewed)
    print("other %d of %d" % (got.count("0"), len(got)))
    for c in held:
        c["s"].close()


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def emfile(port, pid, n, hold_s):
    """n connections made and held hold_s seconds (those past the server's files limit
    wait in its backlog): prints "cpu SECONDS" the server (pid) used meanwhile and its
    open files, then closes them."""
    conns = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(n)]
    time.sleep(1)
    before = cpu_s(pid)
    time.sleep(hold_s)
    print("cpu %.2f over %.1f s, %d files open" % (cpu_s(pid) - before, hold_s,
                                                   len(os.listdir("/proc/%d/fd" % pid))), flush=True)
    for s in conns:
        s.close()
    time.sleep(1)


def main():
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "rapid-reset":
        rapid_reset(port, int(sys.argv[3]))
    elif mode == "continuation":
        continuation(port, int(sys.argv[3]))
    elif mode == "slow":
        slow(port)
    elif mode == "noread":
        noread(port, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "emfile":
        emfile(port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "zerowin":
        zerowin(port, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "race":
        race(port, int(sys.argv[3]), int(sys.argv[4]))
    elif mode == "made-you-reset":
        made_you_reset(port, int(sys.argv[3]), sys.argv[4])
    elif mode == "held-reset":
        held_reset(port, int(sys.argv[3]))
    elif mode == "overlimit":
        overlimit(port, int(sys.argv[3]))
    elif mode == "health-mem":
        health_mem(port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "short-deadline":
        short_deadline(port, sys.argv[3])
    elif mode == "xff":
        xff(port, sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    elif mode == "deadhold":
        deadhold(port, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "budget":
        budget(port, *[int(a) for a in sys.argv[3:8]], *sys.argv[8:9])
    elif mode == "holdall":
        holdall(port, *[int(a) for a in sys.argv[3:7]], float(sys.argv[7]), *sys.argv[8:9])
    elif mode == "healthfill":
        healthfill(port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "bigone":
        bigone(port, *[int(a) for a in sys.argv[3:5]])
    elif mode == "holdwhole":
        holdwhole(port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]),
                  *[int(a) for a in sys.argv[6:7]], *sys.argv[7:8])
    elif mode == "idle-ping":
        idle_ping(port, int(sys.argv[3]), float(sys.argv[4]))
    else:
        print("h2_hostile: unknown mode " + mode)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
