// `--set path=value` on a parsed scenario, for sweeps: `faults[0].random=0.05`,
// `traffic.messageBytes=65536`, `fabric.topology={"kind":"leaf-spine","planes":2}`. The value
// is JSON when it parses as JSON, else the text itself (so `until=20us` needs no quotes).
// Objects and lists on the way are made when missing; an index sets an entry of a list or adds
// one at its end (`faults[1]` of a list of one), and one further on is refused with its path as
// written (a list with holes would be checked, and refused, at another index). The scenario's
// schema checks the result, so a wrong name or value is refused there, with its path.

import { ConfigError } from "../config.js";

/** `a.b[2].c` → ["a", "b", 2, "c"]; throws on anything else. */
export function parsePath(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /(?:^|\.)([A-Za-z_$][\w$-]*)|\[(\d+)\]/gy;
  let m: RegExpExecArray | null;
  let at = 0;
  while (at < path.length && (m = re.exec(path)) !== null) {
    out.push(m[1] !== undefined ? m[1] : Number(m[2]));
    at = re.lastIndex;
  }
  if (at !== path.length || out.length === 0 || typeof out[0] !== "string") throw new ConfigError(`--set ${path}`, "wants a path like traffic.messageBytes or faults[0].random");
  for (const k of out) if (k === "__proto__" || k === "constructor" || k === "prototype") throw new ConfigError(`--set ${path}`, `${k} is not a field`);
  return out;
}

/** The text after `=` as a value: JSON when it is JSON, else the text. */
export function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Sets `path=value` (one `--set` argument) in `target`, a parsed scenario; `root` names it in errors. The value null removes the field (it takes its default; `--set sweep=null` runs a sweep's scenario once). */
export function applySet(target: Record<string, unknown>, assignment: string, root = "scenario"): void {
  const eq = assignment.indexOf("=");
  if (eq < 1) throw new ConfigError(`--set ${assignment}`, "wants path=value, e.g. faults[0].random=0.05");
  const path = parsePath(assignment.slice(0, eq));
  let o: Record<string | number, unknown> = target;
  let where = root;
  for (let i = 0; i < path.length; i++) {
    const k = path[i]!;
    where += typeof k === "number" ? `[${k}]` : `.${k}`;
    if (typeof k === "number" && Array.isArray(o) && k > o.length) {
      // the list as the user named it (faults, collectives[0].sizes): which entries there are
      const rel = where.slice(root.length).replace(/^\./, ""), list = rel.slice(0, rel.lastIndexOf("[")), n = o.length;
      const has = n === 0 ? "is empty" : n === 1 ? `has 1 entry, ${list}[0]` : `has ${n} entries, ${list}[0] to ${list}[${n - 1}]`;
      throw new ConfigError(where, `${list} ${has}: --set ${n === 0 ? "adds" : n === 1 ? "changes it or adds" : "changes one of them or adds"} ${list}[${n}]`);
    }
    if (i === path.length - 1) break;
    if (o[k] === undefined) o[k] = typeof path[i + 1] === "number" ? [] : {};
    const next = o[k];
    if (typeof next !== "object" || next === null) throw new ConfigError(where, `is ${JSON.stringify(next)}, which has no field ${path[i + 1]}`);
    o = next as Record<string | number, unknown>;
  }
  const value = parseValue(assignment.slice(eq + 1)), last = path[path.length - 1]!;
  if (value === null && !Array.isArray(o)) delete o[last];
  else o[last] = value;
}
