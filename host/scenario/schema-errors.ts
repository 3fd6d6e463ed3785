// A JSON Schema validation error (ajv's, from the generated validator) as the ConfigError people
// read: the value's path in dotted form and what the schema wants, e.g.
//   scenario.traffic.pattern: must be one of pairs, permutation, incast, all-to-all, workload, got "ring"
//   scenario.faults[0].random: must be in [0, 1), got 1.5
//   scenario.fabirc: unknown field (did you mean fabric? known: $schema, name, ...)
// What a schema wants is said from its keywords (enum, const, type and range), or by its
// `errorMessage` when it has one (a time, a list of links): the schema is the one source.

import { ConfigError } from "../config.js";
import type { SchemaError } from "../generated/scenario-validate.js";
import { unknownField } from "../user-input.js";

type Schema = Record<string, unknown>;

/** `/faults/0/random` under `scenario` → `scenario.faults[0].random` (JSON Pointer, RFC 6901). */
export function dottedPath(root: string, pointer: string): string {
  if (pointer === "") return root;
  return root + pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((t) => (/^\d+$/.test(t) ? `[${t}]` : `.${t}`)).join("");
}

/** The schema `s` with its `$ref` (a local one, `#/...`) followed in `rootSchema`. */
function deref(s: Schema, rootSchema: Schema): Schema {
  let at = s;
  for (let hops = 0; typeof at.$ref === "string" && hops < 8; hops++) {
    const ref = at.$ref as string;
    if (!ref.startsWith("#/")) break;
    let t: unknown = rootSchema;
    for (const k of ref.slice(2).split("/")) t = (t as Schema | undefined)?.[k];
    if (!t || typeof t !== "object") break;
    at = t as Schema;
  }
  return at;
}

const interval = (s: Schema): string => {
  const lo = s.exclusiveMinimum ?? s.minimum, hi = s.exclusiveMaximum ?? s.maximum;
  if (lo !== undefined && hi !== undefined) return ` in ${s.exclusiveMinimum !== undefined ? "(" : "["}${lo}, ${hi}${s.exclusiveMaximum !== undefined ? ")" : "]"}`;
  if (lo !== undefined) return ` ${s.exclusiveMinimum !== undefined ? ">" : ">="} ${lo}`;
  if (hi !== undefined) return ` ${s.exclusiveMaximum !== undefined ? "<" : "<="} ${hi}`;
  return "";
};

/** What schema `s` wants, as a sentence: "must be one of a, b", "must be an integer in [1, 8]". */
export function expectation(s: Schema, rootSchema: Schema): string {
  s = deref(s, rootSchema);
  if (typeof s.errorMessage === "string") return s.errorMessage;
  if (Array.isArray(s.enum)) return `must be one of ${s.enum.join(", ")}`;
  if (s.const !== undefined) return `must be ${JSON.stringify(s.const)}`;
  const kinds = tagValues(s);
  if (kinds) return `must be an object whose kind is one of ${kinds.join(", ")}`;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (types.length === 1) {
    switch (types[0]) {
      case "integer": return `must be an integer${interval(s)}`;
      case "number": { const r = interval(s); return r.startsWith(" in") ? `must be${r}` : `must be a number${r}`; }
      case "object": return "must be an object";
      case "array": return "must be a list";
      case "string": return "must be a string";
      case "boolean": return "must be true or false";
    }
  }
  return `must be ${types.join(" or ")}`;
}

/** The values of the tag of a schema that picks one of its oneOf branches by a property (`discriminator`). */
function tagValues(s: Schema): string[] | undefined {
  const d = s.discriminator as { propertyName?: string } | undefined;
  if (!d?.propertyName || !Array.isArray(s.oneOf)) return undefined;
  return (s.oneOf as Schema[]).map((b) => String(((b.properties as Schema)?.[d.propertyName!] as Schema)?.const));
}

const got = (v: unknown) => (v === undefined ? "" : `, got ${JSON.stringify(v)}`);

/** The ConfigError for validation error `e` of the value called `root` against `rootSchema`. */
export function schemaError(e: SchemaError, root: string, rootSchema: Schema): ConfigError {
  const at = dottedPath(root, e.instancePath);
  const parent = e.parentSchema;
  switch (e.keyword) {
    case "additionalProperties": {
      const known = Object.keys((parent.properties as Schema | undefined) ?? {});
      const name = String(e.params.additionalProperty);
      return new ConfigError(`${at}.${name}`, unknownField(name, known));
    }
    case "required": {
      const name = String(e.params.missingProperty);
      const field = (parent.properties as Schema | undefined)?.[name] as Schema | undefined;
      return new ConfigError(`${at}.${name}`, `is required${field ? ` (${expectation(field, rootSchema)})` : ""}`);
    }
    case "discriminator": {
      const tag = String(e.params.tag), value = (e.data as Schema | undefined)?.[tag];
      const want = `must be one of ${tagValues(parent)!.join(", ")}`;
      return new ConfigError(`${at}.${tag}`, value === undefined ? `is required (${want})` : `${want}${got(value)}`);
    }
    case "not":
      return new ConfigError(at, expectation(parent, rootSchema));
    default:
      return new ConfigError(at, `${expectation(parent, rootSchema)}${got(e.data)}`);
  }
}
