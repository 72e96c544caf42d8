import * as vscode from 'vscode';
import { PAUSE_INDEXING, REINDEX, RESUME_INDEXING, ReindexResult, STATUS, ServerStatus } from './protocol';
import { PrismServer, errorMessage } from './server';
import { IndexStatusBar } from './statusBar';

// The extension's own command ids: the server's ids (prism.*) are registered as VS Code
// commands by vscode-languageclient itself, so reusing them would clash.
export const REINDEX_COMMAND = 'prism-code.reindex';
export const PAUSE_COMMAND = 'prism-code.pauseIndexing';
export const RESUME_COMMAND = 'prism-code.resumeIndexing';
export const STATUS_COMMAND = 'prism-code.showStatus';

/** Reindex, pause, resume and show status: one server command each, then a short message. */
export function registerIndexingCommands(server: PrismServer, statusBar: IndexStatusBar,
  log: vscode.LogOutputChannel): vscode.Disposable[] {
  const run = <T>(command: string, describe: (result: T) => string) => async (): Promise<void> => {
    try {
      const result = await server.command<T>(command);
      statusBar.refreshSoon();
      void vscode.window.showInformationMessage(`PRISM: ${describe(result)}`);
    } catch (error) {
      void vscode.window.showErrorMessage(`PRISM: ${command} failed: ${errorMessage(error)}`);
    }
  };
  return [
    vscode.commands.registerCommand(REINDEX_COMMAND, run<ReindexResult>(REINDEX,
      (result) => `reindexing ${plural(result.scheduled.length, 'folder')}`)),
    vscode.commands.registerCommand(PAUSE_COMMAND, run<ServerStatus>(PAUSE_INDEXING,
      () => 'indexing paused; searches use the index as it is')),
    vscode.commands.registerCommand(RESUME_COMMAND, run<ServerStatus>(RESUME_INDEXING,
      () => 'indexing resumed')),
    vscode.commands.registerCommand(STATUS_COMMAND, async () => {
      try {
        const status = await server.command<ServerStatus>(STATUS);
        log.info(`prism.status: ${JSON.stringify(status, null, 2)}`);
        const choice = await vscode.window.showInformationMessage(`PRISM: ${summary(status)}`, 'Show Details');
        if (choice) {
          log.show(true);
        }
      } catch (error) {
        void vscode.window.showErrorMessage(`PRISM: ${errorMessage(error)}`);
      }
    }),
  ];
}

function summary(status: ServerStatus): string {
  const { done, total } = status.embeddings;
  const errors = status.workspaces.map((folder) => folder.error).filter(Boolean);
  return [
    `${status.state}: ${plural(status.functions, 'function')} in ${plural(status.files, 'file')}`,
    `embeddings ${done}/${total}`,
    `index in ${status.cacheDir ?? 'the user cache'}`,
    ...(status.completionModel ? [`completions by ${status.completionModel.model} (${status.completionModel.reason})`] : []),
    ...errors,
  ].join('; ');
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
