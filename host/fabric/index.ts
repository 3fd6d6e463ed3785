// The fabric and the cluster runner: the public surface (docs/fabric.md).
export { Fabric, DROP_REASONS, type DropReason, type LossSpec, type GilbertElliott, type FabricStats, type LinkStats, type ChannelStats, type SwitchStats } from "./fabric.js";
export { FABRIC_DEFAULTS, PAYLOAD_SLOT_BYTES_DEFAULT, resolveFabricConfig, type FabricConfig, type FabricOptions, type SwitchConfig, type EcnConfig, type PfcConfig, type PayloadMode } from "./config.js";
export { ClusterRunner, windowFor, QUANTUM_PS_DEFAULT, type Endpoint, type RunnerOptions, type RunnerStats } from "./runner.js";
export { ArrivalBatch, type TxSink } from "./batch.js";
export {
  singleSwitch, leafSpine, threeTier, fatTree, portAddress, addressPort, portMac, formatIpv4, hostLink, fabricLink, superLink,
  leafId, spineId, superSpineId, PORTS_DEFAULT, HOST_LINK_DEFAULT, FABRIC_LINK_DEFAULT, SUPER_LINK_DEFAULT,
  type Topology, type TopoLink, type TopoSwitch, type LinkSpec, type SingleSwitchOptions, type LeafSpineOptions,
  type ThreeTierOptions, type FatTreeOptions,
} from "./topology.js";
export { SyntheticEndpoint, type SyntheticFlow, type SyntheticOptions, type SyntheticArrival } from "./synthetic.js";
