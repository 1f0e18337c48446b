"""The server object: owns the engine, the documents, the watchers and what was sent.

Handlers (``features.py``, ``commands.py``) stay thin and call into this object; the decisions
about runs are the engine's, the meaning of tasks.md the domain's. This layer only translates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ralph_lsp import __version__
from ralph_lsp.engine import Engine, EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.history import read_record, running_elsewhere
from ralph_lsp.server import render, worktree_view
from ralph_lsp.server.args import path_of_uri
from ralph_lsp.server.config import SECTION, Config
from ralph_lsp.server.documents import DocState, DocumentStore
from ralph_lsp.server.errors import CommandError, InvalidArguments
from ralph_lsp.server.logs import LEVELS, LogBatcher, LspLogHandler
from ralph_lsp.server.protocol import RalphProtocol
from ralph_lsp.server.runs import RUN_STATUS, ProgressValue, RunReporter
from ralph_lsp.server.watch import RootWatcher
from ralph_lsp.settings import Settings
from ralph_lsp.workspace import CHANGES, Change, find_roots, list_changes, root_of_file

log = logging.getLogger(__name__)

CLIENT_TIMEOUT = 5.0  # seconds to wait for the client's answer to a request of ours
EXIT_GRACE = 3.0  # seconds for the runs to end after their agents were killed at exit
EXIT_DEADLINE = 8.0  # seconds after exit when the process ends, whatever still runs
Key = tuple[Path, str]  # (OpenSpec root, change name)


class RalphLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ralph-lsp", __version__, protocol_cls=RalphProtocol)
        self.engine = Engine(on_event=self._on_engine_event)
        self.config = Config(warn=self.warn)
        self.docs = DocumentStore(self._read_buffer)
        self.logs = LogBatcher(self._send_log)
        self.roots: list[Path] = []
        self.stopping = False
        self.shutdown_requested = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._exited: threading.Event | None = None  # set once on_exit has ended every run
        self._log_handler: LspLogHandler | None = None
        self._watchers: dict[Path, RootWatcher] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._status: dict[Key, RunStatus] = {}
        self._reporters: dict[str, RunReporter] = {}
        self._published: dict[Path, tuple[str, list[tuple[Any, ...]]]] = {}
        self._refreshing = False
        self._refresh_again = False

    # -- plumbing ------------------------------------------------------------------------------

    def run_task(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background, keeping a reference and logging its failure."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("%s failed: %r", task.get_name(), exc, exc_info=exc)

    def warn(self, message: str) -> None:
        """A problem the user should see in the log (e.g. a wrong-typed setting)."""
        self.logs.add(message, types.MessageType.Warning)

    def _send_log(self, level: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # A request's error is already its answer. Any other stray error goes to the log,
        # not (as pygls would do) into a message box.
        if source is FeatureRequestError or isinstance(error, CommandError):
            return
        log.warning("%s", error)

    def _read_buffer(self, uri: str) -> tuple[int | None, str] | None:
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            return None
        return doc.version, doc.source

    def _capability(self, *names: str) -> bool:
        value: Any = self.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return False
        return bool(value)

    # -- lifetime ------------------------------------------------------------------------------

    def on_initialize(self, params: types.InitializeParams) -> None:
        self.loop = asyncio.get_running_loop()
        self.logs.bind(self.loop)
        if self._log_handler is None:
            self._log_handler = LspLogHandler(self.logs)
            root_logger = logging.getLogger()
            root_logger.addHandler(self._log_handler)
            root_logger.setLevel(logging.WARNING)
        self.config.from_initialization_options(params.initialization_options)
        self.config.settings()  # report wrong-typed settings now, once

    async def on_initialized(self) -> None:
        self.update_roots()
        if self._capability("workspace", "configuration"):
            await self.pull_settings(None)

    def update_roots(self) -> None:
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        if not folders and self.workspace.root_path:
            folders = [self.workspace.root_path]
        self.roots = find_roots([Path(f) for f in folders if f])
        self._watch(self.roots + [self._root_key(p)[0] for p in self._open_change_paths()])
        self.publish_all()

    def _open_change_paths(self) -> list[Path]:
        return [p for p in self.docs.open_paths() if root_of_file(p) is not None]

    def _watch(self, roots: Sequence[Path]) -> None:
        wanted = set(roots)
        for root in list(self._watchers):
            if root not in wanted:
                self._watchers.pop(root).stop()
        for root in wanted:
            if root not in self._watchers:
                self._watchers[root] = RootWatcher(root, self.on_disk_change, self.run_task)

    async def on_shutdown(self) -> None:
        """Stop every run (each agent tree gone) and tell the client how they ended."""
        self.stopping = True
        self.shutdown_requested = True
        for watcher in self._watchers.values():
            watcher.stop()
        await self.engine.shutdown()
        reporters = [r.done.wait() for r in self._reporters.values()]
        if reporters:
            try:
                await asyncio.wait_for(asyncio.gather(*reporters), CLIENT_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("the final run statuses could not all be sent before shutdown")
        self.logs.flush()

    async def on_exit(self) -> None:
        """``exit`` (with or without ``shutdown``) or the pipe closed: no agent may outlive us.

        Every agent tree is killed at once; then the runs are let to end while the event loop
        still runs, because ``asyncio.run`` cancelling them midway can wait forever. If the end
        still does not come, a deadline ends the process (the agents are dead by then).
        """
        if self._exited is not None:
            return  # already ending (exit, then the pipe closed)
        self._exited = threading.Event()
        self.stopping = True
        self.engine.shutdown_now()
        for watcher in self._watchers.values():
            watcher.stop()
        self._arm_exit_deadline()
        try:
            await asyncio.wait_for(self.engine.shutdown(), EXIT_GRACE)
        except Exception as exc:  # TimeoutError, or a run that failed to end cleanly
            log.warning("runs did not end cleanly at exit: %r", exc)
        finally:
            self.logs.flush()
            self.logs.close()
            self._exited.set()

    def _arm_exit_deadline(self) -> None:
        code = 0 if self.shutdown_requested else 1

        def force() -> None:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            os._exit(code)

        timer = threading.Timer(EXIT_DEADLINE, force)
        timer.daemon = True
        timer.start()

    def shutdown(self) -> None:
        """Called by pygls when its loop has ended. Unlike pygls's own, it does not wait for the
        thread that reads stdin: after ``exit`` that read may never return."""
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)

    def on_stdin_eof(self) -> None:
        """The client closed the pipe (called from pygls's reader thread): end every run on the
        event loop's thread, and return (so that pygls sees EOF) once that is done."""
        loop = self.loop
        if loop is None or loop.is_closed():
            self.engine.shutdown_now()
            return
        if self._exited is not None:  # `exit` came first and is ending the runs
            if not self._exited.wait(EXIT_GRACE + 1):
                self.engine.shutdown_now()
            return
        done = threading.Event()

        async def end() -> None:
            try:
                await self.on_exit()
            finally:
                done.set()

        try:
            asyncio.run_coroutine_threadsafe(end(), loop)
        except RuntimeError:  # the loop is closing
            self.engine.shutdown_now()
            return
        if not done.wait(EXIT_GRACE + 1):
            self.engine.shutdown_now()

    # -- settings ------------------------------------------------------------------------------

    async def pull_settings(self, root: Path | None) -> Settings:
        """The ``ralph`` settings for ``root`` as the client has them now."""
        raw = None
        if self._capability("workspace", "configuration"):
            item = types.ConfigurationItem(
                section=SECTION, scope_uri=root.as_uri() if root is not None else None
            )
            try:
                result = await asyncio.wait_for(
                    self.workspace_configuration_async(types.ConfigurationParams(items=[item])),
                    CLIENT_TIMEOUT,
                )
            except Exception as exc:
                log.warning("reading the ralph settings from the client failed: %s", exc)
            else:
                if result:
                    raw = self.config.from_pull(result[0])
                    if raw is not None and root is None:
                        self.config.raw = raw
        return self.config.settings(raw)

    async def on_settings_pushed(self, settings: Any) -> None:
        if self.config.from_did_change(settings):
            self.config.settings()
        else:
            await self.pull_settings(None)

    # -- documents -----------------------------------------------------------------------------

    def path_of(self, uri: str) -> Path | None:
        if not uri.startswith("file:"):
            return None
        fs = to_fs_path(uri)
        if not fs:
            return None
        try:
            return Path(fs).resolve()
        except (OSError, RuntimeError):
            return Path(fs)

    @staticmethod
    def _root_key(path: Path) -> Key:
        root = root_of_file(path)
        assert root is not None
        return root, path.parent.name

    def on_open(self, uri: str) -> None:
        path = self.path_of(uri)
        if path is None:
            return
        self.docs.opened(path, uri)
        root = root_of_file(path)
        if root is not None and root not in self._watchers:
            self._watch([*self._watchers, root])
        self.publish(path)
        self.refresh_lenses()

    def on_edit(self, uri: str) -> None:
        path = self.path_of(uri)
        if path is not None:
            self.publish(path)
            self.refresh_lenses()

    def on_save(self, uri: str) -> None:
        path = self.path_of(uri)
        if path is None:
            return
        self.docs.saved(path)  # the saved text holds no edits of its own: the disk wins again
        self.publish(path)
        self.refresh_lenses()

    def on_close(self, uri: str) -> None:
        path = self.path_of(uri)
        if path is None:
            return
        self.docs.closed(path)
        self.publish(path)  # the disk's version now
        self.refresh_lenses()

    def on_disk_change(self, paths: set[Path]) -> None:
        changed = False
        for path in paths:
            self.docs.invalidate(path)
            if root_of_file(path) is not None:
                changed = True
                self.publish(path)
        if changed:
            self.refresh_lenses()

    def doc_of(self, uri: str) -> tuple[DocState, Path, str] | None:
        """The document behind ``uri`` with its change's root and name, if it is a change's."""
        path = self.path_of(uri)
        if path is None or root_of_file(path) is None:
            return None
        root, change = self._root_key(path)
        return self.docs.get(path), root, change

    def status_of(self, root: Path, change: str) -> RunStatus | None:
        return self._status.get((root, change))

    def code_lenses(self, uri: str) -> list[types.CodeLens]:
        found = self.doc_of(uri)
        if found is None:
            return []
        state, root, change = found
        status = self.status_of(root, change)
        state = worktree_view.followed(self.docs, state, status)
        elsewhere = None if render.is_running(status) else _elsewhere(root, change)
        return render.code_lenses(state, root, change, status, elsewhere)

    # -- publishing ----------------------------------------------------------------------------

    def publish(self, path: Path) -> None:
        """Send the diagnostics of one tasks.md when they differ from what the client has."""
        if self.stopping:
            return
        if root_of_file(path) is None:
            return
        root, change = self._root_key(path)
        status = self.status_of(root, change)
        state = worktree_view.followed(self.docs, self.docs.get(path), status)
        diagnostics = render.diagnostics(state, status, self.workspace.position_encoding)
        uri = self.docs.uri_for(path)
        key = [(d.range, d.severity, d.message) for d in diagnostics]
        if self._published.get(path) == (uri, key):
            return
        self._published[path] = (uri, key)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=state.version)
        )

    def publish_all(self) -> None:
        paths = {Change(r, name).tasks_path for r in self.roots for name in list_changes(r)}
        paths.update(self._open_change_paths())
        for path in sorted(paths):
            self.publish(path)

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses; at most one request in flight."""
        if self.stopping or not self._capability("workspace", "code_lens", "refresh_support"):
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self.run_task(self._refresh(), "codeLens refresh")

    async def _refresh(self) -> None:
        try:
            while True:
                self._refresh_again = False
                try:
                    await asyncio.wait_for(
                        self.workspace_code_lens_refresh_async(None), CLIENT_TIMEOUT
                    )
                except Exception as exc:
                    log.debug("codeLens refresh failed: %s", exc)
                if not self._refresh_again or self.stopping:
                    return
        finally:
            self._refreshing = False

    # -- engine events -------------------------------------------------------------------------

    def _on_engine_event(self, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent):
            self._on_status(event.status)
        elif isinstance(event, LogEvent):
            self._on_log(event)

    def active_runs(self) -> int:
        return sum(1 for s in self._status.values() if not s.final)

    def _on_log(self, event: LogEvent) -> None:
        text = event.text
        if self.active_runs() > 1:
            prefix = f"[{event.change}] "
            text = prefix + text.replace("\n", "\n" + prefix)  # on every line of a batch
        self.logs.add(text, LEVELS.get(event.level, types.MessageType.Info))

    def _on_status(self, status: RunStatus) -> None:
        self._status[(status.root, status.change)] = status
        reporter = self._reporters.get(status.run_id)
        if reporter is None:
            root, change = status.root, status.change
            reporter = RunReporter(
                self, status.run_id, change, stop=lambda: self._stop_from_progress(root, change)
            )
            self._reporters[status.run_id] = reporter
            self.run_task(self._report(reporter), f"report {status.run_id}")
        reporter.push(status)
        self.publish(Change(status.root, status.change).tasks_path)
        self.refresh_lenses()

    async def _report(self, reporter: RunReporter) -> None:
        try:
            await reporter.run()
        finally:
            self._reporters.pop(reporter.run_id, None)

    def _stop_from_progress(self, root: Path, change: str) -> None:
        """The user cancelled the run's progress in the editor: stop the run."""

        async def stop() -> None:
            if any(not s.final for s in self.engine.statuses(root, change)):
                await self.engine.stop(root, change)

        self.run_task(stop(), f"stop {change} (progress cancelled)")

    # ProgressClient, for RunReporter
    def supports_progress(self) -> bool:
        return self._capability("window", "work_done_progress")

    async def create_progress(self, token: str) -> None:
        await self.work_done_progress.create_async(token)

    def send_progress(
        self,
        token: str,
        value: ProgressValue,
    ) -> None:
        if isinstance(value, types.WorkDoneProgressBegin):
            self.work_done_progress.begin(token, value)
        elif isinstance(value, types.WorkDoneProgressReport):
            self.work_done_progress.report(token, value)
        else:
            self.work_done_progress.end(token, value)
            self.work_done_progress.tokens.pop(token, None)

    def send_run_status(self, status: RunStatus) -> None:
        self.protocol.notify(RUN_STATUS, status.to_json())

    def on_progress_cancel(self, token: str, callback: Any) -> None:
        future = self.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: callback() if f.cancelled() else None)

    # -- command helpers -----------------------------------------------------------------------

    def resolve_root(self, command: str, root: str | None) -> Path:
        """The root a command is about: the one given, or the only one open."""
        if root is None:
            if len(self.roots) == 1:
                return self.roots[0]
            if not self.roots:
                raise InvalidArguments(
                    f"{command}: no OpenSpec root is open (no workspace folder holds"
                    f' openspec/changes/); pass "root", the URI of the folder that does'
                )
            listing = ", ".join(r.as_uri() for r in self.roots)
            raise InvalidArguments(
                f'{command}: several OpenSpec roots are open ({listing}); pass "root" to pick one'
            )
        path = path_of_uri(command, root)
        try:
            path = path.resolve()
        except (OSError, RuntimeError):
            pass
        if not (path / CHANGES).is_dir():
            listing = ", ".join(r.as_uri() for r in self.roots) or "none"
            raise InvalidArguments(
                f"{command}: {root} is not an OpenSpec root (it has no openspec/changes/ folder);"
                f" open roots: {listing}"
            )
        if not self._root_allowed(path):
            listing = ", ".join(r.as_uri() for r in self.roots) or "none"
            raise InvalidArguments(
                f"{command}: {root} is not in this editor's workspace folders; only the OpenSpec"
                f" roots of the open workspace can be used (open roots: {listing})"
            )
        return path

    def _root_allowed(self, path: Path) -> bool:
        """A command may name one of the workspace's roots, or a root inside a workspace folder
        (with no folders at all, as for a lone file, the root of an open tasks.md)."""
        if path in self.roots:
            return True
        folders = [Path(to_fs_path(f.uri) or "") for f in self.workspace.folders.values()]
        folders = [f for f in folders if str(f) not in ("", ".")]
        if not folders and self.workspace.root_path:
            folders = [Path(self.workspace.root_path)]
        if folders:
            return any(_inside(path, folder) for folder in folders)
        return path in {self._root_key(p)[0] for p in self._open_change_paths()}


def _inside(path: Path, folder: Path) -> bool:
    try:
        folder = folder.resolve()
    except (OSError, RuntimeError):
        pass
    return path == folder or folder in path.parents


def _elsewhere(root: Path, change: str) -> render.Elsewhere | None:
    """The run of ``change`` another live ralph-lsp process holds, if any."""
    owner = running_elsewhere(root, change)
    if owner is None:
        return None
    record = read_record(root, owner.run_id) or {}
    iterations = record.get("iterations")
    done = len(iterations) if isinstance(iterations, list) else 0
    return render.Elsewhere(owner.pid, done + 1)
