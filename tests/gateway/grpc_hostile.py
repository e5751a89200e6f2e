#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A hostile gRPC client of the gateway, with Python's grpcio and no stubs
(raw bytes through generic calls), for tests/gateway_hostile_test.c,
tests/gateway_stream_limit_test.c and tests/gateway_core_limits_test.c:

  grpc_hostile.py HOST:PORT bomb METHOD HEX COUNT
  grpc_hostile.py HOST:PORT held N
  grpc_hostile.py HOST:PORT stall
  grpc_hostile.py HOST:PORT heldfrom N XFF OTHER
  grpc_hostile.py HOST:PORT call METHOD
  grpc_hostile.py HOST:PORT infer MODEL FLOATS...
  grpc_hostile.py HOST:PORT many MODEL N TIMEOUT

bomb: one METHOD call whose message is the bytes HEX repeated COUNT times;
prints its status code's name.
held: opens N ModelInfer calls that send their headers and never a message,
then, once a counted call (RepositoryIndex) is refused RESOURCE_EXHAUSTED,
prints "counted" (an attempt where a held call was refused instead is
made again: "again"), then ServerLive's code, then each held call's code
as it ends ("held CODE"), then RepositoryIndex's code again once it is OK
(or after 30 s).
stall: one ModelInfer call that sends its headers and never a message;
prints its code's name ("by the gateway" when the gateway's read deadline
ended it) and the seconds it lasted.
heldfrom: held's N calls, each with x-forwarded-for: XFF; then a
RepositoryIndex call with that x-forwarded-for and one with OTHER, then
ServerLive, each code printed ("same CODE", "other CODE", "live CODE");
then the held calls cancelled.
call: one METHOD call with an empty message; prints its code's name.
infer: one ModelInfer of MODEL's input "x", shape [1, N], FP32, the N
FLOATS in raw_input_contents (the message packed here by hand); prints
its code's name.
many: N ModelInfer calls of MODEL (input "x", shape [1, 4]) at once on one
channel, each with a deadline of TIMEOUT s; once all ended, how many ended
with each code ("OK 30", "DEADLINE_EXCEEDED 10"), one a line.
"""
import struct
import sys
import threading
import time

import grpc

SERVICE = "/inference.GRPCInferenceService/"


def unary(channel, method, payload, timeout=60, metadata=None):
    call = channel.unary_unary(SERVICE + method)
    try:
        call(payload, timeout=timeout, metadata=metadata)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


def silent(stop):
    """A request stream that sends nothing until stop is set."""
    stop.wait()
    return
    yield


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(number, payload):
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def model_infer(model, floats):
    """ModelInferRequest: model_name 1, inputs 5 (name 1, datatype 2,
    shape 3 packed), raw_input_contents 7."""
    shape = varint(1) + varint(len(floats))
    tensor = field(1, b"x") + field(2, b"FP32") + field(3, shape)
    raw = struct.pack("<%df" % len(floats), *floats)
    return field(1, model.encode()) + field(5, tensor) + field(7, raw)


def held(channel, n):
    stop = threading.Event()
    stream = channel.stream_unary(SERVICE + "ModelInfer")
    # a poll that reaches the server before the last held call takes its
    # place, and that call is refused: the attempt proved nothing, again
    for _ in range(5):
        calls = [stream.future(silent(stop), timeout=120) for _ in range(n)]
        threading.Event().wait(1)
        exhausted = False
        for _ in range(600):
            if any(c.done() for c in calls):
                break
            if unary(channel, "RepositoryIndex", b"") == "RESOURCE_EXHAUSTED":
                exhausted = True
                break
            threading.Event().wait(0.1)
        if exhausted and not any(c.done() for c in calls):
            break
        for c in calls:
            c.cancel()
        print("again", flush=True)
    print("counted" if exhausted else "never counted", flush=True)
    print("live " + unary(channel, "ServerLive", b""), flush=True)
    for c in calls:
        try:
            c.result()
            print("held OK", flush=True)
        except grpc.RpcError as e:
            # the gateway's own cancel says why; the client's 120 s deadline would not
            by = " by the gateway" if "read timeout" in (e.details() or "") else ""
            print("held " + e.code().name + by, flush=True)
    stop.set()
    # the server frees a cancelled call just after its status went out
    for _ in range(300):
        code = unary(channel, "RepositoryIndex", b"")
        if code == "OK":
            break
        threading.Event().wait(0.1)
    print("index " + code, flush=True)


def stall(channel):
    stop = threading.Event()
    stream = channel.stream_unary(SERVICE + "ModelInfer")
    start = time.monotonic()
    try:
        stream(silent(stop), timeout=60)
        code, by = "OK", ""
    except grpc.RpcError as e:
        code = e.code().name
        by = " by the gateway" if "read timeout" in (e.details() or "") else ""
    stop.set()
    print("%s%s %.1f" % (code, by, time.monotonic() - start), flush=True)


def held_from(channel, n, xff, other):
    stop = threading.Event()
    stream = channel.stream_unary(SERVICE + "ModelInfer")
    calls = [stream.future(silent(stop), timeout=60,
                           metadata=[("x-forwarded-for", xff)]) for _ in range(n)]
    threading.Event().wait(1)
    for who, addr in (("same", xff), ("other", other)):
        code = unary(channel, "RepositoryIndex", b"",
                     metadata=[("x-forwarded-for", addr)])
        print("%s %s" % (who, code), flush=True)
    print("live " + unary(channel, "ServerLive", b""), flush=True)
    for c in calls:
        c.cancel()
    stop.set()


def many(channel, model, n, timeout):
    call = channel.unary_unary(SERVICE + "ModelInfer")
    calls = [call.future(model_infer(model, [1.0, 2.0, 3.0, 4.0]), timeout=timeout)
             for _ in range(n)]
    codes = {}
    for c in calls:
        code = c.code().name  # waits for the call's end
        codes[code] = codes.get(code, 0) + 1
    for code, k in sorted(codes.items()):
        print("%s %d" % (code, k), flush=True)


def main():
    target, mode = sys.argv[1], sys.argv[2]
    opts = [("grpc.max_send_message_length", -1)]
    with grpc.insecure_channel(target, options=opts) as channel:
        if mode == "bomb":
            payload = bytes.fromhex(sys.argv[4]) * int(sys.argv[5])
            print(unary(channel, sys.argv[3], payload))
        elif mode == "held":
            held(channel, int(sys.argv[3]))
        elif mode == "stall":
            stall(channel)
        elif mode == "heldfrom":
            held_from(channel, int(sys.argv[3]), sys.argv[4], sys.argv[5])
        elif mode == "call":
            print(unary(channel, sys.argv[3], b""))
        elif mode == "many":
            many(channel, sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
        elif mode == "infer":
            floats = [float(v) for v in sys.argv[4:]]
            print(unary(channel, "ModelInfer", model_infer(sys.argv[3], floats)))
        else:
            print("grpc_hostile: unknown mode " + mode)
            sys.exit(2)


if __name__ == "__main__":
    main()
