// Run-ahead (assembly/engine/ahead.ts): an engine running only private code goes on past its
// window, and must come out exactly where the windows would have it. The hard case is the NIC
// reaching the SRAM of an engine that is ahead: engine 1 registers a word of its SRAM for remote
// writes and spins on it, counting, while engine 0, its QP connected to engine 1's, computes a
// while and then writes the word with an RDMA WRITE. Engine 1's count when it sees the word, its cycles, and every engine's state
// must be the same with run-ahead on and off, with and without the JIT; and with it on, the
// engine must have been settled (put back and run again), or the test has not tested that.

import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFirmware, findClang } from "../host/fw/build.js";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";

const clang = findClang();
const tmp = mkdtempSync(join(tmpdir(), "menic-ahead-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SOURCE = `#include <menic.h>
#include <menic/nic.h>
static volatile uint32_t box; /* engine 1 spins on it; engine 0 writes it through the NIC */
static uint32_t value = 0x5eed;
static struct menic_wqe sq_ring[4], rq_ring[4];
static volatile struct menic_cqe cq_ring[4];
/* what the two engines tell each other, in HBM */
static MENIC_HBM_ZERO volatile struct { uint32_t qpn[2]; uint32_t rkey; uint32_t ready[2]; } hello;

int main(void) {
  uint32_t me = menic_hartid();
  if (me > 1) return 0;
  int32_t pd = menic_alloc_pd();
  int32_t key = me == 1 ? menic_reg_mr((uint32_t)pd, &box, 4, MENIC_ACCESS_LOCAL_WRITE | MENIC_ACCESS_REMOTE_WRITE)
                        : menic_reg_mr((uint32_t)pd, &value, 4, MENIC_ACCESS_LOCAL_WRITE);
  struct menic_cq cq;
  struct menic_queue sq, rq;
  int32_t cqn = menic_create_cq(&cq, cq_ring, 4);
  int32_t qpn = menic_create_qp(&sq, &rq, (uint32_t)pd, &cq, &cq, sq_ring, 4, rq_ring, 4, false);
  if (pd < 0 || key < 0 || cqn < 0 || qpn < 0) return 1;
  hello.qpn[me] = (uint32_t)qpn;
  if (me == 1) hello.rkey = menic_rkey(key);
  hello.ready[me] = 1;
  while (!hello.ready[1 - me]) {}
  if (menic_connect_qp((uint32_t)qpn, hello.qpn[1 - me]) != 0) return 1;
  if (me == 1) {
    uint32_t spins = 0;
    while (box == 0) spins++;
    printf("engine 1: saw %x after %u spins\\n", box, spins);
    return 0;
  }
  uint32_t sum = 0;
  for (uint32_t i = 0; i < DELAY; i++) sum += i * i ^ (sum >> 3);
  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_RDMA_WRITE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.qpn = sq.qpn;
  w.laddr = menic_dma(&value);
  w.length = 4;
  w.lkey = (uint32_t)key;
  w.raddr = MENIC_DMA_SRAM_BASE + MENIC_SRAM_WINDOW + (uint32_t)(uintptr_t)&box;
  w.rkey = hello.rkey;
  menic_post_express(&w);
  struct menic_cqe c;
  while (!menic_cq_poll(&cq, &c)) {}
  printf("engine 0: write status %u, sum %u\\n", c.status, sum);
  return c.status;
}
`;

interface Outcome { console: string[]; engines: string; now: bigint; settles: number; runs: number }

async function run(elf: Uint8Array, jit: number, runAhead: boolean): Promise<Outcome> {
  const dev = await Device.create(coreModule(), { engines: 4, jit }, { runAhead, jitHot: 1 });
  dev.start(dev.loadElf(elf).entry);
  const before = dev.aheadStats();
  const now = dev.run(1_000_000_000n);
  const after = dev.aheadStats();
  const engines = JSON.stringify([0, 1, 2, 3].map((e) => dev.engine(e)), (_, v) => (typeof v === "bigint" ? v.toString() : v));
  return { console: [dev.console(0), dev.console(1)], engines, now, settles: after.settles - before.settles, runs: after.runs - before.runs };
}

describe.skipIf(clang === null)("run-ahead", () => {
  // engine 0 computes for DELAY iterations first, long enough that engine 1 is far ahead when
  // the NIC reaches its SRAM; two delays, so that the spin counts differ and are not a constant
  for (const delay of [3000, 7919]) {
    it(`comes out where the windows have it when the NIC writes an engine's SRAM ahead (delay ${delay})`, async () => {
      const src = join(tmp, "ahead.c");
      writeFileSync(src, SOURCE);
      const { elf } = buildFirmware({ sources: [src], out: join(tmp, `ahead${delay}.elf`), optLevel: "2", defines: { DELAY: String(delay) }, cwd: tmp });
      const off = await run(elf, 0, false);
      expect(off.console[0]).toMatch(/^engine 0: write status 0, sum \d+\n$/);
      const spins = Number(/after (\d+) spins/.exec(off.console[1]!)![1]);
      expect(off.console[1]).toBe(`engine 1: saw 5eed after ${spins} spins\n`);
      expect(spins).toBeGreaterThan(1000); // it spun a while: the write came while it ran
      expect(off.runs).toBe(0);
      for (const jit of [0, 1]) {
        const on = await run(elf, jit, true);
        expect(on.console).toEqual(off.console);
        expect(on.engines).toBe(off.engines);
        expect(on.now).toBe(off.now);
        expect(on.runs).toBeGreaterThan(0);
        expect(on.settles).toBeGreaterThan(0);
      }
      const jitOff = await run(elf, 1, false);
      expect(jitOff.engines).toBe(off.engines);
    });
  }
});
