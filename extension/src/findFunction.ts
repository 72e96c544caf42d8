import * as vscode from 'vscode';
import { FIND_FUNCTION, FindArguments, FoundFunction, Range } from './protocol';
import { PrismServer, errorMessage } from './server';

export const FIND_FUNCTION_COMMAND = 'prism-code.findFunction';
const TOP = 20;

interface FoundItem extends vscode.QuickPickItem {
  found: FoundFunction;
}

/**
 * "PRISM: Find Function by Description": ask for a description, rank the workspace's
 * functions with the server, pick one from a list and land on it.
 *
 * A description passed as the argument skips the input box (for keybindings and tests).
 */
export function registerFindFunction(server: PrismServer): vscode.Disposable {
  return vscode.commands.registerCommand(FIND_FUNCTION_COMMAND, async (given?: unknown) => {
    const description = typeof given === 'string' && given.trim() ? given.trim() : await askDescription();
    if (!description) {
      return;
    }
    const found = await search(server, description);
    if (!found) {
      return;
    }
    if (found.length === 0) {
      void vscode.window.showInformationMessage(
        `PRISM: no function matches "${description}" (if indexing is still running, try again when it is done)`);
      return;
    }
    const picked = await vscode.window.showQuickPick(found.map(toItem), {
      title: `PRISM: functions for "${description}"`,
      placeHolder: 'Best match first; pick one to open it',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (picked) {
      await reveal(picked.found);
    }
  });
}

function askDescription(): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: 'PRISM: Find Function by Description',
    prompt: 'Describe what the function does',
    placeHolder: 'e.g. validate that a value is a valid email address',
    ignoreFocusOut: true,
    validateInput: (value) => (value.trim() ? undefined : 'Describe the function in a few words'),
  }).then((value) => value?.trim());
}

// Undefined when the search was cancelled or failed (the user has been told).
async function search(server: PrismServer, description: string): Promise<FoundFunction[] | undefined> {
  const args: FindArguments = { description, top: TOP };
  return vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification,
    title: `PRISM: finding "${description}"`,
    cancellable: true,
  }, async (_progress, token) => {
    try {
      return await server.command<FoundFunction[]>(FIND_FUNCTION, [args], token);
    } catch (error) {
      if (!token.isCancellationRequested) {
        void vscode.window.showErrorMessage(`PRISM: Find Function failed: ${errorMessage(error)}`);
      }
      return undefined;
    }
  });
}

function toItem(found: FoundFunction): FoundItem {
  const uri = vscode.Uri.parse(found.uri);
  return {
    label: found.qualname,
    description: `${vscode.workspace.asRelativePath(uri)}:${found.range.start.line + 1}`,
    detail: found.reason,
    found,
  };
}

/** Opens a server location with its range selected (a found function, a context fragment). */
export async function reveal(location: { uri: string; range: Range }): Promise<void> {
  const { start, end } = location.range;
  const range = new vscode.Range(start.line, start.character, end.line, end.character);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(location.uri), { selection: range });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}
