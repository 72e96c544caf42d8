import * as vscode from 'vscode';
import { registerShowContext } from './completionContext';
import { registerFindFunction } from './findFunction';
import { registerIndexingCommands } from './indexingCommands';
import { onDidChangePythonEnvironment } from './interpreter';
import { PrismServer, localFolder } from './server';
import { affectsInterpreter, affectsServer, interpreterSetting } from './settings';
import { ManagedEnvironment, SETUP_COMMAND } from './setup';
import { IndexStatusBar } from './statusBar';

export const RESTART_COMMAND = 'prism-code.restartServer';

let server: PrismServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('PRISM', { log: true });
  // The set-up's own log: pip's and the model's output as they print it.
  const setupOutput = vscode.window.createOutputChannel('PRISM Setup');
  const managed = new ManagedEnvironment(context.globalStorageUri.fsPath, context.extensionPath, setupOutput);
  server = new PrismServer(context.extensionPath, log, managed, setupOutput);
  const running = server;
  const statusBar = new IndexStatusBar(running);
  context.subscriptions.push(
    log,
    setupOutput,
    running,
    statusBar,
    registerFindFunction(running),
    registerShowContext(running),
    ...registerIndexingCommands(running, statusBar, log),
    vscode.commands.registerCommand(RESTART_COMMAND, () => running.restart()),
    vscode.commands.registerCommand(SETUP_COMMAND, () => running.setUp()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (affectsInterpreter(event)) {
        void running.restartIfInterpreterChanged();
      } else if (affectsServer(event)) {
        void running.sendSettings();
      }
    }),
    // Trust lifts the restrictions on prism.interpreter, prism.modelPath and prism.cacheDir,
    // and lets the server use git: a new interpreter restarts it, the rest is sent.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      void running.restartIfInterpreterChanged();
      void running.sendSettings();
    }),
    // Without a local folder the server is not started; the first one added starts it.
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (!running.running && !running.starting && localFolder()) {
        void running.start();
      }
    }),
  );
  // Not awaited: the Python extension may take a while to activate, and commands wait
  // for the server on their own.
  void running.start();
  void onDidChangePythonEnvironment(() => {
    if (!interpreterSetting(localFolder())) {
      void running.restartIfInterpreterChanged();
    }
  }, log).then((subscription) => context.subscriptions.push(subscription));
}

export function deactivate(): Promise<void> | undefined {
  return server?.stop();
}
