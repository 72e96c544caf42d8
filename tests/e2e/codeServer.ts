// code-server: VS Code's workbench served to a browser, with a real extension host.
import { ChildProcess, execFile, spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';

export interface CodeServerDirs {
  install: string; // what tests/e2e/install-code-server.sh printed
  userData: string;
  extensions: string;
}

export interface RunningCodeServer {
  url: string;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;

function entry(dirs: CodeServerDirs): string {
  return path.join(dirs.install, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
}

function commonArgs(dirs: CodeServerDirs): string[] {
  return ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust'];
}

/** Installs a .vsix the way a user would: `code-server --install-extension`. */
export function installExtension(dirs: CodeServerDirs, vsix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [entry(dirs), ...commonArgs(dirs), '--install-extension', vsix],
      { timeout: 120_000 }, (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`--install-extension failed: ${error.message}\n${stdout}${stderr}`));
        } else {
          resolve(`${stdout}${stderr}`.trim());
        }
      });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`code-server exited with ${child.exitCode}`);
    }
    try {
      if ((await fetch(`${url}/healthz`)).ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`code-server did not answer ${url}/healthz within ${READY_TIMEOUT_MS / 1000} s`);
}

/** Starts code-server on a free local port, logging to `logFile`. */
export async function startCodeServer(dirs: CodeServerDirs, logFile: string,
  env: NodeJS.ProcessEnv): Promise<RunningCodeServer> {
  const port = await freePort();
  const log = fs.openSync(logFile, 'a');
  // Its own process group: stopping it must also stop the extension host and the
  // language server it started, and nothing else.
  const child = spawn(process.execPath, [entry(dirs), ...commonArgs(dirs),
    '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-getting-started-override'],
  { detached: true, stdio: ['ignore', log, log], env });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (name: NodeJS.Signals): void => {
    if (child.pid === undefined) {
      return;
    }
    try {
      process.kill(-child.pid, name);
    } catch {
      // the group is gone already
    }
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.pid !== undefined) {
      signal('SIGTERM');
      const killed = setTimeout(() => signal('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killed);
    }
    fs.closeSync(log);
  };
  try {
    await waitForHealth(url, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}
