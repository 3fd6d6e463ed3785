// The reference executor: what a program's graphs compute, in TypeScript, with no timing. It
// runs the posted and done events of every node (validate.ts eventGraph) in one order their
// edges allow, and does each node's work at its event:
//   send    posted: the bytes of src are taken      recv  done: they land in dst
//   write   posted: src lands in the peer's dst     read  done: the peer's src lands in dst
//   reduce, copy  done: dst is computed from the sources as they are then
//   signal  done: the semaphore grows               wait  done: only once it has reached value
// For a graph whose conflicting accesses are ordered (no node touches bytes another one is
// writing without a dependency path between them), every order the edges allow gives the same
// bytes, so this one is the reference the emulated engines are checked against bit for bit.

import { reduceReference, type ReduceOp, type ReduceType } from "../reduce/reference.js";
import { validateProgram, eventGraph, eventNode, type Matching } from "./validate.js";
import { GraphError, nodeLabel, DTYPES, REDOPS, type BufferRef, type GraphProgram } from "./types.js";

/** How {@link runReference} starts. */
export interface ReferenceOptions {
  /** semaphore values each device starts with (the host's signals); zero otherwise */
  semaphores?: number[][];
}

/** What a program computes ({@link runReference}): every device's buffers and semaphores at its end. */
export interface ReferenceResult {
  /** per device, per buffer name: its bytes at the end */
  buffers: Map<string, Uint8Array>[];
  /** per device: its semaphores at the end */
  semaphores: Uint32Array[];
}

/**
 * Runs `p` on buffers that start as `init(rank, name)` gives (zeros when it gives nothing).
 * Throws GraphError when the program is invalid, or when waits are left that no signal
 * reaches (naming them).
 */
export function runReference(p: GraphProgram, init: (rank: number, buffer: string) => Uint8Array | undefined = () => undefined, o: ReferenceOptions = {}): ReferenceResult {
  const matching: Matching = validateProgram(p);
  const g = eventGraph(p, matching);
  const mem = p.ranks.map((_, rank) => new Map(p.buffers.map((b) => {
    const bytes = new Uint8Array(b.bytes);
    const given = init(rank, b.name);
    if (given) {
      if (given.length !== b.bytes) throw new GraphError(`inputs of device ${rank}`, `buffer "${b.name}" has ${b.bytes} bytes, ${given.length} given`);
      bytes.set(given);
    }
    return [b.name, bytes];
  })));
  const sems = p.ranks.map((_, rank) => Uint32Array.from({ length: p.semaphores }, (_, s) => o.semaphores?.[rank]?.[s] ?? 0));
  const view = (rank: number, r: BufferRef, bytes: number) => mem[rank].get(r.buffer)!.subarray(r.offset, r.offset + bytes);
  // the receive each message completes, and the bytes a send took when posted
  const recvOf = new Map<number, number>();
  for (const x of matching.messages) recvOf.set(g.base[x.to] + x.recv, g.base[x.from] + x.message);
  const taken = new Map<number, Uint8Array>();

  const indeg = new Int32Array(g.out.length);
  for (const succ of g.out) for (const e of succ) indeg[e]++;
  const ready: number[] = [];
  for (let e = g.out.length - 1; e >= 0; e--) if (indeg[e] === 0) ready.push(e);
  /** done events of waits not yet satisfied, per rank and semaphore */
  const parked = new Map<string, number[]>();
  let run = 0;
  const finish = (e: number) => {
    run++;
    for (const s of g.out[e]) if (--indeg[s] === 0) ready.push(s);
  };
  while (ready.length) {
    const e = ready.pop()!;
    const { rank, i } = eventNode(g, e);
    const n = p.ranks[rank].nodes[i];
    const posted = (e & 1) === 0;
    if (posted) {
      if (n.op === "send") taken.set(g.base[rank] + i, view(rank, n.src, n.bytes).slice());
      if (n.op === "write") view(n.peer, n.dst, n.bytes).set(view(rank, n.src, n.bytes));
      finish(e);
      continue;
    }
    switch (n.op) {
      case "recv":
        if (n.dst) {
          const bytes = taken.get(recvOf.get(g.base[rank] + i)!)!;
          view(rank, n.dst, bytes.length).set(bytes);
        }
        break;
      case "read": view(rank, n.dst, n.bytes).set(view(n.peer, n.src, n.bytes)); break;
      case "copy": view(rank, n.dst, n.bytes).set(view(rank, n.src, n.bytes).slice()); break;
      case "reduce":
        view(rank, n.dst, n.bytes).set(reduceReference(n.srcs.map((s) => view(rank, s, n.bytes)), REDOPS[n.redop] as ReduceOp, DTYPES[n.dtype] as ReduceType));
        break;
      case "signal": {
        sems[rank][n.sem] += n.value;
        const k = `${rank}/${n.sem}`;
        const waiting = parked.get(k) ?? [];
        parked.set(k, waiting.filter((w) => {
          const wn = p.ranks[rank].nodes[eventNode(g, w).i];
          if (wn.op === "wait" && sems[rank][n.sem] >= wn.value) {
            ready.push(w);
            return false;
          }
          return true;
        }));
        break;
      }
      case "wait":
        if (sems[rank][n.sem] < n.value) {
          const k = `${rank}/${n.sem}`;
          parked.set(k, [...(parked.get(k) ?? []), e]);
          continue; // not done yet: a signal will make it ready again
        }
        break;
    }
    finish(e);
  }
  if (run !== g.out.length) {
    for (const [k, waits] of parked) {
      if (waits.length === 0) continue;
      const [rank, sem] = k.split("/").map(Number);
      const { i } = eventNode(g, waits[0]);
      const w = p.ranks[rank].nodes[i];
      throw new GraphError(nodeLabel(rank, i, w), `waits for semaphore ${sem} to reach ${w.op === "wait" ? w.value : "?"}, and it ends at ${sems[rank][sem]}: no signal is left to raise it`);
    }
  }
  return { buffers: mem, semaphores: sems };
}
