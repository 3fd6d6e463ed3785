// How a benchmark suite reports a figure. Without --pretty (and whenever stdout is not a
// terminal) one JSON object per line in the fixed form other tools read: {bench, value, unit,
// ...extra}; with `npm run bench -- <suite> --pretty`, or on a terminal, a table row instead:
// the figure, its value and unit, and what it means. scripts/bench.mjs chooses the form and
// says it in MENIC_BENCH_FORMAT ("json" when unset).

const pretty = process.env.MENIC_BENCH_FORMAT === "pretty";
const NAME_W = 40, VALUE_W = 22;
let headerShown = false;

/** One figure: its name, value and unit, what it means (shown in the table only), and extra fields (JSON, and after the meaning). */
export function figure(bench: string, value: number, unit: string, meaning: string, extra: Record<string, unknown> = {}): void {
  const v = Number(value.toPrecision(6));
  if (!pretty) {
    console.log(JSON.stringify({ bench, value: v, unit, ...extra }));
    return;
  }
  const more = Object.entries(extra).map(([k, x]) => `${k} ${typeof x === "number" ? Number(x.toPrecision(6)) : JSON.stringify(x)}`).join(", ");
  tableRow(bench, `${v.toLocaleString("en-US", { maximumFractionDigits: 3 })} ${unit}`, `${meaning}${more ? ` (${more})` : ""}`);
}

/** One row of the table, under its header (printed before the first row). */
function tableRow(bench: string, value: string, meaning: string): void {
  if (!headerShown) {
    headerShown = true;
    console.log(`${"figure".padEnd(NAME_W)} ${"value".padStart(VALUE_W)}  what it means`);
  }
  console.log(`${bench.padEnd(NAME_W)} ${value.padStart(VALUE_W)}  ${meaning}`);
}

/** A figure this host cannot measure, and why (what is missing and how to install it): JSON
 * {bench, skipped}; in the table, "skipped" in the value column and the reason. */
export function skipped(bench: string, reason: string): void {
  if (!pretty) {
    console.log(JSON.stringify({ bench, skipped: reason }));
    return;
  }
  tableRow(bench, "skipped", reason);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}
