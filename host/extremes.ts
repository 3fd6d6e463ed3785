// The largest and the smallest of many numbers. Math.max(...xs) passes every value as an
// argument on the stack, and the lists a big scenario makes (16,384 devices' 131,072 flows, or
// the links of their fabric) overflow it: "Maximum call stack size exceeded".

/** The largest of `xs`, or `floor` when it is larger (-Infinity unless given: an empty list's). */
export function maxOf(xs: Iterable<number>, floor = -Infinity): number {
  let m = floor;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/** The smallest of `xs`, or `ceiling` when it is smaller (Infinity unless given: an empty list's). */
export function minOf(xs: Iterable<number>, ceiling = Infinity): number {
  let m = ceiling;
  for (const x of xs) if (x < m) m = x;
  return m;
}
