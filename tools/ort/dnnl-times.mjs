// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Per-primitive times of coloc's whole-model runs, from oneDNN's own
// verbose log: each primitive's median over the last whole runs, in the
// order they ran, and the sum per kind and implementation. These are the
// times in context (inputs, outputs and weights wherever the previous
// layers left them), to set beside node-times.mjs's ONNX Runtime nodes;
// coloc-run --json's per-layer medians are each layer alone, run again and
// again in a warm cache.
//
//   DNNL_VERBOSE=1 coloc-run MODEL --cores 0 --kernel 0 --iters N --json >LOG
//   node tools/ort/dnnl-times.mjs LOG [--nodes]
//
// coloc-run runs the whole model last, so the log ends with its runs: the
// run's length is the shortest period the log's tail repeats with, and the
// runs counted are the trailing ones that repeat it exactly.
import { readFileSync } from 'node:fs';

const [file, flag] = process.argv.slice(2);
if (!file || (flag && flag !== '--nodes')) {
	process.stderr.write('usage: node tools/ort/dnnl-times.mjs LOG [--nodes]\n');
	process.exit(2);
}
const lines = readFileSync(file, 'utf8').split('\n').filter(
	(l) => /^(onednn|dnnl)_verbose,exec,/.test(l));
// a primitive's identity: the line without its time
const key = (l) => l.slice(0, l.lastIndexOf(','));
const keys = lines.map(key);
const n = keys.length;
let period = 0;
for (let p = 1; 2 * p <= n && !period; p++) {
	let same = true;
	for (let i = n - 2 * p; i < n - p && same; i++)
		same = keys[i] === keys[i + p];
	if (same)
		period = p;
}
if (!period) {
	process.stderr.write(`dnnl-times.mjs: ${file}: no two whole runs at the end of the log (run coloc-run with --iters 2 or more)\n`);
	process.exit(1);
}
let runs = 1;
for (;; runs++) {
	const start = n - (runs + 1) * period;
	if (start < 0 || keys.slice(start, start + period).some((k, i) => k !== keys[n - period + i]))
		break;
}
const median = (v) => {
	const s = [...v].sort((a, b) => a - b), h = s.length >> 1;
	return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
const prims = [];
for (let j = 0; j < period; j++) {
	const f = lines[n - period + j].split(',');
	const ms = [];
	for (let r = 0; r < runs; r++)
		ms.push(Number(lines[n - (r + 1) * period + j].split(',').at(-1)));
	const post = lines[n - period + j].match(/attr-post-ops:(\S+)/);
	prims.push({ kind: f[3], impl: f[4], shape: f.at(-2), post: post ? post[1] : '', ms: median(ms) });
}
const groups = new Map();
let total = 0;
for (const p of prims) {
	const g = groups.get(`${p.kind} ${p.impl}`) ?? { nr: 0, ms: 0 };
	g.nr++;
	g.ms += p.ms;
	groups.set(`${p.kind} ${p.impl}`, g);
	total += p.ms;
}
console.log(`${period} primitives a run, medians of the last ${runs} runs`);
for (const [name, g] of [...groups].sort((a, b) => b[1].ms - a[1].ms))
	console.log(`${name.padEnd(40)} ${String(g.nr).padStart(4)} prims ${g.ms.toFixed(3).padStart(9)} ms ${(100 * g.ms / total).toFixed(1).padStart(5)} %`);
console.log(`${'total'.padEnd(40)} ${String(period).padStart(4)} prims ${total.toFixed(3).padStart(9)} ms`);
if (flag === '--nodes')
	prims.forEach((p, i) => console.log(`${String(i).padStart(4)} ${p.kind.padEnd(12)} ${p.impl.padEnd(26)} ${p.ms.toFixed(3).padStart(8)} ms  ${p.shape} ${p.post}`));
