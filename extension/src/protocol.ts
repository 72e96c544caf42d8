// The server's workspace/executeCommand commands and the shapes of their answers
// (prism_code/lsp/commands.py and prism_code/lsp/app.py).

export const FIND_FUNCTION = 'prism.findFunction';
export const REINDEX = 'prism.reindex';
export const STATUS = 'prism.status';
export const PAUSE_INDEXING = 'prism.pauseIndexing';
export const RESUME_INDEXING = 'prism.resumeIndexing';
export const COMPLETION_CONTEXT = 'prism.completionContext';

// Work-done progress tokens the server creates for indexing (prism_code/lsp/bridge.py).
export const INDEX_PROGRESS_PREFIX = 'prism-index/';

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface FindArguments {
  description: string;
  top?: number;
  strategy?: string;
  // Asks for prism/findUpdate notifications carrying this token while a model strategy works.
  updateToken?: string | number;
}

// A model find's ranking on the way to its answer (prism_code/lsp/find_updates.py).
export const FIND_UPDATE = 'prism/findUpdate';

export type Evidence = 'retrieval' | 'model';

export interface FindUpdate {
  token: string | number;
  done: boolean;
  scored: number;
  total: number;
  progress: string;
  results: FoundFunction[];
  evidence: Evidence[];
}

export interface FoundFunction {
  name: string;
  qualname: string;
  uri: string;
  range: Range;
  score: number;
  reason: string;
  kind?: 'function' | 'method' | 'class' | 'file';
  scores?: Record<string, number>;
  // Ranked over the files parsed so far, while the folder's first index is built.
  fromPartialIndex?: boolean;
}

export type IndexState = 'opening' | 'indexing' | 'embedding' | 'idle' | 'paused' | 'failed' | 'stopped';

export interface Embeddings {
  done: number;
  total: number;
}

export type NotesState = 'off' | 'waiting' | 'writing' | 'done' | 'paused' | 'no model' | 'failed';

// Functions whose model-written note is for their current text (prism_code/lsp/notes_pass.py).
export interface Notes {
  state?: NotesState;
  done: number;
  total: number;
}

export interface FolderStatus {
  root: string;
  state: IndexState;
  error: string | null;
  files: number;
  functions: number;
  embeddings: Embeddings;
  notes?: Notes;
  unsavedBuffers: number;
  index: string | null;
  cacheDir: string;
}

// Which model completes and why (prism_code/tasks/model_policy.py's ModelChoice).
export interface CompletionModel {
  setting: string;
  model: string;
  reason: string;
  measuring: boolean;
}

// The engine every model job goes to when prism.remote.url is set (prism_code/lsp/remote_status.py).
export interface RemoteEngine {
  url: string;
  state: 'ok' | 'failing' | 'unknown';
  ok: number;
  failures: number;
  kind: string | null;
  error: string | null;
  job: string | null;
}

export interface ServerStatus {
  state: IndexState | 'no workspace';
  files: number;
  functions: number;
  embeddings: Embeddings;
  notes?: Notes;
  cacheDir: string | null;
  modelPath: string | null;
  completionModel?: CompletionModel | null;
  model?: { remote?: RemoteEngine | null };
  settings: Record<string, unknown>;
  workspaces: FolderStatus[];
}

export interface ReindexResult {
  scheduled: string[];
}

// A window of another file a suggestion was written from: label is `path:first-last`.
export interface ContextFragment {
  label: string;
  path: string;
  uri: string;
  range: Range;
}

// prism.completionContext: a document's last suggestion (uri null when there was none).
export interface CompletionContext {
  uri: string | null;
  context: string[];
  fragments: ContextFragment[];
}
