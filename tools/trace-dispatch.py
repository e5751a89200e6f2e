#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Where a block's dispatch went, from a sched trace of colocd and one executor.

Reads a tracefs text dump (events sched_waking, sched_switch and
sched_migrate_task at least; how to record one is in
docs/measurements/serving-latency.md, 2026-12-05) and colocd's and the
executor's thread ids. Each dispatch is colocd waking the executor's
threads (its doorbell's FUTEX_WAKE); for each woken thread it finds when
the thread ran, and what its CPU ran at the wake and before it. Prints the
wake-to-run percentiles of the command thread (the executor's main thread)
and of the pool threads, how many wakes found colocd on the thread's CPU,
what held the CPU when a wake waited over --slow-us, and with --show N the
N slowest dispatches event by event.

  tools/trace-dispatch.py --trace trace.txt --colocd-tids 'TID...' \\
      --executor-pid PID --executor-tids 'TID...' [--show N]
"""
import argparse
import bisect
import collections
import re

from sched_trace import LINE, events, pct

GROUP_GAP_S = 500e-6  # wakes of one doorbell come within microseconds


def read_wakes(path, colocd, executor):
    """colocd's wakes of executor threads, each with when and where it ran."""
    running = {}  # cpu -> comm
    pending = {}  # tid -> its wake, until it runs
    wakes, dispatches, last = [], [], -1.0
    for tid, cpu, t, event, fields in events(path):
        if event == 'sched_switch':
            prev, nxt = fields
            w = pending.pop(nxt['next_pid'], None)
            if w:
                w['run'], w['held_by'] = t, prev['prev_comm']
            for w in pending.values():
                if w['cpu'] == cpu and nxt['next_pid'] != '0':
                    w['between'].add(nxt['next_comm'])
            running[cpu] = nxt['next_comm']
        elif event == 'sched_waking':
            f = fields
            if tid not in colocd or f['pid'] not in executor:
                continue
            if t - last > GROUP_GAP_S:
                dispatches.append(t)
            last = t
            target = int(f['target_cpu'])
            w = dict(tid=f['pid'], wake=t, cpu=target, waker_cpu=cpu,
                     at_wake=running.get(target, '?'), between=set(),
                     dispatch=len(dispatches) - 1)
            pending[f['pid']] = w
            wakes.append(w)
        elif event == 'sched_migrate_task':
            f = fields
            if f['pid'] in pending:
                pending[f['pid']]['cpu'] = int(f['dest_cpu'])
    return [w for w in wakes if 'run' in w], dispatches


def report(kind, wakes, slow_us):
    us = [(w['run'] - w['wake']) * 1e6 for w in wakes]
    if not us:
        return
    print('%-15s wake -> run us: n %d  p50 %.0f  p95 %.0f  p99 %.0f  max %.0f' %
          (kind, len(us), pct(us, 50), pct(us, 95), pct(us, 99), max(us)))
    same = sum(w['cpu'] == w['waker_cpu'] for w in wakes)
    print('   on colocd\'s CPU: %d of %d' % (same, len(wakes)))
    slow = collections.Counter()
    for w in wakes:
        if (w['run'] - w['wake']) * 1e6 > slow_us:
            held = 'idle' if w['at_wake'].startswith('swapper') else w['at_wake']
            slow[(held, ', '.join(sorted(w['between'])))] += 1
    for (held, between), n in slow.most_common(10):
        print('   over %d us: %3d  its CPU ran %s%s' %
              (slow_us, n, held, ', then ' + between if between else ''))


def show(path, dispatches, per_dispatch, n):
    times, lines = [], []
    for line in open(path):
        m = LINE.match(line)
        if m:
            times.append(float(m.group(4)))
            lines.append(re.sub(r'\s+', ' ', m.group(0).strip()))
    worst = sorted(per_dispatch.items(), key=lambda kv: -max(kv[1]))[:n]
    for d, us in worst:
        t0 = dispatches[d]
        print('--- dispatch at %.6f: threads ran after %s us' %
              (t0, ', '.join('%.0f' % u for u in us)))
        a = bisect.bisect_left(times, t0 - 100e-6)
        b = bisect.bisect_right(times, t0 + max(us) / 1e6 + 300e-6)
        for k in range(a, b):
            print('%+10.1f  %s' % ((times[k] - t0) * 1e6, lines[k][:180]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trace', required=True, help='the tracefs text dump')
    ap.add_argument('--colocd-tids', required=True, help="colocd's thread ids")
    ap.add_argument('--executor-pid', required=True, help="the executor's pid")
    ap.add_argument('--executor-tids', required=True, help="the executor's thread ids")
    ap.add_argument('--slow-us', type=int, default=200)
    ap.add_argument('--show', type=int, default=0, help='the N slowest dispatches in full')
    a = ap.parse_args()
    colocd = set(a.colocd_tids.split())
    executor = set(a.executor_tids.split()) | {a.executor_pid}
    wakes, dispatches = read_wakes(a.trace, colocd, executor)
    print('%d dispatches, %d wakes of the executor\'s threads that ran' %
          (len(dispatches), len(wakes)))
    report('command thread', [w for w in wakes if w['tid'] == a.executor_pid], a.slow_us)
    report('pool threads', [w for w in wakes if w['tid'] != a.executor_pid], a.slow_us)
    per_dispatch = collections.defaultdict(list)
    for w in wakes:
        per_dispatch[w['dispatch']].append((w['run'] - w['wake']) * 1e6)
    whole = [max(v) for v in per_dispatch.values()]
    print('whole team running, us: p50 %.0f  p95 %.0f  max %.0f' %
          (pct(whole, 50), pct(whole, 95), max(whole) if whole else 0))
    if a.show:
        show(a.trace, dispatches, per_dispatch, a.show)


if __name__ == '__main__':
    main()
