/** How {@link oneLine} flattens and cuts a string. */
export interface OneLineOptions {
  /** The longest line kept, in UTF-16 code units (see `cut` for what is added past it). Default 200. */
  max?: number;
  /**
   * How line breaks and other spacing become one line:
   * - `'collapse'` (default): every run of whitespace becomes one space and both ends are trimmed,
   *   for prose such as error messages where the original spacing carries no meaning.
   * - `'control'`: only runs of control characters (line breaks, tabs, escapes) become one space;
   *   other spacing is kept as given, for names and types quoted as they were sent.
   */
  spacing?: 'collapse' | 'control';
  /**
   * How a line longer than `max` is cut:
   * - `'fit'` (default): to `max - 1` characters, trailing spaces dropped, plus `…`, so the
   *   result is never longer than `max`.
   * - `'append'`: to `max` characters plus `...`, so the result may be `max + 3` long.
   */
  cut?: 'fit' | 'append';
}

/**
 * A string as a single line of bounded length, for quoting untrusted or long text (a server's
 * error, a tool-supplied name) inside a line of our own without it breaking the layout.
 */
export function oneLine(text: string, options: OneLineOptions = {}): string {
  const { max = 200, spacing = 'collapse', cut = 'fit' } = options;
  const flat = spacing === 'collapse' ? text.replace(/\s+/gu, ' ').trim() : text.replace(/\p{Cc}+/gu, ' ');
  if (flat.length <= max) return flat;
  return cut === 'fit' ? `${flat.slice(0, max - 1).trimEnd()}…` : `${flat.slice(0, max)}...`;
}
