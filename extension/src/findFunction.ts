import * as vscode from 'vscode';
import { Evidence, FIND_FUNCTION, FindArguments, FindUpdate, FoundFunction, Range } from './protocol';
import { PrismServer, errorMessage } from './server';

export const FIND_FUNCTION_COMMAND = 'prism-code.findFunction';
const TOP = 20;

interface FoundItem extends vscode.QuickPickItem {
  found: FoundFunction;
  evidence: Evidence;
}

/**
 * "PRISM: Find Function by Description": ask for a description, rank the workspace's
 * functions with the server, pick one from a list and land on it.
 *
 * An argument skips the input box (for keybindings and tests): a description, or
 * `{description, strategy?}`, whose strategy (`retrieval`, `prism`, `wim`, `long-context`)
 * ranks this one search instead of the `prism.find.strategy` setting, e.g. a keybinding
 * `{"command": "prism-code.findFunction", "args": {"description": "...", "strategy": "prism"}}`.
 */
export function registerFindFunction(server: PrismServer): vscode.Disposable {
  return vscode.commands.registerCommand(FIND_FUNCTION_COMMAND, async (given?: unknown) => {
    const request = findRequest(given);
    const description = request.description ?? await askDescription();
    if (!description) {
      return;
    }
    const picked = await pickLive(server, description, request.strategy);
    if (picked) {
      await reveal(picked);
    }
  });
}

interface FindRequest {
  description?: string;
  strategy?: string;
}

/** The command's argument: a description, `{description, strategy?}`, or nothing usable. */
function findRequest(given: unknown): FindRequest {
  const text = (value: unknown): string | undefined =>
    typeof value === 'string' && value.trim() ? value.trim() : undefined;
  if (given !== null && typeof given === 'object') {
    const { description, strategy } = given as Record<string, unknown>;
    // The server checks the strategy's name and says which it knows.
    return { description: text(description), strategy: text(strategy) };
  }
  return { description: text(given) };
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

let nextToken = 1;

/**
 * The pick opens at once and fills with the first list the server has: for a model
 * strategy that is retrieval's (a prism/findUpdate), reordered in place each time the
 * model scores a candidate, until the response brings the final list. The user may pick
 * at any moment; picking or closing cancels the request, which stops the model's work.
 */
function pickLive(server: PrismServer, description: string,
  strategy: string | undefined): Promise<FoundFunction | undefined> {
  const updateToken = `find-${nextToken++}`;
  const cancel = new vscode.CancellationTokenSource();
  const pick = vscode.window.createQuickPick<FoundItem>();
  pick.title = `PRISM: finding "${description}"`;
  pick.placeholder = 'Best match first; pick one to open it';
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  pick.busy = true;

  const show = (found: FoundFunction[], evidence: Evidence[] | undefined, refining: string | undefined): void => {
    // A reorder keeps the highlight on the function the user was looking at.
    const active = pick.activeItems[0]?.found;
    pick.items = found.map((f, i) => toItem(f, evidence?.[i] ?? 'retrieval'));
    const still = active && pick.items.find((item) => sameFunction(item.found, active));
    if (still && still !== pick.items[0]) {
      pick.activeItems = [still];
    }
    pick.title = `PRISM: functions for "${description}"`
      + (refining ? ` (refining with the local model: ${refining})` : '')
      + (found.some((f) => f.fromPartialIndex) ? ' (indexing: only the files parsed so far are searched)' : '');
  };

  return new Promise((resolve) => {
    let settled = false;
    let final = false; // the last update shown is the final list
    const subscriptions: vscode.Disposable[] = [];
    const finish = (picked: FoundFunction | undefined): void => {
      if (settled) {
        return;
      }
      settled = true;
      cancel.cancel();
      cancel.dispose();
      subscriptions.forEach((s) => s.dispose());
      pick.dispose();
      resolve(picked);
    };
    subscriptions.push(
      server.onFindUpdate((update: FindUpdate) => {
        if (update.token === updateToken && !settled) {
          show(update.results, update.evidence, update.done ? undefined : `${update.scored}/${update.total}`);
          pick.busy = !update.done;
          final = update.done;
        }
      }),
      pick.onDidAccept(() => finish(pick.selectedItems[0]?.found ?? pick.activeItems[0]?.found)),
      pick.onDidHide(() => finish(undefined)),
    );
    pick.show();
    const args: FindArguments = { description, top: TOP, updateToken };
    if (strategy) {
      args.strategy = strategy;
    }
    server.command<FoundFunction[]>(FIND_FUNCTION, [args], cancel.token).then((found) => {
      if (settled) {
        return;
      }
      if (found.length === 0) {
        finish(undefined);
        void vscode.window.showInformationMessage(
          `PRISM: no function matches "${description}" (if indexing is still running, try again when it is done)`);
        return;
      }
      // The final update, when there was one, showed this list already (with its evidence).
      if (!final) {
        show(found, undefined, undefined);
      }
      pick.busy = false;
    }, (error: unknown) => {
      if (!settled) {
        finish(undefined);
        void vscode.window.showErrorMessage(`PRISM: Find Function failed: ${errorMessage(error)}`);
      }
    });
  });
}

function sameFunction(a: FoundFunction, b: FoundFunction): boolean {
  return a.uri === b.uri && a.qualname === b.qualname && a.range.start.line === b.range.start.line;
}

function toItem(found: FoundFunction, evidence: Evidence): FoundItem {
  const uri = vscode.Uri.parse(found.uri);
  return {
    label: found.qualname,
    description: `${vscode.workspace.asRelativePath(uri)}:${found.range.start.line + 1}`,
    // The model's evidence, once it has read the candidate, is marked apart from retrieval's.
    detail: evidence === 'model' ? `$(sparkle) ${found.reason}` : found.reason,
    found,
    evidence,
  };
}

/** Opens a server location with its range selected (a found function, a context fragment). */
export async function reveal(location: { uri: string; range: Range }): Promise<void> {
  const { start, end } = location.range;
  const range = new vscode.Range(start.line, start.character, end.line, end.character);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(location.uri), { selection: range });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}
