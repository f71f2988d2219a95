/**
 * The ids of one validation run: an entry's id is admitted before its fields are read (see `resolve.ts`).
 */
import { encodeCitationPart } from "./citation.js";
import { MAX_FIELD_CHARS } from "./defaults.js";
import { type EntryContext, error, quote, warning } from "./validationIssues.js";

/**
 * Entry ids seen so far in one validation run, with the checks an id must pass before its entry is read: within
 * the length limit, not a duplicate (also after Unicode normalization), and warnings for a twin that differs only
 * in case and for an id that citations must percent-encode.
 */
export class EntryIdRegistry {
  readonly seen = new Set<string>();
  private readonly canonical = new Map<string, string>();
  private readonly caseFolded = new Map<string, string>();

  /** Reports what is wrong with `id`; true when its entry is to be read, false when it is skipped. */
  admit(id: string, context: EntryContext): boolean {
    if (id.length > MAX_FIELD_CHARS) {
      error(
        context,
        "limit-exceeded",
        "id",
        `id has ${id.length} characters; the limit is ${MAX_FIELD_CHARS}`,
      );
      return false;
    }
    if (this.seen.has(id)) {
      error(
        context,
        "duplicate-entry-id",
        "id",
        `duplicate entry id ${quote(id)}; the first entry with it is kept`,
      );
      return false;
    }
    const canonicalId = id.normalize("NFC");
    const canonicalTwin = this.canonical.get(canonicalId);
    if (canonicalTwin !== undefined) {
      error(
        context,
        "duplicate-entry-id",
        "id",
        `entry id ${quote(id)} differs from ${quote(canonicalTwin)} only in Unicode normalization; the first is kept`,
      );
      return false;
    }
    this.seen.add(id);
    this.canonical.set(canonicalId, id);
    const caseFolded = canonicalId.toLowerCase();
    const caseTwin = this.caseFolded.get(caseFolded);
    if (caseTwin !== undefined) {
      warning(
        context,
        "ambiguous-entry-id",
        "id",
        `entry id ${quote(id)} differs from ${quote(caseTwin)} only in case`,
      );
    } else {
      this.caseFolded.set(caseFolded, id);
    }
    // Any non-empty string is an id, as in NeuroLink; one that cannot stand verbatim in a marker is encoded there.
    const encodedId = encodeCitationPart(id, "id");
    if (encodedId !== id) {
      warning(
        context,
        "encoded-in-citation",
        "id",
        `entry id ${quote(id)} is written ${quote(encodedId)} in [KB:id@version] markers (percent-encoded characters; citations keep the original)`,
      );
    }
    return true;
  }
}
