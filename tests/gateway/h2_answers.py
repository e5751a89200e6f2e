#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""ModelInfer calls of the gateway's own gRPC server whose answers are
large, by hand-written HTTP/2 frames (h2_hostile.py's), for
tests/gateway_grpc_answers_test.c:

  h2_answers.py PORT SOURCE hold MODEL N [F]  N calls of MODEL (an input of F
                                           floats, default 4) on one connection
                                           from SOURCE whose stream windows are
                                           0 (SETTINGS_INITIAL_WINDOW_SIZE 0): no
                                           answer's DATA can be sent. Once the
                                           server is quiet for 2 s: "status CODE K"
                                           for the calls it ended, "held K" for
                                           the others; then holds them until killed,
                                           "later CODE" for each one ended meanwhile
  h2_answers.py PORT SOURCE read MODEL     one call of MODEL with the windows
                                           opened wide, its answer read whole:
                                           "message BYTES" and "status CODE"
"""
import select
import socket
import struct
import sys

from h2_hostile import (DATA, HEADERS, RST_STREAM, SETTINGS, WINDOW_UPDATE, PREFACE, fields,
                        frame, frames, infer_message, request_block)


def open_conn(port, source, window):
    s = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 4, window)) +
              (frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", window - 65535))
               if window > 65535 else b""))
    return s


def status_of(f):
    return [v for name, v in fields(f[3]) if name == "grpc-status"]


def ended_calls(s, buf):
    """What s brings within 2 s, after buf: (stream, code) of each call it ends (None when
    nothing came), the bytes left over, and whether s closed."""
    ends = []
    if not select.select([s], [], [], 2)[0]:
        return None, buf, False
    got = s.recv(1 << 20)
    if not got:
        return ends, buf, True
    buf += got
    while len(buf) >= 9 and len(buf) >= 9 + struct.unpack(">I", b"\x00" + buf[:3])[0]:
        k = struct.unpack(">I", b"\x00" + buf[:3])[0]
        f = (buf[3], buf[4], struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF, buf[9:9 + k])
        buf = buf[9 + k:]
        if f[0] == SETTINGS and not f[1] & 0x1:
            s.sendall(frame(SETTINGS, 0x1, 0))
        if f[0] == RST_STREAM or (f[0] == HEADERS and f[1] & 0x1):
            code = status_of(f)[0] if f[0] == HEADERS and status_of(f) else "reset"
            ends.append((f[2], code))
    return ends, buf, False


def hold(port, source, model, n, floats):
    s = open_conn(port, source, 0)
    s.sendall(b"".join(frame(HEADERS, 0x4, 1 + 2 * i, request_block("ModelInfer")) +
                       frame(DATA, 0x1, 1 + 2 * i, infer_message(model, floats))
                       for i in range(n)))
    open_calls, statuses, buf = set(1 + 2 * i for i in range(n)), {}, b""
    s.setblocking(False)
    while True:
        ends, buf, closed = ended_calls(s, buf)
        if closed:
            print("closed", flush=True)
            return
        if ends is None:
            break
        for stream, code in ends:
            if stream in open_calls:
                open_calls.discard(stream)
                statuses[code] = statuses.get(code, 0) + 1
    for code, k in sorted(statuses.items()):
        print("status %s %d" % (code, k))
    print("held %d" % len(open_calls), flush=True)
    # until killed: each held call ended later ("later CODE")
    while True:
        ends, buf, closed = ended_calls(s, buf)
        if closed:
            print("closed", flush=True)
            return
        for stream, code in ends or []:
            if stream in open_calls:
                open_calls.discard(stream)
                print("later %s" % code, flush=True)


def read(port, source, model):
    s = open_conn(port, source, 0x7FFFFFFF)
    s.sendall(frame(HEADERS, 0x4, 1, request_block("ModelInfer")) +
              frame(DATA, 0x1, 1, infer_message(model)))
    got = {"bytes": 0, "status": "none"}

    def until(f):
        if f[0] == SETTINGS and not f[1] & 0x1:
            s.sendall(frame(SETTINGS, 0x1, 0))
        if f[0] == DATA and f[2] == 1:
            got["bytes"] += len(f[3])
        if f[0] == HEADERS and f[2] == 1 and f[1] & 0x1:
            got["status"] = (status_of(f) or ["none"])[0]
            return True
        return f[0] == RST_STREAM and f[2] == 1

    frames(s, until)
    print("message %d" % max(got["bytes"] - 5, 0))
    print("status %s" % got["status"], flush=True)


def main():
    port, source, mode, model = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    if mode == "hold":
        hold(port, source, model, int(sys.argv[5]), int(sys.argv[6]) if len(sys.argv) > 6 else 4)
    elif mode == "read":
        read(port, source, model)
    else:
        print("h2_answers: unknown mode " + mode)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
