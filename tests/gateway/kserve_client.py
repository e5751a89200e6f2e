#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""A KServe v2 client written against the protocol's published spec with
Python's requests, not with anything of coloc's: tests/gateway_test.c runs it
against coloc-gateway and compares what it writes with libcoloc_client's
answer for the same input.

  kserve_client.py URL MODEL INPUT.bin OUT_PREFIX [--concurrent N]

Reads the model's metadata (one FP32 input expected), sends INPUT.bin's raw
little-endian fp32 values once as JSON and once with the binary tensor data
extension, and writes each answer's output as raw fp32 to OUT_PREFIX.json.bin
and OUT_PREFIX.binary.bin. With --concurrent N, also sends N binary requests
at once from N threads, each with its own id, and checks each answer echoes
its id and equals the first. Prints "ok" and exits 0, or says what is wrong
and exits 1.
"""
import json
import struct
import sys
import threading

import requests


def fail(msg):
    print("kserve_client: " + msg)
    sys.exit(1)


def binary_infer(url, name, shape, raw, req_id, out_name):
    header = json.dumps({
        "id": req_id,
        "inputs": [{"name": name, "shape": shape, "datatype": "FP32",
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": out_name, "parameters": {"binary_data": True}}],
    }).encode()
    r = requests.post(url, data=header + raw, timeout=300,
                      headers={"Inference-Header-Content-Length": str(len(header)),
                               "Content-Type": "application/octet-stream"})
    if r.status_code != 200:
        fail("binary infer: HTTP %d: %s" % (r.status_code, r.text[:300]))
    hlen = int(r.headers["Inference-Header-Content-Length"])
    head = json.loads(r.content[:hlen])
    if head.get("id") != req_id:
        fail("binary infer: id %r echoed as %r" % (req_id, head.get("id")))
    out = head["outputs"][0]
    size = out["parameters"]["binary_data_size"]
    body = r.content[hlen:]
    if size != len(body):
        fail("binary infer: binary_data_size %d but %d bytes follow" % (size, len(body)))
    return body


def main():
    if len(sys.argv) < 5:
        fail("usage: URL MODEL INPUT.bin OUT_PREFIX [--concurrent N]")
    base, model, inpath, prefix = sys.argv[1:5]
    concurrent = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[5] == "--concurrent" else 0
    raw = open(inpath, "rb").read()
    values = list(struct.unpack("<%df" % (len(raw) // 4), raw))

    r = requests.get(base + "/v2/health/ready", timeout=10)
    if r.status_code != 200:
        fail("not ready: HTTP %d" % r.status_code)
    meta = requests.get(base + "/v2/models/" + model, timeout=10).json()
    if meta.get("name") != model or len(meta.get("inputs", [])) != 1:
        fail("metadata: %r" % meta)
    inp = meta["inputs"][0]
    shape = inp["shape"]
    count = 1
    for d in shape:
        count *= d
    if inp["datatype"] != "FP32" or count != len(values):
        fail("metadata: input %r does not hold %d FP32 values" % (inp, len(values)))
    url = base + "/v2/models/" + model + "/infer"

    r = requests.post(url, timeout=300, json={
        "id": "json-1",
        "inputs": [{"name": inp["name"], "shape": shape, "datatype": "FP32", "data": values}],
    })
    if r.status_code != 200:
        fail("json infer: HTTP %d: %s" % (r.status_code, r.text[:300]))
    ans = r.json()
    if ans.get("id") != "json-1" or ans.get("model_name") != model:
        fail("json infer: %r" % {k: ans.get(k) for k in ("id", "model_name")})
    out = ans["outputs"][0]
    if out["datatype"] != "FP32":
        fail("json infer: output datatype %r" % out["datatype"])
    with open(prefix + ".json.bin", "wb") as f:
        f.write(struct.pack("<%df" % len(out["data"]), *out["data"]))

    first = binary_infer(url, inp["name"], shape, raw, "binary-1", meta["outputs"][0]["name"])
    with open(prefix + ".binary.bin", "wb") as f:
        f.write(first)

    errors = []

    def one(i):
        try:
            got = binary_infer(url, inp["name"], shape, raw, "concurrent-%d" % i,
                               meta["outputs"][0]["name"])
            if len(got) != len(first):
                errors.append("request %d: %d output bytes, not %d" % (i, len(got), len(first)))
        except SystemExit:
            errors.append("request %d failed" % i)
        except Exception as e:  # a transport error is a failure too
            errors.append("request %d: %s" % (i, e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("; ".join(errors[:5]))
    print("ok")


if __name__ == "__main__":
    main()
