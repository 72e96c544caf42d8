import * as vscode from 'vscode';
import { reveal } from './findFunction';
import { COMPLETION_CONTEXT, CompletionContext, ContextFragment } from './protocol';
import { PrismServer, errorMessage } from './server';

export const SHOW_CONTEXT_COMMAND = 'prism-code.showCompletionContext';

interface FragmentItem extends vscode.QuickPickItem {
  fragment: ContextFragment;
}

/**
 * "PRISM: Show Context of Last Suggestion": the fragments of other files the last
 * suggestion was written from, in prompt order; picking one opens it with its lines selected.
 *
 * The suggestion is the active editor's last one, else the last one served anywhere (the
 * editor may be showing a fragment picked before). The server keeps them; the extension
 * asks it with prism.completionContext and reads no index of its own.
 */
export function registerShowContext(server: PrismServer): vscode.Disposable {
  return vscode.commands.registerCommand(SHOW_CONTEXT_COMMAND, async () => {
    const shown = await lastContext(server, vscode.window.activeTextEditor?.document.uri);
    if (!shown) {
      return;
    }
    if (!shown.uri) {
      void vscode.window.showInformationMessage('PRISM: no suggestion has been shown yet');
      return;
    }
    const file = vscode.workspace.asRelativePath(vscode.Uri.parse(shown.uri));
    if (shown.fragments.length === 0) {
      void vscode.window.showInformationMessage(
        `PRISM: the last suggestion in ${file} used no code from other files`);
      return;
    }
    const picked = await vscode.window.showQuickPick(shown.fragments.map(toItem), {
      title: `PRISM: context of the last suggestion in ${file}`,
      placeHolder: 'The code the suggestion was written from; pick one to open it',
      matchOnDescription: true,
    });
    if (picked) {
      await reveal(picked.fragment);
    }
  });
}

// Undefined when the server could not be asked (the user has been told).
async function lastContext(server: PrismServer, document: vscode.Uri | undefined):
  Promise<CompletionContext | undefined> {
  try {
    const mine = document
      ? await server.command<CompletionContext>(COMPLETION_CONTEXT, [{ uri: document.toString() }])
      : undefined;
    return mine?.uri ? mine : await server.command<CompletionContext>(COMPLETION_CONTEXT);
  } catch (error) {
    void vscode.window.showErrorMessage(`PRISM: ${COMPLETION_CONTEXT} failed: ${errorMessage(error)}`);
    return undefined;
  }
}

function toItem(fragment: ContextFragment): FragmentItem {
  const { start, end } = fragment.range;
  return {
    label: fragment.path,
    description: `lines ${start.line + 1}-${end.line + 1}`,
    fragment,
  };
}
