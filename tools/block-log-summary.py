#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Where a policy's queries spend their blocks, per tenant of colocd block logs.

For each --block-log file given (bench-qos's blocks-MIX-POLICY.tsv) and each
tenant in it: queries, blocks and commands a query (the blocks of a
plan-ahead command are logged together, each with the command's round trip,
so consecutive blocks of a query with the same round trip and adjoining
layers are one command), the share of blocks on each core count, measured /
table (alone_us) by core count, a query's measured time, its core-ms (cores
x measured, summed), colocd's cost a command (its round trip less its
blocks' measured time) and the waits between a query's commands. For the
whole log: the share of blocks decided at a level above 1.0 (the level
column: what the policy assumed), and of those whose cores' estimated
level was above 1.0 as they ended (core_level: whatever the policy reads;
logs from before it have none), each of the blocks that started with
another tenant's block in flight (corunners > 0) and of the rest.
Percentiles are nearest-rank, as coloc-load's.

  tools/block-log-summary.py LOG...
"""
import collections
import csv
import math
import sys


def pct(values, p):
    v = sorted(values)
    if not v:
        return float('nan')
    return v[max(1, math.ceil(p / 100.0 * len(v))) - 1]


def mean(v):
    return sum(v) / len(v) if v else float('nan')


def commands(blocks):
    """A query's blocks (in end order) as its commands, lists of blocks."""
    cmds = []
    for b in blocks:
        if (cmds and cmds[-1][-1]['round_trip_us'] == b['round_trip_us']
                and cmds[-1][-1]['last'] == b['first']):
            cmds[-1].append(b)
        else:
            cmds.append([b])
    return cmds


def summarize(path):
    with open(path) as f:
        rows = list(csv.DictReader(f, delimiter='\t'))
    by_query = collections.defaultdict(list)
    for r in rows:
        by_query[(r['tenant'], r['query'])].append(r)
    per = collections.defaultdict(lambda: collections.defaultdict(list))
    for (tenant, _), blocks in by_query.items():
        blocks.sort(key=lambda r: (float(r['end_ms']), int(r['first'])))
        d = per[tenant]
        cmds = commands(blocks)
        d['blocks'].append(len(blocks))
        d['cmds'].append(len(cmds))
        d['core_us'].append(sum(int(b['cores']) * float(b['measured_us']) for b in blocks))
        d['measured'].append(sum(float(b['measured_us']) for b in blocks))
        spans = []
        for c in cmds:
            rt = float(c[0]['round_trip_us'])
            d['cost'].append(rt - sum(float(b['measured_us']) for b in c))
            end = float(c[-1]['end_ms'])
            spans.append((end - rt / 1000, end))
        d['waits'].append(sum((b[0] - a[1]) * 1000 for a, b in zip(spans, spans[1:])))
        for b in blocks:
            d['cores'].append(int(b['cores']))
            if float(b['alone_us']) > 0:
                d['ratio', int(b['cores'])].append(float(b['measured_us']) / float(b['alone_us']))
    print(f"== {path}: {len(rows)} blocks")
    print_levels(rows)
    for tenant, d in sorted(per.items()):
        counts = collections.Counter(d['cores'])
        print(f"  {tenant}: {len(d['blocks'])} queries, blocks a query {mean(d['blocks']):.2f}, "
              f"commands a query {mean(d['cmds']):.2f}")
        for n in sorted(counts):
            print(f"    on {n} cores: {100 * counts[n] / len(d['cores']):.0f} % of the blocks, "
                  f"measured / table p50 {pct(d['ratio', n], 50):.2f}")
        print(f"    a query: measured p50 {pct(d['measured'], 50) / 1000:.2f} ms, core-ms p50 "
              f"{pct(d['core_us'], 50) / 1000:.2f} (mean {mean(d['core_us']) / 1000:.2f})")
        print(f"    colocd a command p50 {pct(d['cost'], 50):.0f} us (p95 {pct(d['cost'], 95):.0f}), "
              f"a query {mean(d['cost']) * mean(d['cmds']):.0f} us; waits between commands "
              f"{mean(d['waits']):.0f} us a query")


def above_one(rows, column):
    """Share (%) of rows whose column is above 1.0, as text; '-' when none."""
    if not rows:
        return '-'
    return f"{100 * sum(float(r[column]) > 1.0 for r in rows) / len(rows):.1f} %"


def print_levels(rows):
    beside = [r for r in rows if int(r['corunners']) > 0]
    alone = [r for r in rows if int(r['corunners']) == 0]
    for column, what in (('level', 'decided at a level above 1.0'),
                         ('core_level', 'cores\' estimated level above 1.0')):
        if rows and column not in rows[0]:
            continue
        print(f"  {what}: {above_one(rows, column)} (beside others {above_one(beside, column)} "
              f"of {len(beside)}, alone {above_one(alone, column)} of {len(alone)})")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ('-h', '--help'):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    for path in sys.argv[1:]:
        summarize(path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
