import * as os from 'os';
import * as vscode from 'vscode';

export const SECTION = 'prism';

// The settings the server reads, spelled as prism_code/lsp/settings.py's KEYS spell them. The
// interpreter is not among them: it chooses the server, so only the extension reads it.
export const SERVER_KEYS = [
  'modelPath',
  'threads',
  'completion.enabled',
  'completion.maxLines',
  'completion.model',
  'notes.enabled',
  'remote.url',
  'fragrel.alpha',
  'find.strategy',
  'exclude',
  'index.maxFileBytes',
  'index.maxFiles',
  'index.maxLines',
  'cacheDir',
] as const;

// Sent beside the settings, from VS Code's own state (prism_code/lsp/settings.py's CLIENT_KEYS).
// Never read from the configuration: a workspace's .vscode/settings.json must not be
// able to declare itself trusted.
export const TRUST_KEY = 'workspaceTrusted';

export type ServerKey = (typeof SERVER_KEYS)[number];
export type ServerSettings = Record<ServerKey, unknown> & { [TRUST_KEY]: boolean };

/**
 * Every server setting with its effective value, dotted keys in one flat object, and
 * whether the workspace is trusted (the server runs no git in an untrusted one).
 *
 * Defaults are sent too, not left out: the server merges a configuration change over
 * the initializationOptions, so a setting reset to its default must say so explicitly.
 */
export function serverSettings(scope?: vscode.ConfigurationScope): ServerSettings {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const entries = SERVER_KEYS.map((key) => [key, config.get<unknown>(key)] as const);
  return { ...Object.fromEntries(entries), [TRUST_KEY]: vscode.workspace.isTrusted } as ServerSettings;
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
