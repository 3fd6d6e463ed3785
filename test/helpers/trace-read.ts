// A trace sink for tests: keeps every chunk a TraceWriter hands over, and decodes the file they
// make (Chrome trace-event JSON), as a viewer would read it.

import type { ScenarioTraceEvent } from "../../host/scenario/trace.js";

export interface TraceFile { traceEvents: ScenarioTraceEvent[]; displayTimeUnit: string }

export function traceSink() {
  const chunks: Uint8Array[] = [];
  return {
    chunks,
    sink: (c: Uint8Array) => { chunks.push(c); },
    bytes: () => Buffer.concat(chunks),
    /** the file written, parsed (throws unless it is one whole JSON document) */
    read: (): TraceFile => JSON.parse(Buffer.concat(chunks).toString("utf8")),
  };
}
