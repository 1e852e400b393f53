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
