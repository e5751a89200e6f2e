// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A KServe v2 gRPC client on Node's @grpc/grpc-js, the protocol's .proto
// loaded at run time with @grpc/proto-loader (nothing of coloc's):
//
//   node kserve_grpc_client.cjs NODE_MODULES PROTO HOST:PORT MODEL INPUT.bin OUT.bin
//
// Asks ServerLive and ModelMetadata (one FP32 input expected), sends
// INPUT.bin's raw little-endian fp32 values as raw_input_contents with an id,
// checks the id is echoed, writes the first output's raw bytes to OUT.bin,
// then checks an unknown model is refused with NOT_FOUND. Prints "ok" and
// exits 0, or says what is wrong and exits 1.
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, protoPath, target, model, inputPath, outPath] = process.argv.slice(2);
if (!outPath) {
	console.log('usage: node kserve_grpc_client.cjs NODE_MODULES PROTO HOST:PORT MODEL INPUT.bin OUT.bin');
	process.exit(1);
}
const grpc = require(path.resolve(modules, '@grpc/grpc-js'));
const loader = require(path.resolve(modules, '@grpc/proto-loader'));

function fail(msg) {
	console.log('kserve_grpc_client.cjs: ' + msg);
	process.exit(1);
}

function call(client, method, req) {
	return new Promise((resolve, reject) => {
		const deadline = new Date(Date.now() + 300000);
		client[method](req, { deadline }, (err, resp) => (err ? reject(err) : resolve(resp)));
	});
}

async function main() {
	const def = loader.loadSync(protoPath, { keepCase: true, longs: Number, defaults: true });
	const inference = grpc.loadPackageDefinition(def).inference;
	const client = new inference.GRPCInferenceService(target, grpc.credentials.createInsecure(), {
		'grpc.max_send_message_length': 64 << 20,
		'grpc.max_receive_message_length': 64 << 20,
	});
	const raw = fs.readFileSync(inputPath);

	const live = await call(client, 'ServerLive', {});
	if (!live.live) fail('ServerLive says not live');
	const meta = await call(client, 'ModelMetadata', { name: model });
	if (meta.inputs.length !== 1 || meta.inputs[0].datatype !== 'FP32') fail('unexpected metadata ' + JSON.stringify(meta));
	const input = meta.inputs[0];
	const resp = await call(client, 'ModelInfer', {
		model_name: model,
		id: 'node-grpc',
		inputs: [{ name: input.name, datatype: 'FP32', shape: input.shape }],
		raw_input_contents: [raw],
	});
	if (resp.id !== 'node-grpc') fail("the answer's id is '" + resp.id + "'");
	if (resp.raw_output_contents.length !== resp.outputs.length) fail('no raw output per output');
	fs.writeFileSync(outPath, resp.raw_output_contents[0]);
	try {
		await call(client, 'ModelReady', { name: 'no_such_model' });
		fail('an unknown model was found');
	} catch (err) {
		if (err.code !== grpc.status.NOT_FOUND) fail('unknown model: code ' + err.code + ' ' + err.details);
	}
	client.close();
	console.log('ok');
}

main().catch((err) => fail(String(err && err.stack ? err.stack : err)));
