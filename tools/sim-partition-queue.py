#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""What a plain queue reaches on one model: the cores cut once into servers.

A reference for coloc-sim's 64-core QoS-QPS against --capacity's ceiling
(docs/measurements/simulator.md, 2026-12-06 12:40): the cores split into
fixed servers (core counts of the model's table whose whole-model time is
within QoS, at most MAX_SERVERS of them: a tenant's lanes), Poisson
arrivals, each query to the server that ends it first, first come first
served; the most QPS at which at least 95 % of the queries end within QoS,
for the best splits. A schedule anyone could run, not a bound.

  tools/sim-partition-queue.py '{24: 7.54, 32: 6.03}' QOS_MS [MAX_SERVERS [CORES]]

The curve: core count -> whole-model ms alone (coloc-sim --capacity --cores N
--tenant MODEL:QOS prints the fastest within N cores).
"""
import ast
import random
import sys


def fraction_within(rate, servers, qos, n=20000, seed=1):
    rng = random.Random(seed)
    free = [0.0] * len(servers)
    t, within = 0.0, 0
    for _ in range(n):
        t += rng.expovariate(rate)
        best = min(range(len(servers)), key=lambda i: (max(t, free[i]) + servers[i], servers[i]))
        end = max(t, free[best]) + servers[best]
        free[best] = end
        within += end - t <= qos
    return within / n


def most_qps(servers, qos):
    lo, hi = 0.0, 2.0 * len(servers) / min(servers)
    for _ in range(22):
        mid = (lo + hi) / 2
        if fraction_within(mid, servers, qos) >= 0.95:
            lo = mid
        else:
            hi = mid
    return lo


def splits(counts, left, smallest, most):
    if most == 0:
        return
    for k in counts:
        if smallest <= k <= left:
            yield [k]
            for rest in splits(counts, left - k, k, most - 1):
                yield [k] + rest


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    curve = {int(k): float(v) for k, v in ast.literal_eval(sys.argv[1]).items()}
    qos = float(sys.argv[2])
    most = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    cores = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    counts = sorted(k for k, ms in curve.items() if ms <= qos)
    if not counts:
        sys.exit("no core count of the curve is within QoS")
    found = sorted(((most_qps([curve[k] * 1e-3 for k in s], qos * 1e-3), tuple(s))
                    for s in splits(counts, cores, 0, most)), reverse=True)
    for qps, s in found[:3]:
        print("%.1f QPS  servers of %s cores (%d of %d)" % (qps, ", ".join(map(str, s)), sum(s), cores))


if __name__ == "__main__":
    main()
