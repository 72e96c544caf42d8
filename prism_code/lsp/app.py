"""The pygls language server: LSP in, prism_code.tasks out.

Handlers only translate: URIs to workspace paths, LSP positions to lines and columns,
library results and errors to LSP ones. Work that may take a while (search, hover,
stopping workers) runs on a small thread pool so the event loop keeps reading messages,
which is what lets `$/cancelRequest` arrive while a search runs. Completions, model find and
the notes pass run on the one model thread that model_scheduler schedules (completions
through completion_service).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer

from prism_code.cancel import CancelCheck, Cancelled
from prism_code.config import cache_root
from prism_code.llm.backend import BackendError
from prism_code.lsp import call_hierarchy, commands, completion_items, heap, stdio
from prism_code.lsp.bridge import FIND_PROGRESS, NOTES_PROGRESS, ClientBridge, ClientLogHandler
from prism_code.lsp.completion_debounce import CompletionRequest
from prism_code.lsp.completion_model import CompletionModel
from prism_code.lsp.completion_service import CompletionService, last_code_position
from prism_code.lsp.find_updates import FindUpdates
from prism_code.lsp.locations import cursor, lsp_lines, span_range, uri_path
from prism_code.lsp.model_host import ModelHost
from prism_code.lsp.model_scheduler import ModelScheduler
from prism_code.lsp.notes_pass import NotesScheduler
from prism_code.lsp.protocol import CheckedProtocol
from prism_code.lsp.settings import Settings, parse_settings
from prism_code.lsp.workspace_state import Found, WorkspaceState
from prism_code.parse.languages import EXTENSION_LANGUAGES, language_for_path
from prism_code.retrieval.dense import ModelUnavailable
from prism_code.tasks.find_events import FindEvent
from prism_code.tasks.find_request import FindRequest

if TYPE_CHECKING:
    from prism_code.tasks.complete import CompletionResult

log = logging.getLogger(__name__)

T = TypeVar("T")

# Edits are folded into the index this long after the last keystroke.
EDIT_DEBOUNCE_S = 0.3
# A watched-files burst this large (a checkout, a rebase) gets a progress bar.
VISIBLE_CHANGE_COUNT = 10


class PrismServer(LanguageServer):
    protocol: CheckedProtocol

    def __init__(self) -> None:
        super().__init__("prism-code", "0.1.0", protocol_cls=CheckedProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self.initialization_options: Any = None
        self.states: dict[Path, WorkspaceState] = {}
        self.bridge: ClientBridge | None = None
        self.models: ModelScheduler | None = None
        self.completions: CompletionService | None = None
        self.notes: NotesScheduler | None = None
        self.completion_model: CompletionModel | None = None
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="prism-request")

    def report_server_error(self, error: Exception, source: Any) -> None:
        # A body that is not JSON is the client's mistake: answered, not shown as ours.
        if not self.protocol.answer_unparsable(error):
            super().report_server_error(error, source)

    # ---- plumbing shared by handlers -----------------------------------------------------

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args, cancelled)` on the pool; a client cancel stops waiting and flags it."""
        with self.protocol.cancellable() as flag:
            try:
                return await asyncio.wrap_future(self.pool.submit(fn, *args, flag.is_set))
            except Cancelled as exc:
                raise JsonRpcRequestCancelled(str(exc)) from None

    def locate(self, uri: str) -> tuple[WorkspaceState, str] | None:
        """The workspace owning a document and its relative path; None outside every one."""
        path = uri_path(uri)
        if path is None:
            return None
        for state in sorted(self.states.values(), key=lambda s: -len(s.root.parts)):
            relative = state.relative(path)
            if relative is not None:
                return state, relative
        return None

    def open_buffer(self, uri: str) -> str | None:
        """The editor's text of a document it has open (never a read from disk)."""
        document = self.workspace.text_documents.get(unquote(uri))
        return document.source if document is not None else None

    def apply_settings(self, settings: Settings) -> None:
        for warning in settings.warnings:
            log.warning("%s", warning)
        self.settings = settings
        for state in self.states.values():
            state.reconfigure(settings)
        if self.models is not None and self.completion_model is not None:
            cache = settings.cache_dir or cache_root()
            model: str | None = settings.model_path
            if settings.remote_url is not None:
                self.completion_model.remote(settings.completion_model, settings.remote_url)
            else:
                model = self.completion_model.configure(settings.completion_model, settings.model_path,
                                                        settings.threads, cache / "machine-speed")
            self.models.configure(model, settings.threads, cache / "kv-states", settings.remote_url)
        if self.completions is not None:
            self.completions.configure(settings.completion_max_lines)
        if self.notes is not None:
            self.notes.configure(settings.notes_enabled, list(self.states.values()))

    def open_paths(self, state: WorkspaceState) -> list[str]:
        """Workspace-relative paths of the documents open in the editor, most recent first."""
        paths: list[str] = []
        for uri in reversed(list(self.workspace.text_documents)):
            found = self.locate(uri)
            if found is not None and found[0] is state and found[1] not in paths:
                paths.append(found[1])
        return paths

    def indexed(self, state: WorkspaceState) -> None:
        """A workspace finished an update (worker thread): its notes may be missing."""
        if self.notes is not None and self.bridge is not None:
            self.bridge.call(self.notes.request, state)

    def indexed_line(self, root: Path, path: str, line: int) -> str:
        """A workspace file's 1-based line as indexed (unsaved edits included); "" if unknown."""
        state = self.states.get(root)
        index = state.index if state is not None else None
        lines = index.lines.get(path, []) if index is not None else []
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def index_busy(self) -> bool:
        return any(state.busy for state in list(self.states.values()))

    def completion_document(self, uri: str) -> tuple[WorkspaceState, str, str] | None:
        """(workspace, path, buffer text) of a document completions serve; None when off."""
        if not self.settings.completion_enabled or self.completions is None:
            return None
        located, text = self.locate(uri), self.open_buffer(uri)
        if located is None or text is None or language_for_path(located[1]) is None:
            return None
        return located[0], located[1], text

    async def complete(self, uri: str,
                       position: types.Position) -> tuple[CompletionResult | None, str] | None:
        """The completion at a position (None: nothing to offer) and the cursor line's text
        before the cursor; None when completions do not serve this document."""
        document = self.completion_document(uri)
        if document is None or self.completions is None:
            return None
        state, path, text = document
        lines = lsp_lines(text)
        line, col = cursor(self.workspace.position_codec, lines, position)
        request = CompletionRequest(uri, state, path, text, line, col + 1)
        with self.protocol.cancellable() as flag:
            result = await self.completions.complete(request, flag)
        if result is not None and not result.completion.strip():
            result = None
        return result, lines[line - 1][:col]

    def open_workspaces(self) -> None:
        folders = [uri_path(f.uri) for f in self.workspace.folders.values()]
        if not folders and self.workspace.root_path:
            folders = [Path(self.workspace.root_path)]
        for folder in folders:
            self.add_workspace(folder)
        if not self.states:
            log.warning("no local workspace folder was given: nothing to index")

    def add_workspace(self, folder: Path | None) -> None:
        if folder is None or not folder.is_dir():
            log.warning("workspace folder %s is not a local directory: skipped", folder)
            return
        root = folder.resolve()
        if root in self.states:
            return
        assert self.bridge is not None, "workspaces open after initialize"
        state = WorkspaceState(root, self.settings, self.bridge.progress, self.indexed)
        self.states[root] = state
        state.start()


SERVER = PrismServer()
call_hierarchy.register(SERVER)


# ---- lifecycle ---------------------------------------------------------------------------


@SERVER.feature(types.INITIALIZE)
def initialize(ls: PrismServer, params: types.InitializeParams) -> None:
    bridge = ls.bridge = ClientBridge(ls, asyncio.get_running_loop())
    host = ModelHost(lambda message: bridge.show(types.MessageType.Error, message))
    ls.models = ModelScheduler(host, ls.index_busy)
    ls.completions = CompletionService(asyncio.get_running_loop(), ls.models, ls.index_busy)
    ls.completion_model = CompletionModel(asyncio.get_running_loop(), ls.models, ls.index_busy)
    ls.notes = NotesScheduler(asyncio.get_running_loop(), ls.models,
                              lambda title: bridge.progress(title, NOTES_PROGRESS), ls.open_paths)
    handler = ClientLogHandler(ls.bridge)
    logging.getLogger("prism_code").addHandler(handler)
    ls.initialization_options = params.initialization_options
    ls.apply_settings(parse_settings(params.initialization_options))


@SERVER.feature(types.INITIALIZED)
async def initialized(ls: PrismServer, params: types.InitializedParams) -> None:
    # What was imported lives as long as the process: the collector need not walk it again.
    heap.settle(force=True)
    ls.open_workspaces()
    if ls.settings.completion_enabled and ls.models is not None:
        # Loading takes ~0.7 s, mostly reading the file: overlapping it with indexing
        # takes it off the first completion.
        ls.models.preload()
    await watch_files(ls)


async def watch_files(ls: PrismServer) -> None:
    """Ask the client to tell us about file changes made outside the editor."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if not (watched and watched.dynamic_registration):
        return
    extensions = ",".join(sorted(e.lstrip(".") for e in EXTENSION_LANGUAGES))
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=f"**/*.{{{extensions}}}")])
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[
            types.Registration(id="prism-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                               register_options=options)]))
    except Exception as exc:  # noqa: BLE001 - edits in the editor are still seen
        log.info("the client would not watch files for us (%s): external edits are seen "
                 "on the next reindex", exc)


@SERVER.feature(types.SHUTDOWN)
async def shutdown(ls: PrismServer, params: None) -> None:
    if ls.notes is not None:
        ls.notes.close()
    if ls.completion_model is not None:
        ls.completion_model.close()
    if ls.completions is not None:
        await ls.completions.aclose()  # its last checkpoint, then the model thread's end
    elif ls.models is not None:
        await ls.models.aclose()
    states = list(ls.states.values())

    def stop_all() -> None:
        for state in states:
            state.stop()
    await asyncio.get_running_loop().run_in_executor(None, stop_all)
    ls.pool.shutdown(wait=False, cancel_futures=True)


@SERVER.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: PrismServer,
                                   params: types.DidChangeConfigurationParams) -> None:
    raw = params.settings
    workspace = ls.client_capabilities.workspace
    if not raw and workspace and workspace.configuration:
        # Pull model (VS Code sends null settings): ask for the section ourselves.
        answer = await ls.workspace_configuration_async(types.ConfigurationParams(
            items=[types.ConfigurationItem(section="prism")]))
        raw = answer[0] if answer else None
    ls.apply_settings(parse_settings(raw, base=ls.initialization_options))


@SERVER.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def did_change_folders(ls: PrismServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    for folder in params.event.removed:
        path = uri_path(folder.uri)
        state = ls.states.pop(path.resolve(), None) if path else None
        if state is not None:
            if ls.notes is not None:
                ls.notes.forget(state)
            ls.pool.submit(state.stop)
    for folder in params.event.added:
        ls.add_workspace(uri_path(folder.uri))


# ---- documents ---------------------------------------------------------------------------


@SERVER.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PrismServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    if (located := ls.locate(uri)) is not None:
        state, path = located
        state.set_buffer(path, params.text_document.text, EDIT_DEBOUNCE_S)
        if ls.notes is not None:
            ls.notes.request(state, opened=path)  # its functions are noted first
    if ls.completions is not None and (document := ls.completion_document(uri)) is not None:
        # The first completion in a file should not pay for loading the model and its context.
        state, path, text = document
        ls.completions.warm_when_idle(CompletionRequest(uri, state, path, text,
                                                   *last_code_position(text)))


@SERVER.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: PrismServer, params: types.DidChangeTextDocumentParams) -> None:
    if (located := ls.locate(params.text_document.uri)) is not None:
        state, path = located
        state.set_buffer(path, ls.open_buffer(params.text_document.uri), EDIT_DEBOUNCE_S)


@SERVER.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PrismServer, params: types.DidSaveTextDocumentParams) -> None:
    # The file on disk is now what the buffer holds: index it from there.
    if (located := ls.locate(params.text_document.uri)) is not None:
        state, path = located
        state.set_buffer(path, None, 0.0)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PrismServer, params: types.DidCloseTextDocumentParams) -> None:
    if ls.completions is not None:
        ls.completions.forget(params.text_document.uri)
    # Closing without saving throws the edits away: the disk is right again.
    if (located := ls.locate(params.text_document.uri)) is not None:
        state, path = located
        state.close_buffer(path)


@SERVER.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: PrismServer, params: types.DidChangeWatchedFilesParams) -> None:
    touched = {located[0] for change in params.changes
               if (located := ls.locate(change.uri)) is not None}
    for state in touched:
        state.schedule(EDIT_DEBOUNCE_S, visible=len(params.changes) > VISIBLE_CHANGE_COUNT)


# ---- hover -------------------------------------------------------------------------------


@SERVER.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: PrismServer, params: types.HoverParams) -> types.Hover | None:
    located = ls.locate(params.text_document.uri)
    if located is None:
        return None
    state, path = located
    # The editor's buffer; for a file it has not open, the text as last indexed (by any
    # process), which the workspace reads once it has caught up with the shared index.
    text, codec = ls.open_buffer(params.text_document.uri), ls.workspace.position_codec
    # A function, class or method with its memory note, or a module with its summary.
    answer = await ls.run(lambda cancelled: state.hover(path, text, params.position, codec))
    if answer is None:
        return None
    found, lines = answer
    markdown = _accepts_markdown(ls)
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText,
            value=found.markdown()),
        range=span_range(ls.workspace.position_codec, lines, *found.span))


def _accepts_markdown(ls: PrismServer) -> bool:
    document = ls.client_capabilities.text_document
    formats = document.hover.content_format if document and document.hover else None
    return not formats or types.MarkupKind.Markdown in formats


# ---- completion --------------------------------------------------------------------------


@SERVER.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["."]))
async def completion(ls: PrismServer, params: types.CompletionParams) -> types.CompletionList:
    answer = await ls.complete(params.text_document.uri, params.position)
    if answer is None:
        return types.CompletionList(is_incomplete=False, items=[])
    result, before = answer
    return completion_items.completion_list(result, before, params.position,
                                             ls.workspace.position_codec)


@SERVER.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline_completion(ls: PrismServer,
                            params: types.InlineCompletionParams) -> types.InlineCompletionList:
    answer = await ls.complete(params.text_document.uri, params.position)
    return completion_items.inline_list(answer[0] if answer else None, params.position)


# ---- commands ----------------------------------------------------------------------------


@SERVER.command(commands.FIND_FUNCTION)
async def find_function(ls: PrismServer, *arguments: Any) -> list[dict[str, Any]]:
    args = commands.find_args(arguments, ls.settings.find_strategy)
    request = args.request(ls.settings.fragrel_alpha)
    states = list(ls.states.values())

    def search(cancelled: CancelCheck) -> list[Found]:
        return retrieval_found(states, request, cancelled)

    try:
        if request.uses_model:
            found = await find_with_model(ls, args, request, states)
        else:
            found = await ls.run(search)
    except ModelUnavailable as exc:
        raise JsonRpcInternalError(f"the embedding model is unavailable: {exc}") from None
    codec = ls.workspace.position_codec
    return [commands.found_json(hit, codec) for hit in found]


def retrieval_found(states: list[WorkspaceState], request: FindRequest, cancelled: CancelCheck) -> list[Found]:
    """Retrieval's answer over every folder, best first."""
    found = [hit for state in states for hit in state.search(request, cancelled)]
    # Several folders: fused scores are z-scores per corpus, comparable enough to merge.
    return sorted(found, key=lambda hit: -hit.function.score)[:request.top]


async def find_with_model(ls: PrismServer, args: commands.FindArgs, request: FindRequest,
                          states: list[WorkspaceState]) -> list[Found]:
    """A PRISM / WiM / long-context pass on the model thread; its steps stream as $/progress,
    its rankings as prism/findUpdate when the client gave an updateToken."""
    if ls.models is None or ls.bridge is None:
        raise JsonRpcInternalError("the model is not available before initialization")
    bridge, models = ls.bridge, ls.models
    updates = None if args.update_token is None else FindUpdates(
        args.update_token, args.top, len(states), ls.workspace.position_codec,
        lambda method, params: bridge.call(ls.protocol.notify, method, params))
    with ls.protocol.cancellable() as flag:
        def job(session: Any) -> list[Found]:
            if session is None:
                raise JsonRpcInternalError(f"the {args.strategy} strategy needs the model, "
                                           f"which is unavailable: {models.host.error or 'not loaded'}")
            progress = bridge.progress(f"PRISM: {args.strategy}", FIND_PROGRESS)
            progress.begin()
            try:
                def on_event(event: FindEvent) -> None:
                    progress.report(event.stage, event.message, 100 * event.done / max(event.total, 1))
                found: list[Found] = []
                failed: BackendError | None = None
                for state in states:
                    if failed is not None:
                        # The engine is down: the other folders do not wait for it again.
                        found += state.search(request, flag.is_set)
                        continue
                    hits, failed = state.find_with_model(request, session, on_event, flag.is_set, models.state_dir,
                                                         updates.ranking if updates is not None else None)
                    found += hits
                if failed is None:
                    models.host.remote_answered()
                else:
                    # The remote engine failed (run_find answered with retrieval's list): a status for the user.
                    models.host.remote_failed(failed, "find")
                    found.sort(key=lambda hit: -hit.function.score)
            finally:
                progress.end("done")
            return found[:args.top]

        try:
            return await asyncio.wrap_future(models.submit(lambda: job(models.session())))
        except Cancelled as exc:
            raise JsonRpcRequestCancelled(str(exc)) from None
        except ValueError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None


@SERVER.command(commands.REINDEX)
def reindex(ls: PrismServer, *arguments: Any) -> dict[str, Any]:
    commands.no_args(commands.REINDEX, arguments)
    for state in ls.states.values():
        state.schedule(visible=True)
    return {"scheduled": [str(root) for root in ls.states]}


@SERVER.command(commands.STATUS)
def status(ls: PrismServer, *arguments: Any) -> dict[str, Any]:
    commands.no_args(commands.STATUS, arguments)
    folders = [state.status() for state in ls.states.values()]
    if ls.notes is not None:
        for folder, state in zip(folders, ls.states.values()):
            folder["notes"] = ls.notes.status(state)
    states = {f["state"] for f in folders}
    busy = [s for s in ("failed", "opening", "indexing", "embedding", "paused") if s in states]
    return {
        "state": busy[0] if busy else "idle" if folders else "no workspace",
        "files": sum(f["files"] for f in folders),
        "functions": sum(f["functions"] for f in folders),
        "embeddings": {key: sum(f["embeddings"][key] for f in folders) for key in ("done", "total")},
        # Set while a folder's first index is built: the files find already searches.
        "searchable": _summed([f["searchable"] for f in folders if f["searchable"]]),
        "notes": {"state": commands.overall_notes_state([f["notes"].get("state") for f in folders]),
                  **{key: sum(f["notes"][key] for f in folders) for key in ("done", "total")}},
        "cacheDir": folders[0]["cacheDir"] if folders else None,
        "modelPath": ls.settings.to_json()["modelPath"],
        **(ls.models.status() if ls.models is not None else {}),
        **(ls.completions.status() if ls.completions is not None else {}),
        # Which model completes (notes and find share it) and why: auto's measured speeds
        # and predicted latencies.
        "completionModel": (ls.completion_model.choice.to_json()
                            if ls.completion_model is not None else None),
        # Every folder's parsed buffers together; each folder's own are in its entry.
        "hoverBuffers": {key: sum(f["hoverBuffers"][key] for f in folders)
                         for key in ("parsed", "reparsed", "reused", "kept", "keptBytes")},
        "settings": ls.settings.to_json(),
        "workspaces": folders,
    }


def _summed(counts: list[dict[str, int]]) -> dict[str, int] | None:
    return {key: sum(c[key] for c in counts) for key in ("files", "total")} if counts else None


@SERVER.command(commands.COMPLETION_CONTEXT)
def completion_context(ls: PrismServer, *arguments: Any) -> dict[str, Any]:
    """The fragments of other files the last suggestion in a document was written from."""
    uri = commands.context_args(arguments)
    used = ls.completions.context.of(uri) if ls.completions is not None else None
    return commands.context_json(used, ls.workspace.position_codec, ls.indexed_line)


@SERVER.command(commands.PAUSE_INDEXING)
def pause_indexing(ls: PrismServer, *arguments: Any) -> dict[str, Any]:
    commands.no_args(commands.PAUSE_INDEXING, arguments)
    return _set_paused(ls, True)


@SERVER.command(commands.RESUME_INDEXING)
def resume_indexing(ls: PrismServer, *arguments: Any) -> dict[str, Any]:
    commands.no_args(commands.RESUME_INDEXING, arguments)
    return _set_paused(ls, False)


def _set_paused(ls: PrismServer, paused: bool) -> dict[str, Any]:
    """Pause or resume every background job: each folder's indexing and the notes pass."""
    if ls.notes is not None:
        ls.notes.pause() if paused else ls.notes.resume()
    for state in ls.states.values():
        state.pause() if paused else state.resume()
    return status(ls)


# ---- entry point -------------------------------------------------------------------------


class _ClientMistakes(logging.Filter):
    """pygls logs a traceback for every error reply; a bad argument or a cancel sent by the
    client is answered as such and is no fault of the server's worth a traceback. So are
    params that do not fit and bodies that are not JSON (server.protocol logs one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, (JsonRpcInvalidParams, JsonRpcRequestCancelled, json.JSONDecodeError,
                              UnicodeDecodeError)):
            return False
        return not str(record.msg).startswith("Unable to deserialize message")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="prism-code serve",
                                     description="the prism-code language server on stdio")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    args = parser.parse_args(argv)
    # The protocol gets a private copy of stdout, and descriptor 1 becomes stderr: a stray
    # print, native code writing to fd 1, and llama-cpp-python pointing fd 1 at /dev/null
    # while it loads a model (which swallowed protocol messages sent meanwhile) all miss it.
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("prism_code").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if not args.verbose:
        # Every debounced edit rescans the workspace (and lists it with git): their summary
        # lines would flood the log.
        for name in ("prism_code.workspace", "prism_code.git_files"):
            logging.getLogger(name).setLevel(logging.WARNING)
    for name in ("pygls.protocol.json_rpc", "pygls.server", "prism_code.lsp.stdio"):
        logging.getLogger(name).addFilter(_ClientMistakes())
    # Hovers read notes through the memory modules (they no longer load llama.cpp's library).
    # Imported once requests flowed, they held the import lock the first hovers waited on
    # and competed for the GIL with the start of indexing: import them before serving.
    importlib.import_module("prism_code.memory.cok")
    stdio.start_io(SERVER, sys.stdin.buffer, protocol_out)
    return SERVER.protocol.exit_code
