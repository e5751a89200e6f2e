# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""What tools/trace-blocks.py and tools/trace-dispatch.py share: a tracefs
text dump's lines read as scheduler events, and coloc-load's percentile."""
import math
import re

LINE = re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$')
FIELD = re.compile(r'(\w+)=(\S+)')


def events(path):
    """(tid, cpu, t, event, fields) per event line: fields a dict of its
    name=value pairs, for sched_switch a pair of dicts (prev, next)."""
    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        rest = m.group(6)
        if m.group(5) == 'sched_switch':
            fields = tuple(dict(FIELD.findall(x)) for x in rest.split(' ==> '))
        else:
            fields = dict(FIELD.findall(rest))
        yield m.group(2), int(m.group(3)), float(m.group(4)), m.group(5), fields


def pct(values, p):
    """Nearest-rank percentile, as coloc-load takes it; nan when empty."""
    v = sorted(values)
    if not v:
        return float('nan')
    return v[max(1, math.ceil(p / 100.0 * len(v))) - 1]
