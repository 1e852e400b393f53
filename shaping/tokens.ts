/**
 * Capping text at a token budget with the o200k_base tokenizer, fast enough for results of many
 * megabytes and exact for the part that is kept.
 */
import { getEncoding, type Tiktoken } from 'js-tiktoken';

let encoder: Tiktoken | undefined;

/** The tokenizer, built on first use (building it takes about a second). */
function tokenizer(): Tiktoken {
  encoder ??= getEncoding('o200k_base');
  return encoder;
}

/**
 * js-tiktoken's byte-pair merge is quadratic in the length of a piece, and a piece is a run of
 * letters, punctuation or whitespace: a long run (base64 in text, CJK, '=====') takes minutes. So
 * runs are split at RUN code points and encoded separately; text without such runs is
 * tokenized exactly as the tokenizer would, in chunks of about CHUNK characters.
 */
const RUN = 32;
const CHUNK = 4096;
/** Past the cut, the rest is counted exactly up to this many UTF-8 bytes, then estimated. */
const EXACT_REST_BYTES = 64 * 1024;

function* chunks(text: string): Generator<{ chunk: string; start: number }> {
  const pieces = new RegExp(`\\s{1,${RUN}}|\\S{1,${RUN}}`, 'gu');
  let chunk = '';
  let start = 0;
  let prevSpace: boolean | undefined;
  for (const m of text.matchAll(pieces)) {
    const space = /^\s/u.test(m[0]);
    // A same-class neighbour means a run was split; chunks otherwise end only before whitespace,
    // where the tokenizer's own pattern splits too.
    if (chunk && (space === prevSpace || (space && chunk.length >= CHUNK))) {
      yield { chunk, start };
      chunk = '';
      start = m.index;
    }
    chunk += m[0];
    prevSpace = space;
  }
  if (chunk) yield { chunk, start };
}

/** Text cut to a token budget. */
export interface Capped {
  /** the text that fits (all of it when nothing was cut) */
  text: string;
  /** tokens cut (0 when nothing was cut) */
  cut: number;
  /** true when `cut` is an estimate: very long rests are not counted to the end */
  approximate: boolean;
}

/** The longest prefix of `text` within `maxTokens` tokens, and how many tokens were cut. */
export function capTokens(text: string, maxTokens: number): Capped {
  // A token is at least one byte, so short texts need no tokenizer at all.
  if (Buffer.byteLength(text, 'utf8') <= maxTokens) return { text, cut: 0, approximate: false };
  const enc = tokenizer();
  let kept = 0;
  let keptText: string | undefined;
  let cut = 0;
  let restBytes = 0;
  for (const { chunk, start } of chunks(text)) {
    if (keptText !== undefined && restBytes > EXACT_REST_BYTES) {
      const remaining = Buffer.byteLength(text.slice(start), 'utf8');
      cut += Math.round((cut / restBytes) * remaining);
      return { text: keptText, cut, approximate: true };
    }
    const tokens = enc.encode(chunk, [], []);
    if (keptText !== undefined) {
      cut += tokens.length;
      restBytes += Buffer.byteLength(chunk, 'utf8');
    } else if (kept + tokens.length <= maxTokens) {
      kept += tokens.length;
    } else {
      const prefix = decodePrefix(enc, tokens, maxTokens - kept, chunk);
      keptText = text.slice(0, start) + prefix.text;
      cut += tokens.length - prefix.tokens;
      restBytes += Buffer.byteLength(chunk.slice(prefix.text.length), 'utf8');
    }
  }
  return keptText === undefined ? { text, cut: 0, approximate: false } : { text: keptText, cut, approximate: false };
}

/** The longest decoded prefix of `chunk` within `room` tokens (a token may end inside a character). */
function decodePrefix(enc: Tiktoken, tokens: number[], room: number, chunk: string): { text: string; tokens: number } {
  // Only a token ending inside a multi-byte character can fail, so a few steps back suffice.
  for (let k = room; k > 0 && k > room - 8; k--) {
    const text = enc.decode(tokens.slice(0, k));
    if (chunk.startsWith(text)) return { text, tokens: k };
  }
  return { text: '', tokens: 0 };
}

/** Lone surrogates would not survive the tokenizer's UTF-8 round trip, so they become U+FFFD first. */
export function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}
