/**
 * A turn scored in the app: the database serves the postings of the turn's terms (as binary arrays, with the
 * phrase hits, in one statement), and the in-memory engine's own scorer (`scoreLists`, MaxScore) ranks them over
 * a view holding only those terms; a second statement names the top K. Same code and same lists in the same
 * order as in memory (field, then query term; BM25F: the combined lists), so the same scores bit for bit. Terms
 * already fetched for this generation come from the backend's posting cache.
 */
import { findPosting } from "../knowledge/fieldScores.js";
import { LruCache } from "../knowledge/lruCache.js";
import { contributionAt, type ScoringList, scoreLists, sumBreakdown } from "../knowledge/scoring.js";
import type { KnowledgeCandidateEvidence, KnowledgeCandidateQuery } from "../knowledge/searchBackend.js";
import type { KnowledgeLexicalMatch } from "../types/knowledge.js";
import type { PostgresBackend } from "./backend.js";
import { BinaryArrayError, int4Of, presentField } from "./binaryArrays.js";
import { sqlTextArray } from "./copyOut.js";
import {
  type CandidateSet,
  candidatePostings,
  type DeferredHeader,
  resolveDeferred,
} from "./deferredLists.js";
import type { GenerationEligibility } from "./eligibility.js";
import { UNDEFINED_COLUMN } from "./faults.js";
import type { FetchTicket } from "./fetchBudget.js";
import { COMBINED_FIELD } from "./fieldPairs.js";
import { KEPT_IDS } from "./generationCache.js";
import { listBytes, listOfRow } from "./listRows.js";
import { type PhraseHitDoc, PhraseKeys, phraseGrams } from "./phraseKeys.js";
import { type FetchedList, PostingCache, type TermPostings, termPostings } from "./postingCache.js";
import type { GenerationRow } from "./serving.js";
import {
  encodeKey,
  entryIdsStatement,
  fieldListsQuery,
  frequentRowsQuery,
  type GenerationTables,
  int4Array,
  type ListForm,
  type PhraseKeySource,
  phraseHitsStatement,
  termPostingsQuery,
} from "./sql.js";
import { FIELD_COUNT, FIELD_NAMES, type PhraseHitRow, phraseHits } from "./turnRows.js";
import { decodeWireHeader } from "./wireLists.js";

/** A turn's phrase keys to look up, or (too many to spell out) the tokens the database builds them from. */
type PhraseLookup = { keys: readonly string[] } | { tokens: readonly string[]; maxWords: number };

/** A frequent list received as its header: the term's slot among the fetched terms, its field, its header. */
type FetchedHeader = { slot: number; field: number; header: DeferredHeader };

/** A field of a row that must not be NULL. */
const required = (field: Uint8Array | null | undefined) =>
  presentField(field, "postings: a row misses a value");

/** Field slots of a term's lists: the five fields, then BM25F's combined list. */
const LIST_SLOTS = COMBINED_FIELD + 1;

/** The app-scored searches of one generation. */
export class PostingSearch {
  private readonly idsText: string;
  private readonly phrasesText: string;
  private readonly phraseGramsText: string;
  /**
   * How the postings table holds its lists: coded until a turn finds the column missing (a generation published
   * by an older lexground), then packed, then arrays.
   */
  private form: ListForm = "coded";
  /** Entry ids by dense id, kept for the next turns. */
  private readonly ids = new LruCache<number, string>(KEPT_IDS);
  /** Tie-break ranks by dense id: dense ids are already in code-unit order of entry ids (identity, made once). */
  private ranks: Int32Array | null = null;
  /** Phrase keys looked up before, with the entries each names. */
  private readonly phraseKeys = new PhraseKeys();

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: GenerationRow,
    private readonly tables: GenerationTables,
    private readonly bm25f: boolean,
    private readonly statementName: (kind: string) => string,
    private readonly eligibility: GenerationEligibility,
    private readonly cache: PostingCache,
  ) {
    this.idsText = entryIdsStatement(tables);
    this.phrasesText = phraseHitsStatement(tables);
    this.phraseGramsText = phraseHitsStatement(tables, true);
  }

  /** The posting cache's keys of `terms` (null when the cache is off). */
  private cacheKeys(terms: readonly string[]): string[] | null {
    if (this.cache.limitBytes === 0) return null;
    const prefix = this.cache.prefix(this.generation.generation, this.generation.contentKey);
    return terms.map((term) => prefix + term);
  }

  /**
   * The phrase hits and the exact lexical top K of `terms` (the query's analyzed, distinct terms in
   * first-occurrence order), dense ids of every candidate recorded in `docs`.
   */
  async candidates(
    query: KnowledgeCandidateQuery,
    terms: readonly string[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeCandidateEvidence> {
    // A turn that fetches lists holds them until it has ranked them: admitted within the reader's fetch budget.
    // (Its lists are looked up in the cache in the same tick as this check when it need not wait.)
    const keys = this.cacheKeys(terms);
    if (keys?.every((key) => this.cache.has(key))) return this.search(query, terms, keys, topK, docs, null);
    const ticket = await this.backend.fetchBudget.admit();
    try {
      return await this.search(query, terms, keys, topK, docs, ticket);
    } finally {
      ticket.release();
    }
  }

  /** {@link candidates}, its fetched bytes counted on `ticket` (`keys`: the terms' cache keys, null: no cache). */
  private async search(
    query: KnowledgeCandidateQuery,
    terms: readonly string[],
    keys: readonly string[] | null,
    topK: number,
    docs: Map<string, number>,
    ticket: FetchTicket | null,
  ): Promise<KnowledgeCandidateEvidence> {
    const tokens = query.phraseTokens;
    const byTerm: (TermPostings | undefined)[] = keys
      ? keys.map((key) => this.cache.get(key))
      : terms.map(() => undefined);
    const missing: number[] = [];
    byTerm.forEach((postings, position) => {
      if (postings === undefined) missing.push(position);
    });
    const maxWords = Math.min(this.generation.maxPhraseWords, tokens.length);
    // The n-grams' keys, those not kept to be looked up; null: too many to spell out, built by the database.
    const grams = phraseGrams(tokens, maxWords);
    const kept = grams ? this.phraseKeys.lookup(grams) : null;
    const lookup: PhraseLookup = kept ? { keys: kept.missing } : { tokens, maxWords };
    const asksPhrases = kept ? kept.missing.length > 0 : maxWords > 0;
    const fetched = missing.map(() => new Array<FetchedList | null>(LIST_SLOTS).fill(null));
    const deferred: FetchedHeader[] = [];
    const keyHits: PhraseHitDoc[] = [];
    const profile = this.backend.turnProfile;
    const fetchStarted = performance.now();
    const [mask] = await Promise.all([
      this.eligibility.mask(query).then((eligible) => eligible.bytes),
      missing.length > 0 || asksPhrases
        ? this.fetch(
            missing.map((position) => encodeKey(terms[position]!)),
            lookup,
            fetched,
            keyHits,
            ticket,
            deferred,
          )
        : null,
    ]);
    if (missing.length > 0 || asksPhrases)
      profile?.add(missing.length > 0 ? "fetch" : "phrases", performance.now() - fetchStarted);
    let hits = keyHits;
    if (grams && kept) {
      this.phraseKeys.record(kept.missing, keyHits, kept.known);
      hits = PhraseKeys.hits(grams, kept.known);
    }
    const eligibleHits = hits.filter((hit) => mask[hit.doc] === 1);
    // Terms with a deferred list are kept only once every list of theirs was read whole.
    const partial = new Set(deferred.map((header) => header.slot));
    missing.forEach((position, index) => {
      // Fetched lists arrive coded, or are coded when cached (the scorer reads them as they are).
      const postings = termPostings(fetched[index]!);
      byTerm[position] = postings;
      if (keys && !partial.has(index)) this.cache.set(keys[position]!, postings);
    });
    let candidates: CandidateSet | null = null;
    if (deferred.length > 0) {
      const deferStarted = performance.now();
      const complete: FetchedList[] = [];
      for (const term of byTerm)
        for (let field = 0; field < FIELD_COUNT; field++) {
          const list = term!.lists[field];
          if (list) complete.push(list);
        }
      const resolved = await resolveDeferred(
        complete,
        deferred.map((header) => header.header),
        {
          entryCount: this.generation.entryCount,
          topK,
          mask,
          rowBytesPerEntry: this.generation.frequent!.bytes / Math.max(1, this.generation.entryCount),
          readLists: (indexes) =>
            this.readWholeLists(
              indexes.map((index) => deferred[index]!),
              missing.map((position) => encodeKey(terms[position]!)),
              ticket,
            ),
          sumLists: (indexes, onList, onLists) =>
            this.readListBytes(
              indexes.map((index) => deferred[index]!),
              missing.map((position) => encodeKey(terms[position]!)),
              (position, bytes) => onList(indexes[position]!, bytes),
              (positions, lists) =>
                onLists(
                  positions.map((position) => indexes[position]!),
                  lists,
                ),
            ),
          readRows: (docs, onRow) => this.readFrequentRows(docs, onRow),
          scratch: {
            take: (length) => this.cache.takeScratch(length),
            keep: (buffer) => this.cache.keepScratch(buffer),
          },
          ...(profile
            ? { profile: (step: string, milliseconds: number) => profile.add(step, milliseconds) }
            : {}),
        },
      );
      candidates = resolved.candidates;
      const whole = new Map<number, boolean>();
      deferred.forEach((header, index) => {
        fetched[header.slot]![header.field] = resolved.lists[index]!;
        whole.set(header.slot, (whole.get(header.slot) ?? true) && resolved.whole[index]!);
      });
      for (const [slot, complete] of whole) {
        const postings = termPostings(fetched[slot]!);
        byTerm[missing[slot]!] = postings;
        if (keys && complete) this.cache.set(keys[missing[slot]!]!, postings);
      }
      // Benchmarks and tests see which way it went: every list read whole, or candidates' rows read.
      profile?.add(
        resolved.whole.every((whole) => whole) ? "defer: whole" : "defer: rows",
        performance.now() - deferStarted,
      );
    }
    let termLists = byTerm as TermPostings[];
    if (candidates) {
      // The best K are among the candidates: only their postings are ranked (the same sums, in the same order).
      const restrictStarted = performance.now();
      const chosen = candidates;
      termLists = termLists.map((term) => ({
        lists: term.lists.map((list) => list && candidatePostings(list, chosen)),
        bytes: 0,
      }));
      profile?.add("candidates' postings", performance.now() - restrictStarted);
    }
    const rankStarted = performance.now();
    // Sum mode: each ranked document's position in every list, found while its exact score was summed.
    const positions = this.bm25f ? undefined : new Map<number, Int32Array>();
    const { ranked, lists } = this.rank(termLists, topK, mask, positions);
    profile?.add("rank", performance.now() - rankStarted);
    if (ranked.length === 0 && eligibleHits.length === 0)
      return { exact: new Map(), alias: new Map(), matches: [] };
    // The ids of the top K and of the phrase hits, in one statement.
    const named = new Set<number>();
    for (const item of ranked) named.add(item.doc);
    for (const hit of eligibleHits) named.add(hit.doc);
    // This turn's ids (kept ids first): the kept ones may be forgotten while this turn's are added.
    const idOf = new Map<number, string>();
    const unnamed: number[] = [];
    for (const doc of named) {
      const kept = this.ids.get(doc);
      if (kept === undefined) unnamed.push(doc);
      else idOf.set(doc, kept);
    }
    if (unnamed.length > 0) {
      const idsStarted = performance.now();
      const ids = await this.backend.read({
        name: this.statementName("ids"),
        text: this.idsText,
        values: [int4Array(unnamed)],
      });
      profile?.add("ids", performance.now() - idsStarted);
      for (const row of ids.rows) {
        const id = JSON.parse(String(row.id)) as string;
        idOf.set(Number(row.doc), id);
        this.ids.set(Number(row.doc), id);
      }
    }
    const nameOf = (doc: number): string => {
      const id = idOf.get(doc);
      if (id === undefined) throw new BinaryArrayError(`postings: entry ${doc} is missing`);
      docs.set(id, doc);
      return id;
    };
    const phrases = phraseHits(
      tokens,
      eligibleHits.map((hit): PhraseHitRow => ({ ...hit, id: nameOf(hit.doc) })),
    );
    const matches: KnowledgeLexicalMatch[] = ranked.map(({ doc, score }) => ({
      id: nameOf(doc),
      score,
      fieldScores: positions
        ? sumBreakdown(lists.postings, lists.fields, positions.get(doc)!)
        : this.fieldScores(termLists, doc),
    }));
    return { ...phrases, matches };
  }

  /**
   * Round one: the phrase hits (into `hits`; `ord` as `PhraseKeySource` in `sql.ts` says) and the lists of `terms`
   * (encoded; into `fetched`, by position and field), in one binary COPY. A generation published before the packed
   * lists existed has no such columns: the first turn learns it from the error and reads the arrays from then on.
   */
  private async fetch(
    terms: readonly string[],
    phrases: PhraseLookup,
    fetched: (FetchedList | null)[][],
    hits: PhraseHitDoc[],
    ticket: FetchTicket | null,
    deferred: FetchedHeader[],
  ): Promise<void> {
    if (terms.length === 0) {
      // Every list is in the cache: the phrase hits by a prepared statement (no COPY to plan).
      const result = await this.backend.read(
        "keys" in phrases
          ? { name: this.statementName("phrases"), text: this.phrasesText, values: [phrases.keys] }
          : {
              name: this.statementName("phrase-grams"),
              text: this.phraseGramsText,
              values: [phrases.tokens, phrases.maxWords],
            },
      );
      for (const row of result.rows)
        hits.push({ kind: Number(row.kind), ord: Number(row.ord), doc: Number(row.doc) });
      return;
    }
    const values: { terms: string } & PhraseKeySource =
      "keys" in phrases
        ? { terms: sqlTextArray(terms), keys: sqlTextArray(phrases.keys) }
        : {
            terms: sqlTextArray(terms),
            tokens: sqlTextArray(phrases.tokens),
            maxWords: String(phrases.maxWords),
          };
    const profile = this.backend.turnProfile;
    const coding = this.cache.limitBytes > 0;
    const onTuple = (fields: (Uint8Array | null)[]) => {
      const started = profile ? performance.now() : 0;
      const held = this.decodeTuple(fields, fetched, hits, coding, deferred);
      ticket?.add(held);
      if (profile) {
        let bytes = 0;
        for (const field of fields) bytes += field?.byteLength ?? 0;
        profile.add("decode", performance.now() - started, bytes);
      }
    };
    for (;;) {
      try {
        await this.backend.readCopy(
          termPostingsQuery(this.tables, values, this.form, this.defers()),
          onTuple,
        );
        return;
      } catch (error) {
        if ((error as { code?: unknown })?.code !== UNDEFINED_COLUMN || this.form === "arrays") throw error;
        // A generation published by an older lexground: the next older form, from the start.
        this.form = this.form === "coded" ? "packed" : "arrays";
        hits.length = 0;
        deferred.length = 0;
        for (const slot of fetched) slot.fill(null);
      }
    }
  }

  /**
   * One row of round one: a phrase hit (into `hits`), or a term's list in one field (into `fetched`, coded when
   * `coding`); returns the bytes the list holds (0 for a hit).
   */
  private decodeTuple(
    fields: (Uint8Array | null)[],
    fetched: (FetchedList | null)[][],
    hits: PhraseHitDoc[],
    coding: boolean,
    deferred?: FetchedHeader[],
  ): number {
    const kind = int4Of(fields[0]!);
    const ord = int4Of(fields[3]!);
    if (kind !== 3 && kind !== 4) {
      hits.push({ kind, ord, doc: int4Of(fields[1]!) });
      return 0;
    }
    const slot = fetched[ord - 1];
    const field = int4Of(fields[4]!);
    if (!slot || !(field >= 0 && field < LIST_SLOTS))
      throw new BinaryArrayError("postings: a row names no term or field of the query");
    if (kind === 4) {
      // A frequent list's header (asked for only when this search defers them).
      if (!deferred || field >= FIELD_COUNT)
        throw new BinaryArrayError("postings: an unexpected list header");
      const number = int4Of(fields[1]!);
      const header = decodeWireHeader(required(fields[5]));
      if (
        !(number >= 0 && number < this.generation.frequent!.lists) ||
        header.count > this.generation.entryCount
      )
        throw new BinaryArrayError("postings: a bad frequent list header");
      deferred.push({ slot: ord - 1, field, header: { ...header, number } });
      return header.values.byteLength;
    }
    const list = listOfRow(fields.slice(5), this.generation.entryCount, coding);
    slot[field] = list;
    return listBytes(list);
  }

  /** Whether this search reads frequent lists' headers first (`deferredLists.ts`): field-by-field scoring only. */
  private defers(): boolean {
    return this.generation.frequent !== null && !this.bm25f && this.form === "coded";
  }

  /** Deferred lists read whole (`terms`: the fetched terms, encoded, by slot), counted on `ticket`. */
  private async readWholeLists(
    headers: readonly FetchedHeader[],
    terms: readonly string[],
    ticket: FetchTicket | null,
  ): Promise<FetchedList[]> {
    const read = new Array<FetchedList | null>(headers.length).fill(null);
    const slots = headers.map(() => new Array<FetchedList | null>(LIST_SLOTS).fill(null));
    const started = performance.now();
    await this.backend.readCopy(this.headersListsQuery(headers, terms), (fields) => {
      const held = this.decodeTuple(fields, slots, [], this.cache.limitBytes > 0);
      ticket?.add(held);
    });
    this.backend.turnProfile?.add("fetch", performance.now() - started);
    headers.forEach((header, index) => {
      read[index] = slots[index]![header.field] ?? null;
    });
    if (read.some((list) => list === null))
      throw new BinaryArrayError("postings: a deferred list is missing");
    return read as FetchedList[];
  }

  /** The statement that reads the lists of `headers` (their terms by slot in `terms`, their fields), by position. */
  private headersListsQuery(headers: readonly FetchedHeader[], terms: readonly string[]): string {
    return fieldListsQuery(
      this.tables,
      sqlTextArray(headers.map((header) => terms[header.slot]!)),
      `'{${headers.map((header) => header.field).join(",")}}'::int4[]`,
    );
  }

  /**
   * Deferred lists read whole as their coded bytes (`terms`: the fetched terms, encoded, by slot): those the posting
   * cache keeps handed together to `onLists` with their positions in `headers`, the others each to `onList` as it
   * arrives (a view of the COPY's buffer, copied into the cache).
   */
  private async readListBytes(
    headers: readonly FetchedHeader[],
    terms: readonly string[],
    onList: (position: number, bytes: Uint8Array) => void,
    onLists: (positions: readonly number[], lists: readonly Uint8Array[]) => void,
  ): Promise<void> {
    const started = performance.now();
    const profile = this.backend.turnProfile;
    // The frequent lists kept from earlier turns (the same few dozen recur across a conversation's turns): summed
    // while the server sends the others.
    const keys = this.codedKeys(headers, terms);
    const kept = keys ? keys.map((key) => this.cache.getCoded(key)) : [];
    const missing: FetchedHeader[] = [];
    const missingPositions: number[] = [];
    headers.forEach((header, position) => {
      if (kept[position] === undefined) {
        missing.push(header);
        missingPositions.push(position);
      }
    });
    let bytes = 0;
    const read =
      missing.length === 0
        ? null
        : this.backend.readCopy(this.headersListsQuery(missing, terms), (fields) => {
            const at = int4Of(fields[3]!) - 1;
            const header = missing[at];
            if (int4Of(fields[0]!) !== 3 || !header || int4Of(fields[4]!) !== header.field)
              throw new BinaryArrayError("postings: a row names no deferred list");
            const list = required(fields[5]);
            bytes += list.byteLength;
            const position = missingPositions[at]!;
            onList(position, list);
            // Kept as a copy (the list is a view of the driver's buffer: a Buffer, whose slice() is a view too),
            // once it summed without an error.
            if (keys) {
              const copy = new Uint8Array(list.byteLength);
              copy.set(list);
              this.cache.setCoded(keys[position]!, copy);
            }
          });
    let keptBytes = 0;
    try {
      const keptPositions: number[] = [];
      const keptLists: Uint8Array[] = [];
      kept.forEach((list, position) => {
        if (list === undefined) return;
        keptBytes += list.byteLength;
        keptPositions.push(position);
        keptLists.push(list);
      });
      if (keptLists.length > 0) onLists(keptPositions, keptLists);
    } finally {
      // A failed sum still waits for the statement (its rows would otherwise arrive after the turn).
      await read;
    }
    if (keptBytes > 0) profile?.add("frequent kept", 0, keptBytes);
    profile?.add("fetch", performance.now() - started, bytes);
  }

  /** The posting cache's keys of these frequent lists' coded bytes (null when the cache is off). */
  private codedKeys(headers: readonly FetchedHeader[], terms: readonly string[]): string[] | null {
    if (this.cache.limitBytes === 0) return null;
    const prefix = this.cache.prefix(this.generation.generation, this.generation.contentKey);
    return headers.map((header) => PostingCache.codedKey(prefix, terms[header.slot]!, header.field));
  }

  /** The `frequent` rows of `docs` (ascending dense ids), each handed to `onRow` as it arrives. */
  private async readFrequentRows(
    docs: Int32Array,
    onRow: (doc: number, bytes: Uint8Array) => void,
  ): Promise<void> {
    if (docs.length === 0) return;
    const started = performance.now();
    let bytes = 0;
    await this.backend.readCopy(frequentRowsQuery(this.tables, `'{${docs.join(",")}}'::int4[]`), (fields) => {
      const row = required(fields[1]);
      bytes += row.byteLength;
      onRow(int4Of(fields[0]!), row);
    });
    this.backend.turnProfile?.add("rows", performance.now() - started, bytes);
  }

  /**
   * The top K by the in-memory scorer over the query's lists in its order (field, then query term), and those
   * lists with each one's field (what a sum-mode breakdown reads the found positions against).
   */
  private rank(
    termLists: readonly TermPostings[],
    topK: number,
    mask: Uint8Array,
    positions?: Map<number, Int32Array>,
  ): { ranked: { doc: number; score: number }[]; lists: { postings: ScoringList[]; fields: Int32Array } } {
    const postings: ScoringList[] = [];
    const ends: number[] = [];
    const upper: number[] = [];
    const fields: number[] = [];
    const add = (list: FetchedList | null, field: number) => {
      if (!list) return;
      postings.push(list);
      ends.push(list.docs.length);
      upper.push(list.upper);
      fields.push(field);
    };
    if (this.bm25f) for (const term of termLists) add(term.lists[COMBINED_FIELD]!, COMBINED_FIELD);
    else
      for (let field = 0; field < FIELD_COUNT; field++)
        for (const term of termLists) add(term.lists[field]!, field);
    const documentCount = this.generation.entryCount;
    if (!this.ranks || this.ranks.length !== documentCount)
      this.ranks = Int32Array.from({ length: documentCount }, (_, doc) => doc);
    const lists = {
      postings,
      starts: new Int32Array(postings.length),
      ends: Int32Array.from(ends),
      upper: Float64Array.from(upper),
    };
    return {
      ranked: scoreLists(lists, documentCount, this.ranks, topK, mask, undefined, positions),
      lists: { postings, fields: Int32Array.from(fields) },
    };
  }

  /**
   * One document's per-field breakdown, added as the in-memory index adds it (`fieldScores.ts`): per field, its
   * contributions (BM25F: its positive shares) in query-term order.
   */
  private fieldScores(termLists: readonly TermPostings[], doc: number): KnowledgeLexicalMatch["fieldScores"] {
    const fieldScores: KnowledgeLexicalMatch["fieldScores"] = {};
    for (let field = 0; field < FIELD_COUNT; field++) {
      let part = 0;
      let matched = false;
      for (const term of termLists) {
        const list = term.lists[field];
        if (!list) continue;
        const position = findPosting(list.docs, 0, list.docs.length, doc);
        if (position < 0) continue;
        const value = contributionAt(list, position);
        // BM25F stores only positive shares (the in-memory breakdown skips the others).
        if (this.bm25f && !(value > 0)) continue;
        part += value;
        matched = true;
      }
      if (matched) fieldScores[FIELD_NAMES[field]!] = part;
    }
    return fieldScores;
  }
}
