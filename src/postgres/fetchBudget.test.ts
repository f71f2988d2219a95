import { describe, expect, it } from "vitest";
import { FetchBudget, type FetchTicket } from "./fetchBudget.js";

/** Lets queued admissions settle. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("FetchBudget", () => {
  it("admits two turns at first, then waits for room, first come first served", async () => {
    const budget = new FetchBudget(1000);
    const admitted: number[] = [];
    const tickets: FetchTicket[] = [];
    for (let turn = 0; turn < 5; turn++)
      void budget.admit().then((ticket) => {
        admitted.push(turn);
        tickets[turn] = ticket;
      });
    await settle();
    // Nothing seen yet: each turn is expected to fill half the budget.
    expect(admitted).toEqual([0, 1]);
    expect(budget.waitingTurns).toBe(3);
    tickets[0]!.add(500);
    tickets[0]!.release();
    await settle();
    expect(admitted).toEqual([0, 1, 2]);
    tickets[1]!.release();
    await settle();
    expect(admitted).toEqual([0, 1, 2, 3]);
    expect(budget.peaks.turns).toBe(2);
  });

  it("admits more turns when fetches turn out small, fewer when they are large", async () => {
    const budget = new FetchBudget(1600);
    for (let round = 0; round < 12; round++) {
      const ticket = await budget.admit();
      ticket.add(10);
      ticket.release();
    }
    // The typical fetch fell to its floor, a sixteenth of the budget: 16 turns fit together.
    const small = await Promise.all(Array.from({ length: 16 }, () => budget.admit()));
    let late = false;
    void budget.admit().then(() => {
      late = true;
    });
    await settle();
    expect(late).toBe(false);
    // A turn that decodes more than expected holds the others back until it is done.
    small[0]!.add(1501);
    for (const ticket of small.slice(1)) ticket.release();
    await settle();
    expect(late).toBe(false);
    small[0]!.release();
    await settle();
    expect(late).toBe(true);
  });

  it("always runs one turn, however large, and releases once", async () => {
    const budget = new FetchBudget(100);
    const first = await budget.admit();
    first.add(10_000);
    let second: FetchTicket | null = null;
    void budget.admit().then((ticket) => {
      second = ticket;
    });
    await settle();
    expect(second).toBeNull();
    first.release();
    first.release();
    await settle();
    expect(second).not.toBeNull();
    expect(budget.heldBytes).toBeGreaterThan(0);
    second!.release();
    expect(budget.heldBytes).toBe(0);
    expect(budget.peaks.bytes).toBe(10_000);
  });

  it("admits every turn at once with no bound (0)", async () => {
    const budget = new FetchBudget(0);
    const tickets = await Promise.all(Array.from({ length: 32 }, () => budget.admit()));
    for (const ticket of tickets) ticket.add(1 << 20);
    expect(budget.peaks.turns).toBe(32);
  });
});
