// What a person typed, read back to them in their own terms: the known name nearest to one
// misspelt ("did you mean topology?"), and where JSON text breaks its grammar, by line and column
// (an editor's terms, where JSON.parse says an offset, or in Node 20 for some errors nothing).
// No Node APIs: the page uses it too.

/** Edit distance between `a` and `b` (optimal string alignment: insert, delete, substitute, swap two neighbours), ignoring case. */
export function editDistance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The one of `known` nearest to `name`, when it is near enough to be a slip: at most a third of
 * the name's letters apart (one for a short name). Null when none is, or when two are equally near.
 */
export function nearest(name: string, known: Iterable<string>): string | null {
  const most = Math.max(1, Math.floor(name.length / 3));
  let best: string | null = null, bestD = Infinity, tie = false;
  for (const k of known) {
    const d = editDistance(name, k);
    if (d < bestD) { best = k; bestD = d; tie = false; }
    else if (d === bestD) tie = true;
  }
  return best !== null && bestD <= most && !tie ? best : null;
}

/** " (did you mean X?)", or "" when no known name is near. */
export function didYouMean(name: string, known: Iterable<string>, show: (k: string) => string = (k) => k): string {
  const n = nearest(name, known);
  return n === null ? "" : ` (did you mean ${show(n)}?)`;
}

/** What is said of an unknown field `name`: "unknown field (did you mean X? known: a, b, ...)". */
export function unknownField(name: string, known: readonly string[]): string {
  const near = nearest(name, known);
  return `unknown field (${near ? `did you mean ${near}? ` : ""}known: ${known.join(", ")})`;
}

/** Where JSON text first breaks: 1-based line and column, and what was expected there. */
export interface JsonSyntaxError {
  line: number;
  column: number;
  message: string;
}

/**
 * Where `text` first breaks JSON's grammar (RFC 8259), or null when it is JSON. A scan of its own
 * rather than JSON.parse's message: Node 20 gives an offset for some errors and none for others
 * ("Unexpected token ',', ... is not valid JSON"), and no line or column for any.
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | null {
  let i = 0;
  const stack: ("{" | "[")[] = [];
  const at = (message: string): JsonSyntaxError => {
    const before = text.slice(0, i);
    const lineStart = before.lastIndexOf("\n") + 1;
    const got = i >= text.length ? "the end of the text" : JSON.stringify(String.fromCodePoint(text.codePointAt(i)!));
    return { line: before.split("\n").length, column: [...before.slice(lineStart)].length + 1, message: `${message}, got ${got}` };
  };
  const space = () => { while (i < text.length && " \t\n\r".includes(text[i]!)) i++; };
  /** A string from its opening quote: null, or what is wrong with it (i where). */
  const string = (): string | null => {
    for (i++; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) { i++; return null; }
      if (c < 0x20) return "a control character in a string (write it as an escape, \\n for a new line)";
      if (c !== 0x5c) continue;
      i++;
      if (text[i] === "u") {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) return "\\u wants 4 hex digits";
        i += 4;
      } else if (i >= text.length || !"\"\\/bfnrt".includes(text[i]!)) return "a bad escape in a string";
    }
    return "a string left open";
  };
  const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  let state: "value" | "value-or-]" | "key" | "key-or-}" = "value";
  for (;;) {
    space();
    const c = text[i];
    if (state === "key" || state === "key-or-}") {
      if (state === "key-or-}" && c === "}") { i++; stack.pop(); }
      else {
        if (c !== '"') return at(state === "key" ? "expected a double-quoted property name" : "expected a double-quoted property name or '}'");
        const bad = string();
        if (bad) return at(bad);
        space();
        if (text[i] !== ":") return at("expected ':' after the property name");
        i++;
        state = "value";
        continue;
      }
    } else if (state === "value-or-]" && c === "]") { i++; stack.pop(); }
    else if (c === "{" || c === "[") { i++; stack.push(c); state = c === "{" ? "key-or-}" : "value-or-]"; continue; }
    else if (c === '"') { const bad = string(); if (bad) return at(bad); }
    else {
      const word = ["true", "false", "null"].find((w) => text.startsWith(w, i));
      number.lastIndex = i;
      if (word) i += word.length;
      else if (number.test(text)) i = number.lastIndex;
      else return at("expected a value");
    }
    // a value is complete: the end, or what its list or object wants next
    for (;;) {
      space();
      const top = stack.at(-1);
      if (top === undefined) return i < text.length ? at("expected the end of the text after the value") : null;
      const close = top === "{" ? "}" : "]";
      if (text[i] === ",") { i++; state = top === "{" ? "key" : "value"; break; }
      if (text[i] !== close) return at(`expected ',' or '${close}'`);
      i++;
      stack.pop();
    }
  }
}

/** Text that is not JSON, and where: its message is "line 4, column 1: expected ..., got ...". */
export class JsonTextError extends Error {
  constructor(readonly line: number, readonly column: number, readonly detail: string) {
    super(`line ${line}, column ${column}: ${detail}`);
    this.name = "JsonTextError";
  }
}

/** JSON.parse, throwing a JsonTextError that says where the text breaks. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const where = jsonSyntaxError(text);
    // the scan and JSON.parse agree on what JSON is; if they ever did not, JSON.parse's word stands
    if (!where) throw e;
    throw new JsonTextError(where.line, where.column, where.message);
  }
}
