import * as vscode from 'vscode';
import { STATUS, ServerStatus } from './protocol';
import { IndexProgress, PrismServer, errorMessage } from './server';
import { SETUP_COMMAND } from './setup';

// prism.status is cheap; polling it fast only while the index is changing keeps the
// item current without a steady stream of requests.
const BUSY_POLL_MS = 1_500;
const IDLE_POLL_MS = 10_000;
const BUSY_STATES = new Set(['opening', 'indexing', 'embedding']);
const POLL_TIMEOUT_MS = 10_000;
// indexingCommands.ts registers it (and imports this module, so it is spelled out here).
const SHOW_STATUS = 'prism-code.showStatus';

interface Shown {
  text: string;
  tooltip: string;
  warning?: boolean;
}

/** The status bar item: indexing progress while it runs, then what the index holds. */
export class IndexStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('prism-code.status', vscode.StatusBarAlignment.Left, 10);
  private readonly subscriptions: vscode.Disposable[] = [];
  // Index progress the server is reporting right now, by token (one per indexing job).
  private readonly progress = new Map<string, { percentage?: number; message?: string }>();
  private status: ServerStatus | undefined;
  private statusError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(private readonly server: PrismServer) {
    this.item.name = 'PRISM Indexing';
    this.subscriptions.push(
      server.onDidChangeState(() => {
        this.progress.clear();
        this.status = undefined;
        this.refreshSoon();
      }),
      server.onIndexProgress((event) => this.onProgress(event)),
    );
    this.render();
    this.item.show();
  }

  /** Asks the server for its status now (after a command that changes it). */
  refreshSoon(): void {
    this.schedule(0);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.subscriptions.forEach((subscription) => subscription.dispose());
    this.item.dispose();
  }

  private onProgress(event: IndexProgress): void {
    if (event.kind === 'end') {
      this.progress.delete(event.token);
      this.refreshSoon();
    } else {
      const previous = this.progress.get(event.token) ?? {};
      this.progress.set(event.token, {
        percentage: event.percentage ?? previous.percentage,
        message: event.message ?? previous.message,
      });
    }
    this.render();
  }

  private schedule(delay: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delay);
  }

  private async poll(): Promise<void> {
    if (this.polling) {
      return;
    }
    this.polling = true;
    try {
      this.status = this.server.running ? await this.server.commandWithin<ServerStatus>(STATUS, POLL_TIMEOUT_MS) : undefined;
      this.statusError = undefined;
    } catch (error) {
      this.status = undefined;
      this.statusError = errorMessage(error);
    } finally {
      this.polling = false;
    }
    this.render();
    if (this.server.running) {
      this.schedule(this.busy() ? BUSY_POLL_MS : IDLE_POLL_MS);
    }
  }

  private busy(): boolean {
    return this.progress.size > 0 || (this.status !== undefined
      && (BUSY_STATES.has(this.status.state) || this.status.notes?.state === 'writing'));
  }

  private render(): void {
    const shown = this.describe();
    // Before the set-up the item starts it; after, it shows the server's status.
    this.item.command = this.server.needsSetUp ? SETUP_COMMAND : SHOW_STATUS;
    this.item.text = shown.text;
    this.item.tooltip = shown.tooltip;
    const failed = this.status?.state === 'failed'
      || (!this.server.running && !this.server.starting && !this.server.settingUp && !this.server.needsSetUp);
    this.item.backgroundColor = failed ? new vscode.ThemeColor('statusBarItem.errorBackground')
      : shown.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
  }

  private describe(): Shown {
    if (this.server.settingUp) {
      return { text: '$(loading~spin) PRISM: setting up', tooltip: `PRISM: ${this.server.notRunningReason}` };
    }
    if (this.server.needsSetUp) {
      return { text: '$(cloud-download) PRISM: set up', tooltip: `PRISM: ${this.server.notRunningReason} (click to set it up)` };
    }
    if (!this.server.running) {
      const icon = this.server.starting ? '$(loading~spin)' : '$(circle-slash)';
      return { text: `${icon} PRISM`, tooltip: `PRISM: ${this.server.notRunningReason}` };
    }
    const active = [...this.progress.values()].at(-1);
    if (active) {
      // The server's message is "<stage> <done>/<total>": the count says more than a percentage.
      const count = /\d+\/\d+/.exec(active.message ?? '')?.[0];
      const shown = count ? ` ${count}` : active.percentage !== undefined ? ` ${active.percentage}%` : '';
      return { text: `$(sync~spin) PRISM: indexing${shown}`, tooltip: `PRISM: ${active.message ?? 'indexing'}` };
    }
    const status = this.status;
    if (!status) {
      return this.statusError
        ? { text: '$(warning) PRISM', tooltip: `PRISM: prism.status failed: ${this.statusError}` }
        : { text: '$(loading~spin) PRISM', tooltip: 'PRISM: asking the server for its status' };
    }
    const notes = status.notes;
    const summary = `${status.functions} functions in ${status.files} files; `
      + `embeddings ${status.embeddings.done}/${status.embeddings.total}`
      + (notes ? `; function notes ${notes.done}/${notes.total}` : '');
    switch (status.state) {
      case 'opening':
      case 'indexing':
        return { text: '$(sync~spin) PRISM: indexing', tooltip: `PRISM: indexing; ${summary}` };
      case 'embedding':
        return {
          text: `$(sync~spin) PRISM: embeddings ${status.embeddings.done}/${status.embeddings.total}`,
          tooltip: `PRISM: computing embeddings (search is lexical until they are done); ${summary}`,
        };
      case 'paused':
        return { text: '$(debug-pause) PRISM: paused', tooltip: `PRISM: indexing paused; ${summary}` };
      case 'failed': {
        const errors = status.workspaces.map((folder) => folder.error).filter(Boolean).join('; ');
        return { text: '$(error) PRISM: indexing failed', tooltip: `PRISM: ${errors || 'indexing failed'}` };
      }
      case 'no workspace':
        return { text: '$(circle-slash) PRISM', tooltip: 'PRISM: no folder to index' };
      default: {
        const remote = status.model?.remote;
        if (remote?.state === 'failing') {
          // Find still answers (retrieval's list) and completions pause: say so until the engine answers again.
          return {
            text: `$(warning) PRISM: remote ${remote.kind ?? 'failing'}`,
            tooltip: `PRISM: the remote engine ${remote.url} failed (${remote.kind ?? 'failed'}) during `
              + `${remote.job ?? 'a model job'}: ${remote.error ?? ''}. Find shows retrieval's list and `
              + `completions are skipped until it answers again; ${summary}`,
            warning: true,
          };
        }
        if (notes && notes.done < notes.total && (notes.state === 'writing' || notes.state === 'waiting')) {
          const why = notes.state === 'waiting' ? ' when completions and indexing leave it free' : '';
          return {
            text: `$(sync~spin) PRISM: notes ${notes.done}/${notes.total}`,
            tooltip: `PRISM: the local model is writing function notes${why}; ${summary}`,
          };
        }
        return { text: `$(check) PRISM: ${status.functions} functions`, tooltip: `PRISM: ${summary}` };
      }
    }
  }
}
