// Verbs commands from several engines at once, and a model of who owns what (docs/nic.md
// "Ownership"): every PD, CQ and QP has an owner, the host or one engine; a region belongs to
// the owner of its PD; an engine's commands act only on its own objects — anything else is
// answered CMD_ERR_NO_OBJECT and left as it was — and its CQ_CI and CQ_ARM writes to a CQ it
// does not own are dropped (counted in nic.bad_doorbell). An engine registers only its own
// SRAM and HBM, named by its own address or by a DMA address (REG_MR's high word).
//
// Each engine runs a straight-line RV32 program (test/helpers/rv.ts) of random commands whose
// arguments are constants, the host's object numbers, or the result of an earlier command of
// its own or of another engine (read back from a table in HBM where every engine stores each
// result). Engine e's k-th command waits for time slot k x engines + e, so the commands of
// all engines run in one known order; the model replays them in that order with the values
// the engines actually read, and judges each result.

import fc from "fast-check";
import { assemble } from "./rv.js";
import { Context, VerbsError, type Cq, type Qp } from "../../host/verbs.js";
import { MMIO, CMD, CMD_ERR, DMA, REGIONS, QP_STATE, REMOTE_KEY_BIT, MAX_CQ_DEPTH, MAX_QUEUE_DEPTH, CQE, WQE } from "../../host/generated/layouts.js";

export type CmdOp = keyof typeof CMD | "CQ_ARM" | "CQ_CI" | "UNKNOWN";
export type ObjKind = "pd" | "cq" | "qp" | "key";

/** An argument naming an object: an earlier result of this engine or another, a host object, or a number. */
export type ObjArg =
  | { src: "mine"; back: number; remote?: boolean }
  | { src: "other"; engine: number; back: number; remote?: boolean }
  | { src: "host"; i: number; remote?: boolean }
  | { src: "const"; v: number };

/** Memory named by (lo, hi) as REG_MR takes it, or by a 32-bit address in the engine's view (rings). */
export type AddrKind = "ownView" | "ownDma" | "otherSram" | "hbm" | "host" | "mmio" | "sramEnd" | "hbmEnd" | "bigHi";

export interface CmdSpec {
  op: CmdOp;
  obj: ObjArg[]; // pd / cq / qp / key arguments, by position of the op (see build)
  addr: AddrKind[];
  n: number[]; // plain numbers: lengths, depths, access, states, consumer index
}

/** The host's objects, by kind, as the engines may name them. */
export interface HostObjects { pd: number[]; cq: number[]; qp: number[]; key: number[] }

export interface FwConfig { engines: number; sramBytes: number; hbmBytes: number; maxPds: number; maxCqs: number; maxQps: number }

/** Engine cycles between two command slots: a command stalls nicCommandPs (1 us) plus its loads and stores. */
export const SLOT_CYCLES = 6000;
/** Where each engine stores its results (SRAM, own view) and, for the others to read, in HBM. */
export const RESULTS_SRAM = 0x6000, IRQ_SRAM = 0x7000, RING_SRAM = 0x8000;
export const RESULTS_HBM = REGIONS.HBM.base + 0x1000, RING_HBM = REGIONS.HBM.base + 0x20000, MR_HBM = REGIONS.HBM.base + 0x40000;
const MAX_CMDS = 64;

const creates: Record<ObjKind, CmdOp> = { pd: "ALLOC_PD", cq: "CREATE_CQ", qp: "CREATE_QP", key: "REG_MR" };

/** How many object and address arguments, and numbers, each op takes. */
const shape: Record<CmdOp, { obj: ObjKind[]; addr: number; n: number }> = {
  ALLOC_PD: { obj: [], addr: 0, n: 0 },
  DEALLOC_PD: { obj: ["pd"], addr: 0, n: 0 },
  REG_MR: { obj: ["pd"], addr: 1, n: 2 }, // length, access
  DEREG_MR: { obj: ["key"], addr: 0, n: 0 },
  CREATE_CQ: { obj: [], addr: 1, n: 1 }, // depth
  DESTROY_CQ: { obj: ["cq"], addr: 0, n: 0 },
  CREATE_QP: { obj: ["pd", "cq", "cq"], addr: 2, n: 3 }, // send depth, receive depth, signal all
  MODIFY_QP: { obj: ["qp", "qp"], addr: 0, n: 1 }, // QP, destination; state
  MODIFY_QP_REMOTE: { obj: ["qp"], addr: 0, n: 2 }, // QP; destination QP, device and port group from the numbers
  DESTROY_QP: { obj: ["qp"], addr: 0, n: 0 },
  SET_PORT_GROUPS: { obj: [], addr: 0, n: 1 }, // scale-up ports
  CQ_ARM: { obj: ["cq"], addr: 0, n: 0 },
  CQ_CI: { obj: ["cq"], addr: 0, n: 1 }, // consumer index
  UNKNOWN: { obj: [], addr: 0, n: 0 },
};

const weighted = <T>(...xs: [number, fc.Arbitrary<T>][]) => fc.oneof(...xs.map(([weight, arbitrary]) => ({ weight, arbitrary })));

const objArg: fc.Arbitrary<ObjArg> = weighted<ObjArg>(
  [6, fc.record({ src: fc.constant("mine" as const), back: fc.nat(2), remote: fc.boolean() })],
  [4, fc.record({ src: fc.constant("other" as const), engine: fc.nat(7), back: fc.nat(2), remote: fc.boolean() })],
  [3, fc.record({ src: fc.constant("host" as const), i: fc.nat(7), remote: fc.boolean() })],
  [1, fc.record({ src: fc.constant("const" as const), v: fc.constantFrom(0, 1, 2, 3, 5, 15, 16, 0x101, 0xffff, 0xffffffff) })],
);
const addrKind = weighted<AddrKind>(
  [4, fc.constant("ownView")], [2, fc.constant("ownDma")], [3, fc.constant("hbm")], [2, fc.constant("otherSram")], [2, fc.constant("host")],
  [1, fc.constantFrom<AddrKind>("mmio", "sramEnd", "hbmEnd", "bigHi")],
);
const opArb = weighted<CmdOp>(
  [3, fc.constant("ALLOC_PD")], [1, fc.constant("DEALLOC_PD")], [3, fc.constant("REG_MR")], [2, fc.constant("DEREG_MR")],
  [3, fc.constant("CREATE_CQ")], [1, fc.constant("DESTROY_CQ")], [3, fc.constant("CREATE_QP")], [4, fc.constant("MODIFY_QP")],
  [2, fc.constant("DESTROY_QP")], [2, fc.constant("CQ_ARM")], [2, fc.constant("CQ_CI")], [1, fc.constant("UNKNOWN")],
  [2, fc.constant("MODIFY_QP_REMOTE")], [1, fc.constant("SET_PORT_GROUPS")],
);

export const cmdSpec: fc.Arbitrary<CmdSpec> = fc.record({
  op: opArb,
  obj: fc.array(objArg, { minLength: 3, maxLength: 3 }),
  addr: fc.array(addrKind, { minLength: 2, maxLength: 2 }),
  n: fc.array(fc.nat(0xffff), { minLength: 3, maxLength: 3 }),
});

/** What firmware does first (nic.c): a PD, a CQ, a region and a QP of its own, so that later commands find them. */
const mine = (back = 0): ObjArg => ({ src: "mine", back });
const preamble: CmdSpec[] = [
  { op: "ALLOC_PD", obj: [], addr: [], n: [] },
  { op: "CREATE_CQ", obj: [], addr: ["ownView"], n: [2] },
  { op: "REG_MR", obj: [mine()], addr: ["ownView"], n: [0, 3] },
  { op: "CREATE_QP", obj: [mine(), mine(), mine()], addr: ["ownView", "hbm"], n: [2, 1, 0] },
];

export const enginePrograms = (engines: number, maxCmds: number) =>
  fc.array(
    fc.tuple(fc.nat(4), fc.array(cmdSpec, { minLength: 1, maxLength: maxCmds, size: "max" })).map(([n, rest]) => [...preamble.slice(0, n), ...rest]),
    { minLength: engines, maxLength: engines },
  );

// ---- resolving a spec into the values an engine uses

/** How an engine gets one argument: a constant, or an earlier result read from HBM (plus the remote-key bit). */
export type Value = { k: number } | { ref: number; plus: number };

export interface Command {
  engine: number; index: number; slot: number; op: CmdOp;
  args: Value[]; // CMD_ARG0.. for commands; for CQ_ARM [cqn]; for CQ_CI [cqn, ci]
}

const lengths = [64, 256, 0, 4096];

function address(kind: AddrKind, e: number, cfg: FwConfig, k: number): { lo: number; hi: number } {
  const off = (k % 4) * 0x400;
  switch (kind) {
    case "ownView": return { lo: RING_SRAM + off, hi: 0 };
    case "ownDma": return split(DMA.DMA_SRAM + e * REGIONS.SRAM.window + RING_SRAM + off);
    case "otherSram": return split(DMA.DMA_SRAM + ((e + 1 + (k % (cfg.engines - 1))) % cfg.engines) * REGIONS.SRAM.window + RING_SRAM);
    case "hbm": return { lo: MR_HBM + off, hi: 0 };
    case "host": return split(DMA.DMA_HOST + 0x1000);
    case "mmio": return { lo: MMIO.NIC.SQ_DB, hi: 0 };
    case "sramEnd": return { lo: cfg.sramBytes - 16, hi: 0 };
    case "hbmEnd": return { lo: REGIONS.HBM.base + cfg.hbmBytes - 16, hi: 0 };
    case "bigHi": return { lo: 0, hi: 5 };
  }
}
const split = (a: number) => ({ lo: a % 2 ** 32, hi: Math.floor(a / 2 ** 32) });

/** A ring address in the engine's own view (32 bits: no DMA form). */
function ring(kind: AddrKind, e: number, cfg: FwConfig, k: number): number {
  const a = address(kind === "ownDma" || kind === "otherSram" || kind === "host" || kind === "bigHi" ? "ownView" : kind, e, cfg, k);
  return kind === "hbm" ? RING_HBM + (k % 8) * 0x2000 : a.lo;
}

/**
 * The commands of every engine, in slot order, with each argument resolved to a constant or to
 * the earlier result it reads. A reference that finds no earlier command of the kind becomes a
 * number no object has.
 */
export function resolve(programs: CmdSpec[][], host: HostObjects, cfg: FwConfig): Command[] {
  const E = programs.length;
  const all: Command[] = [];
  const slotOf = (e: number, k: number) => k * E + e;
  const ref = (a: ObjArg, kind: ObjKind, e: number, k: number): Value => {
    const plus = "remote" in a && a.remote && kind === "key" ? REMOTE_KEY_BIT : 0;
    if (a.src === "const") return { k: a.v >>> 0 };
    if (a.src === "host") {
      const list = host[kind];
      return { k: (list[a.i % list.length] + plus) >>> 0 };
    }
    const who = a.src === "mine" ? e : a.engine % E;
    const earlier = programs[who]
      .map((s, j) => ({ s, j }))
      .filter(({ s, j }) => s.op === creates[kind] && slotOf(who, j) < slotOf(e, k))
      .reverse();
    const hit = earlier[a.back % Math.max(1, earlier.length)];
    return hit ? { ref: who * MAX_CMDS + hit.j, plus } : { k: 0xfffffff0 };
  };
  programs.forEach((prog, e) => prog.forEach((s, k) => {
    const sh = shape[s.op];
    const o = sh.obj.map((kind, i) => ref(s.obj[i], kind, e, k));
    const c = (v: number): Value => ({ k: v >>> 0 });
    let args: Value[] = [];
    switch (s.op) {
      case "DEALLOC_PD": case "DEREG_MR": case "DESTROY_CQ": case "DESTROY_QP": case "CQ_ARM": args = [o[0]]; break;
      case "REG_MR": {
        const { lo, hi } = address(s.addr[0], e, cfg, k);
        args = [o[0], c(lo), c(hi), c(lengths[s.n[0] % lengths.length]), c(s.n[1] % 9)];
        break;
      }
      case "CREATE_CQ": args = [c(ring(s.addr[0], e, cfg, k)), c([1, 2, 4, 16, 0, 65537][s.n[0] % 6])]; break;
      case "CREATE_QP": {
        const depth = (n: number) => [1, 2, 4, 8, 0, 40000][n % 6];
        args = [o[0], o[1], o[2], c(ring(s.addr[0], e, cfg, k) + 0x200), c(depth(s.n[0])), c(ring(s.addr[1], e, cfg, k + 1) + 0x400), c(depth(s.n[1])), c(s.n[2] % 2)];
        break;
      }
      case "MODIFY_QP": {
        const state = [QP_STATE.INIT, QP_STATE.RTR, QP_STATE.RTS, QP_STATE.ERR, QP_STATE.RESET, QP_STATE.RTR, 9][s.n[0] % 7];
        args = [o[0], c(state), s.n[0] % 11 === 10 ? c(0xffffffff) : o[1]];
        break;
      }
      case "MODIFY_QP_REMOTE": {
        // destination QP: any 24-bit number of another device, or one past them; device: another, this one (0), or past 0xffff; group: scale-up, scale-out, none
        args = [o[0], c([7, 0x1000000, 3][s.n[0] % 3]), c([5, 0, 0x10000][s.n[1] % 3]), c([0, 1, 2][(s.n[0] + s.n[1]) % 3])];
        break;
      }
      case "CQ_CI": args = [o[0], c(s.n[0] % 4)]; break;
      case "SET_PORT_GROUPS": args = [c(s.n[0] % 16)]; break; // 13..15: more than the 12 ports
      default: break;
    }
    all.push({ engine: e, index: k, slot: slotOf(e, k), op: s.op, args });
  }));
  return all.sort((a, b) => a.slot - b.slot);
}

// ---- the programs

const NIC = MMIO.NIC;
const ARG = (i: number) => NIC.CMD_ARG0 + 4 * i - NIC.SQ_DB;

/** Engine `e`'s program: each command in its slot, its result stored in SRAM and HBM; then, on a mailbox word, its interrupts; then exit. */
export function program(cmds: Command[], e: number): string {
  const mine = cmds.filter((c) => c.engine === e).sort((a, b) => a.index - b.index);
  const out: string[] = [
    `li s0, ${MMIO.TIMER.MTIME_LO}`, "lw s1, 0(s0)", `li s2, ${NIC.SQ_DB}`, `li s3, ${RESULTS_SRAM}`,
  ];
  const load = (v: Value, reg: string) => {
    if ("k" in v) { out.push(`li ${reg}, ${v.k | 0}`); return; }
    out.push(`li t3, ${RESULTS_HBM + 4 * v.ref}`, `lw ${reg}, 0(t3)`);
    if (v.plus) out.push(`li t3, ${v.plus | 0}`, `add ${reg}, ${reg}, t3`);
  };
  for (const c of mine) {
    out.push(`wait${c.index}:`, "lw t1, 0(s0)", "sub t1, t1, s1", `li t2, ${(c.slot + 1) * SLOT_CYCLES}`, `bltu t1, t2, wait${c.index}`);
    if (c.op === "CQ_ARM") {
      load(c.args[0], "t1");
      out.push(`sw t1, ${NIC.CQ_ARM - NIC.SQ_DB}(s2)`, "li t1, 0");
    } else if (c.op === "CQ_CI") {
      load(c.args[0], "t1");
      out.push("slli t1, t1, 16");
      load(c.args[1], "t2");
      out.push("add t1, t1, t2", `sw t1, ${NIC.CQ_CI - NIC.SQ_DB}(s2)`, "li t1, 0");
    } else {
      c.args.forEach((v, i) => { load(v, "t1"); out.push(`sw t1, ${ARG(i)}(s2)`); });
      out.push(`li t1, ${c.op === "UNKNOWN" ? 99 : CMD[c.op]}`, `sw t1, ${NIC.CMD - NIC.SQ_DB}(s2)`, `lw t1, ${NIC.CMD_RESULT - NIC.SQ_DB}(s2)`);
    }
    out.push(`sw t1, ${4 * c.index}(s3)`, `li t3, ${RESULTS_HBM + 4 * (e * MAX_CMDS + c.index)}`, "sw t1, 0(t3)");
  }
  out.push(
    `li t0, ${MMIO.MBOX.IN_COUNT}`, "mbox:", "lw t1, 0(t0)", "beq t1, zero, mbox",
    `li t0, ${NIC.IRQ_COUNT}`, `li s3, ${IRQ_SRAM}`, "lw t1, 0(t0)", "sw t1, 0(s3)",
    ...[1, 2, 3, 4].flatMap((j) => ["lw t1, 4(t0)", `sw t1, ${4 * j}(s3)`]),
    `li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)",
  );
  return out.join("\n");
}

export function programWords(cmds: Command[], e: number): Uint8Array {
  const words = assemble(program(cmds, e));
  return new Uint8Array(words.buffer);
}

/** The value an argument had when the engine ran: constants, or the result table. */
export function valueOf(v: Value, results: Uint32Array): number {
  return "k" in v ? v.k : (results[v.ref] + v.plus) >>> 0;
}

export const resultIndex = (e: number, k: number) => e * MAX_CMDS + k;

// ---- the model

type Owner = number | "host";
export interface ModelObjects {
  pds: Map<number, Owner>;
  mrs: Map<number, { pd: number }>; // by lkey
  cqs: Map<number, Owner>;
  qps: Map<number, { owner: Owner; pd: number; scq: number; rcq: number; state: number; remote?: boolean; group?: number }>;
}

const OK = 0, NO = CMD_ERR.NO_OBJECT, TRANSITION = CMD_ERR.TRANSITION, IN_USE = CMD_ERR.IN_USE, ARGUMENT = CMD_ERR.ARGUMENT;

/**
 * Replays the commands in slot order and judges each result (as i32). `strict` holds argument
 * errors to the documented CMD_ERR (layouts/verbs.json: ARGUMENT for "depth, address outside
 * memory"); otherwise any failure is taken for them, the ownership rules staying exact.
 * Returns what the replay predicts for the end: arms per CQ, dropped CQ writes.
 */
export function judge(cmds: Command[], results: Uint32Array, objs: ModelObjects, cfg: FwConfig, strict: boolean, tally?: Map<string, number>): { armed: Map<number, number>; dropped: number; problems: string[] } {
  const problems: string[] = [];
  const armed = new Map<number, number>();
  const keysIssued = new Set([...objs.mrs.keys()]);
  let dropped = 0;
  const own = (o: Owner | undefined, e: number) => o === e;
  const inSram = (a: number, len: number) => a >= 0 && len <= cfg.sramBytes && a <= cfg.sramBytes - len;
  const inHbm = (a: number, len: number) => a >= REGIONS.HBM.base && len <= cfg.hbmBytes && a - REGIONS.HBM.base <= cfg.hbmBytes - len;
  /** Memory engine e reaches itself: [lo + hi x 2^32, + len) as REG_MR names it. */
  const reachable = (e: number, lo: number, hi: number, len: number) => {
    if (hi === 0) return lo < REGIONS.SRAM.window ? inSram(lo, len) : inHbm(lo, len);
    const a = hi * 2 ** 32 + lo, mine = DMA.DMA_SRAM + e * REGIONS.SRAM.window;
    return a >= mine && a - mine < REGIONS.SRAM.window && inSram(a - mine, len);
  };
  const ringOk = (e: number, a: number, bytes: number) => reachable(e, a, 0, bytes);
  const usedCq = (cq: number) => [...objs.qps.values()].some((q) => q.scq === cq || q.rcq === cq);
  const free = <T>(m: Map<number, T>, max: number) => { for (let i = 0; i < max; i++) if (!m.has(i)) return true; return false; };

  // the split of the device's 12 ports (config defaults: 10 scale-up), which SET_PORT_GROUPS changes
  const PORTS = 12;
  let split = 10;
  const groupPorts = (group: number, up: number) => (group === 0 ? up : group === 1 ? PORTS - up : 0);
  for (const c of cmds) {
    const e = c.engine;
    const a = c.args.map((v) => valueOf(v, results));
    const got = results[resultIndex(e, c.index)] | 0;
    const where = `engine ${e} command ${c.index} (slot ${c.slot}) ${c.op}(${a.map((x) => `0x${x.toString(16)}`).join(", ")})`;
    const want = (allowed: number[], what: string) => {
      tally?.set(`${c.op}: ${what}`, (tally.get(`${c.op}: ${what}`) ?? 0) + 1);
      if (!allowed.includes(got)) problems.push(`${where} gave ${got}; ${what} wants ${allowed.join(" or ")}`);
    };
    const argErr = strict ? [ARGUMENT] : [ARGUMENT, NO];
    const fresh = (m: Map<number, unknown>, max: number, what: string) => {
      tally?.set(`${c.op}: made`, (tally.get(`${c.op}: made`) ?? 0) + 1);
      if (got < 0 || got >= max || m.has(got)) { problems.push(`${where} gave ${got}, not a free ${what} number`); return false; }
      return true;
    };
    switch (c.op) {
      case "ALLOC_PD":
        if (!free(objs.pds, cfg.maxPds)) want([NO], "no free PD");
        else if (fresh(objs.pds, cfg.maxPds, "PD")) objs.pds.set(got, e);
        break;
      case "DEALLOC_PD": {
        const pd = a[0];
        if (!own(objs.pds.get(pd), e)) { want([NO], "a PD not this engine's"); break; }
        const inUse = [...objs.mrs.values()].some((m) => m.pd === pd) || [...objs.qps.values()].some((q) => q.pd === pd);
        if (inUse) want(strict ? [IN_USE] : [IN_USE, NO], "its PD still in use");
        else { want([OK], "its unused PD"); if (got === OK) objs.pds.delete(pd); }
        break;
      }
      case "REG_MR": {
        const [pd, lo, hi, len, access] = a;
        if (!own(objs.pds.get(pd), e)) { want([NO], "a PD not this engine's"); break; }
        if (len === 0 || access > 7 || !reachable(e, lo, hi, len)) { want([ARGUMENT], "memory the engine may not register, or a bad length or access"); break; }
        tally?.set("REG_MR: made", (tally.get("REG_MR: made") ?? 0) + 1);
        if (got <= 0 || keysIssued.has(got) || (got & REMOTE_KEY_BIT) !== 0) { problems.push(`${where} gave ${got}, not a fresh lkey`); break; }
        objs.mrs.set(got, { pd });
        keysIssued.add(got);
        break;
      }
      case "DEREG_MR": {
        const lkey = (a[0] & 0x7fffffff) >>> 0;
        const m = objs.mrs.get(lkey);
        if (!m || !own(objs.pds.get(m.pd), e)) { want([NO], "a region not this engine's"); break; }
        want([OK], "its region");
        if (got === OK) objs.mrs.delete(lkey);
        break;
      }
      case "CREATE_CQ": {
        const [at, depth] = a;
        if (depth === 0 || depth > MAX_CQ_DEPTH || !ringOk(e, at, depth * CQE.SIZE)) { want(argErr, "a bad depth or ring"); break; }
        if (!free(objs.cqs, cfg.maxCqs)) { want([NO], "no free CQ"); break; }
        if (fresh(objs.cqs, cfg.maxCqs, "CQ")) objs.cqs.set(got, e);
        break;
      }
      case "DESTROY_CQ": {
        const cq = a[0];
        if (!own(objs.cqs.get(cq), e)) { want([NO], "a CQ not this engine's"); break; }
        if (usedCq(cq)) { want([IN_USE], "its CQ in use by a QP"); break; }
        want([OK], "its unused CQ");
        if (got === OK) { objs.cqs.delete(cq); armed.delete(cq); }
        break;
      }
      case "CREATE_QP": {
        const [pd, scq, rcq, sring, sdepth, rring, rdepth] = a;
        if (!own(objs.pds.get(pd), e) || !own(objs.cqs.get(scq), e) || !own(objs.cqs.get(rcq), e)) { want([NO], "a PD or CQ not this engine's"); break; }
        const depthOk = (d: number) => d >= 1 && d <= MAX_QUEUE_DEPTH;
        if (!depthOk(sdepth) || !depthOk(rdepth) || !ringOk(e, sring, sdepth * WQE.SIZE) || !ringOk(e, rring, rdepth * WQE.SIZE)) { want([ARGUMENT], "a bad depth or ring"); break; }
        if (!free(objs.qps, cfg.maxQps)) { want([NO], "no free QP"); break; }
        if (fresh(objs.qps, cfg.maxQps, "QP")) objs.qps.set(got, { owner: e, pd, scq, rcq, state: QP_STATE.RESET });
        break;
      }
      case "MODIFY_QP": {
        const [qpn, to, dest] = a;
        const q = objs.qps.get(qpn);
        if (!q || !own(q.owner, e)) { want([NO], "a QP not this engine's"); break; }
        const S = QP_STATE;
        if (to === S.ERR || to === S.RESET) { want([OK], `its QP to ${to === S.ERR ? "ERR" : "RESET"}`); if (got === OK) q.state = to; break; }
        const ok = (q.state === S.RESET && to === S.INIT) || (q.state === S.INIT && to === S.RTR) || (q.state === S.RTR && to === S.RTS) || (q.state === to && to !== S.ERR);
        if (!ok) { want(to > 6 || to === 4 || to === 5 ? [TRANSITION, ARGUMENT] : [TRANSITION], `no transition ${q.state} -> ${to}`); break; }
        if (to === S.RTR && dest >= cfg.maxQps) { want([ARGUMENT], "a destination the device does not have"); break; }
        want([OK], `its QP ${q.state} -> ${to}`);
        if (got === OK) q.state = to;
        if (got === OK && to === S.RTR) q.remote = false; // towards a QP of this device
        break;
      }
      case "MODIFY_QP_REMOTE": {
        const [qpn, dest, device, group] = a;
        const q = objs.qps.get(qpn);
        if (!q || !own(q.owner, e)) { want([NO], "a QP not this engine's"); break; }
        const S = QP_STATE;
        if (q.state !== S.INIT && q.state !== S.RTR) { want([TRANSITION], `no transition ${q.state} -> RTR`); break; }
        // this device is device 0 (deviceId's default): a destination there is a local one
        const remote = device !== 0;
        const bad = device > 0xffff || dest >= (remote ? 1 << 24 : cfg.maxQps) || (remote && groupPorts(group, split) === 0);
        if (bad) { want([ARGUMENT], "a destination or port group the device does not have (or with no ports now)"); break; }
        want([OK], `its QP ${q.state} -> RTR towards device ${device}`);
        if (got === OK) Object.assign(q, { state: S.RTR, remote, group });
        break;
      }
      case "SET_PORT_GROUPS": {
        // the device's split, not an object: any engine may; no QP here has work, so only a
        // connected QP (RTR, RTS) whose group would have no ports stops it
        const up = a[0];
        if (up > PORTS) { want([ARGUMENT], "more scale-up ports than the device has"); break; }
        const stuck = up !== split && [...objs.qps.values()].some((q) => q.remote && (q.state === QP_STATE.RTR || q.state === QP_STATE.RTS) && groupPorts(q.group!, up) === 0);
        if (stuck) { want([IN_USE], "a connected QP's group left with no ports"); break; }
        want([OK], `the split ${split} -> ${up}`);
        if (got === OK) split = up;
        break;
      }
      case "DESTROY_QP": {
        const q = objs.qps.get(a[0]);
        if (!q || !own(q.owner, e)) { want([NO], "a QP not this engine's"); break; }
        want([OK], "its QP");
        if (got === OK) objs.qps.delete(a[0]);
        break;
      }
      case "CQ_ARM":
        if (own(objs.cqs.get(a[0]), e)) armed.set(a[0], e);
        else dropped++;
        tally?.set(`CQ_ARM: ${own(objs.cqs.get(a[0]), e) ? "own" : "foreign"}`, (tally.get(`CQ_ARM: ${own(objs.cqs.get(a[0]), e) ? "own" : "foreign"}`) ?? 0) + 1);
        break;
      case "CQ_CI":
        if (!own(objs.cqs.get(a[0] & 0xffff), e)) dropped++;
        tally?.set(`CQ_CI: ${own(objs.cqs.get(a[0] & 0xffff), e) ? "own" : "foreign"}`, (tally.get(`CQ_CI: ${own(objs.cqs.get(a[0] & 0xffff), e) ? "own" : "foreign"}`) ?? 0) + 1);
        break;
      case "UNKNOWN":
        want([ARGUMENT], "an unknown command");
        break;
    }
  }
  return { armed, dropped, problems };
}

// ---- one device

/** The device of `runOwnership`: three engines, and few PDs, CQs and QPs so that running out happens too. */
export const FW: FwConfig = { engines: 3, sramBytes: 65536, hbmBytes: 1 << 20, maxPds: 8, maxCqs: 16, maxQps: 16 };
const U32_NONE = 0xffffffff;

/**
 * Runs `programs` on the engines of one device and returns what disagrees with the model.
 * The device: the host's PD, two regions, CQs A, B, D (depth 2) and one created for engine 1,
 * QPs A<->B, C (on engine 1's CQ) and D looped to themselves, and E, which the host created
 * for engine 1. Before the engines start, D fills its CQ (two unread completions), A completes
 * a WRITE (left unread) and starts a SEND that waits for a receive (RNR timer 50 us, six retries).
 * Then the engines run their commands. Afterwards the host's objects must work as before: D's
 * next completion overruns its full CQ (no engine moved its consumer index), A's SEND completes
 * once B posts a receive, C's completion goes to engine 1's CQ and interrupts engine 1 only if
 * engine 1 armed it, and nothing else was changed.
 */
export async function runOwnership(module: WebAssembly.Module, programs: CmdSpec[][], strict: boolean, tally?: Map<string, number>): Promise<string[]> {
  const problems: string[] = [];
  const same = (what: string, got: unknown, want: unknown) => {
    if (JSON.stringify(got, big) !== JSON.stringify(want, big)) problems.push(`${what}: ${JSON.stringify(got, big)}, expected ${JSON.stringify(want, big)}`);
  };
  // the programs are written at SRAM 0 and keep results in low SRAM: no NULL guard
  const ctx = await Context.open(module, { ...FW, hostMemBytes: 1 << 20, rnrTimerPs: 50_000_000, rnrRetries: 6, nullGuardBytes: 0 });
  const core = ctx.device.core, h = ctx.device.handle;
  const hp = ctx.allocPd();
  const src = ctx.allocHostMemory(256), sink = ctx.allocHostMemory(256);
  ctx.write(src, Uint8Array.from({ length: 256 }, (_, i) => (i * 13 + 7) & 0xff));
  const mrSrc = ctx.regMr(hp, src, 256), mrSink = ctx.regMr(hp, sink, 256, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const cqA = ctx.createCq(16), cqB = ctx.createCq(16), cqD = ctx.createCq(2), ecq = ctx.createCq(8, { engine: 1 });
  const mk = (cq: Cq, engine?: number) => ctx.createQp(hp, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine });
  const qA = mk(cqA), qB = mk(cqB), qC = mk(ecq), qD = mk(cqD), qE = mk(ecq, 1);
  const connect = (q: Qp, d: Qp) => {
    ctx.modifyQp(q, { state: "INIT" });
    ctx.modifyQp(q, { state: "RTR", destQpNum: d.qpn });
    ctx.modifyQp(q, { state: "RTS" });
  };
  connect(qA, qB); connect(qB, qA); connect(qC, qC); connect(qD, qD);
  const write = (wrId: number, off: number, len: number) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src + off, length: len, lkey: mrSrc.lkey, remoteAddr: sink + off, rkey: mrSink.rkey });
  const settle = (us: number) => ctx.run(ctx.nowPs + BigInt(us) * 1_000_000n);

  ctx.postSend(qD, [write(1, 0, 16), write(2, 16, 16)]);
  ctx.postSend(qA, [write(3, 32, 16)]);
  settle(10);
  ctx.postSend(qA, [{ wrId: 4, opcode: "SEND", signaled: true, localAddr: src + 64, length: 64, lkey: mrSrc.lkey }]);
  settle(5);

  const host: HostObjects = { pd: [hp.handle], cq: [cqA.cqn, cqB.cqn, cqD.cqn, ecq.cqn], qp: [qA.qpn, qB.qpn, qC.qpn, qD.qpn, qE.qpn], key: [mrSrc.lkey, mrSink.lkey] };
  const cmds = resolve(programs, host, FW);
  for (let e = 0; e < FW.engines; e++) {
    new Uint8Array(core.memory.buffer).set(programWords(cmds, e), core.sramPtr(h, e));
    core.startEngine(h, e, 0);
  }
  const slots = Math.max(...cmds.map((c) => c.slot)) + 3;
  ctx.run(ctx.nowPs + BigInt(Math.ceil((slots * SLOT_CYCLES * 1e9) / Number(ctx.device.config.get("engineClockKhz")))));

  // the host's objects work as before
  ctx.postSend(qD, [write(5, 48, 16)]);
  settle(10);
  same("CQ D, full before the engines ran", ctx.pollCq(cqD, 8).map((c) => [c.wrId, c.status]), [[1n, "SUCCESS"], [2n, "SUCCESS"]]);
  try {
    ctx.pollCq(cqD);
    problems.push("CQ D did not overrun: its consumer index moved");
  } catch (e) {
    if (!(e instanceof VerbsError) || !/overran/.test(e.message)) throw e;
  }
  ctx.postRecv(qB, [{ wrId: 6, localAddr: sink + 128, length: 128, lkey: mrSink.lkey }]);
  ctx.postSend(qC, [write(7, 96, 16)]);
  ctx.postSend(qA, [write(8, 112, 16)]);
  settle(200);
  same("CQ A", ctx.pollCq(cqA, 8).map((c) => [c.wrId, c.status, c.byteLen]), [[3n, "SUCCESS", 16], [4n, "SUCCESS", 64], [8n, "SUCCESS", 16]]);
  same("CQ B", ctx.pollCq(cqB, 8).map((c) => [c.wrId, c.status, c.byteLen]), [[6n, "SUCCESS", 64]]);
  same("engine 1's CQ", ctx.pollCq(ecq, 8).map((c) => [c.wrId, c.status]), [[7n, "SUCCESS"]]);
  const s = ctx.read(src, 256), d = ctx.read(sink, 256);
  same("the bytes written", [...d.subarray(0, 48), ...d.subarray(96, 192)], [...s.subarray(0, 48), ...s.subarray(96, 128), ...s.subarray(64, 128)]);
  same("the host's QPs", [ctx.qpState(qA), ctx.qpState(qB), ctx.qpState(qC), ctx.qpState(qD)], ["RTS", "RTS", "RTS", "ERR"]);

  // the engines report their interrupts and exit
  for (let e = 0; e < FW.engines; e++) ctx.device.mailboxPush(e, 1);
  ctx.device.run(ctx.nowPs + 1_000_000_000n);
  for (let e = 0; e < FW.engines; e++) same(`engine ${e}`, [ctx.device.engine(e).state, ctx.device.engine(e).exitCode], ["exited", 0]);

  // every result, in slot order, against the ownership model
  const at = core.hbmPtr(h) + (RESULTS_HBM - REGIONS.HBM.base);
  const table = new Uint32Array(core.memory.buffer.slice(at, at + 4 * MAX_CMDS * FW.engines));
  for (const c of cmds) {
    const sram = new DataView(core.memory.buffer, core.sramPtr(h, c.engine) + RESULTS_SRAM + 4 * c.index, 4).getUint32(0, true);
    same(`engine ${c.engine} result ${c.index} in SRAM and HBM`, sram, table[resultIndex(c.engine, c.index)]);
  }
  const objs: ModelObjects = {
    pds: new Map([[hp.handle, "host"]]),
    mrs: new Map([[mrSrc.lkey, { pd: hp.handle }], [mrSink.lkey, { pd: hp.handle }]]),
    cqs: new Map<number, number | "host">([[cqA.cqn, "host"], [cqB.cqn, "host"], [cqD.cqn, "host"], [ecq.cqn, 1]]),
    qps: new Map<number, { owner: number | "host"; pd: number; scq: number; rcq: number; state: number }>([
      ...[qA, qB, qC, qD].map((q) => [q.qpn, { owner: "host" as const, pd: hp.handle, scq: q.sendCq.cqn, rcq: q.recvCq.cqn, state: QP_STATE.RTS }] as const),
      [qE.qpn, { owner: 1, pd: hp.handle, scq: ecq.cqn, rcq: ecq.cqn, state: QP_STATE.RESET }],
    ]),
  };
  const verdict = judge(cmds, table, objs, FW, strict, tally);
  problems.push(...verdict.problems);
  same("CQ_CI and CQ_ARM writes dropped (nic.bad_doorbell)", ctx.device.stats()["nic.bad_doorbell"], verdict.dropped);
  const e1 = objs.qps.get(qE.qpn);
  if (e1) same("the state of QP E (engine 1's, made by the host)", core.qpState(h, qE.qpn), e1.state);
  for (let e = 0; e < FW.engines; e++) {
    const irq = new Uint32Array(core.memory.buffer.slice(core.sramPtr(h, e) + IRQ_SRAM, core.sramPtr(h, e) + IRQ_SRAM + 20));
    const fired = verdict.armed.get(ecq.cqn) === e ? [ecq.cqn] : [];
    same(`engine ${e}'s NIC interrupts (IRQ_COUNT, IRQ_CQN x 4)`, [...irq], [fired.length, ...fired, ...new Array(4 - fired.length).fill(U32_NONE)]);
  }
  return problems;
}

const big = (_: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v);
