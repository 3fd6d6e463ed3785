// What the page offers to run: the firmware examples (firmware/examples, prebuilt ELFs; the
// worker embeds them, web/firmware.ts) and every scenario of examples/scenarios/, which the
// page's build reads (scripts/build-web.mjs, module `menic:scenarios`): a new shipped scenario
// is listed without editing the page.
import type { ScenarioDoc } from "./protocol.js";
import SCENARIOS from "menic:scenarios";

export interface CatalogEntry {
  id: string;
  group: "firmware" | "scenario";
  doc: ScenarioDoc;
}

const fw = (name: string, engines: number, until = "10ms"): CatalogEntry => ({ id: `fw:${name}`, group: "firmware", doc: { firmware: name, config: { engines }, until } });
const sc = (file: string, doc: Record<string, unknown>): CatalogEntry => {
  const { $schema: _schema, ...rest } = doc;
  return { id: `sc:${file}`, group: "scenario", doc: rest };
};

export const CATALOG: readonly CatalogEntry[] = [
  fw("pingpong", 16), fw("hello", 16), fw("psum", 16), fw("nic", 16), fw("fault", 4), fw("list", 1), fw("recurse", 1),
  ...SCENARIOS.map(([file, doc]) => sc(file, doc)),
];
