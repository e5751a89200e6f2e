#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Writes the small ONNX files that seed fuzz_onnx (tests/fuzz/seeds/onnx/):
one graph per family of ops the importer lowers or folds, each a few hundred
bytes, so the fuzzer starts from files that reach deep into the importer.

    tests/fuzz/make-onnx-seeds.py tests/fuzz/seeds/onnx

Uses Debian's python3-onnx (and numpy); run it with /usr/bin/python3.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def rnd(*shape):
    return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) % 7 - 3) / 4


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seeds():
    x4 = vi("x", F, [1, 2, 4, 4])
    yield "conv_bn_relu", model("conv_bn_relu", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"]),
    ], [x4], [vi("y", F, [1, 3, 4, 4])], [
        init("w", rnd(3, 2, 3, 3)), init("b", rnd(3)), init("g", rnd(3) + 1),
        init("be", rnd(3)), init("m", rnd(3)), init("v", rnd(3) + 2)])
    yield "pool_gemm", model("pool_gemm", [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1),
    ], [x4], [vi("y", F, [1, 3])], [init("w", rnd(3, 2)), init("b", rnd(3))])
    yield "resize", model("resize", [
        helper.make_node("Resize", ["x", "", "s"], ["r"], mode="nearest"),
        helper.make_node("Resize", ["r", "", "", "z"], ["y"], mode="linear"),
    ], [x4], [vi("y", F, [1, 2, 6, 6])], [
        init("s", np.array([1, 1, 2, 2], np.float32)), init("z", np.array([1, 2, 6, 6], np.int64))])
    yield "shape_reshape", model("shape_reshape", [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i"], ["d"], axis=0),
        helper.make_node("Unsqueeze", ["d", "ax"], ["u"]),
        helper.make_node("Concat", ["u", "m1"], ["t"], axis=0),
        helper.make_node("Reshape", ["x", "t"], ["r"]),
        helper.make_node("Transpose", ["r"], ["tr"], perm=[1, 0]),
        helper.make_node("Softmax", ["tr"], ["y"], axis=-1),
    ], [x4], [vi("y", F, [32, 1])], [
        init("i", np.array(0, np.int64)), init("ax", np.array([0], np.int64)),
        init("m1", np.array([-1], np.int64))])
    ids = vi("ids", I64, [1, 3])
    yield "embed_layernorm", model("embed_layernorm", [
        helper.make_node("Gather", ["tab", "ids"], ["e"], axis=0),
        helper.make_node("LayerNormalization", ["e", "g", "b"], ["n"], axis=-1),
        helper.make_node("MatMul", ["n", "w"], ["m"]),
        helper.make_node("Add", ["m", "bb"], ["a"]),
        helper.make_node("Div", ["a", "sq"], ["d"]),
        helper.make_node("Erf", ["d"], ["er"]),
        helper.make_node("Add", ["er", "one"], ["p1"]),
        helper.make_node("Mul", ["a", "p1"], ["mm"]),
        helper.make_node("Mul", ["mm", "half"], ["y"]),
    ], [ids], [vi("y", F, [1, 3, 4])], [
        init("tab", rnd(5, 4)), init("g", rnd(4) + 1), init("b", rnd(4)), init("w", rnd(4, 4)),
        init("bb", rnd(4)), init("sq", np.array(1.4142135, np.float32)),
        init("one", np.array(1, np.float32)), init("half", np.array(0.5, np.float32))])
    yield "attention_mask", model("attention_mask", [
        helper.make_node("ConstantOfShape", ["shp"], ["ones"],
                         value=helper.make_tensor("v", F, [1], [1.0])),
        helper.make_node("Range", ["r0", "r3", "r1"], ["r"]),
        helper.make_node("Less", ["r", "lim"], ["lt"]),
        helper.make_node("Where", ["lt", "ones", "neg"], ["mask"]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Add", ["s", "mask"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["y"], axis=-1),
    ], [vi("q", F, [1, 3, 4])], [vi("y", F, [1, 3, 3])], [
        init("shp", np.array([3], np.int64)), init("r0", np.array(0, np.int64)),
        init("r3", np.array(3, np.int64)), init("r1", np.array(1, np.int64)),
        init("lim", np.array(2, np.int64)), init("neg", np.array(-1e4, np.float32)),
        init("kt", rnd(4, 3))])
    yield "pad_slice_reduce", model("pad_slice_reduce", [
        helper.make_node("Pad", ["x", "pads"], ["p"]),
        helper.make_node("Slice", ["p", "st", "en", "axs"], ["s"]),
        helper.make_node("ReduceMean", ["s"], ["r"], axes=[2, 3], keepdims=1),
        helper.make_node("Sigmoid", ["r"], ["sg"]),
        helper.make_node("Mul", ["x", "sg"], ["y"]),
    ], [x4], [vi("y", F, [1, 2, 4, 4])], [
        init("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)),
        init("st", np.array([1], np.int64)), init("en", np.array([5], np.int64)),
        init("axs", np.array([2], np.int64))], opset=17)
    yield "deconv_concat_split", model("deconv_concat_split", [
        helper.make_node("ConvTranspose", ["x", "w"], ["d"], strides=[2, 2], kernel_shape=[2, 2]),
        helper.make_node("Split", ["d", "sp"], ["a", "b"], axis=1),
        helper.make_node("Concat", ["b", "a"], ["c"], axis=1),
        helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.1),
        helper.make_node("Clip", ["l", "lo", "hi"], ["y"]),
    ], [x4], [vi("y", F, [1, 4, 8, 8])], [
        init("w", rnd(2, 4, 2, 2)), init("sp", np.array([2, 2], np.int64)),
        init("lo", np.array(0, np.float32)), init("hi", np.array(6, np.float32))])
    # a Loop whose body holds an If: messages nested in messages
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "inner", [],
                              [vi("o", F, [1, 2, 4, 4])])
    body = helper.make_graph([helper.make_node("If", ["c"], ["o"], then_branch=inner,
                                               else_branch=inner)],
                             "body", [vi("c", TensorProto.BOOL, [])], [vi("o", F, None)])
    yield "nested_if", model("nested_if", [
        helper.make_node("If", ["cond"], ["i"], then_branch=body, else_branch=inner),
        helper.make_node("Relu", ["i"], ["y"]),
    ], [x4], [vi("y", F, [1, 2, 4, 4])], [init("cond", np.array(True))])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/seeds/onnx"
    os.makedirs(out, exist_ok=True)
    for name, m in seeds():
        save(m, os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
