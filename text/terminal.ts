/**
 * Server-supplied text printed to a terminal must not drive the terminal: an escape sequence in a
 * tool result could move the cursor, rewrite earlier lines, set the window title, or (on some
 * terminals) write to the clipboard or answer back as if typed.
 */

// OSC (ESC ] ... BEL or ESC \), DCS/SOS/PM/APC (ESC P|X|^|_ ... ESC \), CSI (ESC [ params final),
// then any other two-character ESC sequence, then C1 controls (incl. the 8-bit CSI, U+009B) and
// C0 controls other than tab and newline, and DEL. Matching control characters is the point here.
/* eslint-disable no-control-regex */
const OSC = /\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g;
const STRING_SEQ = /\u001b[PX^_][^\u001b]*(?:\u001b\\)?/g;
const CSI = /(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]?/g;
const ESC_OTHER = /\u001b[ -~]?/g;
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/* eslint-enable no-control-regex */

/** The text with every terminal control sequence and control character removed (tabs and newlines kept). */
export function stripTerminalControls(text: string): string {
  return text.replace(OSC, '').replace(STRING_SEQ, '').replace(CSI, '').replace(ESC_OTHER, '').replace(CONTROLS, '');
}

// Unicode bidi controls (ALM, LRM/RLM, embeddings and overrides, isolates): they reorder what a
// person reads, so `https://x/\u202Egnp.exe` shows as a different name than the one it is.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
const LINE_BREAKS = /\s*[\t\n\v\f\r\u0085\u2028\u2029]\s*/gu;

/**
 * Server-supplied text a person reads as ours (a question's message, a form's titles): one line
 * with no terminal control and no bidi control, so it cannot draw a line of its own ("open this
 * page: ...") or show other text than it holds. Line breaks and the spacing around them become one
 * space; both ends are trimmed.
 */
export function inertLine(text: string): string {
  return stripTerminalControls(text.replace(LINE_BREAKS, ' ')).replace(BIDI, '').trim();
}

// What JSON.stringify leaves unescaped that still drives or garbles a terminal: DEL, the C1
// controls (U+0085 is a line break, U+009B an 8-bit CSI), bidi controls and the line separators.
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/**
 * `JSON.stringify(value, null, indent)` safe to print on a terminal: the same JSON, with every
 * character that could drive or reorder the terminal written as a `\uXXXX` escape (such characters
 * occur only inside strings, where the escape means the same).
 */
export function terminalJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    JSON_UNSAFE,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
