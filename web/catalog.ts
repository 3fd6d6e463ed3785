// What the page offers to run: the firmware examples (firmware/examples, prebuilt ELFs; the
// worker embeds them, web/firmware.ts) and the scenarios of examples/scenarios/.
import type { ScenarioDoc } from "./protocol.js";
import roceLoss from "../examples/scenarios/roce-loss.json" with { type: "json" };
import rocePair from "../examples/scenarios/roce-pair.json" with { type: "json" };
import incastDcqcn from "../examples/scenarios/incast-dcqcn.json" with { type: "json" };
import incastPfc from "../examples/scenarios/incast-pfc.json" with { type: "json" };
import dcqcnConverge from "../examples/scenarios/dcqcn-converge.json" with { type: "json" };
import permutation from "../examples/scenarios/permutation.json" with { type: "json" };
import allToAll from "../examples/scenarios/all-to-all.json" with { type: "json" };
import metaroceIncast from "../examples/scenarios/metaroce-incast.json" with { type: "json" };
import metaroceLoss from "../examples/scenarios/metaroce-loss.json" with { type: "json" };
import metarocePlaneFailure from "../examples/scenarios/metaroce-plane-failure.json" with { type: "json" };
import metarocePlanes from "../examples/scenarios/metaroce-planes.json" with { type: "json" };

export interface CatalogEntry {
  id: string;
  group: "firmware" | "scenario";
  doc: ScenarioDoc;
}

const fw = (name: string, engines: number, until = "10ms"): CatalogEntry => ({ id: `fw:${name}`, group: "firmware", doc: { firmware: name, config: { engines }, until } });
const sc = (doc: Record<string, unknown>): CatalogEntry => {
  const { $schema: _schema, ...rest } = doc;
  return { id: `sc:${String(doc.name)}`, group: "scenario", doc: rest };
};

export const CATALOG: readonly CatalogEntry[] = [
  fw("pingpong", 16), fw("hello", 16), fw("psum", 16), fw("nic", 16), fw("fault", 4), fw("list", 1), fw("recurse", 1),
  sc(rocePair), sc(roceLoss), sc(incastDcqcn), sc(incastPfc), sc(dcqcnConverge), sc(permutation), sc(allToAll),
  sc(metaroceIncast), sc(metaroceLoss), sc(metarocePlaneFailure), sc(metarocePlanes),
];
