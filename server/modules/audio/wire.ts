// Module `audio`: a transcript -> the response format asked for (JSON shapes, plain text, SubRip, WebVTT); speech
// stream events and the voices list.
import type { Transcript } from '../../engines/transcription.ts';
import { reply } from '../../http/reply.ts';
import type { SpeechVoice } from '../models/index.ts';
import type { Wire } from '../types.ts';

export type ResponseFormat = 'json' | 'verbose_json' | 'text' | 'srt' | 'vtt';

const clock = (seconds: number, separator: ',' | '.') => {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
};

export function verboseWire(t: Transcript, task: 'transcribe' | 'translate', withWords: boolean): Wire<'AudioTranscriptionVerboseJson'> {
  return {
    task,
    language: t.language,
    duration: t.duration,
    text: t.text,
    segments: t.segments.map((s, id) => ({ id, start: s.start, end: s.end, text: s.text })),
    ...(withWords ? { words: t.words.map((w) => ({ word: w.word, start: w.start, end: w.end })) } : {}),
  };
}

export function transcriptReply(t: Transcript, format: ResponseFormat, task: 'transcribe' | 'translate', withWords: boolean) {
  const headers: Record<string, string> = { 'x-transcription-engine': t.engine, ...t.headers };
  switch (format) {
    case 'json':
      return reply.json<Wire<'AudioTranscriptionJson'>>({ text: t.text }, { headers });
    case 'verbose_json':
      return reply.json(verboseWire(t, task, withWords), { headers });
    case 'text':
      return reply.text(t.text, 'text/plain; charset=utf-8', { headers });
    case 'srt':
      return reply.text(
        t.segments.map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text}\n`).join('\n'),
        'text/plain; charset=utf-8',
        { headers },
      );
    case 'vtt':
      return reply.text(
        `WEBVTT\n\n${t.segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text}\n`).join('\n')}`,
        'text/vtt; charset=utf-8',
        { headers },
      );
  }
}

/** One event of a speech stream: the next raw samples, base64. */
export const speechChunk = (model: string, samples: Buffer): Wire<'AudioSpeechStreamChunk'> => ({
  object: 'audio.tts.chunk',
  model,
  b64: samples.toString('base64'),
});

/** Speech models and their voices; a voice's id is `<model>:<name>`. */
export function voicesWire(models: ReadonlyMap<string, readonly SpeechVoice[]>): Wire<'ListVoicesResponse'> {
  return {
    data: [...models].map(([model, voices]) => ({
      model,
      voices: voices.map((v) => ({ id: `${model}:${v.name}`, name: v.name, gender: v.gender, language: v.language })),
    })),
  };
}
