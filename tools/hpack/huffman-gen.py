#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Writes gateway/hpack_huffman.c from RFC 7541 Appendix B's rows
(tools/hpack/rfc7541-appendix-b.txt): the code and length of each symbol for
the encoder, and for the decoder a lookup of the codes up to 8 bits by the
next byte plus the canonical code's tables for the longer ones. Checks the
rows first: each symbol once in order, its bits, hex and length agree, the
code is prefix free and complete, and canonical (so first code, count and
the symbols in code order per length decode it).

    tools/hpack/huffman-gen.py > gateway/hpack_huffman.c
"""
import os
import re
import sys

ROW = re.compile(r"\((\s*\d+)\)\s+\|([01|]+)\s+([0-9a-f]+)\s+\[\s*(\d+)\]")


def rows(path):
    out = []
    with open(path) as f:
        for line in f:
            m = ROW.search(line)
            if not m:
                continue
            sym, bits, hexa, n = int(m[1]), m[2].replace("|", ""), int(m[3], 16), int(m[4])
            if sym != len(out):
                sys.exit(f"symbol {sym} out of order")
            if len(bits) != n or int(bits, 2) != hexa:
                sys.exit(f"symbol {sym}: bits, hex and length disagree")
            out.append((hexa, n))
    if len(out) != 257:
        sys.exit(f"{len(out)} symbols, not 257")
    return out


def check(code):
    if sum(2 ** (32 - n) for _, n in code) != 2 ** 32:
        sys.exit("the code is not complete (Kraft sum is not 1)")
    order = sorted(range(257), key=lambda s: (code[s][1], s))
    nxt, prev = 0, code[order[0]][1]
    for s in order:
        c, n = code[s]
        nxt <<= n - prev
        prev = n
        if c != nxt:
            sys.exit(f"symbol {s}: not the canonical code")
        nxt += 1
    return order


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    code = rows(os.path.join(here, "rfc7541-appendix-b.txt"))
    order = check(code)
    first, count, offset = [0] * 31, [0] * 31, [0] * 31
    for i, s in enumerate(order):
        c, n = code[s]
        if count[n] == 0:
            first[n], offset[n] = c, i
        count[n] += 1
    lut = []
    for byte in range(256):
        ent = 0
        for s in order:
            c, n = code[s]
            if n <= 8 and byte >> (8 - n) == c:
                ent = s | n << 9
                break
        lut.append(ent)

    p = print
    p("// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause")
    p("/* RFC 7541 Appendix B's Huffman code, written by tools/hpack/huffman-gen.py")
    p(" * from tools/hpack/rfc7541-appendix-b.txt: do not edit. */")
    p('#include "hpack_huffman.h"')
    p("")
    p("const uint32_t hpack_huffman_code[257] = {")
    for i in range(0, 257, 6):
        p("\t" + " ".join(f"0x{c:x}," for c, _ in code[i:i + 6]))
    p("};")
    p("")
    p("const uint8_t hpack_huffman_len[257] = {")
    for i in range(0, 257, 16):
        p("\t" + " ".join(f"{n}," for _, n in code[i:i + 16]))
    p("};")
    p("")
    p("/* The codes of up to 8 bits by the byte they start: symbol | length << 9, or 0. */")
    p("const uint16_t hpack_huffman_lut8[256] = {")
    for i in range(0, 256, 8):
        p("\t" + " ".join(f"0x{v:x}," for v in lut[i:i + 8]))
    p("};")
    p("")
    p("/* The canonical code by length: the first code, how many, where in")
    p(" * hpack_huffman_sorted its symbols start. */")
    for name, arr in (("first", first), ("count", count), ("offset", offset)):
        p(f"const uint32_t hpack_huffman_{name}[31] = {{")
        for i in range(0, 31, 8):
            p("\t" + " ".join(f"0x{v:x}," for v in arr[i:i + 8]))
        p("};")
    p("")
    p("const uint16_t hpack_huffman_sorted[257] = {")
    for i in range(0, 257, 12):
        p("\t" + " ".join(f"{s}," for s in order[i:i + 12]))
    p("};")


main()
