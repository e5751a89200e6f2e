#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Replay coloc's learnt prediction (policy/coloc_predict.c) over colocd block logs.

Each block of a --block-log file is predicted as the engine would have at its
decision and then learnt from, in end order, twice: "old" as main's engine
before a block of a class not yet known was predicted from its core count's
blocks, "new" as coloc_predict.c does now (docs/design/coloc-policy.md, "A
block never seen"). Both take the clip (a measurement above the prediction
times 1 + max(2 x the tenant's usual error, 0.5) counts as that bound), the
direct-mapped class table (a class colliding with another replaces it) and
plan ahead: the blocks of one command (logged together, one round trip) are
all predicted at the command's decision, before any of them is learnt, the
later ones as of the decision plus the predictions before them, and learnt
at the decision plus their own time (serving_plan.c, policy_block_done). A
block's decision is its end less its measured time. The table latency a
block is learnt against is the log's alone_us times its level (the table's
level column is not in the log), its core index the core count less one
(coloc-profile's tables hold every count from 1). Per tenant it prints the
block MAPE (|measured - predicted| / measured, as colocd's prediction_mape;
live: colocd's own predictions), the jitter floor (each block's distance
from its class median in hindsight, as bench-qos, over the classes of at
least five blocks), the MAPE over those same blocks, the floor with the
block left out of its median (floor_loo: the in-sample median of a small
class is the block itself), the share of blocks in rarer classes, the
median margin, and after each stall (a block over 5x its class median) how
many of the next 20 blocks are predicted off by more than 2x. --inject N
multiplies every Nth block's measured time by 20 (the same blocks in both
replays; they are left out of the MAPE). In "new" a block of a class not yet
known is predicted by its core count's unless the tenant's own correction has
predicted such blocks better (the EWMAs of both one's relative errors, s27).
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
BLOCK_CLASSES = 256
CORE_GROUPS = 16
CLIP = (2.0, 0.5)
UNSEEN_WEIGHT = 0.1
U64 = (1 << 64) - 1


def kept(now, since, half):
    return 1.0 if now <= since else 2.0 ** (-(now - since) / half)


def class_slot(key):
    """class_index(): the key (first, last, core index) and its entry."""
    k = ((key[0] << 42 | key[1] << 21 | key[2]) + 1) & U64
    return k, ((k * 0x9e3779b97f4a7c15) & U64) >> 56


class Entry:
    """struct coloc_class: a block class's, or a core count's, learnt prediction."""

    def __init__(self, key):
        self.key, self.rel, self.ns, self.ring, self.next = key, 1.0, 0, [], 0

    def faded(self, key, now):
        return 1.0 if self.key != key else \
            1.0 + (self.rel - 1.0) * kept(now, self.ns, CLASS_HALF_LIFE)

    def learn(self, key, rel, w, x, corr, ratio, end):
        if self.key != key:
            self.ring, self.next = [], 0
        self.key = key
        self.rel = (1 - ALPHA * w) * rel + ALPHA * w * x / corr
        self.ns = end
        if len(self.ring) < CLASS_SAMPLES:
            self.ring.append(ratio)
        else:
            self.ring[self.next] = ratio
        self.next = (self.next + 1) % CLASS_SAMPLES


class Tenant:
    def __init__(self, groups):
        self.corr, self.fixed, self.dev, self.ns = 1.0, 0.0, 0.0, 0
        self.err_own, self.err_group = 0.0, 0.0
        self.groups = groups
        self.cls = [Entry(0) for _ in range(BLOCK_CLASSES)]
        self.grp = [Entry(0) for _ in range(CORE_GROUPS)]

    def kept(self, now):
        return kept(now, self.ns, CORR_HALF_LIFE)

    def entry(self, key, own=False):
        """The class entry of key (first, last, ci) and its key there; with groups, a class
        not yet known's is its core count's unless own or its own correction did better."""
        k, i = class_slot(key)
        c = self.cls[i]
        if self.groups and not own and (c.key != k or len(c.ring) < CLASS_MIN) and \
                not self.err_own < self.err_group:
            return self.grp[key[2] % CORE_GROUPS], key[2] + 1
        return c, k

    def predict(self, key, raw, now, how=None):
        k = self.kept(now)
        corr, fixed = 1.0 + (self.corr - 1.0) * k, self.fixed * k
        if how == "own":
            c, ck = self.entry(key, own=True)
        elif how == "group":
            c, ck = self.grp[key[2] % CORE_GROUPS], key[2] + 1
        else:
            c, ck = self.entry(key)
        scale = corr * c.faded(ck, now)
        if c.key != ck or len(c.ring) < CLASS_MIN:
            return raw * scale + fixed
        med = statistics.median(c.ring)
        if med <= scale:
            return raw * med
        kc = kept(now, c.ns, CORR_HALF_LIFE)
        return raw * (scale + (med - scale) * kc) + fixed * (1 - kc)

    def margin(self, now):
        return 1.0 + self.dev * self.kept(now)

    def learn(self, key, raw, m, end):
        k = self.kept(end)
        corr, fixed = 1.0 + (self.corr - 1.0) * k, self.fixed * k
        ck, i = class_slot(key)
        c = self.cls[i]
        if self.groups and (c.key != ck or len(c.ring) < CLASS_MIN):
            own, grp = self.predict(key, raw, end, "own"), self.predict(key, raw, end, "group")
            self.err_own = (1 - UNSEEN_WEIGHT) * self.err_own + UNSEEN_WEIGHT * abs(m - own) / m
            self.err_group = (1 - UNSEEN_WEIGHT) * self.err_group + UNSEEN_WEIGHT * abs(m - grp) / m
        rel = c.faded(ck, end)
        p = self.predict(key, raw, end)
        w = raw / (raw + SMALL_BLOCK)
        dev = self.dev * k
        ratio = m / raw
        m = min(m, p * (1 + max(CLIP[0] * dev, CLIP[1])))
        x = max(m - fixed, m / 10) / raw
        self.dev = (1 - ALPHA * w) * dev + ALPHA * w * abs(m - p) / p
        corr = (1 - ALPHA * w) * corr + ALPHA * w * x / rel
        fixed = max(0.0, (1 - ALPHA * (1 - w)) * fixed + ALPHA * (1 - w) * (m - corr * rel * raw))
        c.learn(ck, rel, w, x, corr, ratio, end)
        if self.groups:
            g, gk = self.grp[key[2] % CORE_GROUPS], key[2] + 1
            g.learn(gk, g.faded(gk, end), w, x, corr, ratio, end)
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
            cmd = (v[col["tenant"]], v[col["query"]], v[col["round_trip_us"]])
            pos = blocks[-1]["pos"] + 1 if blocks and blocks[-1]["cmd"] == cmd else 0
            blocks.append({
                "end": float(v[col["end_ms"]]) * 1e6, "tenant": v[col["tenant"]],
                "key": (int(v[col["first"]]), int(v[col["last"]]), int(v[col["cores"]]) - 1),
                "jkey": (v[col["first"]], v[col["last"]], v[col["cores"]], v[col["versions"]]),
                "raw": raw, "m": m, "live": float(v[col["predicted_us"]]) * 1e3, "cmd": cmd,
                "pos": pos, "plan": blocks[-pos]["plan"] if pos else []})
            blocks[-1]["plan"].append(blocks[-1])
    blocks.sort(key=lambda b: (b["end"], b["pos"]))
    return blocks


def replay(blocks, groups):
    """(prediction, margin) per block, each command's blocks predicted at its decision."""
    ts, out, cmds = {}, [], {}
    for b in blocks:
        t = ts.setdefault(b["tenant"], Tenant(groups))
        plan = id(b["plan"])
        if b["pos"] == 0:
            decided = ahead = b["end"] - b["m"]
            preds = []
            for c in b["plan"]:
                preds.append((t.predict(c["key"], c["raw"], ahead), t.margin(ahead)))
                ahead += preds[-1][0]
            cmds[plan] = (decided, preds)
        decided, preds = cmds[plan]
        out.append(preds[b["pos"]])
        t.learn(b["key"], b["raw"], b["m"], decided + b["m"])
    return out


def by_class(blocks, idx):
    by = {}
    for i in idx:
        by.setdefault(blocks[i]["jkey"], []).append(blocks[i]["m"])
    return by


def tenant_row(blocks, idx, inj, old, new):
    clean = [i for i in idx if i not in inj]
    cls = by_class(blocks, clean)
    floor_idx = [i for i in clean if len(cls[blocks[i]["jkey"]]) >= 5]

    def err(i, p):
        return abs(blocks[i]["m"] - p) / blocks[i]["m"]

    def mape(pred, sel):
        return 100 * statistics.mean(err(i, pred(i)) for i in sel) if sel else math.nan

    def loo(i):
        v = list(cls[blocks[i]["jkey"]])
        v.remove(blocks[i]["m"])
        return statistics.median(v)
    fl = mape(lambda i: statistics.median(cls[blocks[i]["jkey"]]), floor_idx)
    fl_loo = mape(loo, floor_idx)
    cmed = {}
    for i in idx:
        cmed.setdefault(blocks[i]["key"], []).append(blocks[i]["m"])
    cmed = {k: statistics.median(v) for k, v in cmed.items()}
    stalls = [j for j, i in enumerate(idx) if blocks[i]["m"] > 5 * cmed[blocks[i]["key"]]]

    def off_after(res):
        off = 0
        for j in stalls:
            for i in idx[j + 1:j + 21]:
                p, m = res[i][0], blocks[i]["m"]
                off += p > 2 * m or m > 2 * p
        return off
    return (len(clean), mape(lambda i: blocks[i]["live"], clean),
            mape(lambda i: old[i][0], clean), mape(lambda i: new[i][0], clean), fl,
            mape(lambda i: old[i][0], floor_idx), mape(lambda i: new[i][0], floor_idx), fl_loo,
            100 * (1 - len(floor_idx) / len(clean)) if clean else math.nan,
            statistics.median(old[i][1] for i in clean), statistics.median(new[i][1] for i in clean),
            len(stalls), off_after(old), off_after(new))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="colocd --block-log files")
    ap.add_argument("--inject", type=int, default=0,
                    help="multiply every Nth block's measured time by 20")
    a = ap.parse_args()
    print("log\ttenant\tblocks\tmape_live\tmape_old\tmape_new\tfloor\tmape_old_floor_blocks"
          "\tmape_new_floor_blocks\tfloor_loo\trare_pct\tmargin_old\tmargin_new"
          "\tstalls\toff2x_old\toff2x_new")
    for path in a.logs:
        blocks = read_log(path)
        inj = set()
        if a.inject:
            for i in range(a.inject - 1, len(blocks), a.inject):
                blocks[i]["m"] *= 20
                inj.add(i)
        old, new = replay(blocks, False), replay(blocks, True)
        for tenant in sorted({b["tenant"] for b in blocks}):
            idx = [i for i, b in enumerate(blocks) if b["tenant"] == tenant]
            r = tenant_row(blocks, idx, inj, old, new)
            print("%s\t%s\t%d\t" % (path, tenant, r[0]) +
                  "\t".join("%.1f" % v for v in r[1:9]) +
                  "\t%.3f\t%.3f\t%d\t%d\t%d" % r[9:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
