#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Writes a small generated ONNX graph, with fixed pseudo-random weights,
that exercises importer paths no real model in tests/data/ort/models.txt
covers, so tests/onnx_ort_test.c can compare coloc with ONNX Runtime on it
(models.txt source gen:NAME; tools/ort/make-refs.sh writes its reference).

    tools/ort/gen-graph.py NAME OUT.onnx

NAME is one of:
  window_1d  x[1,4,37] -> Conv 1-D (group 2, dilation 3, stride 2, pads
             [3,1], bias) -> BatchNormalization -> Relu -> MaxPool 1-D
             (ceil_mode, pads [1,0]) -> ConvTranspose 1-D (group 2, stride 3,
             dilation 2, pads [2,1], bias) -> AveragePool 1-D (pads [1,1]),
             plus a mask over the last axis built from Shape, Gather, Less,
             Equal, Not, And, Cast and Where that the importer folds away.
  causal     GPT-style masked attention scores: x[1,2,5,5] -> Where(a causal
             mask folded from Range, Unsqueeze and LessOrEqual, x, -1e4)
             -> Softmax, and Where(mask, 0, x) on the other side added in.
  unet_up    a small U-Net with a transposed-convolution head, as segmentation
             nets and text detectors (DBNet) end: x[1,3,128,128] -> three
             3x3 conv + ReLU stages (32, 64 ch at stride 2, 128 ch at stride
             2) and a 3x3 bottleneck -> ConvTranspose 128->64 2x2 stride 2 +
             BatchNormalization + ReLU, Concat with the 64-ch skip, 3x3 conv
             -> ConvTranspose 64->32 4x4 stride 2 pads 1 + ReLU, Concat with
             the 32-ch skip, 3x3 conv + ReLU -> 1x1 conv to 2 classes.
  bert_mask  BERT's attention mask from an int64 input, as the HF exports
             write it: mask[1,4] -> Unsqueeze(1, 2) -> Cast(float) -> Sub
             from 1 -> Mul by -3 (HF's -10000 would leave the softmax one
             1 and zeros on run.mjs's generated mask, 1 0 0 0) -> Add to
             scores[1,2,4,4] -> Softmax.

Uses Debian's python3-onnx (and numpy); run it with /usr/bin/python3. The
bytes written depend only on NAME and the onnx version.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def window_1d():
    rng = np.random.default_rng(7)

    def rand(name, shape, lo=-1.0, hi=1.0):
        return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)

    def const(name, value, dtype):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    inits = [
        rand("W1", (8, 2, 5)), rand("B1", (8,)), rand("gamma", (8,), 0.2, 1.5),
        rand("beta", (8,)), rand("mean", (8,)), rand("var", (8,), 0.2, 1.5),
        rand("W2", (8, 4, 3)), rand("B2", (8,)),
        const("pos", np.arange(12), np.int64), const("two", 2, np.int64),
        const("one", [1], np.int64), const("inside", 0.25, np.float32),
        const("outside", -1.5, np.float32),
    ]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "W1", "B1"], ["c"], name="conv", group=2, dilations=[3],
             strides=[2], pads=[3, 1], kernel_shape=[5]),
        node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], name="bn",
             epsilon=1e-3),
        node("Relu", ["n"], ["r"], name="relu"),
        node("MaxPool", ["r"], ["p"], name="maxpool", kernel_shape=[3], strides=[2],
             pads=[1, 0], ceil_mode=1),
        node("ConvTranspose", ["p", "W2", "B2"], ["u"], name="up", group=2, strides=[3],
             pads=[2, 1], dilations=[2]),
        node("AveragePool", ["u"], ["a"], name="avgpool", kernel_shape=[3], strides=[2],
             pads=[1, 1]),
        # width - 1 = 11: positions below it, except 2, get 0.25, the others -1.5
        node("Shape", ["a"], ["shape"], name="shape"),
        node("Gather", ["shape", "two"], ["width"], name="width"),
        node("Sub", ["width", "one"], ["last"], name="last"),
        node("Less", ["pos", "last"], ["below"], name="below"),
        node("Equal", ["pos", "two"], ["is2"], name="is2"),
        node("Not", ["is2"], ["not2"], name="not2"),
        node("And", ["below", "not2"], ["mask"], name="mask"),
        node("Cast", ["mask"], ["maskf"], name="maskf", to=TensorProto.FLOAT),
        node("Cast", ["maskf"], ["maskb"], name="maskb", to=TensorProto.BOOL),
        node("Where", ["maskb", "inside", "outside"], ["bias"], name="where"),
        node("Add", ["a", "bias"], ["y"], name="add"),
    ]
    return helper.make_graph(
        nodes, "window_1d", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 37])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12])], inits)


def causal():
    def const(name, value, dtype):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    inits = [const("zero", 0, np.int64), const("n", 5, np.int64), const("step", 1, np.int64),
             const("ax0", [0], np.int64), const("ax1", [1], np.int64),
             const("fill", -1e4, np.float32), const("zf", 0.0, np.float32)]
    node = helper.make_node
    nodes = [
        node("Range", ["zero", "n", "step"], ["idx"], name="idx"),
        node("Unsqueeze", ["idx", "ax0"], ["cols"], name="cols"),
        node("Unsqueeze", ["idx", "ax1"], ["rows"], name="rows"),
        node("LessOrEqual", ["cols", "rows"], ["mask"], name="mask"),
        node("Where", ["mask", "x", "fill"], ["masked"], name="masked"),
        node("Softmax", ["masked"], ["p"], name="softmax", axis=-1),
        node("Where", ["mask", "zf", "x"], ["upper"], name="upper"),
        node("Add", ["p", "upper"], ["y"], name="add"),
    ]
    return helper.make_graph(
        nodes, "causal", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 5, 5])], inits)


def bert_mask():
    def const(name, value, dtype):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    inits = [const("axes", [1, 2], np.int64), const("one", 1.0, np.float32),
             const("big", -3.0, np.float32)]
    node = helper.make_node
    nodes = [
        node("Unsqueeze", ["mask", "axes"], ["m4"], name="unsqueeze"),
        node("Cast", ["m4"], ["mf"], name="cast", to=TensorProto.FLOAT),
        node("Sub", ["one", "mf"], ["inv"], name="invert"),
        node("Mul", ["inv", "big"], ["bias"], name="scale"),
        node("Add", ["scores", "bias"], ["s"], name="add"),
        node("Softmax", ["s"], ["y"], name="softmax", axis=-1),
    ]
    return helper.make_graph(
        nodes, "bert_mask",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 4, 4]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], inits)


def unet_up():
    rng = np.random.default_rng(11)
    inits = []

    def weights(name, shape, fan_in):
        bound = np.sqrt(6.0 / fan_in)
        inits.append(numpy_helper.from_array(
            rng.uniform(-bound, bound, shape).astype(np.float32), name))
        return name

    def bias(name, n):
        inits.append(numpy_helper.from_array(rng.uniform(-0.1, 0.1, n).astype(np.float32), name))
        return name

    node = helper.make_node
    nodes = []

    def conv(x, y, cin, cout, k=3, stride=1, relu=True):
        w = weights(y + "_w", (cout, cin, k, k), cin * k * k)
        pad = k // 2
        nodes.append(node("Conv", [x, w, bias(y + "_b", cout)], [y + "_c" if relu else y],
                          name=y, kernel_shape=[k, k], strides=[stride, stride],
                          pads=[pad] * 4))
        if relu:
            nodes.append(node("Relu", [y + "_c"], [y], name=y + "_relu"))
        return y

    e1 = conv("x", "e1", 3, 32)
    e2 = conv(e1, "e2", 32, 64, stride=2)
    e3 = conv(e2, "e3", 64, 128, stride=2)
    mid = conv(e3, "mid", 128, 128)
    nodes.append(node("ConvTranspose", [mid, weights("up1_w", (128, 64, 2, 2), 128 * 4),
                                        bias("up1_b", 64)], ["up1_t"], name="up1",
                      kernel_shape=[2, 2], strides=[2, 2]))
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, 64).astype(np.float32), "bn_g"))
    inits.append(numpy_helper.from_array(rng.uniform(-0.2, 0.2, 64).astype(np.float32), "bn_b"))
    inits.append(numpy_helper.from_array(rng.uniform(-0.2, 0.2, 64).astype(np.float32), "bn_m"))
    inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, 64).astype(np.float32), "bn_v"))
    nodes.append(node("BatchNormalization", ["up1_t", "bn_g", "bn_b", "bn_m", "bn_v"],
                      ["up1_n"], name="up1_bn", epsilon=1e-5))
    nodes.append(node("Relu", ["up1_n"], ["up1"], name="up1_relu"))
    nodes.append(node("Concat", ["up1", e2], ["cat1"], name="cat1", axis=1))
    d1 = conv("cat1", "d1", 128, 64)
    nodes.append(node("ConvTranspose", [d1, weights("up2_w", (64, 32, 4, 4), 64 * 4),
                                        bias("up2_b", 32)], ["up2_t"], name="up2",
                      kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1]))
    nodes.append(node("Relu", ["up2_t"], ["up2"], name="up2_relu"))
    nodes.append(node("Concat", ["up2", e1], ["cat2"], name="cat2", axis=1))
    d2 = conv("cat2", "d2", 64, 32)
    conv(d2, "y", 32, 2, k=1, relu=False)
    return helper.make_graph(
        nodes, "unet_up",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 128, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 128, 128])], inits)


GRAPHS = {"window_1d": window_1d, "causal": causal, "bert_mask": bert_mask, "unet_up": unet_up}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in GRAPHS:
        sys.stderr.write("usage: tools/ort/gen-graph.py {%s} OUT.onnx\n" % ",".join(GRAPHS))
        sys.exit(2)
    model = helper.make_model(GRAPHS[sys.argv[1]](),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
