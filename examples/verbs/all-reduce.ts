// A collective from code: a ring all-reduce (sum) of 64 Ki f32 per device on 4 devices whose
// engines run the graph executor, over the MetaRoCE-like transport. The collective compiler makes
// the program (a work-queue graph per device, docs/graph.md), the cluster binds it (buffers, queue
// pairs connected across the fabric, each engine's part of the graph), each device's input goes
// in, one doorbell per device starts it, and the cluster runs until every device's final signal.
// Every device's result is checked against the reference executor, bit for bit.
import { openCluster, allReduceRing, graphDeviceConfig, runReference } from "menic";
import { sameBytes } from "./connect.js";

const devices = 4, elements = 64 << 10;
const program = allReduceRing({ devices, engines: 4, bytes: 4 * elements, dtype: "f32", redop: "sum" });
// the devices' config: the engines, queue pairs and HBM the program needs
const cluster = await openCluster({ devices: { count: devices, config: graphDeviceConfig(program) }, transport: "metaroce" }, { executor: true });
const run = cluster.bind(program);

// device d's input: d + (i mod 7), so the sum is 6 + 4 (i mod 7)
const inputs = Array.from({ length: devices }, (_, d) => new Uint8Array(Float32Array.from({ length: elements }, (_, i) => d + (i % 7)).buffer));
inputs.forEach((bytes, d) => run.write(d, "in", bytes));
run.start();
const end = cluster.runUntil(() => run.poll().state !== "running", cluster.nowPs + 10_000_000_000n);
const state = run.poll();
if (state.state !== "done") throw new Error(`the all-reduce did not finish: ${end}, ${JSON.stringify(state)}`);

const reference = runReference(program, (rank, buffer) => (buffer === "in" ? inputs[rank] : undefined));
for (let d = 0; d < devices; d++) sameBytes(`device ${d}'s result`, run.read(d, "out"), reference.buffers[d]!.get("out")!);
const out = new Float32Array(run.read(0, "out").buffer);
console.log(`all-reduce (ring, sum, 4 engines) of ${elements} f32 on ${devices} devices over ${cluster.transport}: ${state.state}, every device's result is the reference's`);
console.log(`result[0..7]: ${Array.from(out.subarray(0, 8)).join(", ")}; result[${elements - 1}]: ${out[elements - 1]}`);
