#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Exports a coloc .model and its weights file to ONNX, so ONNX Runtime can
run our own models with the same weights (tests/onnx_ort_test.c, make
bench-onnx).

    coloc-run models/resnet50.model --save-weights r50.wt
    tools/ort/export-onnx.py models/resnet50.model r50.wt r50.onnx

The weights file is models/WEIGHTS.md's format. The graph is the plain one
an exporter such as PyTorch's writes: Conv (+ BatchNormalization, epsilon
1e-5, unfolded) + the activation as its own node, Add, MaxPool /
AveragePool / GlobalAveragePool, Reshape, MatMul + Add for fc, Concat,
LRN, Softmax; swish as Sigmoid and Mul; Gather for embed, LayerNormalization,
Transpose, MatMul (+ Transpose for transpose_b, + Mul for alpha), Slice,
the erf form of GELU; opset 17. Inputs read by an embedding are int64.
Only the ops and attributes our models use are written; anything else
stops the export with the model's line. The graph's outputs are the layers
no later layer reads, in layer order, as coloc returns them (SSD's twelve
heads).

Uses Debian's python3-onnx (and numpy); run it with /usr/bin/python3.
"""
import re
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def die(msg):
    sys.stderr.write(f"export-onnx: {msg}\n")
    sys.exit(1)


def expand(path):
    """The model file's statements, repeat blocks unrolled, as (line, words)."""
    lines = open(path).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        words = lines[i].split("#")[0].split()
        i += 1
        if not words:
            continue
        if words[0] == "repeat":
            var, rng = words[1], words[2]
            lo, hi = (int(x) for x in rng.split(".."))
            body = []
            while lines[i].split("#")[0].strip() != "}":
                body.append((i + 1, lines[i].split("#")[0].split()))
                i += 1
            i += 1
            for v in range(lo, hi + 1):
                sub = lambda m: str(eval(m.group(1), {}, {var: v}))  # noqa: E731
                for ln, b in body:
                    if b:
                        out.append((ln, [re.sub(r"\{([^}]*)\}", sub, w) for w in b]))
            continue
        out.append((i, words))
    return out


def read_weights(path):
    data = open(path, "rb").read()
    if data[:8] != b"COLOCWT1":
        die(f"{path}: not a coloc weights file")
    (n,) = struct.unpack_from("<I", data, 8)
    off, tensors = 12, {}
    for _ in range(n):
        idx, nt = struct.unpack_from("<II", data, off)
        off += 8
        ts = []
        for _ in range(nt):
            (cnt,) = struct.unpack_from("<Q", data, off)
            off += 8
            ts.append(np.frombuffer(data, "<f4", cnt, off).copy())
            off += 4 * cnt
        tensors[idx] = ts
    return tensors


def pair(v):
    a = [int(x) for x in v.split("x")]
    return a * 2 if len(a) == 1 else a


def pads(v):
    if v is None:
        return [0, 0, 0, 0]
    if "," in v:
        t, l, b, r = (int(x) for x in v.split(","))
        return [t, l, b, r]
    ph, pw = pair(v)
    return [ph, pw, ph, pw]


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: export-onnx.py MODEL WEIGHTS OUT.onnx\n")
        sys.exit(2)
    model_path, weights_path, out_path = sys.argv[1:]
    weights = read_weights(weights_path)
    nodes, inits, inputs = [], [], []
    names, shapes = [], {}  # layer names by index; output shapes by name
    read = set()  # layers a later layer reads
    ids = {}  # input layers read by an embedding: int64 token ids in ONNX
    name = "model"

    def init(nm, arr):
        keep = arr.dtype == np.int64  # shapes and indices; the rest is fp32
        inits.append(numpy_helper.from_array(arr if keep else arr.astype(np.float32), nm))
        return nm

    def act(ln, x, kw):
        a = kw.get("act")
        if a is None:
            return x
        y = x + "_" + a
        if a == "relu":
            nodes.append(helper.make_node("Relu", [x], [y]))
        elif a == "relu6":
            lo = init(y + "_min", np.array(0, np.float32))
            hi = init(y + "_max", np.array(6, np.float32))
            nodes.append(helper.make_node("Clip", [x, lo, hi], [y]))
        elif a == "sigmoid":
            nodes.append(helper.make_node("Sigmoid", [x], [y]))
        elif a == "tanh":
            nodes.append(helper.make_node("Tanh", [x], [y]))
        elif a == "leaky_relu":
            nodes.append(helper.make_node("LeakyRelu", [x], [y], alpha=float(kw.get("slope", 0.01))))
        elif a == "gelu":
            # the erf form as PyTorch exports it: x * (1 + erf(x / sqrt 2)) * 0.5
            c = {k: init(f"{y}_{k}", np.array(v, np.float32))
                 for k, v in (("sqrt2", np.sqrt(2.0)), ("one", 1.0), ("half", 0.5))}
            nodes.append(helper.make_node("Div", [x, c["sqrt2"]], [y + "_div"]))
            nodes.append(helper.make_node("Erf", [y + "_div"], [y + "_erf"]))
            nodes.append(helper.make_node("Add", [y + "_erf", c["one"]], [y + "_add"]))
            nodes.append(helper.make_node("Mul", [x, y + "_add"], [y + "_mul"]))
            nodes.append(helper.make_node("Mul", [y + "_mul", c["half"]], [y]))
        elif a == "swish":
            nodes.append(helper.make_node("Sigmoid", [x], [y + "_sigmoid"]))
            nodes.append(helper.make_node("Mul", [x, y + "_sigmoid"], [y]))
        else:
            die(f"{model_path}:{ln}: act={a} is not exported")
        return y

    for ln, w in expand(model_path):
        op = w[0]
        if op in ("macs", "params", "seed", "end"):
            continue
        if op == "model":
            name = w[1]
            continue
        lname = w[1]
        kw = dict(x.split("=", 1) if "=" in x else (x, True) for x in w[2:])
        idx = len(names)
        ins = kw["in"].split(",") if "in" in kw else ([names[-1]] if names else [])
        read.update(ins)
        ins_t = [shapes[i][0] for i in ins]  # the tensor names of the inputs
        in_shapes = [shapes[i][1] for i in ins]
        if op == "input":
            shp = [int(x) for x in kw["shape"].split("x")]
            inputs.append((lname, shp))
            out = (lname, shp)
        elif op == "conv":
            n, c, h, wd = in_shapes[0]
            kh, kw_ = pair(kw["k"])
            sh, sw = pair(kw.get("stride", "1"))
            dh, dw_ = pair(kw.get("dil", "1"))
            same = kw.get("pad") == "same"
            p = [0, 0, 0, 0] if same else pads(kw.get("pad"))
            groups = c if "dw" in kw else int(kw.get("groups", 1))
            oc = int(kw.get("out", c))
            ts = weights[idx]
            wt = ts[0].reshape(oc, c // groups, kh, kw_)
            x = init(lname + "_w", wt)
            conv_in = [ins_t[0], x]
            t = 1
            if "bias" in kw:
                conv_in.append(init(lname + "_b", ts[1]))
                t = 2
            y = lname + "_conv"
            # TensorFlow's SAME (the odd pixel bottom/right) is ONNX's SAME_UPPER
            pad_attr = dict(auto_pad="SAME_UPPER") if same else dict(pads=p)
            nodes.append(helper.make_node("Conv", conv_in, [y], kernel_shape=[kh, kw_],
                                          strides=[sh, sw], dilations=[dh, dw_],
                                          group=groups, **pad_attr))
            if "bn" in kw:
                bn = [init(f"{lname}_bn{j}", ts[t + j]) for j in range(4)]
                nodes.append(helper.make_node("BatchNormalization", [y] + bn, [lname + "_bn"],
                                              epsilon=1e-5))
                y = lname + "_bn"
            if same:
                oh, ow = -(-h // sh), -(-wd // sw)
            else:
                oh = (h + p[0] + p[2] - dh * (kh - 1) - 1) // sh + 1
                ow = (wd + p[1] + p[3] - dw_ * (kw_ - 1) - 1) // sw + 1
            out = (act(ln, y, kw), [n, oc, oh, ow])
        elif op == "pool":
            n, c, h, wd = in_shapes[0]
            kind = kw["kind"]
            if kind == "global_avg":
                nodes.append(helper.make_node("GlobalAveragePool", ins_t, [lname]))
                out = (lname, [n, c, 1, 1])
            else:
                kh, kw_ = pair(kw["k"])
                sh, sw = pair(kw.get("stride", "1"))
                p = pads(kw.get("pad"))
                ceil = 1 if "ceil" in kw else 0
                attrs = dict(kernel_shape=[kh, kw_], strides=[sh, sw], pads=p, ceil_mode=ceil)
                if kind == "avg":
                    attrs["count_include_pad"] = 0
                nodes.append(helper.make_node("MaxPool" if kind == "max" else "AveragePool",
                                              ins_t, [lname], **attrs))
                rnd = sh - 1 if ceil else 0
                oh = (h + p[0] + p[2] - kh + rnd) // sh + 1
                rnd = sw - 1 if ceil else 0
                ow = (wd + p[1] + p[3] - kw_ + rnd) // sw + 1
                # a last window starting in the padding is dropped (ONNX and Caffe)
                if ceil and (oh - 1) * sh >= h + p[0]:
                    oh -= 1
                if ceil and (ow - 1) * sw >= wd + p[1]:
                    ow -= 1
                out = (lname, [n, c, oh, ow])
        elif op in ("add", "mul"):
            y = lname + "_" + op
            nodes.append(helper.make_node(op.capitalize(), ins_t, [y]))
            out = (act(ln, y, kw), in_shapes[0])
        elif op == "reshape":
            shp = [int(x) for x in kw["shape"].split("x")]
            s = init(lname + "_shape", np.array(shp, np.int64))
            nodes.append(helper.make_node("Reshape", [ins_t[0], s], [lname]))
            total = int(np.prod(in_shapes[0]))
            if -1 in shp:
                shp[shp.index(-1)] = total // -int(np.prod(shp))
            out = (lname, shp)
        elif op == "fc":
            k = in_shapes[0][-1]
            nout = int(kw["out"])
            ts = weights[idx]
            y = lname + "_mm"
            nodes.append(helper.make_node("MatMul", [ins_t[0], init(lname + "_w",
                                                                    ts[0].reshape(k, nout))], [y]))
            if "bias" in kw:
                nodes.append(helper.make_node("Add", [y, init(lname + "_b", ts[1])],
                                              [lname + "_add"]))
                y = lname + "_add"
            out = (act(ln, y, kw), in_shapes[0][:-1] + [nout])
        elif op == "concat":
            axis = int(kw.get("axis", 1))
            nodes.append(helper.make_node("Concat", ins_t, [lname], axis=axis))
            shp = list(in_shapes[0])
            shp[axis] = sum(s[axis] for s in in_shapes)
            out = (lname, shp)
        elif op == "embed":
            ids[ins[0]] = True
            table = init(lname + "_table", weights[idx][0].reshape(int(kw["vocab"]),
                                                                   int(kw["dim"])))
            nodes.append(helper.make_node("Gather", [table, ins_t[0]], [lname], axis=0))
            out = (lname, in_shapes[0] + [int(kw["dim"])])
        elif op == "layer_norm":
            g, b = weights[idx]
            nodes.append(helper.make_node("LayerNormalization",
                                          [ins_t[0], init(lname + "_gamma", g),
                                           init(lname + "_beta", b)], [lname], axis=-1,
                                          epsilon=float(kw.get("eps", 1e-5))))
            out = (lname, in_shapes[0])
        elif op == "transpose":
            perm = [int(x) for x in kw["perm"].split(",")]
            nodes.append(helper.make_node("Transpose", ins_t, [lname], perm=perm))
            out = (lname, [in_shapes[0][i] for i in perm])
        elif op == "matmul":
            a_t, b_t = ins_t
            b_shape = list(in_shapes[1])
            if "transpose_b" in kw:
                r = len(b_shape)
                perm = list(range(r - 2)) + [r - 1, r - 2]
                nodes.append(helper.make_node("Transpose", [b_t], [lname + "_bt"], perm=perm))
                b_t = lname + "_bt"
                b_shape = [b_shape[i] for i in perm]
            y = lname + "_mm"
            nodes.append(helper.make_node("MatMul", [a_t, b_t], [y]))
            if "alpha" in kw:
                alpha = init(lname + "_alpha", np.array(float(kw["alpha"]), np.float32))
                nodes.append(helper.make_node("Mul", [y, alpha], [lname + "_scaled"]))
                y = lname + "_scaled"
            out = (y, in_shapes[0][:-1] + [b_shape[-1]])
        elif op == "slice":
            axis, start = int(kw["axis"]), int(kw.get("start", 0))
            length = int(kw["len"])
            consts = [init(f"{lname}_{k}", np.array([v], np.int64))
                      for k, v in (("starts", start), ("ends", start + length), ("axes", axis))]
            nodes.append(helper.make_node("Slice", [ins_t[0]] + consts, [lname]))
            shp = list(in_shapes[0])
            shp[axis] = length
            out = (lname, shp)
        elif op == "lrn":
            nodes.append(helper.make_node("LRN", ins_t, [lname], size=int(kw["size"]),
                                          alpha=float(kw.get("alpha", 1e-4)),
                                          beta=float(kw.get("beta", 0.75)),
                                          bias=float(kw.get("k", 1))))
            out = (lname, in_shapes[0])
        elif op == "softmax":
            nodes.append(helper.make_node("Softmax", ins_t, [lname],
                                          axis=int(kw.get("axis", -1))))
            out = (lname, in_shapes[0])
        else:
            die(f"{model_path}:{ln}: op '{op}' is not exported")
        names.append(lname)
        shapes[lname] = out
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64 if n in ids else TensorProto.FLOAT,
                                            shp) for n, shp in inputs]
    # every layer no later layer reads, in layer order: coloc's outputs (model_io_layout)
    outputs = [helper.make_tensor_value_info(shapes[n][0], TensorProto.FLOAT, shapes[n][1])
               for n in names if n not in read]
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, producer_name="coloc export-onnx.py",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, out_path)


if __name__ == "__main__":
    main()
