"""The live progress view of a %%autotriton cell (and the panel's job file beside it)."""

from __future__ import annotations

import html
import sys
import threading
from typing import Any

from IPython.display import display


class ProgressView:
    """Live progress: model loading, tokens and tok/s per sample, each candidate's state, and
    the text streaming in, folded away in an accordion (one pane per sample).

    Given a task name, the same lines also go to a job progress file for the JupyterLab
    panel (jobs.JobLog)."""

    SHOWN_CHARS = 6000
    RENDER_EVERY_S = 0.2

    def __init__(self, task: str | None = None, library: str | None = None) -> None:
        from ..jobs import JobLog

        try:
            import ipywidgets as w

            self.status: Any = w.HTML("autotriton: starting")
            self.folds: Any = w.Accordion(children=[])
            self.box: Any = w.VBox([self.status, self.folds])
            self.handle: Any = display(self._bundle(), raw=True, display_id=True)
        except ImportError:
            self.box = None
        self.lines: dict[str, str] = {}
        self.text: dict[int, list[str]] = {}
        self.panes: dict[int, Any] = {}
        self.last_render = 0.0
        self.lock = threading.Lock()
        self.job = JobLog(task, library) if task is not None else None

    def _render(self, force: bool = False) -> None:
        import time

        if self.box is None or (
            not force and time.monotonic() - self.last_render < self.RENDER_EVERY_S
        ):
            return
        self.last_render = time.monotonic()
        lines = "<br>".join(html.escape(v) for v in self.lines.values())
        self.status.value = f"<div style='font-family:monospace'>{lines}</div>"
        for sample, parts in self.text.items():
            shown = "".join(parts)[-self.SHOWN_CHARS :]
            self._pane(
                sample
            ).value = f"<pre style='white-space:pre-wrap'>{html.escape(shown)}</pre>"

    def _pane(self, sample: int) -> Any:
        import ipywidgets as w

        if sample not in self.panes:
            self.panes[sample] = w.HTML()
            self.folds.children = [*self.folds.children, self.panes[sample]]
            self.folds.set_title(
                len(self.folds.children) - 1, f"sample {sample + 1}: what the model writes"
            )
        return self.panes[sample]

    def _set(self, key: str, value: str, force: bool = True) -> None:
        with self.lock:
            self.lines[key] = value
            self._render(force)
            if self.job is not None:  # under the lock, so an older snapshot never lands last
                stage = self.lines.get("stage") or self.lines.get("model") or "starting"
                self.job.update(stage=stage, lines=list(self.lines.values()), force=force)
        if self.box is None and force:
            print(value, file=sys.stderr)

    def model(self, message: str) -> None:
        self._set("model", message)

    def note(self, message: str) -> None:
        self._set("note", message)

    def event(self, e: Any) -> None:
        if e.kind == "token":
            ev = e.data["event"]
            who = "all samples" if ev.sample < 0 else f"sample {ev.sample + 1}"
            if ev.kind == "token":
                if ev.text and ev.sample >= 0:
                    with self.lock:
                        self.text.setdefault(ev.sample, []).append(ev.text)
                self._set(
                    f"gen{ev.sample}",
                    f"{who}: {ev.tokens} tokens, {ev.tokens_per_s:.1f} tok/s",
                    force=False,
                )
            elif ev.kind == "done":
                self._set(f"gen{ev.sample}", f"{who}: {ev.tokens} tokens, {ev.message}")
            elif ev.kind == "load":  # the model's own news: a decode step compiling, say
                self._set("stage", ev.message)
        elif e.kind in ("verified", "checked"):
            self._set(
                f"ver{e.round}.{e.sample}",
                f"round {e.round + 1} sample {e.sample + 1}: {e.message}",
            )
        else:
            self._set("stage", e.message)

    def close(self, state: str = "done") -> None:
        """Keep the final state (with the folded text) in place of the live view; state is
        the job's end: "done", "cancelled" or "failed"."""
        with self.lock:
            self._render(force=True)
            # The saved copy: the final lines, not a widget's repr (no handle outside IPython).
            if self.box is not None and self.handle is not None:
                self.handle.update(self._bundle(), raw=True)
        if self.job is not None:
            self.job.finish(state)

    def _bundle(self) -> dict[str, Any]:
        bundle = dict(self.box._repr_mimebundle_() or {})
        bundle["text/html"] = self.status.value
        last = list(self.lines.values())[-1] if getattr(self, "lines", None) else "starting"
        bundle["text/plain"] = f"autotriton progress: {last}"
        return bundle
