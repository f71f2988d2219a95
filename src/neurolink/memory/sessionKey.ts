/**
 * Session keys of the conversation stores. A session is the pair (userId or none, sessionId), and every store must
 * map distinct pairs to distinct storage keys, whatever characters the ids hold (NUL, `:`, braces, `%`, lone
 * surrogates): a caller who controls only its own ids must never reach another pair's history.
 *
 * @module
 */

import { InvalidOptionsError } from "../errors.js";
import type { ConversationSessionKey } from "./types.js";

/** A validated session key: `userId` is undefined when the session has no user. */
export type SessionKeyParts = { userId: string | undefined; sessionId: string };

/**
 * Checks the ids of a session key. `sessionId` must be a string; `userId` a string, or absent (`undefined` or
 * `null` both mean "no user"). An empty string is a user id like any other here: the client itself treats an
 * empty `context.userId` as no user before it reaches a store.
 */
export function sessionKeyParts(session: ConversationSessionKey): SessionKeyParts {
  if (typeof session !== "object" || session === null) {
    throw new InvalidOptionsError("session", "a conversation session must be `{ sessionId, userId? }`");
  }
  const { sessionId, userId } = session as { sessionId: unknown; userId?: unknown };
  if (typeof sessionId !== "string") {
    throw new InvalidOptionsError("sessionId", "must be a string");
  }
  if (userId !== undefined && userId !== null && typeof userId !== "string") {
    throw new InvalidOptionsError("userId", "must be a string when given");
  }
  return { userId: typeof userId === "string" ? userId : undefined, sessionId };
}

/**
 * The in-memory store's key of a session: the JSON text of `[userId or null, sessionId]`. JSON string encoding is
 * injective (lone surrogates are escaped as `\udXXX`), and `null` cannot be confused with any string, so two
 * distinct pairs never share a key.
 */
export function inMemorySessionKey(session: ConversationSessionKey): string {
  const { userId, sessionId } = sessionKeyParts(session);
  return JSON.stringify([userId ?? null, sessionId]);
}

function hex4(codeUnit: number): string {
  return codeUnit.toString(16).toUpperCase().padStart(4, "0");
}

/**
 * Encodes one id for a Redis key: `encodeURIComponent` for well-formed text (so keys written by earlier versions
 * keep their names), and `%uXXXX` for an unpaired surrogate, which `encodeURIComponent` refuses. The output is
 * ASCII and never holds `:`, `{`, `}` or a `%` that is not an escape; `%u` never occurs in `encodeURIComponent`
 * output (it writes `%` and two hex digits), so decoding is unambiguous and the encoding injective.
 */
export function encodeRedisKeyPart(value: string): string {
  if (value.isWellFormed()) return encodeURIComponent(value);
  let encoded = "";
  let segmentStart = 0;
  for (let index = 0; index < value.length; index++) {
    const codeUnit = value.charCodeAt(index);
    if (codeUnit < 0xd800 || codeUnit > 0xdfff) continue;
    const next = value.charCodeAt(index + 1);
    if (codeUnit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      index += 1; // A well-formed pair stays in the segment.
      continue;
    }
    encoded += `${encodeURIComponent(value.slice(segmentStart, index))}%u${hex4(codeUnit)}`;
    segmentStart = index + 1;
  }
  return encoded + encodeURIComponent(value.slice(segmentStart));
}

/**
 * The part of a Redis key inside the hash-tag braces: `<user>:<session>` with a user, `<session>` without one,
 * each id encoded by {@link encodeRedisKeyPart}. Encoded ids never contain `:`, so the two shapes cannot meet.
 */
export function redisSessionTag(session: ConversationSessionKey): string {
  const { userId, sessionId } = sessionKeyParts(session);
  const owner = userId === undefined ? "" : `${encodeRedisKeyPart(userId)}:`;
  return `${owner}${encodeRedisKeyPart(sessionId)}`;
}
