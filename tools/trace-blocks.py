#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""What the CPUs did during each block of one process, from a sched trace.

Reads a tracefs text dump (sched_switch and sched_waking on every CPU,
recorded as docs/measurements/serving-latency.md's 2026-12-06 entry shows)
and the thread ids of one executor (coloc-executor, or coloc-run's team with
--wait team) and of whoever rings its doorbell (colocd, or coloc-run's
ringer thread). A block starts when a ringer wakes one of the threads and
ends when one of the threads wakes a ringer (the completion: the executor's
eventfd to colocd, coloc-run's count of runs to its ringer); without such a
wake, at the last of the threads' sleeps before the next ring (the team
parked again). For each block it adds up, over all CPUs, the time the
threads ran, the time a CPU was idle and the time other tasks ran (by name),
and counts the threads' sleeps (a barrier's futex after libgomp's spin),
their wake-to-run delays and the time they could run and did not (woken or
preempted, waiting for their CPU). Prints the blocks' wall times, the slow
ones (over --slow x the median) against the others, part by part, and the
spells of consecutive slow blocks; --blocks FILE writes every block.

  tools/trace-blocks.py --trace trace.txt --tids 'TID...' --ringer-tids 'TID...' \\
      [--slow 2] [--blocks FILE]
"""
import argparse
import bisect
import collections
import re

from sched_trace import events, pct

RING_GAP_S = 500e-6  # the wakes of one ring come within microseconds


def read(path, ours, ringers):
    """Per-CPU run segments, the rings, our threads' sleeps and wake-to-run delays."""
    segs = collections.defaultdict(list)  # cpu -> [(t0, t1, pid, comm)]
    cur = {}  # cpu -> (since, pid, comm)
    rings, ends, sleeps, wakes = [], [], [], []  # times; times; (t, tid); (t_wake, delay)
    waking = {}  # our tid -> time of its last waking, until it runs
    ready = {}  # our tid -> since when it could run and did not (woken or preempted)
    waits = []  # (t0, t1): one of our threads runnable, not running
    first = last = None
    for tid, cpu, t, event, fields in events(path):
        first = t if first is None else first
        last = t
        if event == 'sched_switch':
            prev, nxt = fields
            since = cur.get(cpu)
            if since:
                segs[cpu].append((since[0], t, since[1], since[2]))
            cur[cpu] = (t, nxt.get('next_pid', '?'), nxt.get('next_comm', '?'))
            if prev.get('prev_pid') in ours and prev.get('prev_state', 'R')[0] in 'SD':
                sleeps.append((t, prev['prev_pid']))
            elif prev.get('prev_pid') in ours:
                ready.setdefault(prev['prev_pid'], t)  # preempted
            w = waking.pop(nxt.get('next_pid'), None)
            if w is not None:
                wakes.append((w, t - w))
            r = ready.pop(nxt.get('next_pid'), None)
            if r is not None:
                waits.append((r, t))
        elif event == 'sched_waking':
            f = fields
            if tid in ours and f.get('pid') in ringers:
                ends.append(t)
            if f.get('pid') not in ours:
                continue
            waking.setdefault(f['pid'], t)
            ready.setdefault(f['pid'], t)
            if tid in ringers and (not rings or t - rings[-1] > RING_GAP_S):
                rings.append(t)
    for cpu, since in cur.items():
        segs[cpu].append((since[0], last, since[1], since[2]))
    return segs, rings, ends, sleeps, wakes, sorted(waits), (first, last)


def blocks_of(rings, ends, sleeps):
    """[start, end) of each block: a ring until the threads' first wake of a ringer after it,
    else until their last sleep before the next ring; the block at the trace's end is left out."""
    sleep_t = [t for t, _ in sleeps]
    out = []
    for i, start in enumerate(rings[:-1]):
        nxt = rings[i + 1]
        k = bisect.bisect_left(ends, start)
        if k < len(ends) and ends[k] < nxt:
            out.append((start, ends[k]))
            continue
        j = bisect.bisect_left(sleep_t, nxt) - 1
        if j >= 0 and sleep_t[j] >= start:
            out.append((start, sleep_t[j]))
    return out


def account(blocks, segs, sleeps, wakes, waits, ours):
    """Per block: ours / idle / other ms (summed over CPUs), others by name, sleeps, wakes,
    and the ms our threads could run and did not (woken or preempted, summed over them)."""
    res = [dict(start=s, wall=(e - s) * 1e3, ours=0.0, idle=0.0, other=0.0, ready=0.0,
                by=collections.Counter(), sleeps=0, wake_us=[]) for s, e in blocks]
    starts = [s for s, _ in blocks]
    for a, z in waits:
        i = max(0, bisect.bisect_right(starts, a) - 1)
        while i < len(blocks) and blocks[i][0] < z:
            s, e = blocks[i]
            if e > a:
                res[i]['ready'] += (min(z, e) - max(a, s)) * 1e3
            i += 1
    for cpu_segs in segs.values():
        k = 0
        for b, (s, e) in zip(res, blocks):
            while k < len(cpu_segs) and cpu_segs[k][1] <= s:
                k += 1
            i = k
            while i < len(cpu_segs) and cpu_segs[i][0] < e:
                t0, t1, pid, comm = cpu_segs[i]
                ms = (min(t1, e) - max(t0, s)) * 1e3
                if pid in ours:
                    b['ours'] += ms
                elif pid == '0':
                    b['idle'] += ms
                else:
                    b['other'] += ms
                    b['by'][re.sub(r'[/:]\d+.*$', '', comm)] += ms
                i += 1
    for series, key in ((sleeps, 'sleeps'), (wakes, 'wake_us')):
        k = 0
        for b, (s, e) in zip(res, blocks):
            while k < len(series) and series[k][0] < s:
                k += 1
            while k < len(series) and series[k][0] < e:
                if key == 'sleeps':
                    b['sleeps'] += 1
                else:
                    b['wake_us'].append(series[k][1] * 1e6)
                k += 1
    return res


def summary(name, bs):
    if not bs:
        return
    mean = lambda k: sum(b[k] for b in bs) / len(bs)
    wake = [w for b in bs for w in b['wake_us']]
    by = collections.Counter()
    for b in bs:
        by.update(b['by'])
    top = ', '.join('%s %.2f' % (c, ms / len(bs)) for c, ms in by.most_common(4))
    print('%-7s %5d blocks: wall %.2f ms (p50 %.2f), CPU time ours %.2f, idle %.2f, '
          'other %.2f ms a block%s; ours runnable and not running %.2f ms a block; our sleeps '
          '%.1f a block, wake->run us p50 %.0f p95 %.0f'
          % (name, len(bs), mean('wall'), pct([b['wall'] for b in bs], 50), mean('ours'),
             mean('idle'), mean('other'), ' (' + top + ')' if top else '', mean('ready'),
             mean('sleeps'), pct(wake, 50), pct(wake, 95)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trace', required=True, help='the tracefs text dump')
    ap.add_argument('--tids', required=True, help="the executor's (or coloc-run team's) tids")
    ap.add_argument('--ringer-tids', required=True, help="colocd's (or coloc-run's ringer's)")
    ap.add_argument('--slow', type=float, default=2.0, help='slow: over this x the median wall')
    ap.add_argument('--blocks', help='write every block here (TSV)')
    a = ap.parse_args()
    ringers = set(a.ringer_tids.split())
    ours = set(a.tids.split()) - ringers  # coloc-run's ringer is a thread of its own process
    segs, rings, ends, sleeps, wakes, waits, span = read(a.trace, ours, ringers)
    bs = account(blocks_of(rings, ends, sleeps), segs, sleeps, wakes, waits, ours)
    if not bs:
        print('no blocks: no ring of these threads by these ringers in the trace')
        return
    med = pct([b['wall'] for b in bs], 50)
    slow = [b for b in bs if b['wall'] > a.slow * med]
    print('%d blocks over %.1f s, wall p50 %.2f p95 %.2f max %.2f ms; %d over %.1fx the median'
          % (len(bs), span[1] - span[0], med, pct([b['wall'] for b in bs], 95),
             max(b['wall'] for b in bs), len(slow), a.slow))
    summary('others', [b for b in bs if b['wall'] <= a.slow * med])
    summary('slow', slow)
    run = []
    for b in bs + [None]:
        if b is not None and b['wall'] > a.slow * med:
            run.append(b)
            continue
        if len(run) >= 3:
            print('spell at %.3f s: %d blocks in %.2f s, %.1f-%.1fx the median' %
                  (run[0]['start'] - span[0], len(run), run[-1]['start'] - run[0]['start'],
                   min(x['wall'] for x in run) / med, max(x['wall'] for x in run) / med))
        run = []
    if a.blocks:
        with open(a.blocks, 'w') as f:
            f.write('start_s\twall_ms\tours_ms\tidle_ms\tother_ms\tready_ms\tsleeps\t'
                    'wake_p50_us\twake_max_us\tothers\n')
            for b in bs:
                f.write('%.6f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.0f\t%.0f\t%s\n' % (
                    b['start'] - span[0], b['wall'], b['ours'], b['idle'], b['other'],
                    b['ready'], b['sleeps'], pct(b['wake_us'], 50),
                    max(b['wake_us']) if b['wake_us'] else float('nan'),
                    ','.join('%s:%.2f' % kv for kv in b['by'].most_common(3))))


if __name__ == '__main__':
    main()
