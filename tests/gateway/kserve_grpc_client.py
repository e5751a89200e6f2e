#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A KServe v2 gRPC client written against the protocol's published .proto
with Python's grpcio and stubs that tests/gateway_grpc_test.c generates at
test time with Debian's protoc and grpc_python_plugin (nothing of coloc's):

  kserve_grpc_client.py STUBS HOST:PORT MODEL INPUT.bin OUT_PREFIX check
  kserve_grpc_client.py STUBS HOST:PORT MODEL INPUT.bin OUT_PREFIX errors
  kserve_grpc_client.py STUBS HOST:PORT MODEL INPUT.bin OUT_PREFIX flood N

check: live, ready, server and model metadata (one FP32 input expected),
then INPUT.bin's raw little-endian fp32 values sent once as
raw_input_contents and once as typed fp32_contents; each answer's output
written as raw fp32 to OUT_PREFIX.raw.bin and OUT_PREFIX.typed.bin, ids
checked to be echoed.
errors: each wrong request gets its status code (printed as NAME CODE).
flood: N infers at once on one channel; prints "ok=A exhausted=B other=C".
Prints "ok" and exits 0 when all is as expected, else says what is wrong and
exits 1.
"""
import array
import concurrent.futures
import sys

import grpc


def fail(msg):
    print("kserve_grpc_client: " + msg)
    sys.exit(1)


def infer_request(pb, model, name, shape, raw, req_id, typed=False):
    req = pb.ModelInferRequest(model_name=model, id=req_id)
    tensor = req.inputs.add(name=name, datatype="FP32", shape=shape)
    if typed:
        tensor.contents.fp32_contents.extend(array.array("f", raw))
    else:
        req.raw_input_contents.append(raw)
    return req


def output_bytes(resp, typed):
    if typed:
        if resp.raw_output_contents:
            fail("typed inputs got raw outputs")
        return array.array("f", resp.outputs[0].contents.fp32_contents).tobytes()
    if len(resp.raw_output_contents) != len(resp.outputs):
        fail("raw_output_contents does not have one entry per output")
    return resp.raw_output_contents[0]


def check(pb, stub, model, raw, prefix):
    if not stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live:
        fail("ServerLive says not live")
    if not stub.ServerReady(pb.ServerReadyRequest(), timeout=30).ready:
        fail("ServerReady says not ready")
    meta = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=30)
    if meta.name != "coloc-gateway" or "model_repository" not in meta.extensions:
        fail("unexpected server metadata: %s" % meta)
    if not stub.ModelReady(pb.ModelReadyRequest(name=model), timeout=30).ready:
        fail("ModelReady says not ready")
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=30)
    if len(mm.inputs) != 1 or mm.inputs[0].datatype != "FP32" or not mm.outputs:
        fail("unexpected model metadata: %s" % mm)
    name, shape = mm.inputs[0].name, list(mm.inputs[0].shape)
    count = 1
    for d in shape:
        count *= d
    if count * 4 != len(raw):
        fail("the input file has %d bytes, the model's input %d" % (len(raw), count * 4))
    print("metadata: input %s %s, output %s %s, versions %s"
          % (name, shape, mm.outputs[0].name, list(mm.outputs[0].shape), list(mm.versions)))
    for typed, kind in ((False, "raw"), (True, "typed")):
        req_id = "py-grpc-" + kind
        resp = stub.ModelInfer(infer_request(pb, model, name, shape, raw, req_id, typed),
                               timeout=300)
        if resp.id != req_id or resp.model_name != model:
            fail("%s: the answer has id '%s', model '%s'" % (kind, resp.id, resp.model_name))
        if resp.outputs[0].datatype != "FP32" or resp.outputs[0].name != mm.outputs[0].name:
            fail("%s: unexpected output %s" % (kind, resp.outputs[0]))
        if "coloc_latency_us" not in resp.parameters:
            fail("%s: no coloc_latency_us parameter" % kind)
        with open("%s.%s.bin" % (prefix, kind), "wb") as f:
            f.write(output_bytes(resp, typed))


def expect_code(name, code, call):
    try:
        call()
    except grpc.RpcError as e:
        print("%s %s %s" % (name, e.code().name, e.details()))
        if e.code() != code:
            fail("%s: got %s (%s), expected %s" % (name, e.code().name, e.details(), code.name))
        return
    fail("%s: succeeded, expected %s" % (name, code.name))


def errors(pb, stub, model, raw):
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=30)
    name, shape = mm.inputs[0].name, list(mm.inputs[0].shape)
    s = grpc.StatusCode
    expect_code("unknown_model", s.NOT_FOUND, lambda: stub.ModelInfer(
        infer_request(pb, "no_such_model", name, shape, raw, "e1"), timeout=30))
    expect_code("unknown_model_ready", s.NOT_FOUND, lambda: stub.ModelReady(
        pb.ModelReadyRequest(name="no_such_model"), timeout=30))
    expect_code("unknown_version", s.NOT_FOUND, lambda: stub.ModelMetadata(
        pb.ModelMetadataRequest(name=model, version="99"), timeout=30))
    expect_code("wrong_shape", s.INVALID_ARGUMENT, lambda: stub.ModelInfer(
        infer_request(pb, model, name, [shape[0], shape[1] * shape[2], shape[3]], raw, "e2"),
        timeout=30))
    expect_code("short_raw", s.INVALID_ARGUMENT, lambda: stub.ModelInfer(
        infer_request(pb, model, name, shape, raw[:-4], "e3"), timeout=30))
    expect_code("wrong_input_name", s.INVALID_ARGUMENT, lambda: stub.ModelInfer(
        infer_request(pb, model, "nope", shape, raw, "e4"), timeout=30))
    wrong_type = infer_request(pb, model, name, shape, raw, "e5")
    wrong_type.inputs[0].datatype = "INT64"
    expect_code("wrong_datatype", s.INVALID_ARGUMENT,
                lambda: stub.ModelInfer(wrong_type, timeout=30))
    expect_code("too_large", s.RESOURCE_EXHAUSTED, lambda: stub.ModelInfer(
        infer_request(pb, model, name, shape, raw * 4, "e6"), timeout=30))
    expect_code("past_deadline", s.DEADLINE_EXCEEDED, lambda: stub.ModelInfer(
        infer_request(pb, model, name, shape, raw, "e7"), timeout=0.001))
    # the gateway still answers after all of that
    if not stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live:
        fail("ServerLive says not live after the errors")


def flood(pb, stub, model, raw, n):
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=30)
    name, shape = mm.inputs[0].name, list(mm.inputs[0].shape)
    futures = [stub.ModelInfer.future(infer_request(pb, model, name, shape, raw, "f%d" % i),
                                      timeout=300) for i in range(n)]
    counts = {"ok": 0, "exhausted": 0, "other": 0}
    for i, f in enumerate(futures):
        try:
            if f.result().id != "f%d" % i:
                fail("answer %d has another id" % i)
            counts["ok"] += 1
        except grpc.RpcError as e:
            key = "exhausted" if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else "other"
            if key == "other":
                print("flood: %s %s" % (e.code().name, e.details()))
            counts[key] += 1
    print("ok=%d exhausted=%d other=%d" % (counts["ok"], counts["exhausted"], counts["other"]))


def main():
    if len(sys.argv) < 7:
        fail("usage: STUBS HOST:PORT MODEL INPUT.bin OUT_PREFIX check|errors|flood N")
    sys.path.insert(0, sys.argv[1])
    import grpc_service_pb2 as pb
    import grpc_service_pb2_grpc as pb_grpc

    target, model, mode = sys.argv[2], sys.argv[3], sys.argv[6]
    with open(sys.argv[4], "rb") as f:
        raw = f.read()
    opts = [("grpc.max_receive_message_length", 64 << 20),
            ("grpc.max_send_message_length", 64 << 20)]
    with grpc.insecure_channel(target, options=opts) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        if mode == "check":
            check(pb, stub, model, raw, sys.argv[5])
        elif mode == "errors":
            errors(pb, stub, model, raw)
        elif mode == "flood" and len(sys.argv) == 8:
            flood(pb, stub, model, raw, int(sys.argv[7]))
        else:
            fail("unknown mode '%s'" % mode)
    print("ok")


if __name__ == "__main__":
    main()
