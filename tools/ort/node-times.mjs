// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Per-node times from ONNX Runtime's own profile (run.mjs --profile): each
// node's median kernel time over the profiled runs (the warm-up run left
// out), then the sum per operator, to set beside coloc-run --json's
// per-layer medians of the same model on the same core.
//
//   node tools/ort/node-times.mjs PROFILE.json [--nodes]
//
// Prints one line per operator (nodes, median us summed, share of the
// total) and, with --nodes, one line per node in the order they ran.
import { readFileSync } from 'node:fs';

const [file, flag] = process.argv.slice(2);
if (!file || (flag && flag !== '--nodes')) {
	process.stderr.write('usage: node tools/ort/node-times.mjs PROFILE.json [--nodes]\n');
	process.exit(2);
}
const events = JSON.parse(readFileSync(file, 'utf8')).filter(
	(e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
const nodes = new Map();
for (const e of events) {
	const n = nodes.get(e.name) ?? { op: e.args.op_name, index: e.args.node_index,
					  shape: JSON.stringify(e.args.output_type_shape), us: [] };
	n.us.push(e.dur);
	nodes.set(e.name, n);
}
const median = (v) => {
	const s = [...v].sort((a, b) => a - b), h = s.length >> 1;
	return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
const ops = new Map();
let total = 0;
for (const [name, n] of nodes) {
	n.median = median(n.us.length > 1 ? n.us.slice(1) : n.us);
	total += n.median;
	const o = ops.get(n.op) ?? { nodes: 0, us: 0 };
	o.nodes++;
	o.us += n.median;
	ops.set(n.op, o);
	n.name = name.replace(/_kernel_time$/, '');
}
for (const [op, o] of [...ops].sort((a, b) => b[1].us - a[1].us))
	console.log(`${op.padEnd(24)} ${String(o.nodes).padStart(4)} nodes ${(o.us / 1000).toFixed(3).padStart(9)} ms ${(100 * o.us / total).toFixed(1).padStart(5)} %`);
console.log(`${'total'.padEnd(24)} ${String(nodes.size).padStart(4)} nodes ${(total / 1000).toFixed(3).padStart(9)} ms`);
if (flag)
	for (const n of nodes.values())
		console.log(`${String(n.index).padStart(4)} ${n.name.padEnd(40)} ${n.op.padEnd(20)} ${(n.median / 1000).toFixed(3).padStart(8)} ms ${n.shape}`);
