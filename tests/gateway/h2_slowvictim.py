#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A slow reader's answers beside addresses that keep the gateway's own gRPC
server's unsent answers full, by hand-written HTTP/2 frames (h2_hostile.py's),
for tests/gateway_grpc_answers_test.c (the s25 attack report's MEDIUM 2):

  h2_slowvictim.py PORT ATTACK CONNS PER CALLS WINDOW STEP_MS ADDRS METHOD

With ATTACK 1, ADDRS addresses (127.0.0.3 on) x CONNS connections x PER calls
of METHOD with stream windows of 0 (their answers can never go), each one
reset renewed at once; after 1.5 s, the victim from 127.0.0.2: CALLS
ServerMetadata calls one after another, each on a connection whose stream
window is WINDOW bytes, opened by WINDOW more every STEP_MS (an answer that
drains slowly). Prints a line a victim call and "victim answered N of CALLS,
attacker renewed R".
"""
import socket
import struct
import sys
import threading
import time

from h2_hostile import (DATA, GOAWAY, HEADERS, PREFACE, RST_STREAM, SETTINGS, WINDOW_UPDATE,
                        fields, frame, held_calls_ended, request_block)

EMPTY = b"\x00\x00\x00\x00\x00"
stop = False
renewed = [0]


def open_call(c, method):
    sid = c["next"]
    c["next"] += 2
    c["s"].sendall(frame(HEADERS, 0x4, sid, request_block(method)) + frame(DATA, 0x1, sid, EMPTY))
    c["calls"].add(sid)


def attacker(port, conns, per, addrs, method):
    held = []
    for i in range(conns * addrs):
        s = socket.create_connection(("127.0.0.1", port), timeout=30,
                                     source_address=("127.0.0.%d" % (3 + i % addrs), 0))
        s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))
        held.append({"s": s, "calls": set(), "next": 1, "buf": b""})
        for _ in range(per):
            open_call(held[-1], method)
    while not stop:
        ended = held_calls_ended(held)
        if ended is None:
            print("attacker: closed", flush=True)
            return
        for c, sid in ended:
            c["calls"].discard(sid)
            open_call(c, method)
            renewed[0] += 1


def victim(port, window, step_ms):
    """One slow reader's ServerMetadata: "status CODE ...", "reset ...", or what ended it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, window)))
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ServerMetadata")) + frame(DATA, 0x1, 1, EMPTY))
    buf, got = b"", 0
    t0 = last = time.monotonic()
    s.settimeout(step_ms / 1000.0)
    while time.monotonic() - t0 < 10:
        try:
            d = s.recv(65536)
            if not d:
                return "closed"
            buf += d
        except socket.timeout:
            pass
        while len(buf) >= 9 and len(buf) >= 9 + struct.unpack(">I", b"\x00" + buf[:3])[0]:
            n = struct.unpack(">I", b"\x00" + buf[:3])[0]
            ft, fl = buf[3], buf[4]
            sid, pl = struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF, buf[9:9 + n]
            buf = buf[9 + n:]
            ms = (time.monotonic() - t0) * 1e3
            if ft == SETTINGS and not fl & 1:
                s.sendall(frame(SETTINGS, 1, 0))
            elif ft == DATA and sid == 1:
                got += n
            elif ft == RST_STREAM and sid == 1:
                return "reset after %d bytes, %.0f ms" % (got, ms)
            elif ft == HEADERS and sid == 1 and fl & 1:
                st = [v for k, v in fields(pl) if k == "grpc-status"]
                return "status %s, %d bytes, %.0f ms" % (st[0] if st else "?", got, ms)
            elif ft == GOAWAY:
                return "goaway"
        if time.monotonic() - last >= step_ms / 1000.0:
            last = time.monotonic()
            s.sendall(frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", window)))
    return "none"


def main():
    global stop
    port, attack, conns, per, calls, window, step, addrs = (int(a) for a in sys.argv[1:9])
    method = sys.argv[9]
    if attack:
        threading.Thread(target=attacker, args=(port, conns, per, addrs, method),
                         daemon=True).start()
        time.sleep(1.5)
    res = []
    for _ in range(calls):
        res.append(victim(port, window, step))
        print("victim:", res[-1], flush=True)
    stop = True
    ok = sum(r.startswith("status 0") for r in res)
    print("victim answered %d of %d, attacker renewed %d" % (ok, calls, renewed[0]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
