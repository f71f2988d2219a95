/**
 * Named ASCII character classes for the tokenizer's hot loops. Each is a range check on a UTF-16 code unit;
 * the engine inlines such small functions, so naming them costs nothing at run time.
 */

/** `A`–`Z`. */
export function isAsciiUpper(code: number): boolean {
  return code >= 65 && code <= 90;
}

/** `a`–`z`. */
export function isAsciiLower(code: number): boolean {
  return code >= 97 && code <= 122;
}

/** `0`–`9`. */
export function isAsciiDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** `a`–`z` or `0`–`9`: characters that continue a token without starting an identifier split. */
export function isAsciiLowerOrDigit(code: number): boolean {
  return isAsciiLower(code) || isAsciiDigit(code);
}

/** An ASCII letter or digit: a token character (every other ASCII character separates tokens). */
export function isAsciiAlphanumeric(code: number): boolean {
  return isAsciiLower(code) || isAsciiDigit(code) || isAsciiUpper(code);
}

/** Outside ASCII: the Unicode pipeline handles such text. */
export function isNonAscii(code: number): boolean {
  return code >= 128;
}

/** A UTF-16 high (leading) surrogate. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** `.`, `!` or `?`: a sentence end (when whitespace follows). */
export function isSentenceEnd(code: number): boolean {
  return code === 46 || code === 33 || code === 63;
}

/** The space character, `" "`: what separates the words of a phrase key. */
export const ASCII_SPACE = 32;

/** OR-ing this into an ASCII letter's code lowercases it (and leaves digits unchanged). */
export const ASCII_LOWERCASE_BIT = 32;
