// One benchmark figure per line, in the fixed form other tools read.
export function figure(bench: string, value: number, unit: string, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ bench, value: Number(value.toPrecision(6)), unit, ...extra }));
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}
