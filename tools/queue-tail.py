#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Queueing's share of a served latency's tail, for one query at a time.

A model served alone holds its executor from its first command to its
completion (colocd's latency less its `queued` part: the service S); a query
that arrives meanwhile waits (the wait W). With Poisson arrivals, W follows
from the service times by Lindley's recursion, W' = max(0, W + S - gap).
This script draws S (and the client's hop H, outside colocd) jointly from the
queries of a `coloc-load --samples` file, runs the recursion over a million
Poisson arrivals at the given rate, and prints the percentiles of H + S
(no queueing: what the serving path controls) and of H + W + S (the latency
a client sees at that load), and for deterministic service (M/D/1) the
closed form of the wait (Erlang's formula) beside its simulation, so that
the recursion checks itself.

  tools/queue-tail.py --samples FILE --qps Q [--tenant NAME] [--solo-ms X]
  tools/queue-tail.py --service-ms D --load RHO

docs/design/serving-path.md uses it (section "Queueing's share").
"""
import argparse
import csv
import math
import random
import sys


def pct(sorted_v, p):
    """Nearest-rank percentile, as coloc-load takes it."""
    if not sorted_v:
        return 0.0
    rank = max(1, math.ceil(p / 100.0 * len(sorted_v)))
    return sorted_v[rank - 1]


def md1_wait_cdf(x, lam, d):
    """P(W <= x) for M/D/1 (Erlang): (1-rho) sum_k (lam(kd-x))^k/k! e^(-lam(kd-x))."""
    rho = lam * d
    total = 0.0
    for k in range(int(math.floor(x / d)) + 1):
        u = lam * (k * d - x)
        total += u ** k / math.factorial(k) * math.exp(-u)
    return (1 - rho) * total


def md1_sojourn_pct(p, lam, d):
    """The p-th percentile of W + d for M/D/1, by bisection on Erlang's formula."""
    q = p / 100.0
    if md1_wait_cdf(0.0, lam, d) >= q:
        return d
    lo, hi = 0.0, d
    while md1_wait_cdf(hi, lam, d) < q:
        lo, hi = hi, hi * 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if md1_wait_cdf(mid, lam, d) < q:
            lo = mid
        else:
            hi = mid
    return hi + d


def simulate(pairs, lam, n, seed):
    """Sojourns H + W + S of n Poisson arrivals, (S, H) drawn from pairs; and P(W > 0)."""
    rng = random.Random(seed)
    wait, waited, out = 0.0, 0, []
    service_prev = 0.0
    for i in range(n):
        s, h = pairs[rng.randrange(len(pairs))]
        if i:
            wait = max(0.0, wait + service_prev - rng.expovariate(lam))
        waited += wait > 0
        out.append(h + wait + s)
        service_prev = s
    out.sort()
    return out, waited / n


def read_samples(path, tenant):
    pairs = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if tenant and row["tenant"] != tenant:
                continue
            service = float(row["colocd_ms"]) - float(row["queued_ms"])
            pairs.append((service, float(row["hop_ms"])))
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", help="a coloc-load --samples file")
    ap.add_argument("--tenant", help="its tenant to take (default: every line)")
    ap.add_argument("--qps", type=float, help="the Poisson arrival rate, queries/s")
    ap.add_argument("--service-ms", type=float, help="deterministic service, no samples")
    ap.add_argument("--load", type=float, help="with --service-ms: arrival rate x service")
    ap.add_argument("--solo-ms", type=float, help="the profiled solo latency, for ratios")
    ap.add_argument("--n", type=int, default=1000000, help="arrivals simulated")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    if a.samples:
        if not a.qps or a.qps <= 0:
            ap.error("--samples needs --qps above 0")
        pairs = read_samples(a.samples, a.tenant)
        if not pairs:
            sys.exit("queue-tail: no samples in %s%s" %
                     (a.samples, " for " + a.tenant if a.tenant else ""))
        lam = a.qps / 1000.0
    elif a.service_ms and a.load:
        if not 0 < a.load < 1:
            ap.error("--load is in (0, 1)")
        pairs = [(a.service_ms, 0.0)]
        lam = a.load / a.service_ms
    else:
        ap.error("--samples FILE --qps Q, or --service-ms D --load RHO")

    services = sorted(s for s, _ in pairs)
    alone = sorted(s + h for s, h in pairs)
    mean_s = sum(services) / len(services)
    med_s = pct(services, 50)
    sojourn, p_wait = simulate(pairs, lam, a.n, a.seed)
    print("%d samples; service (colocd less queued) mean %.3f, p50 %.3f, p95 %.3f ms; "
          "load %.3f" % (len(pairs), mean_s, med_s, pct(services, 95), lam * mean_s))
    rows = [("no queueing (hop + service)", alone),
            ("Poisson arrivals (hop + wait + service)", sojourn)]
    for name, v in rows:
        line = "%-42s p50 %.3f  p95 %.3f ms" % (name, pct(v, 50), pct(v, 95))
        if a.solo_ms:
            line += "   %.3f / %.3f x solo" % (pct(v, 50) / a.solo_ms, pct(v, 95) / a.solo_ms)
        print(line)
    print("P(wait > 0) %.4f; queueing adds %.3f ms at p95 (%.3f x the no-queueing p95)" %
          (p_wait, pct(sojourn, 95) - pct(alone, 95), pct(sojourn, 95) / pct(alone, 95)))
    lam_d = lam
    print("M/D/1 at service %.3f ms, load %.3f: p50 %.3f, p95 %.3f ms (%.3f x service), "
          "Erlang's formula" % (med_s, lam_d * med_s, md1_sojourn_pct(50, lam_d, med_s),
                                md1_sojourn_pct(95, lam_d, med_s),
                                md1_sojourn_pct(95, lam_d, med_s) / med_s))


if __name__ == "__main__":
    main()
