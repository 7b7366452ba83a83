// The chat engine interface: what inference needs from whatever runs a model. This server has no GPUs and no
// model weights, so the only engine is a deterministic local one that says what it is and computes everything it
// reports (text, finish reason, token counts) from the request itself, never inventing a model's answer.

export interface ChatMessage {
  role: string;
  content: string;
}

export interface ChatRequest {
  /** The model the replica serves (catalogue id or `ml_...`), and the LoRA adapter applied on top, if any. */
  model: string;
  adapter?: string;
  messages: ChatMessage[];
  maxTokens?: number;
  stop: string[];
  n: number;
  seed?: number;
}

export interface ChatChoice {
  text: string;
  finishReason: 'stop' | 'length';
}

export interface ChatResult {
  choices: ChatChoice[];
  promptTokens: number;
  completionTokens: number;
  /** Identifies the engine in responses (`system_fingerprint`). */
  fingerprint: string;
}

/** What the engine is and what it can do: reported as a v2 deployment's `runtimeInfo`. */
export interface EngineRuntime {
  engineType: string;
  engineVersion: string;
  functionCallingSupported: boolean;
  structuredOutputSupported: boolean;
}

export interface ChatEngine {
  runtime: EngineRuntime;
  complete(request: ChatRequest): Promise<ChatResult>;
}

// A token is a run of word characters or one punctuation mark: simple, deterministic, and close enough in scale
// to real tokenizers for usage figures.
const TOKEN = /\w+|[^\w\s]/g;

export function countTokens(text: string): number {
  return text.match(TOKEN)?.length ?? 0;
}

/** The text up to the end of its `max`-th token, and whether it was cut. */
function truncate(text: string, max: number): { text: string; cut: boolean } {
  let count = 0;
  for (const m of text.matchAll(TOKEN)) {
    if (++count === max) {
      const end = m.index! + m[0].length;
      return { text: text.slice(0, end), cut: end < text.trimEnd().length };
    }
  }
  return { text, cut: false };
}

// It takes no tools and no response format, so it supports neither function calling nor structured output.
const LOCAL_RUNTIME: EngineRuntime = { engineType: 'local', engineVersion: 'local-chat-engine-1', functionCallingSupported: false, structuredOutputSupported: false };

export const localChatEngine: ChatEngine = {
  runtime: LOCAL_RUNTIME,
  async complete(req) {
    const lastUser = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const served = req.adapter ? `${req.model} with the LoRA adapter ${req.adapter}` : req.model;
    const choices = Array.from({ length: req.n }, (_, i): ChatChoice => {
      let text =
        `[local engine] This answer comes from this server's deterministic local chat engine, not from ${served}: ` +
        `no model weights run here. Your last message was: "${lastUser}"` +
        (req.n > 1 ? ` (choice ${i + 1} of ${req.n})` : '');
      let finishReason: ChatChoice['finishReason'] = 'stop';
      const stopAt = Math.min(...req.stop.map((s) => text.indexOf(s)).filter((i) => i >= 0));
      if (Number.isFinite(stopAt)) text = text.slice(0, stopAt);
      if (req.maxTokens !== undefined) {
        const t = truncate(text, req.maxTokens);
        text = t.text;
        if (t.cut) finishReason = 'length';
      }
      return { text, finishReason };
    });
    return {
      choices,
      // Each message costs its role and its content.
      promptTokens: req.messages.reduce((sum, m) => sum + 1 + countTokens(m.content), 0),
      completionTokens: choices.reduce((sum, c) => sum + countTokens(c.text), 0),
      fingerprint: LOCAL_RUNTIME.engineVersion,
    };
  },
};
