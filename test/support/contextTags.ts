/**
 * An independent check of "how many tags does a reader see", shared by the context tests: fold the text the way a
 * tolerant reader might (NFKC, invisible characters removed, lowercase, whitespace removed) and count tag
 * spellings of the grounding block's opening and closing tags.
 */
export function countTags(text: string): { open: number; close: number } {
  const folded = text
    .normalize("NFKC")
    .replace(/[\p{Cf}\p{M}]/gu, "")
    .replace(/&lt;?|&#0*60;?|&#x0*3c;?/gi, "<")
    .toLowerCase()
    .replace(/\s+/g, "");
  return {
    open: folded.match(/<knowledge[_\-.]?context/g)?.length ?? 0,
    close: folded.match(/<\/knowledge[_\-.]?context/g)?.length ?? 0,
  };
}
