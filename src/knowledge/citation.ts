/**
 * Citation markers: `[KB:<id>@<version>]`, the text form of a {@link KnowledgeCitation} in the context block.
 *
 * Ids and versions are written as they are, except for the characters that would make a marker ambiguous, break
 * it across lines, or let it spell something else for a reader that NFKC-normalizes or HTML-decodes the block.
 * Each such character is percent-encoded: `%` and two uppercase hex digits per UTF-8 byte, as `encodeURIComponent`
 * writes it (an unpaired surrogate, which has no UTF-8 form, is written `%uD800`). Encoded are:
 * - `%` itself, `[`, `]`, `<`, `&`, and in versions `@` (ids keep `@`: the last `@` of a marker separates
 *   the id from the version, as NeuroLink's `[KB:a@b@1]` does);
 * - whitespace, control characters, invisible format characters, and line and paragraph separators;
 * - any character whose compatibility decomposition holds one of those (`［`, `＆`, `﹪`, `≮`, `˘`…);
 * - unpaired surrogates.
 *
 * Everything else, including `.`, `-`, `_`, `:`, `/`, digits and letters of any script, is written verbatim, so
 * the marker of an ordinary id is NeuroLink's byte for byte. {@link parseKnowledgeCitation} undoes the encoding.
 */
import type { KnowledgeCitation } from "../types/knowledge.js";

const MARKER_PREFIX = "[KB:";
const MARKER_SUFFIX = "]";
// ASCII that is always written verbatim: printable, minus % & < [ ] (and @, checked apart: it depends on the field).
const PLAIN_ASCII = /^[!-$'-;=-Z\\^-z{-~]*$/;
// Encoded when the compatibility decomposition of a character holds one of these.
const ENCODED_IN_IDS = /[%[\]<&\s\p{Cc}\p{Cf}\p{Z}]/u;
const ENCODED_IN_VERSIONS = /[%[\]<&@\s\p{Cc}\p{Cf}\p{Z}]/u;
const ENCODED = /%u([0-9A-Fa-f]{4})|((?:%[0-9A-Fa-f]{2})+)/g;

const encodedCodePoints = [new Map<number, boolean>(), new Map<number, boolean>()];
const CACHE_LIMIT = 65_536;

/** Whether one code point is percent-encoded in an id (`inVersion` false) or a version (true). */
function needsEncoding(code: number, inVersion: boolean): boolean {
  if (code >= 0xd800 && code <= 0xdfff) return true;
  const cache = encodedCodePoints[inVersion ? 1 : 0]!;
  let known = cache.get(code);
  if (known === undefined) {
    const decomposed = String.fromCodePoint(code).normalize("NFKD");
    known = (inVersion ? ENCODED_IN_VERSIONS : ENCODED_IN_IDS).test(decomposed);
    if (cache.size < CACHE_LIMIT) cache.set(code, known);
  }
  return known;
}

/** `%XX` per UTF-8 byte of a code point, or `%uXXXX` for an unpaired surrogate. */
function percentEncode(code: number): string {
  if (code >= 0xd800 && code <= 0xdfff) return `%u${code.toString(16).toUpperCase()}`;
  let encoded = "";
  for (const byte of new TextEncoder().encode(String.fromCodePoint(code))) {
    encoded += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/**
 * An id or version as it appears inside a marker (see the module comment): verbatim unless it holds a character
 * that has to be percent-encoded.
 */
export function encodeCitationPart(text: string, part: "id" | "version"): string {
  const inVersion = part === "version";
  if (PLAIN_ASCII.test(text) && (!inVersion || !text.includes("@"))) return text;
  let encoded = "";
  for (let index = 0; index < text.length; ) {
    const code = text.codePointAt(index)!;
    const width = code > 0xffff ? 2 : 1;
    encoded += needsEncoding(code, inVersion) ? percentEncode(code) : text.slice(index, index + width);
    index += width;
  }
  return encoded;
}

/**
 * The marker of a citation: `[KB:<id>@<version>]`, with the characters of the module comment percent-encoded.
 * `formatKnowledgeCitation({ id: "payments settings", version: "1.0@rc" })` is `[KB:payments%20settings@1.0%40rc]`;
 * `{ id: "settings.multi-step-flow", version: "1" }` gives `[KB:settings.multi-step-flow@1]`, as in NeuroLink.
 */
export function formatKnowledgeCitation(citation: Pick<KnowledgeCitation, "id" | "version">): string {
  return `${MARKER_PREFIX}${encodeCitationPart(citation.id, "id")}@${encodeCitationPart(citation.version, "version")}${MARKER_SUFFIX}`;
}

/** Undoes the percent-encoding of one part; undefined when an escape does not decode. */
function decodeCitationPart(text: string): string | undefined {
  if (!text.includes("%")) return text;
  let failed = false;
  const decoded = text.replace(ENCODED, (_, surrogate: string | undefined, bytes: string | undefined) => {
    if (surrogate !== undefined) return String.fromCharCode(Number.parseInt(surrogate, 16));
    try {
      return decodeURIComponent(bytes!);
    } catch {
      failed = true;
      return "";
    }
  });
  // A `%` left over was not the start of an escape: the marker was not written by formatKnowledgeCitation.
  return failed || /%(?![0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4})/.test(text) ? undefined : decoded;
}

/**
 * Reads a marker written by {@link formatKnowledgeCitation} back into the citation, with the original id and
 * version: `parseKnowledgeCitation("[KB:payments%20settings@1.0%40rc]")` is
 * `{ id: "payments settings", version: "1.0@rc" }`. The id and version are split at the last `@`. Returns null
 * when `marker` is not exactly one marker (surrounding text, a bad escape, no `@`).
 *
 * To find markers in a model's answer: `answer.match(/\[KB:[^\]\s]*\]/g)?.map(parseKnowledgeCitation)`.
 */
export function parseKnowledgeCitation(marker: string): KnowledgeCitation | null {
  if (typeof marker !== "string" || !marker.startsWith(MARKER_PREFIX) || !marker.endsWith(MARKER_SUFFIX)) {
    return null;
  }
  const inside = marker.slice(MARKER_PREFIX.length, -MARKER_SUFFIX.length);
  const separator = inside.lastIndexOf("@");
  if (separator < 0 || /[[\]\s]/.test(inside)) return null;
  const id = decodeCitationPart(inside.slice(0, separator));
  const version = decodeCitationPart(inside.slice(separator + 1));
  return id === undefined || id === "" || version === undefined ? null : { id, version };
}
