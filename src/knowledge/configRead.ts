/**
 * Reading a grounding configuration: every option exactly once into a plain copy, never throwing, so what is
 * validated (`configValidation.ts`) is what the engine uses, whatever getters or proxies the host's object has.
 */
import type { KnowledgeGroundingConfig, KnowledgeValidationIssue } from "../types/knowledge.js";
import { KNOWLEDGE_CONFIG_FIELDS } from "./defaults.js";
import {
  copyList,
  describeError,
  describeType,
  isUnreadable,
  readProperty,
  shapeOf,
  UnreadableValue,
} from "./hostValues.js";

/** Options whose value is an object whose own fields are copied too. */
const NESTED_CONFIG_FIELDS: ReadonlySet<string> = new Set(["retrieval", "context", "telemetry"]);

/** The outcome of {@link readGroundingConfig}. */
export type KnowledgeGroundingConfigRead = {
  /**
   * A plain copy of the configuration: every option read once, `retrieval`, `retrieval.fieldWeights` and
   * `context` copied field by field, `blockedDomains` item by item. `sources` is kept as given (the engine copies
   * it when it builds), as are `logger` and `indexArtifact`. Options that could not be read are left out.
   */
  config: KnowledgeGroundingConfig;
  /** One `bad-config` error per option that could not be read (a throwing getter, a revoked proxy). */
  issues: KnowledgeValidationIssue[];
  /** `enabled` could not be read. The engine then counts as enabled, so turns report why they are ungrounded. */
  enabledUnreadable: boolean;
};

/**
 * Reads a configuration once into a plain object and never throws: each option (and each field of `retrieval`,
 * `retrieval.fieldWeights` and `context`, and each item of `blockedDomains`) is read exactly once, so what is
 * validated is what the engine uses, whatever getters or proxies the host's object has, and later changes to the
 * host's object have no effect. A read that throws becomes a `bad-config` issue at its path.
 */
export function readGroundingConfig(config: unknown): KnowledgeGroundingConfigRead {
  const issues: KnowledgeValidationIssue[] = [];
  const unreadable = (path: string, value: UnreadableValue): void => {
    issues.push({
      level: "error",
      code: "bad-config",
      message: `${path} could not be read: ${describeError(value.error)}`,
      path,
    });
  };
  const shape = shapeOf(config);
  if (isUnreadable(shape)) {
    unreadable("config", shape);
    return { config: { enabled: true, sources: [] }, issues, enabledUnreadable: true };
  }
  if (shape !== "record") {
    issues.push({
      level: "error",
      code: "bad-config",
      message: `config must be an object, got ${describeType(config)}`,
      path: "config",
    });
    return { config: { enabled: false, sources: [] }, issues, enabledUnreadable: false };
  }
  const source = config as object;
  const copy: Record<string, unknown> = {};
  /** Reads the given keys of `from` into `into` once; nested objects are copied by `nested`. */
  const copyFields = (
    from: object,
    keys: readonly string[],
    into: Record<string, unknown>,
    path: string,
    nested: (key: string, value: unknown, path: string) => unknown,
  ): void => {
    // Known options come first and own keys repeat them: each key is read once, also when its read throws.
    for (const key of new Set(keys)) {
      if (Object.hasOwn(into, key)) continue;
      const value = readProperty(from, key);
      const fieldPath = path === "" ? key : `${path}.${key}`;
      if (isUnreadable(value)) unreadable(fieldPath, value);
      else if (value !== undefined) into[key] = nested(key, value, fieldPath);
    }
  };
  const ownKeys = (from: object, path: string): string[] => {
    try {
      return Object.keys(from);
    } catch (caught) {
      unreadable(path === "" ? "config" : path, new UnreadableValue(caught));
      return [];
    }
  };
  /** A plain copy of a record's own fields (and of `fieldWeights` inside `retrieval`); other values as they are. */
  const copyRecord = (value: unknown, path: string, depth: number): unknown => {
    const valueShape = shapeOf(value);
    if (isUnreadable(valueShape)) {
      unreadable(path, valueShape);
      return undefined;
    }
    if (valueShape !== "record") return value;
    const record: Record<string, unknown> = {};
    copyFields(value as object, ownKeys(value as object, path), record, path, (key, item, itemPath) =>
      depth === 0 && key === "fieldWeights" ? copyRecord(item, itemPath, 1) : item,
    );
    return record;
  };
  const topLevelKeys = [...KNOWLEDGE_CONFIG_FIELDS, ...ownKeys(source, "")];
  copyFields(source, topLevelKeys, copy, "", (key, value, path) => {
    if (NESTED_CONFIG_FIELDS.has(key)) return copyRecord(value, path, 0);
    if (key === "shadowAlternatives") return readShadowAlternatives(value, path, issues);
    const valueShape = shapeOf(value);
    if (isUnreadable(valueShape)) {
      unreadable(path, valueShape);
      return undefined;
    }
    if (key === "blockedDomains" && valueShape === "array") {
      const list = copyList(value as object, Number.POSITIVE_INFINITY);
      if (!Array.isArray(list)) {
        if (isUnreadable(list)) unreadable(path, list);
        return undefined;
      }
      const unreadableIndex = list.findIndex((item) => isUnreadable(item));
      if (unreadableIndex < 0) return list;
      unreadable(`${path}[${unreadableIndex}]`, list[unreadableIndex] as UnreadableValue);
      return undefined;
    }
    return value;
  });
  const enabledUnreadable = issues.some((issue) => issue.path === "enabled");
  if (enabledUnreadable) copy.enabled = true;
  return { config: copy as KnowledgeGroundingConfig, issues, enabledUnreadable };
}

/** Issues of a nested configuration, re-pathed under `prefix` (its "config" path is `prefix` itself). */
export function prefixIssues(
  issues: readonly KnowledgeValidationIssue[],
  prefix: string,
): KnowledgeValidationIssue[] {
  return issues.map((issue) => {
    const inner = issue.path ?? "config";
    const path = inner === "config" ? prefix : `${prefix}.${inner}`;
    const message = issue.message.startsWith(`${inner} `)
      ? `${path} ${issue.message.slice(inner.length + 1)}`
      : `${path}: ${issue.message}`;
    return { ...issue, path, message };
  });
}

/**
 * Reads `shadowAlternatives` once: each alternative that is an object is read like a configuration (so getters
 * and proxies are read once, and unreadable fields are issues at their path); other values are kept for the
 * validator to report.
 */
function readShadowAlternatives(value: unknown, path: string, issues: KnowledgeValidationIssue[]): unknown {
  const shape = shapeOf(value);
  if (isUnreadable(shape)) {
    issues.push(...prefixIssues([unreadableIssue(shape)], path));
    return undefined;
  }
  if (shape !== "record") return value;
  const copy: Record<string, unknown> = {};
  let names: string[];
  try {
    names = Object.keys(value as object);
  } catch (caught) {
    issues.push(...prefixIssues([unreadableIssue(new UnreadableValue(caught))], path));
    return undefined;
  }
  for (const name of names) {
    const item = readProperty(value as object, name);
    const itemPath = `${path}.${name}`;
    if (isUnreadable(item)) {
      issues.push(...prefixIssues([unreadableIssue(item)], itemPath));
      continue;
    }
    if (shapeOf(item) !== "record") {
      copy[name] = item;
      continue;
    }
    const read = readGroundingConfig(item);
    issues.push(...prefixIssues(read.issues, itemPath));
    copy[name] = read.config;
  }
  return copy;
}

/** The `bad-config` error of a configuration that could not be read at all. */
function unreadableIssue(value: UnreadableValue): KnowledgeValidationIssue {
  return {
    level: "error",
    code: "bad-config",
    message: `config could not be read: ${describeError(value.error)}`,
    path: "config",
  };
}
