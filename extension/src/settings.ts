import * as os from 'os';
import * as vscode from 'vscode';

export const SECTION = 'prism';

// The settings the server reads, spelled as server/settings.py's KEYS spell them. The
// interpreter is not among them: it chooses the server, so only the extension reads it.
export const SERVER_KEYS = [
  'modelPath',
  'threads',
  'completion.enabled',
  'completion.maxLines',
  'notes.enabled',
  'fragrel.alpha',
  'find.strategy',
  'exclude',
  'cacheDir',
] as const;

export type ServerKey = (typeof SERVER_KEYS)[number];
export type ServerSettings = Record<ServerKey, unknown>;

/**
 * Every server setting with its effective value, dotted keys in one flat object.
 *
 * Defaults are sent too, not left out: the server merges a configuration change over
 * the initializationOptions, so a setting reset to its default must say so explicitly.
 */
export function serverSettings(scope?: vscode.ConfigurationScope): ServerSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const entries = SERVER_KEYS.map((key) => [key, config.get<unknown>(key)] as const);
  return Object.fromEntries(entries) as ServerSettings;
}

/** The `prism.interpreter` setting with ~, ${userHome} and ${workspaceFolder} expanded. */
export function interpreterSetting(folder?: vscode.WorkspaceFolder): string | undefined {
  const value = vscode.workspace.getConfiguration(SECTION, folder?.uri).get<string>('interpreter', '').trim();
  if (!value) {
    return undefined;
  }
  const home = os.homedir();
  return value
    .replace(/^~(?=$|[\\/])/, home)
    .replace(/\$\{userHome\}/g, home)
    .replace(/\$\{workspaceFolder\}/g, folder?.uri.fsPath ?? '${workspaceFolder}');
}

export function affectsInterpreter(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(`${SECTION}.interpreter`);
}

export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return SERVER_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
