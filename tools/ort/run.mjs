// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Runs an ONNX file with ONNX Runtime (CPU, npm onnxruntime-node, installed
// in build/ort by `make ort`) on the same raw inputs coloc-run reads, writes
// its output the way coloc-run --output does, and times it: the comparison
// test's references and `make bench-onnx`'s peer.
//
//   node tools/ort/run.mjs MODEL.onnx [--input FILE] [--output FILE]
//        [--write-input FILE] [--ref FILE] [--threads N] [--iters N] [--batch N]
//        [--dim NAME=VALUE]... [--profile PREFIX]
//
// --input: raw little-endian fp32, every graph input (initializers excluded)
// in graph order, row-major; int64/int32 inputs (token ids) are given as
// floats, as coloc-run takes them. --write-input writes a generated input of
// the right size and uses it (xorshift32 from seed 1: values in [-1, 1),
// token ids 0 or 1).
// --output: every graph output, in graph order, as raw little-endian fp32,
// one after the other. --ref: the same, each output cut to every s-th value
// (s = ceil(n / 4096) for an output of n values), as tests/data/ort/NAME.ref
// keeps it (tools/ort/make-refs.sh). --iters N: prints
// {"median_ms": ...} of N timed runs after one warm-up run. --threads: ORT's
// intra-op threads (default 1; inter-op 1, sequential execution, all graph
// optimizations on). --profile PREFIX: ONNX Runtime's own profile of the
// runs (per-node kernel times, chrome-trace JSON) into PREFIX_DATE.json.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REF_MAX_VALUES = 4096; // an output's values a ref keeps, at most
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'build', 'ort', 'package.json'));

function usage(code) {
	(code ? process.stderr : process.stdout).write(
		'usage: node tools/ort/run.mjs MODEL.onnx [--input FILE | --write-input FILE]\n' +
			'       [--output FILE] [--ref FILE] [--threads N] [--iters N] [--batch N]\n' +
			'       [--dim NAME=VALUE]... [--profile PREFIX]\n');
	process.exit(code);
}

function parseArgs(argv) {
	const o = { threads: 1, iters: 0, batch: 1, dims: {} };
	const num = (flag, v, lo, hi) => {
		const n = Number(v);
		if (!Number.isInteger(n) || n < lo || n > hi) {
			process.stderr.write(`run.mjs: ${flag} must be an integer in ${lo}..${hi}\n`);
			process.exit(2);
		}
		return n;
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const next = () => {
			if (i + 1 >= argv.length)
				usage(2);
			return argv[++i];
		};
		if (a === '--input')
			o.input = next();
		else if (a === '--write-input')
			o.writeInput = next();
		else if (a === '--output')
			o.output = next();
		else if (a === '--ref')
			o.ref = next();
		else if (a === '--profile')
			o.profile = next();
		else if (a === '--threads')
			o.threads = num(a, next(), 1, 1024);
		else if (a === '--iters')
			o.iters = num(a, next(), 1, 100000);
		else if (a === '--batch')
			o.batch = num(a, next(), 1, 1 << 24);
		else if (a === '--dim') {
			const [k, v] = next().split('=');
			o.dims[k] = num('--dim', v, 1, 1 << 24);
		} else if (a === '-h' || a === '--help')
			usage(0);
		else if (!o.model && !a.startsWith('-'))
			o.model = a;
		else
			usage(2);
	}
	if (!o.model || (o.input && o.writeInput))
		usage(2);
	return o;
}

// A graph input's concrete shape: the first symbolic dim is the batch.
function concreteShape(meta, o) {
	return meta.shape.map((d, i) => {
		if (typeof d === 'number' && d > 0)
			return d;
		if (i === 0)
			return o.batch;
		if (typeof d === 'string' && d in o.dims)
			return o.dims[d];
		process.stderr.write(
			`run.mjs: input '${meta.name}' dim ${i} is '${d}': give it with --dim ${d}=VALUE\n`);
		process.exit(2);
	});
}

// One xorshift32 stream from seed 1 over every input in order: floats in
// [-1, 1), token ids (int64/int32 inputs) 0 or 1, valid for any vocabulary.
function generated(counts, metas) {
	const v = new Float32Array(counts.reduce((a, b) => a + b, 0));
	let x = 1, i = 0;
	counts.forEach((n, k) => {
		const ids = metas[k].type === 'int64' || metas[k].type === 'int32';
		for (let end = i + n; i < end; i++) {
			x ^= x << 13;
			x >>>= 0;
			x ^= x >>> 17;
			x ^= x << 5;
			x >>>= 0;
			v[i] = ids ? x % 2 : (x >>> 8) / 8388608 - 1;
		}
	});
	return v;
}

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const ort = require('onnxruntime-node');
	const session = await ort.InferenceSession.create(o.model, {
		executionProviders: ['cpu'],
		intraOpNumThreads: o.threads,
		interOpNumThreads: 1,
		executionMode: 'sequential',
		graphOptimizationLevel: 'all',
		...(o.profile ? { enableProfiling: true, profileFilePrefix: o.profile } : {}),
	});
	const metas = session.inputMetadata.filter((m) => m.isTensor);
	const shapes = metas.map((m) => concreteShape(m, o));
	const counts = shapes.map((s) => s.reduce((a, b) => a * b, 1));
	const total = counts.reduce((a, b) => a + b, 0);
	let data;

	if (o.input) {
		const buf = readFileSync(o.input);
		if (buf.length !== total * 4) {
			process.stderr.write(`run.mjs: --input ${o.input}: ${buf.length} bytes, ` +
					     `expected ${total * 4} (${total} fp32 values)\n`);
			process.exit(1);
		}
		data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
	} else {
		data = generated(counts, metas);
		if (o.writeInput)
			writeFileSync(o.writeInput, Buffer.from(data.buffer));
	}
	const feeds = {};
	let off = 0;
	metas.forEach((m, i) => {
		const v = data.subarray(off, off + counts[i]);
		off += counts[i];
		if (m.type === 'int64')
			feeds[m.name] = new ort.Tensor('int64', BigInt64Array.from(v, (x) => BigInt(x)), shapes[i]);
		else if (m.type === 'int32')
			feeds[m.name] = new ort.Tensor('int32', Int32Array.from(v), shapes[i]);
		else
			feeds[m.name] = new ort.Tensor('float32', Float32Array.from(v), shapes[i]);
	});
	let res = await session.run(feeds);
	if (o.iters) {
		const ms = [];
		for (let i = 0; i < o.iters; i++) {
			const t0 = process.hrtime.bigint();
			res = await session.run(feeds);
			ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
		}
		ms.sort((a, b) => a - b);
		const h = ms.length >> 1;
		const median = ms.length % 2 ? ms[h] : (ms[h - 1] + ms[h]) / 2;
		process.stdout.write(JSON.stringify({ model: o.model, threads: o.threads, iters: o.iters,
						      median_ms: median }) + '\n');
	}
	if (o.profile)
		session.endProfiling();
	const outs = session.outputNames.map((n) => Float32Array.from(res[n].data));
	if (o.output)
		writeFileSync(o.output, Buffer.concat(outs.map((v) => Buffer.from(v.buffer))));
	if (o.ref) {
		const cut = outs.map((v) => {
			const step = Math.ceil(v.length / REF_MAX_VALUES);
			return Float32Array.from({ length: Math.ceil(v.length / step) }, (_, i) => v[i * step]);
		});
		writeFileSync(o.ref, Buffer.concat(cut.map((v) => Buffer.from(v.buffer))));
	}
}

main().catch((e) => {
	process.stderr.write(`run.mjs: ${e.message}\n`);
	process.exit(1);
});
