/**
 * YAML (and JSON as YAML) parsed with positions, so a value knows its line, and bounded against alias bombs.
 */
import {
  type Document,
  isAlias,
  isCollection,
  isNode,
  isPair,
  LineCounter,
  parseDocument,
  visit,
  type Node as YamlNode,
} from "yaml";
import { KnowledgeCompileError } from "./errors.js";

/**
 * Most YAML anchors and aliases in one file. The YAML library resolves each alias by scanning the anchors and
 * aliases before it, a quadratic cost: 1,000 take about 40 ms, 10,000 about 4 s.
 */
export const MAX_YAML_ANCHORS_AND_ALIASES = 1_000;
/**
 * Most nodes a YAML document may have once its aliases are expanded: this many, or ten times its written nodes
 * if that is more. Anything beyond is an alias bomb ("billion laughs"): a few lines that expand to billions of
 * values in the manifest.
 */
export const MAX_YAML_EXPANDED_NODES = 1_000_000;

export function lineOf(lineCounter: LineCounter, offset: number | undefined, lineOffset: number): number {
  return lineCounter.linePos(offset ?? 0).line + lineOffset;
}

/** Parses YAML (or JSON, which is YAML) keeping positions; malformed input is a typed error at its line. */
export function parseYaml(text: string, file: string, lineOffset: number) {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const [firstError] = document.errors;
  if (firstError) {
    throw new KnowledgeCompileError("yaml-syntax", `malformed YAML: ${firstError.message}`, {
      file,
      line: lineOf(lineCounter, firstError.pos[0], lineOffset),
      hint: "fix the YAML syntax (indentation, quoting, unique keys); quote values that contain ': ' or start with '['",
    });
  }
  return { document, lineCounter };
}

/** Written and alias-expanded node counts of a YAML document, and the alias where expansion passes `limit`. */
type YamlExpansion = {
  anchorsAndAliases: number;
  written: number;
  aliasPastLimit?: YamlNode;
  cycle?: YamlNode;
  /** An alias with no anchor of its name before it. */
  unresolved?: YamlNode;
};

/**
 * Counts a document's nodes as written and as expanded (every alias replaced by a copy of its anchor's node), in
 * document order, stopping at the first alias that names no anchor before it, that takes the expanded count past
 * the limit, or that refers to a node containing it (a cycle, whose expansion never ends). Linear in the written
 * document.
 */
function measureYaml(document: Document): YamlExpansion {
  let written = 0;
  let anchorsAndAliases = 0;
  visit(document, {
    Node: (_key, node) => {
      written++;
      if (isAlias(node) || node.anchor) anchorsAndAliases++;
    },
  });
  const measured: YamlExpansion = { anchorsAndAliases, written };
  if (anchorsAndAliases === 0 || anchorsAndAliases > MAX_YAML_ANCHORS_AND_ALIASES) return measured;
  const limit = Math.max(MAX_YAML_EXPANDED_NODES, 10 * written);
  // An alias refers to the last node before it with that anchor (the YAML library resolves it the same way).
  const anchored = new Map<string, YamlNode>();
  const sizes = new Map<YamlNode, number>();
  const open = new Set<YamlNode>();
  let expanded = 0;
  const stop = new Error("stop");
  const count = (item: unknown): number => {
    if (isPair(item)) return count(item.key) + count(item.value);
    if (!isNode(item)) return 0;
    if (isAlias(item)) {
      const target = anchored.get(item.source);
      if (target === undefined) {
        measured.unresolved = item;
        throw stop;
      }
      if (open.has(target)) {
        measured.cycle = item;
        throw stop;
      }
      const size = sizes.get(target) ?? 1;
      expanded += size - 1;
      if (expanded + written > limit) {
        measured.aliasPastLimit = item;
        throw stop;
      }
      return size;
    }
    if (item.anchor) anchored.set(item.anchor, item);
    let size = 1;
    if (isCollection(item)) {
      open.add(item);
      for (const child of item.items) size += count(child);
      open.delete(item);
    }
    sizes.set(item, size);
    return size;
  };
  try {
    count(document.contents);
  } catch (error) {
    if (error !== stop) throw error;
  }
  return measured;
}

/**
 * The JavaScript value of a parsed YAML document. Alias bombs, cyclic aliases and too many anchors are refused
 * with an error at the offending line (the YAML library's own alias limit, a bare ReferenceError naming no file,
 * is replaced by this exact count, which also accepts an ordinary alias used in hundreds of entries).
 */
export function yamlValue(
  document: Document,
  lineCounter: LineCounter,
  file: string,
  lineOffset: number,
): unknown {
  const aliasError = (description: string, node: YamlNode | undefined, hint: string) =>
    new KnowledgeCompileError("yaml-aliases", description, {
      file,
      ...(node?.range ? { line: lineOf(lineCounter, node.range[0], lineOffset) } : {}),
      hint,
    });
  let measured: YamlExpansion;
  try {
    measured = measureYaml(document);
  } catch (error) {
    // Only a nesting too deep for the stack gets here.
    throw new KnowledgeCompileError(
      "yaml-syntax",
      `cannot read the YAML value: ${error instanceof Error ? error.message : String(error)}`,
      { file, hint: "nest lists and mappings less deeply" },
    );
  }
  if (measured.anchorsAndAliases > MAX_YAML_ANCHORS_AND_ALIASES) {
    let first: YamlNode | undefined;
    visit(document, {
      Node: (_key, node) => {
        if (isAlias(node) || node.anchor) {
          first = node;
          return visit.BREAK;
        }
        return undefined;
      },
    });
    throw aliasError(
      `${measured.anchorsAndAliases} YAML anchors and aliases; the limit is ${MAX_YAML_ANCHORS_AND_ALIASES} per file`,
      first,
      "write the values out instead of using &anchors and *aliases, or split the file",
    );
  }
  if (measured.unresolved) {
    throw aliasError(
      `YAML alias *${isAlias(measured.unresolved) ? measured.unresolved.source : ""} has no anchor of that name before it`,
      measured.unresolved,
      "define the anchor (&name) before its first alias (*name), or quote a value that starts with '*'",
    );
  }
  if (measured.cycle) {
    throw aliasError(
      `YAML alias *${isAlias(measured.cycle) ? measured.cycle.source : ""} refers to a node that contains it, so it never ends`,
      measured.cycle,
      "an alias may only repeat a node defined before it, outside it",
    );
  }
  if (measured.aliasPastLimit) {
    throw aliasError(
      `YAML aliases expand past ${Math.max(MAX_YAML_EXPANDED_NODES, 10 * measured.written).toLocaleString("en-US")} values at this alias (an alias bomb, "billion laughs")`,
      measured.aliasPastLimit,
      "aliases that repeat other aliases multiply; write the values out",
    );
  }
  try {
    // The expansion is bounded above, so the library's own alias counter (100 uses of an anchor) is not needed.
    return document.toJS({ maxAliasCount: -1 });
  } catch (error) {
    throw new KnowledgeCompileError(
      "yaml-syntax",
      `cannot read the YAML value: ${error instanceof Error ? error.message : String(error)}`,
      { file },
    );
  }
}
