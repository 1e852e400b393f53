/** Replaces this machine's paths inside the JSON payloads, so the committed files name none. */
export function neutralizePaths(historyJson: string, paths: [string, string][]): string {
  const history = JSON.parse(historyJson) as unknown;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    // A failure's stack trace names the files it passed through.
    const trace = record.stackTrace;
    if (typeof trace === 'string')
      record.stackTrace = paths.reduce((text, [path, placeholder]) => text.split(path).join(placeholder), trace);
    if (typeof record.data === 'string' && typeof record.metadata === 'object') {
      let text = Buffer.from(record.data, 'base64').toString('utf8');
      for (const [path, placeholder] of paths) text = text.split(path).join(placeholder);
      record.data = Buffer.from(text, 'utf8').toString('base64');
    }
    Object.values(record).forEach(visit);
  };
  visit(history);
  return JSON.stringify(history, null, 2);
}
