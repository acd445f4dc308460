"""The live result view: candidate picker, Accept / Insert as cell / Retry / Show completion.

The logic lives in plain methods (accept, insert, retry), so tests drive it without a
browser; the buttons only call them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..pipeline import Result
from ..store import Store, StoreError, load_kernel
from ..task import Task
from .html import result_html, summary_line

# Put above inserted kernel code: on a machine without a GPU the cell still runs (slowly),
# in Triton's CPU interpreter, which Triton picks when the kernels are decorated.
_RUNS_WITHOUT_GPU = """import os as _os
import torch as _torch

if not _torch.cuda.is_available():  # no GPU here: Triton's CPU interpreter runs the kernels
    _os.environ.setdefault("TRITON_INTERPRET", "1")

"""


class ResultView:
    """A Result shown with ipywidgets; Accept binds and stores the chosen passing kernel."""

    def __init__(
        self,
        result: Result,
        task: Task,
        *,
        user_ns: dict[str, Any],
        name: str,
        library: str | None = None,
        task_id: int | None = None,
        candidate_ids: list[int] | None = None,
        on_retry: Callable[[], None] | None = None,
        set_next_input: Callable[[str], None] | None = None,
        verify_options: Any = None,
        insert_cell: Callable[[str, str, Callable[[bool], None]], None] | None = None,
    ) -> None:
        import ipywidgets as w

        self.result, self.task, self.user_ns = result, task, user_ns
        self.library, self.task_id = library, task_id
        self.candidate_ids = candidate_ids or []
        self.on_retry, self.set_next_input = on_retry, set_next_input
        self.verify_options = verify_options
        self.insert_cell = insert_cell  # (code, view's widget id, answer) -> None, in Lab
        self.display_handle: Any = None  # set by whoever displays the view
        self.chosen = 0
        self._confirm = None  # the conditional candidate whose Accept was asked to be confirmed
        self.accepted: str | None = None
        labels = [
            (
                f"{i + 1}: {c.report.verdict if c.report else 'no code'} (round {c.round + 1}, "
                f"sample {c.sample + 1}{', tuned' if c.tuned else ''})",
                i,
            )
            for i, c in enumerate(result.candidates)
        ]
        self.html = w.HTML(self.render())
        self.picker = w.Dropdown(options=labels or [("none", 0)], value=0, description="candidate")
        self.name = w.Text(value=name, description="name")
        self.accept_button = w.Button(
            description="Accept",
            button_style="success",
            tooltip="bind ModelNew under this name and keep it in the library",
        )
        self.insert_button = w.Button(
            description="Insert as cell", tooltip="put the kernel's code in a new cell below"
        )
        self.retry_button = w.Button(
            description="Retry", tooltip="run this cell again (new samples), in place of this view"
        )
        self.completion_button = w.ToggleButton(
            description="Show completion", tooltip="the model's whole answer, reasoning included"
        )
        self.edit_button = w.ToggleButton(
            description="Edit", tooltip="change the kernel before accepting it (verified again)"
        )
        for b in (self.accept_button, self.insert_button, self.retry_button,
                  self.completion_button, self.edit_button):
            b.layout = w.Layout(width="auto", min_width="fit-content")  # labels never cut
        self.editor = w.Textarea(layout=w.Layout(width="100%", height="24em", display="none"))
        self.completion = w.HTML()
        self.status = w.HTML()
        self.picker.observe(self._picked, names="value")
        self.accept_button.on_click(lambda _b: self.accept())
        self.insert_button.on_click(lambda _b: self.insert())
        self.retry_button.on_click(lambda _b: self.retry())
        self.completion_button.observe(self._toggle_completion, names="value")
        self.edit_button.observe(self._toggle_editor, names="value")
        self._sync_buttons()
        buttons = w.HBox(
            [
                self.picker,
                self.name,
                self.accept_button,
                self.insert_button,
                self.retry_button,
                self.edit_button,
                self.completion_button,
            ],
            layout=w.Layout(flex_flow="row wrap"),  # a narrow page wraps, it does not clip
        )
        # Retry runs the cell again into this, in place of the view (not into the log).
        self.rerun = w.Output()
        self.widget = w.VBox([self.html, buttons, self.editor, self.status, self.completion])

    # rendering -------------------------------------------------------------------------
    def render(self) -> str:
        return result_html(self.result, self.task.source, self.chosen, self.accepted)

    def _toggle_editor(self, change: dict) -> None:
        c = self.current
        if change["new"] and c is not None and c.code:
            if not self.editor.value:
                self.editor.value = c.code
            self.editor.layout.display = None
        else:
            self.editor.layout.display = "none"

    def _picked(self, change: dict) -> None:
        self.chosen = int(change["new"])
        self.editor.value = ""
        self.edit_button.value = False
        self.html.value = self.render()
        self._sync_buttons()
        if self.completion_button.value:
            self._toggle_completion({"new": True})

    def _sync_buttons(self) -> None:
        c = self.current
        self.accept_button.disabled = c is None or not c.passed
        self.insert_button.disabled = c is None or not c.code
        self.edit_button.disabled = c is None or not c.code

    def _toggle_completion(self, change: dict) -> None:
        import html

        c = self.current
        self.completion.value = (
            f"<pre>{html.escape(c.completion)}</pre>" if change["new"] and c else ""
        )

    @property
    def current(self):
        return self.result.candidates[self.chosen] if self.result.candidates else None

    def mimebundle(self) -> dict[str, Any]:
        """The widget for live front ends, with static HTML for everything else."""
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/html"] = self.render()
        bundle["text/plain"] = f"autotriton: {summary_line(self.result)}"
        return bundle

    # actions ---------------------------------------------------------------------------
    def say(self, text: str, ok: bool = True) -> None:
        import html

        color = "#1a7f37" if ok else "#cf222e"
        self.status.value = f"<span style='color:{color}'>{html.escape(text)}</span>"

    def edited_code(self) -> str | None:
        """The editor's text when it differs from the chosen candidate's code."""
        c = self.current
        text = self.editor.value
        if not text.strip() or c is None or text == c.code:
            return None
        return text

    def _verify_edit(self, code: str) -> bool:
        """An edited kernel is judged again, by the same verifier, before it is kept."""
        from ..task import Candidate
        from ..verify import VerifyOptions, verify

        self.say("Verifying the edited kernel before accepting it...")
        report = verify(
            self.task, Candidate(code, name="edited kernel"), self.verify_options or VerifyOptions()
        )
        if report.verdict != "pass":
            why = "; ".join(f"{r['check']}: {r['message']}" for r in report.reasons[:2])
            self.say(f"Not accepted: the edited kernel failed verification ({why}).", ok=False)
            return False
        return True

    def accept(self) -> bool:
        """Bind the chosen passing kernel's ModelNew under the name and keep it in the library.

        When the kernel was edited, the edited code is verified again and kept only if it
        passes (marked as edited in the library)."""
        c = self.current
        name = self.name.value.strip()
        if c is not None and c.conditional and c.code and self._confirm is not c:
            self._confirm = c
            self.say(
                "This kernel is conditional: right on the task's inputs, but wrong on inputs "
                "the verifier made from them (see its findings). Press Accept again to keep "
                "it anyway.",
                ok=False,
            )
            return False
        if c is None or not (c.passed or (c.conditional and self._confirm is c)) or not c.code:
            self.say("Only a candidate that passed verification can be accepted.", ok=False)
            return False
        edited = self.edited_code()
        if edited is not None and not self._verify_edit(edited):
            return False
        code = edited or c.code
        try:
            with Store(self.library) as store:
                task_id = self.task_id or store.add_task(self.task.name, self.task.source)
                cid = (
                    self.candidate_ids[self.chosen]
                    if self.chosen < len(self.candidate_ids)
                    else None
                )
                store.accept(
                    name, task_id, code, candidate_id=cid, edited=edited is not None, replace=True
                )
                where = store.path
            self.user_ns[name] = load_kernel(name, self.library)
        except (StoreError, SyntaxError, OSError) as e:
            self.say(f"Not accepted: {e}", ok=False)
            return False
        self.accepted = name
        self.html.value = self.render()
        if self.display_handle is not None:  # the static copy (nbconvert, GitHub) says so too
            self.display_handle.update(self.mimebundle(), raw=True)
        self.say(
            ("Accepted (edited, verified again): " if edited else "Accepted: ")
            + f"{name} is bound in your namespace (use {name}(*init_args)) and kept "
            f"in the library ({where}); load_kernel({name!r}) gets it back anywhere."
        )
        return True

    def insert(self) -> bool:
        """Put the chosen candidate's code in a new cell below."""
        c = self.current
        if c is None or not c.code or (self.set_next_input is None and self.insert_cell is None):
            self.say("There is no code to insert.", ok=False)
            return False
        code = _RUNS_WITHOUT_GPU + c.code
        if self.insert_cell is not None:  # a kernel: the front end inserts, and says so
            self.say("Putting the kernel's code in a new cell below...")
            self.insert_cell(code, self.widget.model_id, self._inserted)
            return True
        self.set_next_input(code)  # a terminal IPython: the next prompt holds the code
        self.say("The kernel's code is ready at the next prompt.")
        return True

    def _inserted(self, ok: bool) -> None:
        if ok:
            self.say("The kernel's code was put in a new cell below this one.")
        else:
            self.say(
                "This front end cannot insert cells (it has no autotriton extension): copy "
                "the kernel's code from the view above, or use JupyterLab.",
                ok=False,
            )

    def retry(self) -> None:
        """Run the cell again; its progress and new result replace this view, in place."""
        if self.on_retry is None:
            return
        self.widget.children = [self.rerun]
        with self.rerun:
            self.on_retry()


def insert_cell(code: str, view: str, answer: Any) -> None:
    """Ask the front end (autotriton's JupyterLab extension) for a new cell below the view.

    `set_next_input` cannot do this from a button: it rides on the reply of the next cell
    run. The extension answers whether it inserted; a front end without it closes the
    comm unanswered, which is a "no".
    """
    from comm import create_comm

    answered: list[bool] = []

    def on_msg(msg: dict) -> None:
        answered.append(True)
        answer(bool(msg["content"]["data"].get("inserted")))

    def on_close(_msg: dict) -> None:
        if not answered:
            answered.append(False)
            answer(False)

    c = create_comm(target_name="autotriton.insert", data={"code": code, "view": view})
    c.on_msg(on_msg)
    c.on_close(on_close)
