#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A slow reader's answers beside addresses whose held answers fill the gateway's
own gRPC server's unsent answers and whose connections then die, by hand-written
HTTP/2 frames (h2_hostile.py's), for tests/gateway_grpc_answers_test.c (the s26
attack report's MEDIUM 2):

  h2_deadholders.py PORT ADDRS PER CALLS RATE

ADDRS holders (127.0.0.3 on), one connection each, receive buffer 2 KiB: a
ModelInfer of "wide" (a 4 MiB answer) with its window open, read at once until
what is left of it fills the server's socket and 900 KiB of its output (under
its 1 MiB max_out, so the server reads on); then PER
ServerMetadata calls whose stream windows are 0 (their answers held, counted
unsent). Once all hold theirs, each reads at RATE bytes a second and after
0.3 s sends a PUSH_PROMISE, a connection error: the connection is dead with
its output not yet sent, which the holder reads on at RATE. 0.6 s after: from 127.0.0.30 a ServerMetadata call every 20 ms, read at once
(each answer asks for room), and from 127.0.0.2 CALLS slow-read ServerMetadata
calls one after another (h2_slowvictim.py's, 2 bytes every 30 ms). Prints a
line a victim call, "victim answered N of CALLS", then a line a holder:
"holder SRC: closed, B bytes read after its death of L left" or "... still
open, ...".
"""
import socket
import subprocess
import struct
import sys
import threading
import time

from h2_hostile import (DATA, HEADERS, PREFACE, SETTINGS, WINDOW_UPDATE, frame, infer_message,
                        one_call, request_block)
import h2_slowvictim

EMPTY = b"\x00\x00\x00\x00\x00"
PUSH_PROMISE = 5
WIDE = 4 << 20  # "wide"'s answer, its message's bytes (the fake colocd's output)
OUT = 900 << 10  # of the answer, what is left in the server's output: under its 1 MiB max_out
stop = False


def sendq(s):
    """The Send-Q of the server's side of s (ss), 0 if not found."""
    out = subprocess.run(["ss", "-tnH", "src", "%s:%d" % s.getpeername(), "dst",
                          "%s:%d" % s.getsockname()], capture_output=True, text=True).stdout
    q = [int(line.split()[2]) for line in out.splitlines() if line.split()]
    return q[0] if q else 0


def read_wide(s):
    """Reads what the server sends (the 4 MiB answer to stream 1, its frames) until what is
    left of it fills the server's socket (its Send-Q) and OUT of its output."""
    got, goal = 0, WIDE - (2 << 20)
    while got < goal:
        d = s.recv(65536)
        if not d:
            raise OSError("closed while reading the wide answer")
        got += len(d)
        if goal == WIDE - (2 << 20) and got >= goal:  # the socket full: what it holds
            goal = WIDE - OUT - sendq(s)
    return WIDE - got


def fill(port, src, per):
    """src's connection: the wide answer mostly read, per answers held, then dead."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.bind((src, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    big = 2**31 - 1
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)) +
              frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", big - 65535)))
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ModelInfer")) +
              frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", big)) +
              frame(DATA, 0x1, 1, infer_message("wide")))
    left = read_wide(s)
    for i in range(per):
        sid = 3 + 2 * i
        s.sendall(frame(HEADERS, 0x4, sid, request_block("ServerMetadata")) +
                  frame(DATA, 0x1, sid, EMPTY))
    time.sleep(1)  # their answers come and are held by windows of 0
    return s, left


def drain(s, rate, result, until=None):
    """Reads s at rate bytes a second until it closes, the run stops or the time until: the
    bytes read."""
    got, done = 0, False
    s.settimeout(0.05)
    while not stop and not done and (until is None or time.monotonic() < until):
        n = 0
        while n < rate // 10:
            try:
                d = s.recv(4096)
            except socket.timeout:
                break
            except OSError:
                d = b""
            if not d:
                done = True
                break
            n += len(d)
        got += n
        time.sleep(0.1)
    result.append("closed" if done else "still open")
    result.append(got)


def holder(port, src, per, rate, ready, die, result):
    try:
        s, left = fill(port, src, per)
    except OSError as e:
        result.extend(["%s while filling" % e, 0])
        ready.release()
        return
    ready.release()
    die.wait()
    # its output moving before it dies: a dead connection whose output has not moved for a
    # second is closed (since s24), so reading starts first
    before = []
    drain(s, rate, before, time.monotonic() + 0.3)
    s.sendall(frame(PUSH_PROMISE, 0x4, 2, struct.pack(">I", 2)))
    drain(s, rate, result)
    result.append(left - before[1])


def fast(port, counts):
    while not stop:
        st = one_call(port, "ServerMetadata", EMPTY, "127.0.0.30")
        counts[st] = counts.get(st, 0) + 1
        time.sleep(0.02)


def main():
    global stop
    port, addrs, per, calls, rate = (int(a) for a in sys.argv[1:6])
    ready, die = threading.Semaphore(0), threading.Event()
    results = [[] for _ in range(addrs)]
    hs = [threading.Thread(target=holder, args=(port, "127.0.0.%d" % (3 + i), per, rate, ready,
                                                die, results[i]), daemon=True)
          for i in range(addrs)]
    for h in hs:
        h.start()
    for _ in hs:
        ready.acquire()
    die.set()  # all at once: the bound full of dead connections' answers
    time.sleep(0.6)
    counts = {}
    threading.Thread(target=fast, args=(port, counts), daemon=True).start()
    time.sleep(0.2)
    res = []
    for _ in range(calls):
        res.append(h2_slowvictim.victim(port, 2, 30))
        print("victim:", res[-1], flush=True)
    stop = True
    for h in hs:
        h.join(5)
    ok = sum(r.startswith("status 0") for r in res)
    print("victim answered %d of %d; the fast caller's statuses %s" % (ok, calls, counts),
          flush=True)
    for i, r in enumerate(results):
        print("holder 127.0.0.%d: %s, %d bytes read after its death of %d left" %
              (3 + i, r[0] if r else "?", r[1] if len(r) > 1 else 0, r[2] if len(r) > 2 else 0),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
