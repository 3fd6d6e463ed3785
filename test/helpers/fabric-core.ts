// The core's fabric parts for tests (assembly/fabric/: the exports for tests), on a core
// instance of their own: the ECMP hash and pick as a switch computes them.
import { instantiateCoreSync } from "../../host/wasm.js";
import { coreModule } from "../../host/platform/node.js";

export const core = instantiateCoreSync(coreModule());
/** MurmurHash3 of the 5-tuple (seed 0), as a frame entering the fabric gets it. */
export const hashTuple = (src: number, dst: number, sport: number, dport: number, proto: number) => core.fabricHashTuple(src, dst, sport, dport, proto) >>> 0;
/** The ECMP member of `count` a switch seeded `seed` picks for a tuple hash. */
export const ecmpPick = (hash: number, seed: number, count: number) => core.fabricEcmpPick(hash, seed, count) >>> 0;
