// Writes the MSCCL XML algorithms of this folder (node examples/msccl/generate.mjs), in the
// format msccl-tools writes and MSCCL's executors run (docs/graph.md, "Importing MSCCL
// algorithms"). They are examples of input: menic reads them with importMsccl.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const mod = (a, n) => ((a % n) + n) % n;

function step(s, type, { srcbuf = "i", srcoff = -1, dstbuf = "o", dstoff = -1, cnt = 1, depid = -1, deps = -1, hasdep = 0 } = {}) {
  return `      <step s="${s}" type="${type}" srcbuf="${srcbuf}" srcoff="${srcoff}" dstbuf="${dstbuf}" dstoff="${dstoff}" cnt="${cnt}" depid="${depid}" deps="${deps}" hasdep="${hasdep}"/>`;
}

/**
 * Ring all-reduce on n gpus over c channels: chunk (segment s, channel k) is s * c + k, and
 * threadblock k of every gpu moves channel k's chunks around the ring r -> r + 1. Reduce-scatter
 * (a send, n - 2 receive-reduce-sends, a receive-reduce-copy-send into the output), then
 * all-gather (n - 2 receive-copy-sends, a receive).
 */
function ringAllReduce(n, c) {
  const out = [`<algo name="ring-allreduce-${n}x${c}" proto="Simple" nchannels="${c}" nchunksperloop="${n * c}" ngpus="${n}" coll="allreduce" inplace="0" outofplace="1" minBytes="0" maxBytes="0">`];
  for (let r = 0; r < n; r++) {
    out.push(`  <gpu id="${r}" i_chunks="${n * c}" o_chunks="${n * c}" s_chunks="0">`);
    for (let k = 0; k < c; k++) {
      const at = (seg) => mod(seg, n) * c + k;
      out.push(`    <tb id="${k}" send="${(r + 1) % n}" recv="${mod(r - 1, n)}" chan="${k}">`);
      let s = 0;
      out.push(step(s++, "s", { srcoff: at(r), dstoff: at(r) }));
      for (let j = 1; j <= n - 2; j++) out.push(step(s++, "rrs", { srcoff: at(r - j), dstbuf: "i", dstoff: at(r - j) }));
      out.push(step(s++, "rrcs", { srcoff: at(r + 1), dstoff: at(r + 1) }));
      for (let j = 1; j <= n - 2; j++) out.push(step(s++, "rcs", { srcbuf: "o", srcoff: at(r + 1 - j), dstoff: at(r + 1 - j) }));
      out.push(step(s++, "r", { srcbuf: "o", srcoff: at(r + 2), dstoff: at(r + 2) }));
      out.push("    </tb>");
    }
    out.push("  </gpu>");
  }
  out.push("</algo>", "");
  return out.join("\n");
}

/**
 * All-pairs all-reduce on n gpus: gpu r sends chunk p of its input to every gpu p and receives
 * chunk r from each into its scratch (threadblock per peer); a threadblock of its own waits for all
 * of them (nops), copies its own chunk to the output and reduces the n - 1 received ones into it;
 * then each peer's threadblock sends the reduced chunk r to its peer and receives that peer's.
 */
function allPairsAllReduce(n) {
  const out = [`<algo name="allpairs-allreduce-${n}" proto="Simple" nchannels="1" nchunksperloop="${n}" ngpus="${n}" coll="allreduce" inplace="0" outofplace="1" minBytes="0" maxBytes="0">`];
  for (let r = 0; r < n; r++) {
    out.push(`  <gpu id="${r}" i_chunks="${n}" o_chunks="${n}" s_chunks="${n}">`);
    const peers = Array.from({ length: n }, (_, p) => p).filter((p) => p !== r);
    const reducer = n - 1, lastRe = n - 2 + 1 + (n - 1) - 1; // nops, the copy, the reductions
    peers.forEach((p, t) => {
      out.push(`    <tb id="${t}" send="${p}" recv="${p}" chan="0">`);
      out.push(step(0, "s", { srcoff: p, dstbuf: "s", dstoff: r }));
      out.push(step(1, "r", { srcbuf: "s", srcoff: p, dstbuf: "s", dstoff: p, hasdep: 1 }));
      out.push(step(2, "s", { srcbuf: "o", srcoff: r, dstoff: r, depid: reducer, deps: lastRe }));
      out.push(step(3, "r", { srcbuf: "o", srcoff: p, dstoff: p }));
      out.push("    </tb>");
    });
    out.push(`    <tb id="${reducer}" send="-1" recv="-1" chan="0">`);
    let s = 0;
    for (let t = 0; t < n - 2; t++) out.push(step(s++, "nop", { srcoff: 0, dstoff: 0, depid: t, deps: 1, cnt: 0 }));
    out.push(step(s++, "cpy", { srcoff: r, dstoff: r, depid: n - 2, deps: 1 }));
    peers.forEach((p, t) => out.push(step(s++, "re", { srcbuf: "s", srcoff: p, dstoff: r, hasdep: t === peers.length - 1 ? 1 : 0 })));
    out.push("    </tb>", "  </gpu>");
  }
  out.push("</algo>", "");
  return out.join("\n");
}

writeFileSync(join(here, "ring-allreduce-8.xml"), ringAllReduce(8, 4));
writeFileSync(join(here, "allpairs-allreduce-8.xml"), allPairsAllReduce(8));
