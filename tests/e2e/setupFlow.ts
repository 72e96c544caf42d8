// The extension on a clean machine, as a new user meets it: a profile with no prism settings,
// no Python extension and empty caches. scripts/e2e.sh runs this after run.ts.
//
// Steps: install the .vsix; the extension offers "Set up prism-code"; accept, then cancel
// half-way (while pip installs) and check nothing was kept; reload the window and check the
// offer comes again; accept and wait for the server to index; find a function; open the
// walkthrough. Screenshots of the offer, the set-up's progress and the walkthrough go to
// test-artifacts/e2e-setup/.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Browser, chromium } from 'playwright-core';
import { CodeServerDirs, RunningCodeServer, installExtension, startCodeServer } from './codeServer';
import { Workbench } from './workbench';

const OFFER = 'Set up prism-code';
const OFFERED = 'no Python here has the prism-code language server';
const PROGRESS_TITLE = 'Setting up prism-code';
const INSTALL_STEP = 'installing prism-code and its dependencies';
const CANCELLED = 'the set-up was cancelled';
const DESCRIPTION = 'compute the area of a shape';
const BEST = 'Shape.area';
const WALKTHROUGH = 'Get started with PRISM Code';
const WALKTHROUGH_STEPS = 5;

const UI_TIMEOUT_MS = 60_000;
const OFFER_TIMEOUT_MS = 120_000;
// pip from its cache (~2 minutes), the model's parts from PyPI (491 MB), then indexing with
// embeddings; llama-cpp-python compiling from source would add ~6 minutes.
const SET_UP_TIMEOUT_MS = 1_200_000;
const INDEXED_TIMEOUT_MS = 420_000;

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set (run scripts/e2e.sh)`);
  }
  return value;
}

function check(condition: boolean, message: string): void {
  if (!condition) {
    throw new Error(message);
  }
}

async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  const start = Date.now();
  process.stdout.write(`e2e-setup: ${name} ...`);
  try {
    const result = await run();
    process.stdout.write(` ok (${((Date.now() - start) / 1000).toFixed(1)} s)\n`);
    return result;
  } catch (error) {
    process.stdout.write(` FAILED after ${((Date.now() - start) / 1000).toFixed(1)} s\n`);
    throw error;
  }
}

// Only what keeps the window quiet and the pictures steady: nothing about prism.
const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'security.workspace.trust.enabled': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'window.restoreWindows': 'none',
  'git.enabled': false,
};

/** Every directory named `name` under `root`. */
function directoriesNamed(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        const full = path.join(dir, entry.name);
        if (entry.name === name) {
          found.push(full);
        } else {
          walk(full);
        }
      }
    }
  };
  walk(root);
  return found;
}

/** What the set-up left in the extension's global storage: its venvs and its record. */
function leftInStorage(userData: string): string[] {
  return directoriesNamed(userData, 'prism-code.prism-code').flatMap((storage) => [
    ...(fs.existsSync(path.join(storage, 'environment.json')) ? ['environment.json'] : []),
    ...(fs.existsSync(path.join(storage, 'envs')) ? fs.readdirSync(path.join(storage, 'envs')) : []),
  ]);
}

function toast(wb: Workbench, text: string | RegExp) {
  return wb.page.locator('.notification-toast', { hasText: text });
}

async function accept(wb: Workbench): Promise<void> {
  const offer = toast(wb, /no Python here has the prism-code language server|set-up was cancelled/).first();
  await offer.waitFor({ timeout: OFFER_TIMEOUT_MS });
  await offer.locator('.monaco-button', { hasText: OFFER }).click();
}

async function main(): Promise<void> {
  const repo = path.resolve(required('PRISM_E2E_REPO'));
  const artifacts = process.env.PRISM_E2E_SETUP_ARTIFACTS ?? path.join(repo, 'test-artifacts', 'e2e-setup');
  fs.rmSync(artifacts, { recursive: true, force: true });
  fs.mkdirSync(artifacts, { recursive: true });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'prism-e2e-setup-'));
  const dirs: CodeServerDirs = {
    install: required('PRISM_E2E_CODE_SERVER'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
  };
  const folder = path.join(root, 'workspace');
  fs.cpSync(path.join(repo, 'tests', 'fixtures', 'multilang'), folder, { recursive: true });
  fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(QUIET_SETTINGS, null, 2));
  // A clean machine's caches (the model and the indexes go there), but pip's own cache is
  // kept: without it llama-cpp-python compiles again (~6 minutes on two cores).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_CACHE_HOME: path.join(root, 'cache'),
    PIP_CACHE_DIR: process.env.PIP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'pip'),
  };
  delete env.PRISM_CODE_CACHE_DIR;
  delete env.PYTHONPATH;
  delete env.VIRTUAL_ENV;

  let codeServer: RunningCodeServer | undefined;
  let browser: Browser | undefined;
  let wb: Workbench | undefined;
  let failed = false;
  const started = Date.now();
  try {
    await step('install the .vsix', () => installExtension(dirs, required('PRISM_E2E_VSIX')));
    codeServer = await step('start code-server', () => startCodeServer(dirs, path.join(artifacts, 'code-server.log'), env));
    browser = await chromium.launch({ executablePath: process.env.PRISM_E2E_CHROMIUM ?? '/usr/bin/chromium',
      args: ['--no-sandbox'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
    wb = new Workbench(page);
    const workbench = wb;
    await step('open the workbench', () => workbench.open(`${codeServer?.url}/?folder=${encodeURIComponent(folder)}`,
      UI_TIMEOUT_MS));

    await step('the extension offers "Set up prism-code"', async () => {
      await toast(workbench, OFFERED).locator('.monaco-button', { hasText: OFFER }).waitFor({ timeout: OFFER_TIMEOUT_MS });
      await workbench.waitForStatus(/PRISM: set up/, UI_TIMEOUT_MS);
      await workbench.page.waitForTimeout(1_000); // the toast slides in
    });
    await wb.screenshot(path.join(artifacts, '01-setup-offer.png'));

    await step('accept, then cancel while pip installs', async () => {
      await accept(workbench);
      const progress = toast(workbench, INSTALL_STEP).first();
      await progress.waitFor({ timeout: UI_TIMEOUT_MS });
      await workbench.waitForStatus(/PRISM: setting up/, UI_TIMEOUT_MS);
      await workbench.page.waitForTimeout(3_000); // pip well under way
      await workbench.screenshot(path.join(artifacts, '02-setup-progress.png'));
      await progress.locator('.monaco-button', { hasText: 'Cancel' }).click();
      await toast(workbench, CANCELLED).waitFor({ timeout: UI_TIMEOUT_MS });
    });
    const left = leftInStorage(dirs.userData);
    check(left.length === 0, `a cancelled set-up left ${left.join(', ')} in the extension's storage`);

    await step('the next start offers the set-up again', async () => {
      await workbench.page.reload();
      await workbench.page.locator('.monaco-workbench').waitFor({ timeout: UI_TIMEOUT_MS });
      await toast(workbench, OFFERED).waitFor({ timeout: OFFER_TIMEOUT_MS });
    });

    await step('accept and wait until the server has indexed', async () => {
      await accept(workbench);
      await toast(workbench, PROGRESS_TITLE).first().waitFor({ timeout: UI_TIMEOUT_MS });
      await workbench.waitForStatus(/PRISM: (\d+ functions|notes \d+\/\d+|indexing|embeddings)/, SET_UP_TIMEOUT_MS);
      await workbench.waitForStatus(/PRISM: (\d+ functions|notes \d+\/\d+)/, INDEXED_TIMEOUT_MS);
    });
    check(leftInStorage(dirs.userData).includes('environment.json'), 'the finished set-up was not recorded');
    await wb.screenshot(path.join(artifacts, '03-set-up.png'));

    await step('find a function by description', async () => {
      await workbench.runCommand('PRISM: Find Function by Description');
      await workbench.page.locator('.quick-input-widget', { hasText: 'Describe what the function does' }).waitFor();
      await workbench.page.keyboard.type(DESCRIPTION);
      await workbench.page.keyboard.press('Enter');
      await workbench.page.locator('.quick-input-widget', { hasText: `functions for "${DESCRIPTION}"` })
        .waitFor({ timeout: UI_TIMEOUT_MS });
      const rows = await workbench.quickPickRows(UI_TIMEOUT_MS);
      console.log(`e2e-setup:   results: ${rows.slice(0, 3).join(' | ')}`);
      check(rows[0]?.startsWith(BEST) ?? false, `expected ${BEST} first, got ${rows[0] ?? 'no rows'}`);
      await workbench.screenshot(path.join(artifacts, '04-find.png'));
      await workbench.page.keyboard.press('Escape');
    });

    await step('the walkthrough', async () => {
      await workbench.runCommand('Welcome: Open Walkthrough...');
      await workbench.page.locator('.quick-input-widget .monaco-list-row', { hasText: WALKTHROUGH }).first()
        .waitFor({ timeout: UI_TIMEOUT_MS });
      await workbench.quickInput().fill(WALKTHROUGH);
      await workbench.page.keyboard.press('Enter');
      await workbench.page.locator('.gettingStartedContainer', { hasText: 'Set up prism-code' })
        .waitFor({ timeout: UI_TIMEOUT_MS });
      await workbench.page.waitForTimeout(1_000); // the step's markdown renders in a webview
      await workbench.screenshot(path.join(artifacts, '05-walkthrough.png'));
      const titles = await workbench.page.locator('.gettingStartedContainer .step-title').allInnerTexts();
      console.log(`e2e-setup:   walkthrough steps: ${titles.join(' | ')}`);
      check(titles.length === WALKTHROUGH_STEPS, `the walkthrough shows ${titles.length} steps, not ${WALKTHROUGH_STEPS}`);
    });
  } catch (error) {
    failed = true;
    console.error(`e2e-setup: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    await wb?.screenshot(path.join(artifacts, 'failure.png')).catch(() => undefined);
  } finally {
    await browser?.close().catch(() => undefined);
    await codeServer?.stop();
    const logs = path.join(dirs.userData, 'logs');
    if (fs.existsSync(logs)) {
      fs.cpSync(logs, path.join(artifacts, 'logs'), { recursive: true });
    }
    fs.rmSync(root, { recursive: true, force: true });
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(`e2e-setup: ${failed ? 'FAILED' : 'passed'} in ${seconds.toFixed(1)} s; artifacts in ${artifacts}`);
  process.exitCode = failed ? 1 : 0;
}

void main();
