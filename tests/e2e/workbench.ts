// Driving VS Code's workbench the way a user does: keyboard shortcuts, the quick input,
// the status bar, hovers. Selectors are VS Code's own DOM classes.
import { Locator, Page } from 'playwright-core';

const QUICK_INPUT = '.quick-input-widget';
const QUICK_ROWS = `${QUICK_INPUT} .quick-input-list .monaco-list-row`;

export interface QuickPickState {
  open: boolean;
  title: string;
  rows: string[];
}

export class Workbench {
  constructor(readonly page: Page) {}

  async open(url: string, timeoutMs: number): Promise<void> {
    await this.page.goto(url);
    await this.page.locator('.monaco-workbench').waitFor({ timeout: timeoutMs });
  }

  statusItem(text: RegExp): Locator {
    return this.page.locator('.statusbar-item', { hasText: text });
  }

  /** Waits until a status bar item's text matches `text`; returns that text. */
  async waitForStatus(text: RegExp, timeoutMs: number): Promise<string> {
    const item = this.statusItem(text).first();
    await item.waitFor({ timeout: timeoutMs });
    return (await item.innerText()).trim();
  }

  /** Runs a command from the command palette by its title. */
  async runCommand(title: string): Promise<void> {
    await this.page.keyboard.press('Control+Shift+P');
    const input = this.quickInput();
    await input.waitFor();
    await input.fill(`>${title}`);
    await this.page.locator(QUICK_ROWS, { hasText: title }).first().waitFor();
    await this.page.keyboard.press('Enter');
  }

  /** Opens a workspace file with Quick Open (Ctrl+P), by its relative path. */
  async openFile(relativePath: string): Promise<void> {
    await this.page.keyboard.press('Control+P');
    const input = this.quickInput();
    await input.waitFor();
    await input.fill(relativePath);
    const name = relativePath.split('/').pop() ?? relativePath;
    await this.page.locator(QUICK_ROWS, { hasText: name }).first().waitFor();
    await this.page.keyboard.press('Enter');
    await this.activeTab(name).waitFor();
  }

  quickInput(): Locator {
    return this.page.locator(`${QUICK_INPUT} .quick-input-box input`);
  }

  /** The quick pick's rows, best first: each row's label, description and detail. */
  async quickPickRows(timeoutMs: number): Promise<string[]> {
    await this.page.locator(QUICK_ROWS).first().waitFor({ timeout: timeoutMs });
    return this.page.locator(QUICK_ROWS).evaluateAll((rows) => rows
      .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
      .map((row) => (row.getAttribute('aria-label') ?? row.textContent ?? '').replace(/\s+/g, ' ').trim()));
  }

  /**
   * The quick input as it is at one moment: whether it is open, its title and its rows
   * (label, description and detail each, best first), read together so a title and the rows
   * beside it belong to the same update.
   */
  async quickPickState(): Promise<QuickPickState> {
    const [state] = await this.page.locator(QUICK_INPUT).evaluateAll((widgets) => widgets.map((widget) => ({
      open: widget.style.display !== 'none',
      title: (widget.querySelector('.quick-input-title')?.textContent ?? '').trim(),
      rows: [...widget.querySelectorAll('.quick-input-list .monaco-list-row')]
        .sort((a, b) => Number(a.getAttribute('data-index')) - Number(b.getAttribute('data-index')))
        .map((row) => (row.getAttribute('aria-label') ?? row.textContent ?? '').replace(/\s+/g, ' ').trim()),
    })));
    return state ?? { open: false, title: '', rows: [] };
  }

  activeTab(name: string): Locator {
    return this.page.locator('.tabs-container .tab.active', { hasText: name });
  }

  /** The token `word` on the first editor line containing `lineText`. */
  token(lineText: string, word: string): Locator {
    return this.page.locator('.monaco-editor .view-line', { hasText: lineText }).first()
      .locator('span > span', { hasText: new RegExp(`^${word}$`) }).first();
  }

  /** Hovers `target` until the editor's hover shows text matching `expected`; returns the hover's text. */
  async hoverText(target: Locator, expected: RegExp, timeoutMs: number): Promise<string> {
    const hover = this.page.locator('.monaco-hover-content').filter({ hasText: expected }).first();
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      // A hover opens on mouse movement: move off, then back with a small offset each time.
      await this.page.mouse.move(0, 0);
      const box = await target.boundingBox();
      if (box) {
        await this.page.mouse.move(box.x + box.width / 2 + (attempt % 3), box.y + box.height / 2);
      }
      try {
        await hover.waitFor({ timeout: 3_000 });
        return (await hover.innerText()).trim();
      } catch {
        // not shown yet (the server may still be indexing): try again
      }
    }
    throw new Error(`no hover matching ${expected} within ${timeoutMs / 1000} s`);
  }

  /** Puts the cursor on a 1-based line with Go to Line, which also scrolls it into view. */
  async goToLine(line: number): Promise<void> {
    await this.page.keyboard.press('Control+G');
    await this.quickInput().waitFor();
    await this.page.keyboard.type(String(line));
    await this.page.locator('.quick-input-widget', { hasText: `Go to line ${line}` }).waitFor();
    await this.page.keyboard.press('Enter');
    try {
      await this.quickInput().waitFor({ state: 'hidden', timeout: 5000 });
    } catch {
      // On a busy machine an Enter that lands while the widget re-renders its pick is lost
      // (CI saw "Go to line 42." still open after 30 s): a user would press it again.
      await this.page.keyboard.press('Enter');
      await this.quickInput().waitFor({ state: 'hidden' });
    }
  }

  /** Waits until no notification toast mentions `text` (a finished progress closes its own). */
  async waitForToastGone(text: string, timeoutMs: number): Promise<void> {
    await this.page.locator('.notification-toast', { hasText: text }).waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /** Replaces the user settings the way a user edits them: the settings.json editor, then save. */
  async editUserSettings(settings: Record<string, unknown>): Promise<void> {
    await this.runCommand('Preferences: Open User Settings (JSON)');
    await this.activeTab('settings.json').waitFor();
    await this.page.locator('.monaco-editor .view-lines').first().click();
    // Delete first: a "{" typed over a selection would surround it instead of replacing it.
    await this.page.keyboard.press('Control+A');
    await this.page.keyboard.press('Delete');
    await this.page.keyboard.insertText(JSON.stringify(settings, null, 2));
    await this.page.keyboard.press('Control+S');
    await this.page.locator('.tabs-container .tab.active.dirty').waitFor({ state: 'detached' });
    await this.page.keyboard.press('Control+W');
  }

  async screenshot(file: string): Promise<void> {
    await this.page.screenshot({ path: file });
  }
}
