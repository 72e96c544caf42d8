// Asks the language server directly what it offers, so a UI step for a feature the
// server does not have yet is skipped with a reason instead of failing.
import { spawn } from 'child_process';

export interface ServerCapabilities {
  inlineCompletionProvider?: unknown;
  completionProvider?: unknown;
  hoverProvider?: unknown;
  [name: string]: unknown;
}

const TIMEOUT_MS = 60_000;

function frame(message: object): string {
  const body = JSON.stringify({ jsonrpc: '2.0', ...message });
  return `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The capabilities `python -m prism_code.lsp` answers initialize with; the server is then shut down. */
export function serverCapabilities(python: string, cwd: string, env: NodeJS.ProcessEnv): Promise<ServerCapabilities> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-m', 'prism_code.lsp'], { cwd, env, stdio: ['pipe', 'pipe', 'ignore'] });
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`the server did not answer initialize within ${TIMEOUT_MS / 1000} s`));
    }, TIMEOUT_MS);
    let buffered = Buffer.alloc(0);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.stdout.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const headerEnd = buffered.indexOf('\r\n\r\n');
        const length = /Content-Length: (\d+)/i.exec(buffered.subarray(0, headerEnd).toString('ascii'));
        if (headerEnd < 0 || !length || buffered.length < headerEnd + 4 + Number(length[1])) {
          return;
        }
        const body = buffered.subarray(headerEnd + 4, headerEnd + 4 + Number(length[1])).toString('utf8');
        buffered = buffered.subarray(headerEnd + 4 + Number(length[1]));
        const message = JSON.parse(body) as { id?: number; result?: { capabilities?: ServerCapabilities } };
        if (message.id === 1) {
          clearTimeout(timer);
          child.stdin.write(frame({ id: 2, method: 'shutdown' }));
          child.stdin.end(frame({ method: 'exit' }));
          setTimeout(() => child.kill(), 5_000).unref();
          resolve(message.result?.capabilities ?? {});
        }
      }
    });
    child.stdin.write(frame({
      id: 1,
      method: 'initialize',
      params: { processId: process.pid, rootUri: null, capabilities: {}, workspaceFolders: null },
    }));
  });
}
