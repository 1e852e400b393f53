import type { ChildProcess } from 'node:child_process';

/**
 * Waits for the `{"port":N}` line a fixture server prints on stdout once listening (10 s at most),
 * then keeps draining stdout so a chatty server never blocks on a full pipe. `detail` adds to an
 * error what the caller knows (a stderr tail).
 */
export async function printedPort(child: ChildProcess, name: string, detail: () => string = () => ''): Promise<number> {
  const stdout = child.stdout;
  if (!stdout) throw new Error(`${name} has no stdout pipe`);
  stdout.setEncoding('utf8');
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`no port from ${name} within 10 s${detail()}`)), 10_000);
    stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const match = /^\{"port":(\d+)\}$/m.exec(buffered);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}${detail()}`));
    });
  });
  stdout.resume();
  return port;
}
