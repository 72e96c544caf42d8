// What both e2e drivers (run.ts, setupFlow.ts) do the same way: read their environment, time
// their steps, give code-server a quiet profile, open its workbench in Chromium and, whatever
// happened, close it all and keep the extension host's logs with the artifacts.
import * as fs from 'fs';
import * as path from 'path';
import { Browser, Page, chromium } from 'playwright-core';
import { CodeServerDirs, RunningCodeServer, startCodeServer } from './codeServer';
import { Workbench } from './workbench';

// The window size of every screenshot, so pictures of two runs compare.
const VIEWPORT = { width: 1280, height: 760 };

/** A variable scripts/e2e.sh sets. */
export function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set (run scripts/e2e.sh)`);
  }
  return value;
}

export function check(condition: boolean, message: string): void {
  if (!condition) {
    throw new Error(message);
  }
}

/** A quiet, predictable window: no welcome page, tips, trust prompt or update checks; nothing
 * about prism. */
export const QUIET_SETTINGS: Readonly<Record<string, unknown>> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'security.workspace.trust.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'window.restoreWindows': 'none',
  'git.enabled': false,
};

/** Named steps, each printed with its time as `LABEL: name ... ok (1.2 s)`, or FAILED. */
export class Steps {
  readonly timings: Record<string, number> = {};
  readonly skipped: Record<string, string> = {};
  private readonly started = Date.now();

  constructor(readonly label: string) {}

  async run<T>(name: string, step: () => Promise<T>): Promise<T> {
    const start = Date.now();
    process.stdout.write(`${this.label}: ${name} ...`);
    try {
      const result = await step();
      this.timings[name] = (Date.now() - start) / 1000;
      process.stdout.write(` ok (${this.timings[name].toFixed(1)} s)\n`);
      return result;
    } catch (error) {
      process.stdout.write(` FAILED after ${((Date.now() - start) / 1000).toFixed(1)} s\n`);
      throw error;
    }
  }

  skip(name: string, reason: string): void {
    this.skipped[name] = reason;
    process.stdout.write(`${this.label}: ${name} SKIPPED: ${reason}\n`);
  }

  get total(): number {
    return (Date.now() - this.started) / 1000;
  }
}

/** code-server and the browser showing its workbench; each part is set once it has started,
 * so `close` stops whatever a failure left running. */
export class CodeServerWindow {
  codeServer?: RunningCodeServer;
  browser?: Browser;
  wb?: Workbench;

  constructor(private readonly steps: Steps, private readonly dirs: CodeServerDirs,
    private readonly artifacts: string) {}

  async start(env: NodeJS.ProcessEnv): Promise<RunningCodeServer> {
    const log = path.join(this.artifacts, 'code-server.log');
    this.codeServer = await this.steps.run('start code-server', () => startCodeServer(this.dirs, log, env));
    return this.codeServer;
  }

  /** Chromium on the workbench of `folder`, waited for until it shows; `watch` sees the page
   * before it loads (to record its console, say). */
  async open(chromiumPath: string, folder: string, timeoutMs: number,
    watch?: (page: Page) => void): Promise<Workbench> {
    const url = `${this.codeServer?.url ?? ''}/?folder=${encodeURIComponent(folder)}`;
    check(this.codeServer !== undefined, 'start code-server before opening its workbench');
    this.browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    const page = await this.browser.newPage({ viewport: VIEWPORT });
    watch?.(page);
    const wb = new Workbench(page);
    this.wb = wb;
    await this.steps.run('open the workbench', () => wb.open(url, timeoutMs));
    return wb;
  }

  /** The window as a failure left it, beside the other pictures. */
  async failed(error: unknown): Promise<void> {
    console.error(`${this.steps.label}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    await this.wb?.screenshot(path.join(this.artifacts, 'failure.png')).catch(() => undefined);
  }

  /** Browser and code-server stopped, the extension host's logs (the PRISM output channel)
   * kept with the artifacts, and the run's temporary `root` removed. */
  async close(root: string): Promise<void> {
    await this.browser?.close().catch(() => undefined);
    await this.codeServer?.stop();
    const logs = path.join(this.dirs.userData, 'logs');
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(this.artifacts, 'logs'), { recursive: true });
    }
    fs.rmSync(root, { recursive: true, force: true });
  }
}
