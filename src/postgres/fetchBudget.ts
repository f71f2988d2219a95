/**
 * A reader's bound on the postings its concurrent turns hold (option `fetchBudgetBytes`): a turn that must fetch
 * lists from the database is admitted only while the turns already fetching hold (or are expected to hold) less
 * than the budget; the others wait their turn, first come first served. A turn holds its fetched lists until it is
 * ranked (as decoded, about 5 to 6 bytes per posting, 12 before session 11: millions of postings for a history-heavy turn at a million entries), so without
 * a bound 16 such turns in flight held 16 times that (1.4 GB at 500,000 entries). Answers are unchanged: a turn
 * waits, it is not cut.
 *
 * A turn's bytes are known only as its rows arrive, so each admitted turn counts as the larger of what it has
 * decoded so far and the typical fetch (the mean of recent fetches, at least a sixteenth of the budget): a burst
 * of turns arriving together is not admitted whole before any of them has read a byte. One turn is always
 * admitted when none is fetching, so a turn larger than the whole budget still runs (alone).
 */

/** Recent fetches the typical size is averaged over (an exponential mean). */
const TYPICAL_WEIGHT = 1 / 4;

/** An admitted turn: count its decoded bytes with {@link FetchTicket.add}, then {@link FetchTicket.release} it. */
export type FetchTicket = {
  /** Bytes this turn decoded and holds. */
  readonly bytes: number;
  /** Counts `bytes` more held by this turn. */
  add(bytes: number): void;
  /** The turn no longer holds its fetched lists (ranked, or failed); idempotent. */
  release(): void;
};

/** The fetch admission of one backend (shared by all its turns and generations). */
export class FetchBudget {
  private readonly admitted = new Set<Ticket>();
  private readonly waiting: ((ticket: Ticket) => void)[] = [];
  /** What a turn is expected to fetch: a weighted mean of recent fetches, at least a sixteenth of the budget. */
  private typical: number;
  /** Most turns admitted at once, and most bytes they had decoded at once (for benchmarks and tests). */
  readonly peaks = { turns: 0, bytes: 0 };

  /** @param limitBytes Bytes the admitted turns may hold together; 0: no bound (every turn admitted at once). */
  constructor(readonly limitBytes: number) {
    // Until fetches are seen, a turn is expected to fill half the budget (two at a time).
    this.typical = limitBytes / 2;
  }

  /** Resolves once the turn may fetch (first come, first served); every ticket must be released. */
  admit(): Promise<FetchTicket> {
    if (this.waiting.length === 0 && this.hasRoom()) return Promise.resolve(this.enter());
    return new Promise<FetchTicket>((resolve) => this.waiting.push(resolve));
  }

  /** Bytes the admitted turns count for (each at least the typical fetch). */
  get heldBytes(): number {
    let held = 0;
    for (const ticket of this.admitted) held += Math.max(ticket.bytes, this.typical);
    return held;
  }

  /** Turns waiting to be admitted. */
  get waitingTurns(): number {
    return this.waiting.length;
  }

  private hasRoom(): boolean {
    if (this.limitBytes === 0 || this.admitted.size === 0) return true;
    return this.heldBytes + this.typical <= this.limitBytes;
  }

  private enter(): Ticket {
    const ticket = new Ticket(this);
    this.admitted.add(ticket);
    this.peaks.turns = Math.max(this.peaks.turns, this.admitted.size);
    return ticket;
  }

  /** Admits waiting turns, in order, while they fit. */
  private wake(): void {
    while (this.waiting.length > 0 && this.hasRoom()) this.waiting.shift()!(this.enter());
  }

  /** @internal */
  counted(): void {
    let decoded = 0;
    for (const ticket of this.admitted) decoded += ticket.bytes;
    this.peaks.bytes = Math.max(this.peaks.bytes, decoded);
  }

  /** @internal */
  released(ticket: Ticket): void {
    if (!this.admitted.delete(ticket)) return;
    if (ticket.bytes > 0)
      this.typical = Math.max(
        this.limitBytes / 16,
        this.typical + (ticket.bytes - this.typical) * TYPICAL_WEIGHT,
      );
    this.wake();
  }
}

class Ticket implements FetchTicket {
  bytes = 0;

  constructor(private readonly budget: FetchBudget) {}

  add(bytes: number): void {
    this.bytes += bytes;
    this.budget.counted();
  }

  release(): void {
    this.budget.released(this);
  }
}
