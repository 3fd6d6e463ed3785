// Collectives as work-queue graphs (docs/graph.md): the model, its JSON and binary forms, and validation.
export * from "./types.js";
export { readGraphJson, graphJson, writeGraphText, GRAPH_FORMAT, GRAPH_JSON_VERSION } from "./json.js";
export { validateProgram, type ValidateOptions, type Matching, type MatchedMessage } from "./validate.js";
export { encodeGraph, decodeGraph, programOf } from "./binary.js";
export { eventGraph, eventNode, type EventGraph } from "./validate.js";
export { runReference, type ReferenceOptions, type ReferenceResult } from "./reference.js";
export { allReduceRing, allReduceHalvingDoubling, allReduceTree, doubleBinaryTree, reduceScatterRing, allGatherRing, broadcastRing, allToAll, split, stripesFor, type CollectiveOptions, type AllReduceOptions, type RankTree } from "./collectives.js";
export { findRace, checkRaces } from "./races.js";
export { bindProgram, executorsReady, graphDeviceConfig, GraphRun, type BindOptions, type RunState, type NodeSpan, type RemoteQp } from "./runtime.js";
export { criticalPath, type CriticalPath, type PathStep, type NodeTimes } from "./critical.js";
export { parseMscclXml, importMsccl, MSCCL_STEP_TYPES, MSCCL_COLLECTIVES, type MscclAlgorithm, type MscclGpu, type MscclThreadBlock, type MscclStep, type MscclStepType, type MscclBuffer, type MscclCollective, type MscclImportOptions, type MscclImport } from "./msccl.js";
