/**
 * The pruned turn: the exact top K proven from each term's best postings (the impact blocks of layout 2), then
 * scored exactly from the forward rows of the documents that may be in it; null when the bounds prove nothing,
 * and the caller takes the full path.
 */
import type { KnowledgeCandidateEvidence, KnowledgeCandidateQuery } from "../knowledge/searchBackend.js";
import type { KnowledgeLexicalMatch } from "../types/knowledge.js";
import type { PostgresBackend } from "./backend.js";
import type { GenerationEligibility } from "./eligibility.js";
import { COMBINED_FIELD } from "./fieldPairs.js";
import type { GenerationRow } from "./serving.js";
import {
  decodeFloat64s,
  decodeInt32s,
  encodeKey,
  FORWARD_KEY_STRIDE,
  forwardStatement,
  type GenerationTables,
  IMPACT_BLOCK_ENDS,
  impactBlocksStatement,
  int4Array,
  prunedHeadsStatement,
} from "./sql.js";
import { FIELD_COUNT, FIELD_NAMES, type PhraseHitRow, phraseHits } from "./turnRows.js";

/** Queries with more distinct terms than this take the full path (their bounds rarely prove anything). */
export const PRUNE_MAX_TERMS = 24;
/** Most documents scored exactly (from their forward rows) by a pruned turn; more take the full path. */
const PRUNE_MAX_EXACT = 1_024;
/**
 * Relative slack of the pruning bounds. A document's score is a sum of non-negative contributions, added in
 * another order than its bounds are (at most 1,024 terms × 6 parts: a relative rounding error below 1e-12), so a
 * document is only ruled out when its bound, raised by this slack, stays below the k-th score lowered by it.
 */
const BOUND_SLACK = 1e-9;

/** One query term's impact-ordered postings read so far. */
type TermHead = {
  /** Position of the term among the query's terms. */
  position: number;
  term: string;
  termId: number;
  documentFrequency: number;
  /** Blocks read (0, 1, …). */
  blocks: number;
  /** Postings read. */
  read: number;
  /** Largest impact of the postings not read yet (0 when all were read). */
  cut: number;
};

/** The pruned searches of one generation. */
export class PrunedSearch {
  private readonly headsText: string;
  private readonly blocksText: string;
  private readonly forwardText: string;

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: GenerationRow,
    tables: GenerationTables,
    private readonly bm25f: boolean,
    private readonly statementName: (kind: string) => string,
    private readonly eligibility: GenerationEligibility,
  ) {
    this.headsText = prunedHeadsStatement(tables);
    this.blocksText = impactBlocksStatement(tables);
    this.forwardText = forwardStatement(tables);
  }

  /**
   * The exact top K from each term's best postings (threshold algorithm without random access, then exact
   * scores): after reading the first impact blocks of every term, a document never read can score at most the sum
   * of the terms' cuts (the largest impact not read), and a document read at most its impacts read plus the cuts
   * of the terms it was not read in. When that sum is below the K-th best lower bound among eligible documents
   * read, the top K is among the read documents whose upper bound reaches that K-th lower bound: those are scored
   * exactly from their forward rows, adding contributions in the in-memory order. Otherwise deeper blocks are
   * read; when they run out (or too many documents remain), null: the caller takes the full path.
   */
  async prunedCandidates(
    query: KnowledgeCandidateQuery,
    terms: readonly string[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeCandidateEvidence | null> {
    const tokens = query.phraseTokens;
    const [mask, result] = await Promise.all([
      this.eligibility.mask(query).then((eligible) => eligible.bytes),
      this.backend.read({
        name: this.statementName("heads"),
        text: this.headsText,
        values: [terms.map(encodeKey), tokens, Math.min(this.generation.maxPhraseWords, tokens.length)],
      }),
    ]);
    const hits: PhraseHitRow[] = [];
    const heads: TermHead[] = [];
    // Per document read: the impacts read, by term position.
    const read = new Map<number, Map<number, number>>();
    const addBlock = (head: TermHead, docBytes: unknown, impactBytes: unknown, next: unknown) => {
      const blockDocs = decodeInt32s(docBytes as Uint8Array);
      const impacts = decodeFloat64s(impactBytes as Uint8Array);
      for (let index = 0; index < blockDocs.length; index++) {
        const doc = blockDocs[index]!;
        let impactsRead = read.get(doc);
        if (!impactsRead) {
          impactsRead = new Map();
          read.set(doc, impactsRead);
        }
        impactsRead.set(head.position, impacts[index]!);
      }
      head.blocks++;
      head.read += blockDocs.length;
      head.cut = head.read >= head.documentFrequency ? 0 : Number(next);
    };
    for (const row of result.rows) {
      const kind = Number(row.kind);
      if (kind === 3) {
        const position = Number(row.ord) - 1;
        const head: TermHead = {
          position,
          term: terms[position]!,
          termId: Number(row.term_id),
          documentFrequency: Number(row.document_frequency),
          blocks: 0,
          read: 0,
          cut: 0,
        };
        heads.push(head);
        addBlock(head, row.docs, row.impacts, row.next_impact);
      } else {
        const doc = Number(row.doc);
        if (mask[doc] !== 1) continue;
        const id = JSON.parse(String(row.id)) as string;
        docs.set(id, doc);
        hits.push({ kind, ord: Number(row.ord), doc, id });
      }
    }
    heads.sort((left, right) => left.position - right.position);
    const phrases = phraseHits(tokens, hits);
    if (heads.length === 0) return { ...phrases, matches: [] };
    const deepest = IMPACT_BLOCK_ENDS.length;
    for (;;) {
      const chosen = PrunedSearch.boundedCandidates(heads, read, mask, topK);
      if (chosen !== null && chosen.length <= PRUNE_MAX_EXACT) {
        const matches = await this.exactMatches(heads, chosen, topK, docs);
        return { ...phrases, matches };
      }
      const deeper = heads.filter(
        (head) => head.cut > 0 && head.blocks < deepest && head.read < head.documentFrequency,
      );
      if (deeper.length === 0) return null;
      const blocks = await this.backend.read({
        name: this.statementName("blocks"),
        text: this.blocksText,
        values: [deeper.map((head) => encodeKey(head.term)), deeper.map((head) => head.blocks)],
      });
      const byTerm = new Map(deeper.map((head) => [encodeKey(head.term), head]));
      let progressed = false;
      for (const row of blocks.rows) {
        const head = byTerm.get(String(row.term));
        if (head && Number(row.block) === head.blocks) {
          addBlock(head, row.docs, row.impacts, row.next_impact);
          progressed = true;
        }
      }
      // Blocks that should exist but did not come back: no progress is possible.
      if (!progressed) return null;
    }
  }

  /**
   * The eligible documents read that may be in the top K, or null when the bounds prove nothing yet. See
   * {@link prunedCandidates}; every comparison keeps {@link BOUND_SLACK} on the safe side.
   */
  private static boundedCandidates(
    heads: readonly TermHead[],
    read: Map<number, Map<number, number>>,
    mask: Uint8Array,
    topK: number,
  ): number[] | null {
    let unseen = 0;
    for (const head of heads) unseen += head.cut;
    const lowers: number[] = [];
    const bounds: { doc: number; upper: number }[] = [];
    for (const [doc, impacts] of read) {
      if (mask[doc] !== 1) continue;
      let lower = 0;
      let cutsRead = 0;
      for (const head of heads) {
        const impact = impacts.get(head.position);
        if (impact === undefined) continue;
        lower += impact;
        cutsRead += head.cut;
      }
      lowers.push(lower);
      bounds.push({ doc, upper: lower + Math.max(0, unseen - cutsRead) });
    }
    if (unseen === 0) return bounds.map((bound) => bound.doc);
    if (lowers.length < topK) return null;
    lowers.sort((left, right) => right - left);
    const threshold = lowers[topK - 1]! * (1 - BOUND_SLACK);
    if (!(threshold > 0) || unseen * (1 + BOUND_SLACK) >= threshold) return null;
    const chosen: number[] = [];
    for (const bound of bounds) if (bound.upper * (1 + BOUND_SLACK) >= threshold) chosen.push(bound.doc);
    return chosen;
  }

  /**
   * Exact scores of `chosen` from their forward rows, added as the in-memory index adds them (sum: field by
   * field, terms in query order; BM25F: terms in query order, field shares likewise), then the best `topK` by
   * score descending and dense id.
   */
  private async exactMatches(
    heads: readonly TermHead[],
    chosen: readonly number[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeLexicalMatch[]> {
    if (chosen.length === 0) return [];
    const result = await this.backend.read({
      name: this.statementName("forward"),
      text: this.forwardText,
      values: [int4Array(chosen)],
    });
    const queryTerms = new Set(heads.map((head) => head.termId));
    const postings = new Map<number, { id: string; values: Map<number, number> }>();
    for (const row of result.rows) {
      const keys = decodeInt32s(row.keys as Uint8Array);
      const contributions = decodeFloat64s(row.contributions as Uint8Array);
      const values = new Map<number, number>();
      for (let index = 0; index < keys.length; index++) {
        const key = keys[index]!;
        if (queryTerms.has(Math.floor(key / FORWARD_KEY_STRIDE))) values.set(key, contributions[index]!);
      }
      postings.set(Number(row.doc), { id: String(row.id), values });
    }
    const scored: {
      doc: number;
      id: string;
      score: number;
      fieldScores: KnowledgeLexicalMatch["fieldScores"];
    }[] = [];
    for (const [doc, posting] of postings) {
      const values = posting.values;
      const parts = new Float64Array(FIELD_COUNT);
      let total = 0;
      let fieldBits = 0;
      if (this.bm25f) {
        for (const head of heads) {
          const key = head.termId * FORWARD_KEY_STRIDE;
          const score = values.get(key + COMBINED_FIELD);
          if (score === undefined) continue;
          total += score;
          for (let field = 0; field < FIELD_COUNT; field++) {
            const share = values.get(key + field);
            if (share !== undefined && share > 0) {
              parts[field]! += share;
              fieldBits |= 1 << field;
            }
          }
        }
      } else {
        for (let field = 0; field < FIELD_COUNT; field++) {
          for (const head of heads) {
            const contribution = values.get(head.termId * FORWARD_KEY_STRIDE + field);
            if (contribution === undefined) continue;
            total += contribution;
            parts[field]! += contribution;
            fieldBits |= 1 << field;
          }
        }
      }
      const fieldScores: KnowledgeLexicalMatch["fieldScores"] = {};
      for (let field = 0; field < FIELD_COUNT; field++)
        if (fieldBits & (1 << field)) fieldScores[FIELD_NAMES[field]!] = parts[field]!;
      scored.push({ doc, id: JSON.parse(posting.id) as string, score: total, fieldScores });
    }
    scored.sort((left, right) => right.score - left.score || left.doc - right.doc);
    const matches: KnowledgeLexicalMatch[] = [];
    for (const item of scored.slice(0, topK)) {
      docs.set(item.id, item.doc);
      matches.push({ id: item.id, score: item.score, fieldScores: item.fieldScores });
    }
    return matches;
  }
}
