import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgressBegin,
  WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { Interpreter, interpreterProblem, resolveInterpreter } from './interpreter';
import { FIND_UPDATE, FindUpdate, INDEX_PROGRESS_PREFIX } from './protocol';
import { SECTION, serverSettings } from './settings';
import { ManagedEnvironment, offerSetUp, setUpWithProgress } from './setup';

// The languages the server parses (prism_code/parse/languages.py), as VS Code names them.
const LANGUAGES = ['python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
  'java', 'go', 'rust', 'c', 'cpp', 'shellscript', 'csharp', 'elixir', 'haskell', 'kotlin', 'lua', 'php',
  'ruby', 'scala', 'swift', 'zig'];
const STOP_TIMEOUT_MS = 5_000;
export const SERVER_RUNNING_CONTEXT = 'prism-code.serverRunning';

export type IndexProgress = { token: string } & (WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd);

/**
 * The language server process and its client: start, restart, stop, and requests.
 *
 * Starts, restarts and stops run one at a time, in order, so a restart asked for while
 * the server is still starting waits for it instead of racing it.
 */
export class PrismServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private interpreter: Interpreter | undefined;
  private why = 'the server has not started yet';
  private changing = false;
  private settingUpNow = false;
  private offeredSetUp = false;
  private queue: Promise<void> = Promise.resolve();
  private readonly stateChanged = new vscode.EventEmitter<void>();
  private readonly indexProgress = new vscode.EventEmitter<IndexProgress>();
  private readonly findUpdate = new vscode.EventEmitter<FindUpdate>();

  /** Fires when the server starts, stops, or fails to start. */
  readonly onDidChangeState = this.stateChanged.event;
  /** The server's work-done progress for indexing, as it arrives. */
  readonly onIndexProgress = this.indexProgress.event;
  /** A model find's rankings as the model refines them (prism/findUpdate). */
  readonly onFindUpdate = this.findUpdate.event;

  constructor(private readonly extensionPath: string, private readonly log: vscode.LogOutputChannel,
    private readonly managed: ManagedEnvironment, private readonly setupOutput: vscode.OutputChannel) {}

  get running(): boolean {
    return this.client?.isRunning() ?? false;
  }

  /** Whether the server is starting, restarting or stopping right now. */
  get starting(): boolean {
    return this.changing;
  }

  /** Whether "Set up prism-code" is installing the server's Python environment right now. */
  get settingUp(): boolean {
    return this.settingUpNow;
  }

  /** Whether the server is not running because prism-code is not set up (the set-up is offered). */
  get needsSetUp(): boolean {
    return this.offeredSetUp && !this.running;
  }

  /** Why there is no running server; empty while it runs. */
  get notRunningReason(): string {
    return this.running ? '' : this.why;
  }

  start(): Promise<void> {
    return this.serialize(() => this.launch());
  }

  restart(): Promise<void> {
    return this.serialize(async () => {
      await this.shutdown();
      await this.launch();
    });
  }

  /**
   * Installs prism-code and the default model into a venv of the extension's own (setup.ts),
   * then starts the server on it. Not serialized with starts and stops: it takes minutes,
   * and commands would wait behind it.
   */
  async setUp(): Promise<void> {
    if (this.settingUpNow) {
      this.setupOutput.show(true);
      return;
    }
    this.settingUpNow = true;
    this.setWhy('setting up prism-code');
    try {
      const installed = await setUpWithProgress(this.managed, localFolder(), this.log, this.setupOutput,
        (step) => this.setWhy(`setting up prism-code: ${step}`));
      if (!installed) {
        this.offeredSetUp = true;
        this.setWhy('prism-code is not set up: run PRISM: Set Up prism-code');
        return;
      }
    } finally {
      this.settingUpNow = false;
      this.stateChanged.fire();
    }
    await this.restart();
  }

  /** Restarts when the interpreter to use is no longer the one running the server. */
  restartIfInterpreterChanged(): Promise<void> {
    return this.serialize(async () => {
      const next = await resolveInterpreter(localFolder(), this.log, this.managed.installed()?.python);
      if (next.command !== this.interpreter?.command) {
        this.log.info(`the interpreter changed to ${next.command} (${next.source}): restarting`);
        await this.shutdown();
        await this.launch();
      }
    });
  }

  stop(): Promise<void> {
    return this.serialize(() => this.shutdown());
  }

  dispose(): void {
    void this.stop();
    this.stateChanged.dispose();
    this.indexProgress.dispose();
    this.findUpdate.dispose();
  }

  /** Runs a server command through workspace/executeCommand; cancelling sends $/cancelRequest. */
  async command<T>(command: string, args: unknown[] = [], token?: vscode.CancellationToken): Promise<T> {
    await this.queue;
    const client = this.client;
    if (!client || !client.isRunning()) {
      throw new Error(this.why);
    }
    const result: unknown = await client.sendRequest(ExecuteCommandRequest.type,
      { command, arguments: args }, token);
    return result as T;
  }

  /**
   * Like command(), but gives up after `timeoutMs`: a poll must not wait forever on a
   * server that is busy or never answers, or every later poll would queue behind it.
   */
  async commandWithin<T>(command: string, timeoutMs: number): Promise<T> {
    const source = new vscode.CancellationTokenSource();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        source.cancel();
        reject(new Error(`${command} did not answer within ${timeoutMs / 1000} s`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.command<T>(command, [], source.token), timeout]);
    } finally {
      clearTimeout(timer);
      source.dispose();
    }
  }

  /** Tells the server the prism.* settings changed (push model: the new values are sent). */
  async sendSettings(): Promise<void> {
    await this.queue;
    if (this.client?.isRunning()) {
      const settings = serverSettings(localFolder()?.uri);
      this.log.info(`settings changed: ${JSON.stringify(settings)}`);
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings });
    }
  }

  private serialize(step: () => Promise<void>): Promise<void> {
    const done = this.queue.then(async () => {
      this.changing = true;
      try {
        await step();
      } finally {
        this.changing = false;
        this.stateChanged.fire();
      }
    });
    this.queue = done.catch(() => undefined);
    return done;
  }

  private async launch(): Promise<void> {
    const folder = localFolder();
    if (!folder) {
      this.setWhy('PRISM works on a folder on this machine: open one');
      return;
    }
    this.offeredSetUp = false;
    this.setWhy('the server is starting');
    const interpreter = await resolveInterpreter(folder, this.log, await this.managedPython());
    const problem = await interpreterProblem(interpreter, this.extensionPath);
    if (problem) {
      this.log.error(problem);
      // The set-up is offered unless prism.interpreter chose the Python: that setting wins.
      const canSetUp = interpreter.source !== 'prism.interpreter';
      if (canSetUp && this.managed.bundledWheel()) {
        this.offeredSetUp = true;
        this.setWhy(`prism-code is not set up (${problem}): run PRISM: Set Up prism-code`);
        if (!this.settingUpNow) {
          offerSetUp(`${SECTION}.interpreter`);
        }
        return;
      }
      this.setWhy(problem);
      void vscode.window.showErrorMessage(`PRISM: ${problem}`, 'Open Settings').then((choice) => {
        if (choice) {
          void vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.interpreter`);
        }
      });
      return;
    }
    this.log.info(`starting the server: ${interpreter.command} -m prism_code.lsp (from ${interpreter.source})`);
    const client = new LanguageClient('prism-code', 'PRISM Code', this.serverOptions(interpreter),
      this.clientOptions(folder));
    // textDocument/inlineCompletion (LSP 3.18) is a proposed feature in vscode-languageclient 9.
    client.registerProposedFeatures();
    client.onNotification(FIND_UPDATE, (update: FindUpdate) => this.findUpdate.fire(update));
    client.onDidChangeState((event) => {
      if (event.newState === State.Stopped && this.client === client) {
        this.setWhy('the server stopped: see the PRISM output, then run PRISM: Restart Server');
      }
    });
    try {
      await client.start();
    } catch (error) {
      this.setWhy(`the server did not start: ${errorMessage(error)} (see the PRISM output)`);
      return;
    }
    this.client = client;
    this.interpreter = interpreter;
    // The walkthrough's set-up step is done once a server runs, however it was installed.
    void vscode.commands.executeCommand('setContext', SERVER_RUNNING_CONTEXT, true);
    this.stateChanged.fire();
  }

  /** The Python of the extension's own venv, upgraded first when the VSIX brought a newer wheel. */
  private async managedPython(): Promise<string | undefined> {
    if (!this.managed.needsUpgrade()) {
      return this.managed.installed()?.python;
    }
    try {
      const upgraded = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'PRISM' },
        (progress) => this.managed.upgradeIfNeeded((step) => {
          progress.report({ message: step });
          this.setWhy(step);
        }));
      return upgraded?.python;
    } catch (error) {
      const message = `prism-code could not be upgraded: ${errorMessage(error)}; the installed version runs instead`;
      this.log.warn(message);
      void vscode.window.showWarningMessage(`PRISM: ${message}`);
      return this.managed.installed()?.python;
    }
  }

  private async shutdown(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.interpreter = undefined;
    if (client) {
      this.setWhy('the server is stopping');
      try {
        await client.dispose(STOP_TIMEOUT_MS);
      } catch (error) {
        this.log.warn(`the server did not stop cleanly: ${errorMessage(error)}`);
      }
    }
    this.setWhy('the server is stopped');
  }

  private setWhy(why: string): void {
    this.why = why;
    this.stateChanged.fire();
  }

  private serverOptions(interpreter: Interpreter): ServerOptions {
    // No transport option: vscode-languageclient would append --stdio, which the server
    // does not take; stdio is its default. The working directory is the extension's own
    // folder because `python -m` imports from it first: a workspace's own modules (a
    // `prism_code` folder, a `json.py`) must not be what runs.
    return {
      command: interpreter.command,
      args: ['-m', 'prism_code.lsp'],
      options: { cwd: this.extensionPath },
    };
  }

  private clientOptions(folder: vscode.WorkspaceFolder): LanguageClientOptions {
    return {
      documentSelector: LANGUAGES.map((language) => ({ scheme: 'file', language })),
      initializationOptions: serverSettings(folder.uri),
      outputChannel: this.log,
      middleware: {
        workspace: {
          // Answer a pull for the section with the server's keys only (no interpreter).
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, i) => item.section === SECTION
              ? serverSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
              : answers[i]);
          },
        },
        handleWorkDoneProgress: (token, params, next) => {
          next(token, params);
          if (typeof token === 'string' && token.startsWith(INDEX_PROGRESS_PREFIX)) {
            this.indexProgress.fire({ token, ...params });
          }
        },
      },
    };
  }
}

/** The first workspace folder on this machine: the one whose settings the server uses. */
export function localFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.find((folder) => folder.uri.scheme === 'file');
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
