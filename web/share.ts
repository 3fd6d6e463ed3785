// The scenario in the page's URL: its JSON, deflated (the browser's CompressionStream) and
// base64url-encoded after "#s=", so a link carries the whole scenario and no server sees it.

async function pipe(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

const toBase64Url = (b: Uint8Array) => btoa(Array.from(b, (c) => String.fromCharCode(c)).join("")).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const fromBase64Url = (s: string) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** The hash for a scenario's JSON text: "#s=" and the deflated text. */
export async function encodeScenario(json: string): Promise<string> {
  return `#s=${toBase64Url(await pipe(new TextEncoder().encode(json), new CompressionStream("deflate-raw")))}`;
}

/** The JSON text a hash carries; null when the hash holds none; throws with a reason when it is damaged. */
export async function decodeScenario(hash: string): Promise<string | null> {
  const m = /^#s=([A-Za-z0-9_-]+)$/.exec(hash);
  if (!m) return null;
  try {
    return new TextDecoder().decode(await pipe(fromBase64Url(m[1]!), new DecompressionStream("deflate-raw")));
  } catch (e) {
    throw new Error(`the link's scenario (#s=…) cannot be read: ${(e as Error).message}`);
  }
}
