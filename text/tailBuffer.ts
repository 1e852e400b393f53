/**
 * Keeps the end of a stream (a process's stderr): enough to say why the process died, bounded so
 * a chatty one costs little memory.
 */
export class TailBuffer {
  private text = '';
  constructor(private readonly maxChars = 4096) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.maxChars);
  }

  /** The last `n` lines, without trailing blank space; '' when nothing was written. */
  lastLines(n: number): string {
    return this.text.trimEnd().split('\n').slice(-n).join('\n');
  }
}
