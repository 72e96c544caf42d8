import { execFile } from 'child_process';
import { PVSC_EXTENSION_ID, PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';
import { interpreterSetting } from './settings';

export type InterpreterSource = 'prism.interpreter' | 'prism-code set-up' | 'Python extension' | 'default';

export interface Interpreter {
  command: string;
  source: InterpreterSource;
}

export const MINIMUM_PYTHON = { major: 3, minor: 11 };
const MINIMUM = MINIMUM_PYTHON;
const FALLBACK = 'python3';
const CHECK_TIMEOUT_MS = 30_000;

/**
 * The Python that runs the server: the `prism.interpreter` setting, else the venv the
 * extension's set-up made (`managed`), else the Python extension's active environment for
 * the folder, else `python3` on the PATH.
 */
export async function resolveInterpreter(folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel, managed?: string): Promise<Interpreter> {
  const configured = interpreterSetting(folder);
  if (configured) {
    return { command: configured, source: 'prism.interpreter' };
  }
  if (managed) {
    return { command: managed, source: 'prism-code set-up' };
  }
  const active = await pythonExtensionInterpreter(folder, log);
  return active ? { command: active, source: 'Python extension' } : { command: FALLBACK, source: 'default' };
}

/** The Python extension's active interpreter for the folder, when it is 3.11 or newer. */
export async function pythonExtensionInterpreter(folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel): Promise<string | undefined> {
  const api = await pythonExtension(log);
  if (!api) {
    return undefined;
  }
  const environment = await api.environments.resolveEnvironment(
    api.environments.getActiveEnvironmentPath(folder?.uri));
  const executable = environment?.executable.uri?.fsPath;
  const version = environment?.version;
  if (!executable) {
    return undefined;
  }
  if (version && (version.major < MINIMUM.major
    || (version.major === MINIMUM.major && version.minor < MINIMUM.minor))) {
    log.warn(`the Python extension's interpreter ${executable} is ${version.major}.${version.minor}; `
      + `the server needs ${MINIMUM.major}.${MINIMUM.minor} or newer, so ${FALLBACK} is tried instead`);
    return undefined;
  }
  return executable;
}

// The Python extension is optional: never activate what is not installed.
async function pythonExtension(log: vscode.LogOutputChannel): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PVSC_EXTENSION_ID)) {
    return undefined;
  }
  try {
    return await PythonExtension.api();
  } catch (error) {
    log.warn(`the Python extension's API is unavailable: ${String(error)}`);
    return undefined;
  }
}

/** Calls `listener` when the Python extension's active environment changes. */
export async function onDidChangePythonEnvironment(listener: () => void,
  log: vscode.LogOutputChannel): Promise<vscode.Disposable> {
  const api = await pythonExtension(log);
  return api ? api.environments.onDidChangeActiveEnvironmentPath(listener) : new vscode.Disposable(() => undefined);
}

// Exit codes of CHECK: 2 the Python is too old, 3 prism-code is not importable.
const CHECK = [
  'import sys, importlib.util as u',
  `sys.exit(2 if sys.version_info < (${MINIMUM.major}, ${MINIMUM.minor}) else`
  + ' 0 if u.find_spec("prism_code") and u.find_spec("prism_code.lsp") else 3)',
].join('\n');

/**
 * Why `interpreter` cannot run the server, or undefined when it can.
 *
 * Checked before starting, because a server that dies at import only leaves the user
 * a "connection closed" error and a traceback in the output channel.
 */
export function interpreterProblem(interpreter: Interpreter, cwd: string): Promise<string | undefined> {
  const name = `${interpreter.command} (from ${interpreter.source})`;
  return new Promise((resolve) => {
    execFile(interpreter.command, ['-c', CHECK], { cwd, timeout: CHECK_TIMEOUT_MS }, (error) => {
      if (!error) {
        resolve(undefined);
      } else if (error.code === 2) {
        resolve(`${name} is older than Python ${MINIMUM.major}.${MINIMUM.minor}`);
      } else if (error.code === 3) {
        resolve(`prism-code is not installed for ${name}: install it there `
          + '(`pip install prism_code-<version>-py3-none-any.whl`) or set prism.interpreter to a Python that has it');
      } else if (error.code === 'ENOENT') {
        resolve(`${name} was not found: set prism.interpreter to a Python ${MINIMUM.major}.${MINIMUM.minor}+ with prism-code installed`);
      } else {
        resolve(`${name} could not be run: ${error.message}`);
      }
    });
  });
}
