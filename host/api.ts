// The public API both entry points share (host/index.ts for Node, host/browser.ts for browser
// bundlers): everything here runs unchanged on either platform. Each entry adds only how it
// finds the compiled core (`coreModule`, async in both) and what needs Node (`runFirmware`).
export { Device, DeviceFailedError, SnapshotError, type EngineReport, type EngineStateName, type TraceRecord, type DeviceOptions, type HbmServed, type MatmulLoad, type MatmulState, type MetarocePath, type DeviceConsoleLine, type RestoreOptions, type JitStats, type AheadStats } from "./device.js";
export { CoreInstance } from "./wasm.js";
export { ConfigError, resolveConfig, type DeviceConfig } from "./config.js";
export { PortSplitError, type PortGroups, type PortSplitBlocker } from "./port-groups.js";
export { ElfError, parseElf, checkImage, type ElfImage, type Segment } from "./elf.js";
export { toPerfetto, type TraceEvent, type PerfettoTrace } from "./trace/perfetto.js";
export {
  Context, VerbsError, encodeWqe,
  type Pd, type Mr, type Cq, type Qp, type QpInit, type QpAttr, type QpBytes, type SendWr, type RecvWr, type Wc, type Opcode, type QpStateName,
  type AccessFlag, type WcStatus, type ReduceOp, type ReduceDtype, type ReduceSource, type PortGroup, type PostSendOptions, type PostRecvOptions,
} from "./verbs.js";
export {
  runScenario, type ScenarioResult, type FlowResult, type RunOptions, type RunEnd, type Timeline, type MessageCounts, type Percentiles, type PathSummary, type MetaroceCounts, type FabricCounts, type PortCounts,
  type CsvOptions, type CsvFile, type CsvSink,
} from "./scenario/run.js";
export type { RetransmitCauses } from "./scenario/counters.js";
export type { InsnRecord } from "./debug/insn-log.js";
export {
  Cluster, type ClusterOptions, type QpEnd, type ConnectOptions, type ClusterRunEnd, type ClusterTrace, type ClusterTraceOptions,
} from "./scenario/cluster.js";
export {
  resolveScenario, resolveCluster, inlineGraphFiles, type ScenarioInput, type ClusterInput, type ClusterSpec, type FabricInput, type CollectiveInput, type FaultInput, type LinkInput, type LinksInput, type TimeInput, type GraphSpec, type Scenario, type CollectiveSpec, type InterferenceSpec, type Flow, type Fault, type LossFault, type LinkDownFault, type PlaneDownFault, type LinkSelection, type Topology, type SingleSwitch, type LeafSpine, type ThreeTier, type FatTree,
} from "./scenario/scenario.js";
export type { CollectiveReport, CollectiveRow } from "./scenario/collective.js";
export type { TrafficReport, VerbCounts, WorkloadReport, BackgroundTraffic } from "./scenario/result.js";
export { inlineWorkloadFiles, TRAFFIC_VERBS, WORKLOAD_MAX_FLOWS, type TrafficVerb, type VerbMix, type WorkloadSpec } from "./scenario/workload.js";
export { parseSizeCdf, cdfMean, cdfSize, cdfAt, CdfError, type SizeCdf, type CdfPoint } from "./scenario/size-cdf.js";
export { slowdownTable, type SlowdownTable, type SlowdownBucket } from "./scenario/slowdown.js";
export type { InterferenceRow } from "./scenario/interference.js";
export type { GilbertElliott } from "./fabric/fabric.js";
export type { LinkSpec } from "./fabric/topology.js";
export type { SwitchConfig, SwitchOptions, EcnConfig, PfcConfig } from "./fabric/config.js";
export { formatResult } from "./scenario/report.js";
export {
  GraphError, GRAPH_OPS,
  type GraphProgram, type RankGraph, type GraphBuffer, type GraphNode, type NodeBase, type Remote, type BufferRef, type GraphOpName, type DtypeName, type RedopName,
  type SendNode, type RecvNode, type WriteNode, type ReadNode, type ReduceNode, type CopyNode, type WaitNode, type SignalNode,
} from "./graph/types.js";
export { readGraphJson, writeGraphText } from "./graph/json.js";
export {
  allReduceRing, allReduceHalvingDoubling, allReduceTree, reduceScatterRing, allGatherRing, broadcastRing, allToAll,
  type CollectiveOptions, type AllReduceOptions,
} from "./graph/collectives.js";
export { GraphRun, graphDeviceConfig, type BindOptions, type RunState, type NodeSpan, type RemoteQp } from "./graph/runtime.js";
export { runReference, type ReferenceOptions, type ReferenceResult } from "./graph/reference.js";
export {
  importMsccl, parseMscclXml, MSCCL_STEP_TYPES,
  type MscclImport, type MscclImportOptions, type MscclAlgorithm, type MscclGpu, type MscclThreadBlock, type MscclStep, type MscclStepType, type MscclBuffer, type MscclCollective,
} from "./graph/msccl.js";
export { ClusterCapture } from "./cluster/capture.js";
export { PcapngWriter, type Direction, type InterfaceOptions } from "./wire/pcapng.js";
export { parseTime, formatTime } from "./units.js";
