// The extension in a real VS Code UI: code-server in Debian's Chromium, driven by
// playwright-core. scripts/e2e.sh builds the .vsix, installs code-server and runs this.
//
// Steps: install the .vsix, open a copy of the fixtures, wait for indexing in the status
// bar, a hover note, Find Function by Description through the command palette and the
// QuickPick, the same search with the `prism` model strategy from a keybinding (retrieval's
// rows while the model refines, then the model's), inline completion ghost text when the server offers it and the fragments that
// suggestion used (opening one), then pause, resume, status, a settings change and a restart.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CodeServerDirs, installExtension } from './codeServer';
import { serverCapabilities } from './serverProbe';
import { CodeServerWindow, QUIET_SETTINGS, Steps, check, required } from './session';
import { Workbench } from './workbench';

interface Config {
  repo: string;
  python: string;
  codeServer: string;
  vsix: string;
  chromium: string;
  artifacts: string;
  readmeImage: string;
  updateReadmeImage: boolean;
}

function config(): Config {
  const repo = path.resolve(required('PRISM_E2E_REPO'));
  return {
    repo,
    python: process.env.PRISM_E2E_PYTHON ?? path.join(repo, '.venv', 'bin', 'python'),
    codeServer: required('PRISM_E2E_CODE_SERVER'),
    vsix: process.env.PRISM_E2E_VSIX ?? path.join(repo, 'out', 'prism-code.vsix'),
    chromium: process.env.PRISM_E2E_CHROMIUM ?? '/usr/bin/chromium',
    artifacts: process.env.PRISM_E2E_ARTIFACTS ?? path.join(repo, 'test-artifacts', 'e2e'),
    readmeImage: path.join(repo, 'docs', 'images', 'find-function.png'),
    // The README's picture is committed: rewrite it only when asked, so a run leaves git clean.
    updateReadmeImage: process.env.PRISM_E2E_UPDATE_IMAGES === '1',
  };
}

// What the fixtures must give (tests/fixtures/multilang, calcrepo).
const DESCRIPTION = 'compute the area of a shape';
const BEST = 'Shape.area';
const BEST_FILE = 'shape.cpp';
const BEST_LAST_LINE = 9; // Shape::area spans lines 7-9 of cpp/shape.cpp
const HOVER_FILE = 'pkg/core.py';
const HOVER_LINE = 'def build(';
const HOVER_WORD = 'build';
const HOVER_EXPECTED = /def build\(item: str, count: int = 1\) -> Inventory[\s\S]*callers/;
const COMPLETION_FILE = 'calc/net.py';
const COMPLETION_LINE = 'grace = settings.';
const CONTEXT_FILE = 'calc/settings.py'; // defines what the suggestion spells
const CONTEXT_LAST_LINE = 3; // its one window, lines 1-3

// Model find: a user keybinding passes the command `{description, strategy}`. On the fixture
// `prism` reads retrieval's top 10 (signature likelihoods, then a two-step PRISM pass): ~35 s
// on a quiet 2-core host, so the pick is "refining" for long enough to be seen.
const MODEL_FIND_KEY = 'Control+Alt+Shift+F';
const MODEL_FIND_KEYBINDING = {
  key: 'ctrl+alt+shift+f',
  command: 'prism-code.findFunction',
  args: { description: DESCRIPTION, strategy: 'prism' },
};
const REFINING = /\(refining with the local model: (\d+\/\d+)\)/;
const MODEL_FIND_TIMEOUT_MS = 300_000;
const POLL_MS = 100;

// Indexing the fixtures takes seconds; the first start also loads the embedding model.
// Indexing the fixture takes seconds; the function count waits for the model's notes of all
// 54 fixture functions, which took ~175 s on a host that prefills 100 tokens/s.
const INDEXED_TIMEOUT_MS = 420_000;
const UI_TIMEOUT_MS = 60_000;
const STATUS_RETRY_MS = 5_000;
const GHOST_TIMEOUT_MS = 120_000;

/** A fresh workspace: multilang with calcrepo's calc/ package beside it, as plain files. */
function makeWorkspace(repo: string, root: string): string {
  const folder = path.join(root, 'workspace');
  fs.cpSync(path.join(repo, 'tests', 'fixtures', 'multilang'), folder, { recursive: true });
  fs.cpSync(path.join(repo, 'tests', 'fixtures', 'calcrepo', 'calc'), path.join(folder, 'calc'), { recursive: true });
  return folder;
}

// code-server is a remote window: settings of machine scope (the interpreter and cache
// paths) count only in the remote machine's settings, as they would over SSH.
function machineSettings(cfg: Config, cacheDir: string): Record<string, unknown> {
  return { 'prism.interpreter': cfg.python, 'prism.cacheDir': cacheDir };
}

function userSettings(): Record<string, unknown> {
  return {
    ...QUIET_SETTINGS,
    // The suggest widget would cover the ghost text the completion step looks for.
    'editor.suggestOnTriggerCharacters': false,
    'editor.quickSuggestions': { other: false, comments: false, strings: false },
    'editor.inlineSuggest.enabled': true,
    'editor.hover.delay': 200,
    // The settings step types a whole settings.json: no indents added to it.
    'editor.autoIndent': 'none',
  };
}

function writeSettings(dirs: CodeServerDirs, cfg: Config, cacheDir: string): void {
  for (const [scope, settings] of [['Machine', machineSettings(cfg, cacheDir)], ['User', userSettings()]] as const) {
    fs.mkdirSync(path.join(dirs.userData, scope), { recursive: true });
    fs.writeFileSync(path.join(dirs.userData, scope, 'settings.json'), JSON.stringify(settings, null, 2));
  }
  fs.writeFileSync(path.join(dirs.userData, 'User', 'keybindings.json'), JSON.stringify([MODEL_FIND_KEYBINDING], null, 2));
}

async function findFunction(wb: Workbench, cfg: Config, steps: Steps): Promise<void> {
  await steps.run('find function: command palette and input box', async () => {
    await wb.runCommand('PRISM: Find Function by Description');
    await wb.page.locator('.quick-input-widget', { hasText: 'Describe what the function does' }).waitFor();
    await wb.page.keyboard.type(DESCRIPTION);
    await wb.page.keyboard.press('Enter');
  });
  const rows = await steps.run('find function: QuickPick of results', async () => {
    await wb.page.locator('.quick-input-widget', { hasText: `functions for "${DESCRIPTION}"` })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    return wb.quickPickRows(UI_TIMEOUT_MS);
  });
  console.log(`e2e:   results: ${rows.slice(0, 3).join(' | ')}`);
  check(rows[0]?.startsWith(BEST) ?? false, `expected ${BEST} first, got ${rows[0] ?? 'no rows'}`);
  check(rows[0].includes(`cpp/${BEST_FILE}:7`), `expected cpp/${BEST_FILE}:7 in "${rows[0]}"`);
  await wb.page.mouse.move(0, 0); // no hover highlight in the picture
  await wb.waitForToastGone('PRISM: finding', UI_TIMEOUT_MS);
  await wb.screenshot(path.join(cfg.artifacts, '03-find-function.png'));
  if (cfg.updateReadmeImage || !fs.existsSync(cfg.readmeImage)) {
    fs.mkdirSync(path.dirname(cfg.readmeImage), { recursive: true });
    await wb.screenshot(cfg.readmeImage);
  }
  await steps.run('find function: pick opens and selects it', async () => {
    await wb.page.keyboard.press('Enter');
    await wb.activeTab(BEST_FILE).waitFor({ timeout: UI_TIMEOUT_MS });
    // The selection ends on the function's last line: the status bar says "(N selected)".
    await wb.waitForStatus(new RegExp(`Ln ${BEST_LAST_LINE}, Col \\d+ \\(\\d+ selected\\)`), UI_TIMEOUT_MS);
  });
  await wb.screenshot(path.join(cfg.artifacts, '04-picked.png'));
}

/**
 * The anytime pick in the real UI: the same search with the `prism` strategy (from the
 * keybinding, which passes the command an argument object). The title and the rows are read
 * together every POLL_MS: rows under a "refining with the local model: k/n" title are
 * retrieval's list shown before the model finished (03b); rows under the title without it are
 * the model's final list (03c). A model fast enough to finish between two polls is not a
 * failure as long as its final list shows; the pick closing early, or no final list within
 * MODEL_FIND_TIMEOUT_MS, is.
 */
async function modelFind(wb: Workbench, cfg: Config, steps: Steps): Promise<void> {
  await steps.run('model find: keybinding runs the prism strategy', async () => {
    await wb.page.keyboard.press(MODEL_FIND_KEY);
    const deadline = Date.now() + UI_TIMEOUT_MS;
    let state = await wb.quickPickState();
    while (!(state.open && state.title.includes(`"${DESCRIPTION}"`)) && Date.now() < deadline) {
      await wb.page.waitForTimeout(POLL_MS);
      state = await wb.quickPickState();
    }
    check(state.open, `${MODEL_FIND_KEY} opened no pick (last title: "${state.title}")`);
  });
  const seen = await steps.run('model find: rows while the model refines, then its final list', async () => {
    const deadline = Date.now() + MODEL_FIND_TIMEOUT_MS;
    let refining: { title: string; rows: string[] } | undefined;
    const progress: string[] = []; // each "k/n" the title showed, in order
    let last = await wb.quickPickState();
    while (Date.now() < deadline) {
      check(last.open, `the pick closed before the model finished (last title: "${last.title}")`);
      const rowsShown = last.rows.length > 0 && last.title.includes(`functions for "${DESCRIPTION}"`);
      const scored = REFINING.exec(last.title)?.[1];
      if (rowsShown && scored) {
        if (progress[progress.length - 1] !== scored) {
          progress.push(scored);
        }
        if (!refining) {
          await wb.page.mouse.move(0, 0);
          await wb.screenshot(path.join(cfg.artifacts, '03b-find-refining.png'));
          refining = { title: last.title, rows: last.rows };
        }
      } else if (rowsShown) {
        await wb.page.mouse.move(0, 0);
        await wb.screenshot(path.join(cfg.artifacts, '03c-find-refined.png'));
        return { refining, progress, final: last };
      }
      await wb.page.waitForTimeout(POLL_MS);
      last = await wb.quickPickState();
    }
    throw new Error(`no final list within ${MODEL_FIND_TIMEOUT_MS / 1000} s; `
      + (refining ? `refining was seen ("${refining.title}"); ` : 'no refining rows were seen either; ')
      + `last title: "${last.title}", ${last.rows.length} rows`);
  });
  if (seen.refining) {
    console.log(`e2e:   while refining: ${seen.refining.title}`);
    console.log(`e2e:     rows: ${seen.refining.rows.join(' | ')}`);
  } else {
    console.log('e2e:   the model finished before a poll saw "refining" (no 03b picture); its final list showed');
  }
  console.log(`e2e:   progress seen in the title: ${seen.progress.join(', ') || 'none'}`);
  console.log(`e2e:   refined: ${seen.final.title}`);
  console.log(`e2e:     rows: ${seen.final.rows.join(' | ')}`);
  check(seen.final.rows.some((row) => row.startsWith(BEST)), `expected ${BEST} among the model's rows`);
  // The model's evidence is marked with $(sparkle), which the rows' aria-label spells out.
  check(seen.final.rows.some((row) => row.includes('sparkle')), 'no final row carries the model\'s evidence');
  await steps.run('model find: Escape closes the pick', async () => {
    await wb.page.keyboard.press('Escape');
    await wb.quickInput().waitFor({ state: 'hidden', timeout: UI_TIMEOUT_MS });
  });
}

function lineOf(file: string, text: string): number {
  const index = fs.readFileSync(file, 'utf8').split('\n').findIndex((line) => line.includes(text));
  check(index >= 0, `"${text}" is not in ${file}`);
  return index + 1;
}

async function hover(wb: Workbench, cfg: Config, steps: Steps, folder: string): Promise<void> {
  const text = await steps.run('hover note on a Python function', async () => {
    await wb.openFile(HOVER_FILE);
    await wb.goToLine(lineOf(path.join(folder, HOVER_FILE), HOVER_LINE));
    const target = wb.token(HOVER_LINE, HOVER_WORD);
    await target.waitFor({ timeout: UI_TIMEOUT_MS });
    return wb.hoverText(target, HOVER_EXPECTED, UI_TIMEOUT_MS);
  });
  console.log(`e2e:   hover: ${text.replace(/\s+/g, ' ').slice(0, 160)}`);
  await wb.screenshot(path.join(cfg.artifacts, '02-hover.png'));
  await wb.page.keyboard.press('Escape');
}

async function inlineCompletion(wb: Workbench, cfg: Config, steps: Steps, folder: string,
  offered: boolean): Promise<void> {
  const name = 'inline completion ghost text';
  if (!offered) {
    steps.skip(name, 'the server does not advertise inlineCompletionProvider (textDocument/inlineCompletion is not implemented yet)');
    return;
  }
  const ghost = await steps.run(name, async () => {
    await wb.openFile(COMPLETION_FILE);
    await wb.goToLine(lineOf(path.join(folder, COMPLETION_FILE), COMPLETION_LINE));
    await wb.page.keyboard.press('End');
    // Retype the trailing "." so the editor asks for an inline completion as a user's typing would.
    await wb.page.keyboard.press('Backspace');
    await wb.page.keyboard.type('.');
    const text = wb.page.locator('.monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text').first();
    await text.waitFor({ timeout: GHOST_TIMEOUT_MS });
    return (await text.innerText()).trim();
  });
  console.log(`e2e:   ghost text: ${JSON.stringify(ghost)}`);
  check(ghost.length > 0, 'the ghost text is empty');
  await wb.screenshot(path.join(cfg.artifacts, '05-inline-completion.png'));
  await suggestionContext(wb, cfg, steps);
}

async function suggestionContext(wb: Workbench, cfg: Config, steps: Steps): Promise<void> {
  const rows = await steps.run('context of the last suggestion: QuickPick', async () => {
    await wb.runCommand('PRISM: Show Context of Last Suggestion');
    await wb.page.locator('.quick-input-widget', { hasText: `last suggestion in ${COMPLETION_FILE}` })
      .waitFor({ timeout: UI_TIMEOUT_MS });
    return wb.quickPickRows(UI_TIMEOUT_MS);
  });
  console.log(`e2e:   context: ${rows.join(' | ')}`);
  check(rows.some((row) => row.includes(CONTEXT_FILE)), `expected ${CONTEXT_FILE} among the fragments`);
  await wb.screenshot(path.join(cfg.artifacts, '05b-suggestion-context.png'));
  await steps.run('context of the last suggestion: pick opens the fragment', async () => {
    await wb.page.keyboard.type(CONTEXT_FILE);
    await wb.page.keyboard.press('Enter');
    const name = CONTEXT_FILE.split('/').pop() ?? CONTEXT_FILE;
    await wb.activeTab(name).waitFor({ timeout: UI_TIMEOUT_MS });
    await wb.waitForStatus(new RegExp(`Ln ${CONTEXT_LAST_LINE}, Col \\d+ \\(\\d+ selected\\)`), UI_TIMEOUT_MS);
  });
}

const FUNCTIONS = /PRISM: (\d+) functions/;

/** The function count the status bar shows once it satisfies `wanted`. */
async function waitForFunctions(wb: Workbench, wanted: (count: number) => boolean, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const items = await wb.statusItem(/PRISM/).allInnerTexts();
    last = items.join(' | ');
    const count = Number(FUNCTIONS.exec(last)?.[1] ?? NaN);
    if (wanted(count)) {
      return count;
    }
    await wb.page.waitForTimeout(200);
  }
  throw new Error(`the status bar never showed the expected function count; last: "${last}"`);
}

async function indexingCommands(wb: Workbench, cfg: Config, steps: Steps, dirs: CodeServerDirs): Promise<void> {
  await steps.run('pause and resume indexing', async () => {
    await wb.runCommand('PRISM: Pause Indexing');
    await wb.waitForStatus(/PRISM: paused/, UI_TIMEOUT_MS);
    await wb.runCommand('PRISM: Resume Indexing');
    await wb.waitForStatus(FUNCTIONS, INDEXED_TIMEOUT_MS);
  });
  await steps.run('show status', async () => {
    // The status is a snapshot: while the notes pass still writes notes the worker embeds their
    // cards, so ask again until it reports the folder idle.
    const idle = wb.page.locator('.notification-toast', { hasText: /PRISM: idle: \d+ functions in \d+ files/ });
    const deadline = Date.now() + INDEXED_TIMEOUT_MS;
    for (;;) {
      await wb.runCommand('PRISM: Show Status');
      try {
        await idle.waitFor({ timeout: STATUS_RETRY_MS });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  });
  await wb.screenshot(path.join(cfg.artifacts, '06-status.png'));
  const before = await waitForFunctions(wb, (count) => count > 0, UI_TIMEOUT_MS);
  const after = await steps.run('a settings change reaches the server (prism.exclude)', async () => {
    const wanted = { ...userSettings(), 'prism.exclude': ['rust/**'] };
    await wb.editUserSettings(wanted);
    // The save goes through code-server to disk: wait for it there.
    const file = path.join(dirs.userData, 'User', 'settings.json');
    const deadline = Date.now() + UI_TIMEOUT_MS;
    let saved = '';
    while (saved !== JSON.stringify(wanted) && Date.now() < deadline) {
      await wb.page.waitForTimeout(100);
      try {
        saved = JSON.stringify(JSON.parse(fs.readFileSync(file, 'utf8')));
      } catch {
        saved = `not JSON: ${fs.readFileSync(file, 'utf8')}`;
      }
    }
    check(saved === JSON.stringify(wanted), `settings.json was saved as ${saved}`);
    return waitForFunctions(wb, (count) => count < before, INDEXED_TIMEOUT_MS);
  });
  console.log(`e2e:   functions: ${before} before, ${after} with rust/** excluded`);
  await steps.run('restart the server', async () => {
    await wb.runCommand('PRISM: Restart Server');
    // While it restarts the item shows a spinner and no count; then the same count again.
    await wb.waitForStatus(/^\s*PRISM\s*$/, UI_TIMEOUT_MS);
    await waitForFunctions(wb, (count) => count === after, INDEXED_TIMEOUT_MS);
  });
}

async function main(): Promise<void> {
  const cfg = config();
  const steps = new Steps('e2e');
  fs.rmSync(cfg.artifacts, { recursive: true, force: true });
  fs.mkdirSync(cfg.artifacts, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'prism-e2e-'));
  const dirs: CodeServerDirs = {
    install: cfg.codeServer,
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
  };
  const session = new CodeServerWindow(steps, dirs, cfg.artifacts);
  let failed = false;
  try {
    const offered = await steps.run('ask the server what it offers', async () => {
      const capabilities = await serverCapabilities(cfg.python, os.tmpdir(), process.env);
      return Boolean(capabilities.inlineCompletionProvider);
    });
    await steps.run('install the .vsix', async () => {
      const out = await installExtension(dirs, cfg.vsix);
      const installed = fs.readdirSync(dirs.extensions).filter((name) => name.startsWith('prism-code.prism-code-'));
      check(installed.length === 1, `the extension is not in ${dirs.extensions}: ${out}`);
    });
    const folder = makeWorkspace(cfg.repo, root);
    const cacheDir = path.join(root, 'cache');
    writeSettings(dirs, cfg, cacheDir);
    await session.start({ ...process.env, PRISM_CODE_CACHE_DIR: cacheDir });
    const wb = await session.open(cfg.chromium, folder, UI_TIMEOUT_MS, (page) => {
      const console_ = fs.createWriteStream(path.join(cfg.artifacts, 'browser-console.log'));
      page.on('console', (message) => console_.write(`${message.type()}: ${message.text()}\n`));
    });
    // The bar shows the notes pass's progress once indexing is done, and the function count
    // after it; on a slow host the model's notes for the whole fixture outlast this wait.
    const status = await steps.run('indexing done (status bar)',
      () => wb.waitForStatus(/PRISM: (\d+ functions|notes \d+\/\d+)/, INDEXED_TIMEOUT_MS));
    console.log(`e2e:   status bar: ${status}`);
    await wb.screenshot(path.join(cfg.artifacts, '01-indexed.png'));
    // Hover first: the QuickPick then opens over code, which makes the better picture.
    await hover(wb, cfg, steps, folder);
    await findFunction(wb, cfg, steps);
    await modelFind(wb, cfg, steps);
    await inlineCompletion(wb, cfg, steps, folder, offered);
    await indexingCommands(wb, cfg, steps, dirs);
  } catch (error) {
    failed = true;
    await session.failed(error);
  } finally {
    await session.close(root);
  }
  const report = { passed: !failed, seconds: steps.total, timings: steps.timings, skipped: steps.skipped };
  fs.writeFileSync(path.join(cfg.artifacts, 'timings.json'), JSON.stringify(report, null, 2));
  console.log(`e2e: ${failed ? 'FAILED' : 'passed'} in ${steps.total.toFixed(1)} s; artifacts in ${cfg.artifacts}`);
  process.exitCode = failed ? 1 : 0;
}

void main();
