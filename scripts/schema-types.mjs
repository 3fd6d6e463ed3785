// TypeScript types of what a user writes, from a JSON Schema (the scenario's: scripts/gen-schema.mjs
// calls it): every property optional unless the schema requires it, each with its description
// (and default) as its TSDoc, so that an editor shows the schema's words and a misspelt field
// fails to compile. It knows the keywords schemas/scenario.schema.json uses, and refuses others:
// type (one or a list), enum, const, properties/required/additionalProperties, items, oneOf,
// $ref (local), if/then/else on a type, not {} (a field that may not be given), and `tsType`
// (the schema names a TypeScript type of the host: its properties that may not be given are
// left out of it with Omit).
//
// Named types (type aliases: parsed JSON, a Record<string, unknown>, casts to them): each entry point, every `$defs` entry a `$ref` reaches that is not a plain
// number or boolean (TimeInput), and every object or list a `$ref` reaches elsewhere
// (#/properties/fabric: FabricInput; a list of objects names its items: faults, FaultInput).

const DOC_KEYWORDS = new Set(["description", "default", "errorMessage", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minProperties", "maxProperties", "pattern", "discriminator", "$id", "$schema", "title", "$defs"]);
const TYPE_KEYWORDS = new Set(["type", "enum", "const", "properties", "required", "additionalProperties", "items", "oneOf", "$ref", "if", "then", "else", "not", "tsType"]);

const pascal = (s) => s.replace(/(^|[-_])(\w)/g, (_, __, c) => c.toUpperCase());

/**
 * The types of `entries` ({ name, pointer }: a JSON Pointer into `root`, "" for the root itself)
 * as TypeScript source: `imports` is written first (the types `tsType` names).
 */
export function schemaTypes(root, entries, imports = "") {
  const at = (pointer) => {
    let s = root;
    for (const k of pointer.split("/").slice(1)) {
      s = s?.[k.replace(/~1/g, "/").replace(/~0/g, "~")];
      if (s === undefined) throw new Error(`schema-types: no ${pointer} in the schema`);
    }
    return s;
  };
  const deref = (s) => {
    for (let hops = 0; s.$ref !== undefined; hops++) {
      if (!s.$ref.startsWith("#") || hops > 8) throw new Error(`schema-types: cannot follow $ref ${s.$ref}`);
      s = at(s.$ref.slice(1));
    }
    return s;
  };

  // the names: entry points, then what $refs reach
  const names = new Map();
  for (const e of entries) names.set(at(e.pointer), e.name);
  const plain = (s) => !s.tsType && (s.not !== undefined || ["number", "integer", "boolean"].includes(s.type) || (s.type === undefined && s.enum === undefined && s.oneOf === undefined && s.const === undefined));
  const visit = (s) => {
    if (typeof s !== "object" || s === null) return;
    if (Array.isArray(s)) { s.forEach(visit); return; }
    if (typeof s.$ref === "string") {
      const segs = s.$ref.slice(2).split("/");
      const target = at(s.$ref.slice(1)), last = segs[segs.length - 1];
      if (names.has(target)) { /* named already */ }
      else if (segs[0] === "$defs" && !plain(target)) names.set(target, `${pascal(last)}Input`);
      else if (target.type === "object" && target.properties) names.set(target, `${pascal(last)}Input`);
      else if (target.type === "array" && target.items && !target.items.$ref && !names.has(target.items)) names.set(target.items, `${pascal(last.replace(/s$/, ""))}Input`);
    }
    for (const [k, v] of Object.entries(s)) if (k !== "default") visit(v);
  };
  visit(root);

  const out = [];
  const done = new Set();
  const queue = entries.map((e) => at(e.pointer));

  const doc = (s, indent) => {
    const parts = [];
    if (s.description) parts.push(s.description);
    if (s.default !== undefined) parts.push(`Default: \`${JSON.stringify(s.default)}\`.`);
    if (parts.length === 0) return [];
    const text = parts.join(" ").replace(/\*\//g, "* /").replace(/@/g, "\\@");
    return [`${indent}/** ${text} */`];
  };

  // a property's own description and default, else those of what its $ref reaches
  const described = (s) => {
    if (s.description !== undefined) return s;
    const t = s.$ref ? deref(s) : s;
    return { description: t.description, default: s.default ?? t.default };
  };

  const member = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k));

  const objectType = (s, indent) => {
    const req = new Set(s.required ?? []);
    const lines = ["{"];
    for (const [k, p] of Object.entries(s.properties ?? {})) {
      lines.push(...doc(described(p), `${indent}  `));
      lines.push(`${indent}  ${member(k)}${req.has(k) ? "" : "?"}: ${type(p, `${indent}  `)};`);
    }
    if (s.additionalProperties !== undefined && s.additionalProperties !== false) {
      const v = s.additionalProperties === true ? "unknown" : type(s.additionalProperties, `${indent}  `);
      lines.push(`${indent}  [field: string]: ${v};`);
    }
    lines.push(`${indent}}`);
    return lines.length === 2 ? "Record<string, never>" : lines.join("\n");
  };

  const literal = (v) => JSON.stringify(v);
  const paren = (t) => (/[|&]/.test(t) ? `(${t})` : t);

  function type(s, indent = "", self = false) {
    if (!self && names.has(s)) {
      if (!done.has(s)) { done.add(s); queue.push(s); }
      return names.get(s);
    }
    for (const k of Object.keys(s)) if (!TYPE_KEYWORDS.has(k) && !DOC_KEYWORDS.has(k)) throw new Error(`schema-types: keyword ${k} is not known here`);
    if (s.$ref !== undefined) return type(at(s.$ref.slice(1)), indent);
    if (s.tsType !== undefined) {
      // the fields the schema forbids (not {}, directly or through a $ref) are left out
      const banned = Object.entries(s.properties ?? {}).filter(([, p]) => deref(p).not !== undefined).map(([k]) => literal(k));
      return banned.length ? `Omit<${s.tsType}, ${banned.join(" | ")}>` : s.tsType;
    }
    if (s.not !== undefined) return "never";
    if (s.const !== undefined) return literal(s.const);
    if (s.enum !== undefined) return s.enum.map(literal).join(" | ");
    if (s.oneOf !== undefined) return s.oneOf.map((b) => type(b, indent)).join(" | ");
    const kinds = Array.isArray(s.type) ? s.type : [s.type];
    if (s.if !== undefined) {
      // a type list split by `if: { type }`: that type as `then` says, the others as `else`
      return kinds.map((k) => type(k === s.if.type ? { type: k, ...s.then } : { type: k, ...s.else }, indent)).join(" | ");
    }
    return kinds.map((k) => {
      switch (k) {
        case "integer": case "number": return "number";
        case "string": return "string";
        case "boolean": return "boolean";
        case "array": return `${paren(s.items ? type(s.items, indent) : "unknown")}[]`;
        case "object": return objectType(s, indent);
        case undefined: return "unknown";
        default: throw new Error(`schema-types: type ${k} is not known here`);
      }
    }).join(" | ");
  }

  const HEADER = "// generated by scripts/gen-schema.mjs from schemas/scenario.schema.json: do not edit, run `npm run gen:schema`";
  for (let i = 0; i < queue.length; i++) {
    const s = queue[i];
    done.add(s);
    const name = names.get(s);
    const body = type(s, "", true);
    out.push("", ...doc({ description: s.description ?? `${name}: see schemas/scenario.schema.json.` }, ""));
    // a type alias, not an interface: parsed JSON (a Record<string, unknown>) can then be cast to it
    out.push(`export type ${name} = ${body};`);
  }
  return `${HEADER}\n${imports}${out.join("\n")}\n`;
}
