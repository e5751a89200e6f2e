#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Slow stretches of a tenant's 2-core blocks, per tenant of colocd block logs.

A tenant's 2-core blocks are grouped by its 1-core blocks: a group is the
2-core blocks between two of its 1-core blocks (in end order). A group is
slow when its median measured / table (alone_us) is over 2. Per tenant:
the groups, the slow ones, the 2-core blocks in them and their median
measured / table against the other groups', the blocks over 3x their table
in slow groups and in the others, and the median of the 2-core blocks
before the tenant's first 1-core block. Where something the executor keeps
from one block to the next makes its 2-core blocks slow (2026-12-06: a
team of 2 left on one core, docs/measurements/executor.md), the groups are
all slow or all not.

  tools/block-log-spells.py LOG...
"""
import collections
import csv
import statistics
import sys


def groups(blocks):
    """(before_any_1core, [measured/table of each 2-core block]) per group."""
    out, cur, first = [], [], True
    for b in blocks:
        if b['cores'] == '1':
            if cur:
                out.append((first, cur))
            cur, first = [], False
        elif b['cores'] == '2':
            cur.append(float(b['measured_us']) / float(b['alone_us']))
    if cur:
        out.append((first, cur))
    return out


def main(paths):
    for path in paths:
        with open(path) as f:
            rows = sorted(csv.DictReader(f, delimiter='\t'), key=lambda r: float(r['end_ms']))
        by_tenant = collections.defaultdict(list)
        for r in rows:
            by_tenant[r['tenant']].append(r)
        print(path)
        for tenant, blocks in by_tenant.items():
            g = groups(blocks)
            slow = [r for _, r in g if statistics.median(r) > 2]
            fast = [r for _, r in g if statistics.median(r) <= 2]
            ns, nf = sum(map(len, slow)), sum(map(len, fast))
            if not ns + nf:
                continue
            med = lambda gs: statistics.median([x for r in gs for x in r]) if gs else float('nan')
            over = lambda gs: sum(x > 3 for r in gs for x in r)
            lead = [statistics.median(r) for f, r in g if f]
            print(f'  {tenant:16s} groups {len(g):4d}, slow {len(slow):3d}: 2-core blocks '
                  f'{ns:5d} of {ns + nf:5d} ({100 * ns / (ns + nf):4.1f} %) at {med(slow):.2f} x table '
                  f'(others {med(fast):.2f}); over 3x {over(slow)} in slow groups, {over(fast)} in '
                  f'the others; before any 1-core block {lead[0] if lead else float("nan"):.2f}')


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
