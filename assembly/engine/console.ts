// An engine's console: the bytes it prints (SYS.CONSOLE_TX), and the simulated time at which
// each line began, which the host needs to print the lines of all engines in time order. Both
// are rings the host drains (index.ts consoleRead, consoleLinesRead). A line's time is that of
// its first byte; a byte that begins a line is accepted only when both rings have room, so
// the host can pair every line it sees with exactly one time.

import { Device, statAdd } from "../core/device";
import { Hart } from "./hart";
import { psOfCycle, NEVER } from "../core/time";
import { fifoPush, fifoPush64 } from "../core/fifo";
import { STAT_CONSOLE_DROPPED } from "../generated/layouts";

const NEWLINE: u32 = 10;

/** Line times a console ring of `ringBytes` has room for: one u64 per 8 bytes (a shorter line on average fills it first). */
@inline export function consoleLineSlots(ringBytes: u32): u32 {
  return ringBytes >> 3;
}

/** Engine `h` prints byte `v` now (its own clock); a byte that finds no room is dropped and counted. */
export function consoleWrite(dev: Device, h: Hart, v: u32): void {
  const b = v & 0xff;
  const begins = h.consoleLinePs == NEVER;
  if (h.console.count >= h.console.cap || (begins && h.consoleLines.count >= h.consoleLines.cap)) {
    statAdd(dev, STAT_CONSOLE_DROPPED, 1);
    return;
  }
  if (begins) {
    h.consoleLinePs = psOfCycle(h.cycle, dev.cfg.engineClockKhz);
    fifoPush64(h.consoleLines, h.consoleLinePs);
  }
  fifoPush(h.console, b);
  if (b == NEWLINE) h.consoleLinePs = NEVER;
}

/** True when either of engine `h`'s console rings is half full: the host should drain them. */
export function consoleWantsDrain(h: Hart): bool {
  return h.console.count * 2 >= h.console.cap || h.consoleLines.count * 2 >= h.consoleLines.cap;
}
