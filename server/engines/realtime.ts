// The realtime engines: transcription of audio as it streams in (16 kHz 16-bit mono PCM), and speech made as text
// streams in. Transcription: a voice-activity detector cuts the stream into items (turn detection, as configured);
// while an item is being spoken the recogniser (PocketSphinx, engines/transcription.ts) is run again on the item so
// far every PARTIAL_EVERY_MS of new audio, giving a partial result; when the item ends (silence, its longest
// duration, or a commit) it is run on the whole item for the final one. Recognitions run one at a time per stream,
// in order, so every event follows the audio it is about.
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { recognise } from './transcription.ts';

export const PCM_RATE = 16_000;
const BYTES_PER_MS = (PCM_RATE * 2) / 1000;
const FRAME_MS = 20;
const FRAME_BYTES = FRAME_MS * BYTES_PER_MS;
/** How much new audio of an item is heard before its partial result is recognised again. */
export const PARTIAL_EVERY_MS = 500;
/** Without turn detection, the most audio a stream holds before a commit. */
export const MAX_UNCOMMITTED_MS = 60_000;

export interface TurnDetection {
  type: 'server_vad';
  threshold: number;
  min_silence_duration_ms: number;
  min_speech_duration_ms: number;
  max_speech_duration_s: number;
  speech_pad_ms: number;
}

export const DEFAULT_TURN_DETECTION: TurnDetection = {
  type: 'server_vad',
  threshold: 0.3,
  min_silence_duration_ms: 500,
  min_speech_duration_ms: 250,
  max_speech_duration_s: 5,
  speech_pad_ms: 250,
};

/** A frame is speech when its RMS level is at least this many dBFS: -70 dBFS at threshold 0, -30 at threshold 1. */
export const speechLevel = (threshold: number) => -70 + 40 * threshold;

export type TranscriptionEvent =
  | { kind: 'delta'; itemId: string; text: string }
  | { kind: 'completed'; itemId: string; text: string }
  | { kind: 'failed'; itemId: string | null; code: string; message: string };

const level = (frame: Buffer) => {
  let sum = 0;
  const n = frame.length >> 1;
  for (let i = 0; i < n; i++) {
    const v = frame.readInt16LE(i * 2) / 32768;
    sum += v * v;
  }
  return 10 * Math.log10(sum / Math.max(n, 1) + 1e-12);
};

export class StreamingTranscriber {
  private turn: TurnDetection | null = DEFAULT_TURN_DETECTION;
  /** Audio not yet a whole frame. */
  private carry: Buffer = Buffer.alloc(0);
  /** The current item's audio (with VAD: from its padded start), or all uncommitted audio without VAD. */
  private item: Buffer[] = [];
  private itemBytes = 0;
  private itemId: string | null = null;
  /** With VAD and no item open: the last speech_pad_ms of audio, to start the next item with. */
  private preRoll: Buffer[] = [];
  private preRollBytes = 0;
  private speechMs = 0;
  private silenceMs = 0;
  private sincePartialMs = 0;
  private lastPartial = '';
  private chain: Promise<void> = Promise.resolve();
  private partialQueued = false;
  private closed = false;
  private items = 0;

  constructor(
    private recogniser: string | undefined,
    private tmpDir: string,
    private emit: (e: TranscriptionEvent) => void,
  ) {}

  setTurnDetection(turn: TurnDetection | null): void {
    this.turn = turn;
  }

  append(pcm: Buffer): void {
    let buf = this.carry.length ? Buffer.concat([this.carry, pcm]) : pcm;
    while (buf.length >= FRAME_BYTES) {
      this.frame(buf.subarray(0, FRAME_BYTES));
      buf = buf.subarray(FRAME_BYTES);
    }
    this.carry = Buffer.from(buf);
  }

  /** Ends the current item (or, without VAD, all the audio given since the last commit): its final result follows. */
  commit(): void {
    if (this.carry.length) this.push(this.carry);
    this.carry = Buffer.alloc(0);
    if (this.itemBytes) this.finish(true);
  }

  /** Stops: no further event. Waits for the recognition under way. */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
  }

  private frame(frame: Buffer): void {
    const turn = this.turn;
    if (!turn) {
      if (this.itemBytes + frame.length > MAX_UNCOMMITTED_MS * BYTES_PER_MS) {
        this.emit({
          kind: 'failed',
          itemId: null,
          code: 'input_audio_buffer_full',
          message: `Without turn detection the buffer holds at most ${MAX_UNCOMMITTED_MS / 1000} s of audio: send input_audio_buffer.commit; this audio was dropped.`,
        });
        return;
      }
      this.push(frame);
      this.maybePartial();
      return;
    }
    const speech = level(frame) >= speechLevel(turn.threshold);
    if (this.itemId === null) {
      if (!speech) {
        this.preRoll.push(frame);
        this.preRollBytes += frame.length;
        while (this.preRollBytes > turn.speech_pad_ms * BYTES_PER_MS && this.preRoll.length) this.preRollBytes -= this.preRoll.shift()!.length;
        return;
      }
      for (const f of this.preRoll) this.push(f);
      this.preRoll = [];
      this.preRollBytes = 0;
    }
    this.push(frame);
    if (speech) {
      this.speechMs += FRAME_MS + this.silenceMs;
      this.silenceMs = 0;
    } else this.silenceMs += FRAME_MS;
    if (this.silenceMs >= turn.min_silence_duration_ms) this.finish(this.speechMs >= turn.min_speech_duration_ms);
    else if (this.speechMs >= turn.max_speech_duration_s * 1000) this.finish(true);
    else if (speech) this.maybePartial();
  }

  private push(frame: Buffer): void {
    this.itemId ??= `item_${++this.items}_${randomUUID().slice(0, 8)}`;
    this.item.push(frame);
    this.itemBytes += frame.length;
    this.sincePartialMs += frame.length / BYTES_PER_MS;
  }

  private maybePartial(): void {
    if (this.sincePartialMs < PARTIAL_EVERY_MS || this.partialQueued || !this.recogniser) return;
    this.sincePartialMs = 0;
    this.partialQueued = true;
    const itemId = this.itemId!;
    this.enqueue(async () => {
      this.partialQueued = false;
      // The item may have ended meanwhile: its final result says it all.
      if (this.itemId !== itemId) return;
      const text = await this.recognise(Buffer.concat(this.item));
      if (text && text !== this.lastPartial && this.itemId === itemId) {
        this.lastPartial = text;
        this.emit({ kind: 'delta', itemId, text });
      }
    });
  }

  private finish(keep: boolean): void {
    const itemId = this.itemId;
    const audio = Buffer.concat(this.item);
    this.item = [];
    this.itemBytes = 0;
    this.itemId = null;
    this.speechMs = 0;
    this.silenceMs = 0;
    this.sincePartialMs = 0;
    this.lastPartial = '';
    if (!keep || itemId === null) return;
    this.enqueue(async () => {
      if (!this.recogniser) {
        this.emit({
          kind: 'failed',
          itemId,
          code: 'engine_unavailable',
          message:
            'No speech recogniser is installed on this server (install pocketsphinx and pocketsphinx-en-us, or set POCKETSPHINX_PATH): no words can be heard.',
        });
        return;
      }
      this.emit({ kind: 'completed', itemId, text: await this.recognise(audio) });
    });
  }

  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (this.closed) return;
      try {
        await task();
      } catch (err) {
        this.emit({ kind: 'failed', itemId: null, code: 'transcription_failed', message: `The recogniser failed: ${(err as Error).message}` });
      }
    });
  }

  private async recognise(pcm: Buffer): Promise<string> {
    mkdirSync(this.tmpDir, { recursive: true });
    const path = join(this.tmpDir, `realtime-${randomUUID()}.pcm`);
    writeFileSync(path, pcm);
    try {
      return (await recognise(this.recogniser!, path)).map((w) => w.word).join(' ');
    } finally {
      rmSync(path, { force: true });
    }
  }
}

/**
 * Cuts streamed text into what is spoken next: whole sentences (up to `.`, `!`, `?` or `;`, followed by a space or ending the text so far),
 * or, past `maxPartial` characters without one, up to the last space within them; `flush` takes the rest.
 */
export class TextBuffer {
  private text = '';
  constructor(private maxPartial: number) {}

  get length(): number {
    return this.text.length;
  }

  append(text: string): string[] {
    this.text += text;
    const out: string[] = [];
    for (;;) {
      const end = /[.!?;]["')\]]*(\s|$)/.exec(this.text);
      if (end) {
        out.push(this.text.slice(0, end.index + end[0].length).trim());
        this.text = this.text.slice(end.index + end[0].length);
        continue;
      }
      if (this.text.length > this.maxPartial) {
        const cut = this.text.lastIndexOf(' ', this.maxPartial);
        const at = cut > 0 ? cut : this.maxPartial;
        out.push(this.text.slice(0, at).trim());
        this.text = this.text.slice(at);
        continue;
      }
      return out.filter(Boolean);
    }
  }

  flush(): string {
    const rest = this.text.trim();
    this.text = '';
    return rest;
  }

  clear(): void {
    this.text = '';
  }
}
