import { TailBuffer } from '../text/tailBuffer.js';

/** Longest stderr line kept whole; past it only the (scrubbed) end of the line is kept. */
const MAX_STDERR_LINE = 64 * 1024;
const STDERR_LINE_KEEP = 4096;

/**
 * A server's stderr, scrubbed a whole line at a time before it is logged or kept for a failure
 * message. A pipe hands over chunks that can end inside a secret, and the kept tail is cut at its
 * start: scrubbing chunks, or the tail after the cut, would let part of a secret through.
 */
export class ScrubbedStderr extends TailBuffer {
  /** The line being written (no newline yet), raw or, once over-long, its scrubbed end. */
  private partial = '';

  constructor(
    private readonly scrub: (text: string) => string,
    private readonly onLine: (line: string) => void,
  ) {
    super();
  }

  override push(chunk: string): void {
    const text = this.partial + chunk;
    const end = text.lastIndexOf('\n');
    this.partial = end < 0 ? text : text.slice(end + 1);
    if (this.partial.length > MAX_STDERR_LINE) {
      // Scrubbed, then cut: any secret still incomplete lies within the kept end and is found when
      // the line completes (scrubbing scrubbed text again changes nothing).
      this.partial = `…${this.scrub(this.partial).slice(-STDERR_LINE_KEEP)}`;
    }
    if (end < 0) return;
    for (const line of text.slice(0, end).split('\n')) {
      const clean = this.scrub(line);
      super.push(`${clean}\n`);
      if (clean.trim()) this.onLine(clean);
    }
  }

  /** The last `n` lines, the unfinished one included (a process may die mid-line). */
  override lastLines(n: number): string {
    const rest = this.scrub(this.partial).trimEnd();
    const done = super.lastLines(n);
    if (!rest) return done;
    return (done ? `${done}\n${rest}` : rest).split('\n').slice(-n).join('\n');
  }
}
