#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Replay coloc's learnt prediction (policy/coloc_predict.c) over colocd block logs.

Each block of a --block-log file is predicted as the engine would have at its
decision (its end less its measured time) and then learnt from, in end order,
once with main's unclipped EWMAs ("old") and once with the clipped update
("new": a measurement above the prediction times 1 + max(2 x the tenant's
usual error, 0.5) counts as that bound). The table latency a block is learnt
against is the log's alone_us times its level (the table's level column
is not in the log). Per tenant it prints the block MAPE (|measured -
predicted| / measured, as colocd's prediction_mape), the jitter floor (each
block's distance from its class median in hindsight, as bench-qos), the
median margin, and after each stall (a block over 5x its class median) how
many of the next 20 blocks are predicted off by more than 2x and the margin
there. --inject N multiplies every Nth block's measured time by 20 (the
same blocks in both replays; they are left out of the MAPE).
docs/design/coloc-policy.md, "One stalled block".
"""
import argparse
import math
import statistics
import sys

ALPHA = 0.3
CORR_HALF_LIFE = 1e9
CLASS_HALF_LIFE = 5e9
SMALL_BLOCK = 100000.0
CLASS_SAMPLES = 9
CLASS_MIN = 3


def kept(now, since, half):
    return 1.0 if now <= since else 2.0 ** (-(now - since) / half)


class Tenant:
    def __init__(self):
        self.corr, self.fixed, self.dev, self.ns = 1.0, 0.0, 0.0, 0
        self.cls = {}  # key -> [rel, ns, ring, next]

    def kept(self, now):
        return kept(now, self.ns, CORR_HALF_LIFE)

    def rel(self, key, now):
        c = self.cls.get(key)
        return 1.0 if c is None else 1.0 + (c[0] - 1.0) * kept(now, c[1], CLASS_HALF_LIFE)

    def predict(self, key, raw, now):
        k = self.kept(now)
        corr, fixed = 1.0 + (self.corr - 1.0) * k, self.fixed * k
        scale = corr * self.rel(key, now)
        c = self.cls.get(key)
        if c is None or len(c[2]) < CLASS_MIN:
            return raw * scale + fixed
        med = statistics.median(c[2])
        if med <= scale:
            return raw * med
        kc = kept(now, c[1], CORR_HALF_LIFE)
        return raw * (scale + (med - scale) * kc) + fixed * (1 - kc)

    def margin(self, now):
        return 1.0 + self.dev * self.kept(now)

    def learn(self, key, raw, m, end, clip):
        k = self.kept(end)
        corr, fixed = 1.0 + (self.corr - 1.0) * k, self.fixed * k
        rel = self.rel(key, end)
        p = self.predict(key, raw, end)
        w = raw / (raw + SMALL_BLOCK)
        dev = self.dev * k
        ring_m = m
        if clip:
            m = min(m, p * (1 + max(clip[0] * dev, clip[1])))
        x = max(m - fixed, m / 10) / raw
        self.dev = (1 - ALPHA * w) * dev + ALPHA * w * abs(m - p) / p
        corr = (1 - ALPHA * w) * corr + ALPHA * w * x / rel
        fixed = max(0.0, (1 - ALPHA * (1 - w)) * fixed + ALPHA * (1 - w) * (m - corr * rel * raw))
        c = self.cls.setdefault(key, [1.0, 0, [], 0])
        c[0] = (1 - ALPHA * w) * rel + ALPHA * w * x / corr
        c[1] = end
        if len(c[2]) < CLASS_SAMPLES:
            c[2].append(ring_m / raw)
        else:
            c[2][c[3]] = ring_m / raw
        c[3] = (c[3] + 1) % CLASS_SAMPLES
        self.corr, self.fixed, self.ns = corr, fixed, end


def read_log(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        col = {n: i for i, n in enumerate(head)}
        blocks = []
        for line in f:
            v = line.rstrip("\n").split("\t")
            if len(v) < len(head) or v[col["ok"]] != "1":
                continue
            m = float(v[col["measured_us"]]) * 1e3
            raw = float(v[col["alone_us"]]) * 1e3 * max(1.0, float(v[col["level"]]))
            if m <= 0 or raw <= 0:
                continue
            blocks.append({
                "end": float(v[col["end_ms"]]) * 1e6, "tenant": v[col["tenant"]],
                "key": (int(v[col["first"]]), int(v[col["last"]]), int(v[col["cores"]])),
                "jkey": (v[col["first"]], v[col["last"]], v[col["cores"]], v[col["versions"]]),
                "raw": raw, "m": m, "live": float(v[col["predicted_us"]]) * 1e3})
    blocks.sort(key=lambda b: b["end"])
    return blocks


def class_medians(blocks, key):
    by = {}
    for b in blocks:
        by.setdefault((b["tenant"], b[key]), []).append(b["m"])
    return {k: (statistics.median(v), len(v)) for k, v in by.items()}


def replay(blocks, clip):
    ts, out = {}, []
    for b in blocks:
        t = ts.setdefault(b["tenant"], Tenant())
        decided = b["end"] - b["m"]
        p = t.predict(b["key"], b["raw"], decided)
        out.append((p, t.margin(decided)))
        t.learn(b["key"], b["raw"], b["m"], b["end"], clip)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="colocd --block-log files")
    ap.add_argument("--clip", default="2,0.5",
                    help="the new update's clip: DEVS,FLOOR (default 2,0.5, as coloc_predict.c)")
    ap.add_argument("--inject", type=int, default=0,
                    help="multiply every Nth block's measured time by 20")
    a = ap.parse_args()
    clip = tuple(float(x) for x in a.clip.split(","))
    print("log\ttenant\tblocks\tmape_live\tmape_old\tmape_new\tfloor\tmargin_old\tmargin_new"
          "\tstalls\toff2x_old\toff2x_new\tstall_margin_old\tstall_margin_new")
    for path in a.logs:
        blocks = read_log(path)
        inj = set()
        if a.inject:
            for i in range(a.inject - 1, len(blocks), a.inject):
                blocks[i] = dict(blocks[i], m=blocks[i]["m"] * 20)
                inj.add(i)
        old, new = replay(blocks, None), replay(blocks, clip)
        jit = class_medians([b for i, b in enumerate(blocks) if i not in inj], "jkey")
        cmed = class_medians(blocks, "key")
        for tenant in sorted({b["tenant"] for b in blocks}):
            idx = [i for i, b in enumerate(blocks) if b["tenant"] == tenant]
            clean = [i for i in idx if i not in inj]

            def mape(pred):
                return 100 * statistics.mean(abs(blocks[i]["m"] - pred(i)) / blocks[i]["m"]
                                             for i in clean)
            fl = [abs(blocks[i]["m"] - jit[(tenant, blocks[i]["jkey"])][0]) / blocks[i]["m"]
                  for i in clean if jit[(tenant, blocks[i]["jkey"])][1] >= 5]
            stalls = [j for j, i in enumerate(idx)
                      if blocks[i]["m"] > 5 * cmed[(tenant, blocks[i]["key"])][0]]

            def after(res):
                off, mg = 0, []
                for j in stalls:
                    for i in idx[j + 1:j + 21]:
                        p, m = res[i][0], blocks[i]["m"]
                        off += p > 2 * m or m > 2 * p
                        mg.append(res[i][1])
                return off, (statistics.median(mg) if mg else math.nan)
            oo, om = after(old)
            no, nm = after(new)
            print("%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%s\t%.3f\t%.3f\t%d\t%d\t%d\t%.3f\t%.3f" % (
                path, tenant, len(clean), mape(lambda i: blocks[i]["live"]),
                mape(lambda i: old[i][0]), mape(lambda i: new[i][0]),
                "%.1f" % (100 * statistics.mean(fl)) if fl else "NA",
                statistics.median(old[i][1] for i in clean),
                statistics.median(new[i][1] for i in clean),
                len(stalls), oo, no, om, nm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
