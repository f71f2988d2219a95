/**
 * Reading and writing an AI SDK prompt: the turn it asks about, and the grounding block added to its system
 * message.
 */
import type { LanguageModelV3Message, LanguageModelV3Prompt } from "@ai-sdk/provider";
import type { KnowledgeConversationTurn } from "../types/knowledge.js";

/** What one model call asks: the last user message's text, and the conversation turns before it. */
export type PromptTurn = { query: string; recentTurns: KnowledgeConversationTurn[] };

/**
 * The turn a prompt asks about: the last user message (its text is the query) and up to `recentTurnLimit` earlier
 * user and assistant messages with text, oldest first. Null when there is no user message or it has no text.
 */
export function turnFromPrompt(prompt: LanguageModelV3Prompt, recentTurnLimit: number): PromptTurn | null {
  let lastUser = -1;
  for (let index = prompt.length - 1; index >= 0; index--) {
    if (prompt[index]?.role === "user") {
      lastUser = index;
      break;
    }
  }
  if (lastUser < 0) return null;
  const query = messageText(prompt[lastUser]!);
  if (query.trim().length === 0) return null;
  const recentTurns: KnowledgeConversationTurn[] = [];
  if (recentTurnLimit > 0) {
    for (let index = lastUser - 1; index >= 0 && recentTurns.length < recentTurnLimit; index--) {
      const message = prompt[index]!;
      if (message.role !== "user" && message.role !== "assistant") continue;
      const text = messageText(message);
      if (text.length > 0) recentTurns.unshift({ role: message.role, text });
    }
  }
  return { query, recentTurns };
}

/** The text parts of a message, joined by newlines; `""` for system and tool messages. */
function messageText(message: LanguageModelV3Message): string {
  if (message.role !== "user" && message.role !== "assistant") return "";
  if (!Array.isArray(message.content)) return "";
  const texts: string[] = [];
  for (const part of message.content) {
    if (part && part.type === "text" && typeof part.text === "string" && part.text.length > 0) {
      texts.push(part.text);
    }
  }
  return texts.join("\n");
}

/**
 * Inserts the block into the prompt: appended (after a blank line) to the last system message of the leading run of
 * system messages, so it follows the host's static instructions (which keeps provider prefix caches warm), or as a
 * new first system message when the prompt starts with no system message. Never after a user message: some
 * providers (Google) reject system messages that do not lead the conversation.
 */
export function insertGroundingBlock(prompt: LanguageModelV3Prompt, block: string): LanguageModelV3Prompt {
  let lastLeadingSystem = -1;
  while (prompt[lastLeadingSystem + 1]?.role === "system") lastLeadingSystem++;
  if (lastLeadingSystem < 0) return [{ role: "system", content: block }, ...prompt];
  const system = prompt[lastLeadingSystem] as Extract<LanguageModelV3Message, { role: "system" }>;
  const content =
    typeof system.content === "string" && system.content.length > 0 ? `${system.content}\n\n${block}` : block;
  const copy = prompt.slice();
  copy[lastLeadingSystem] = { ...system, content };
  return copy;
}
