// The messages between the page (main.ts) and the worker that runs a scenario (worker.ts).
// Everything is plain data (structured clone); bytes travel as Uint8Array.

import type { LiveFrame, PlotMarker, PlotSpec } from "../host/live.js";

/** What a visitor runs, as the editor holds it and the URL encodes it: a firmware example with a device config, or a fabric/transport scenario (schemas/scenario.schema.json). */
export type ScenarioDoc = FirmwareDoc | Record<string, unknown>;

export interface FirmwareDoc {
  /** one of the firmware examples (web/catalog.ts) */
  firmware: string;
  /** device config fields (docs/memory-map.md) */
  config?: Record<string, number | string>;
  /** simulated-time limit, e.g. "1ms" (default 1 s) */
  until?: string;
}

export const isFirmwareDoc = (d: ScenarioDoc): d is FirmwareDoc => typeof (d as FirmwareDoc).firmware === "string";

/** How a run ended, for the page's status line and body[data-state]. */
export interface Outcome {
  /** "stopped": the Stop button stopped it (its results are what was reached); else "done" */
  state: "done" | "stopped";
  /** e.g. "Done: scenario finished.", "Stopped: scenario stopped at 12.000 us of simulated time." */
  text: string;
}

export type ToWorker = { type: "run"; doc: ScenarioDoc } | { type: "stop" };

export interface ConsoleLineMsg {
  engine: number;
  timePs: number;
  text: string;
}

export type FromWorker =
  /** engines: per device (0: no firmware runs); devices: how many devices' engines the states list, one after another (a collective) */
  /** (sweep: each run of a sweep begins anew, its plots replacing the last run's) */
  | { type: "begin"; kind: "firmware" | "scenario"; plots: PlotSpec[]; engines: number; devices?: number; sweep?: { index: number; of: number; set: Record<string, unknown> } }
  /** frames, console lines, engine states and what to mark on the plots (faults, in the run's plotted time) since the last update */
  | { type: "update"; frames: LiveFrame[]; console: ConsoleLineMsg[]; engineStates: string[]; markers: PlotMarker[]; nowPs: number; progress?: { done: number; total: number } }
  | {
      type: "done"; kind: "firmware" | "scenario";
      /** the result as `menic fw run --json` or `menic run --json` prints it (a sweep: { name, runs }) */
      resultJson: string;
      /** the summary as text */
      summary: string;
      /** Chrome trace-event JSON (ui.perfetto.dev), written in chunks (host/trace/writer.ts); none for a sweep */
      trace: Blob | null;
      /** the scenario's frames as pcapng */
      pcap: Uint8Array | null;
      /** how the run ended, as the page says it: stopped (the Stop button) or done, and the sentence for the status line */
      outcome: Outcome;
    }
  | { type: "error"; message: string };
