"""%%autotriton and %autotriton: thin; the work is done by Task.from_cell, tritonize and ResultView.

Settings are traitlets, so `%config AutotritonMagics.n = 8` works like any IPython
setting; flags on the magic line win over them, and they win over the config file.

Length: the magics' arguments, the cell's path through the pipeline and the line
commands; the result view is in ui/.
"""

from __future__ import annotations

import html
import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Float, Integer, Unicode

from .config import RANK_FIGURES, ConfigError, TritonizeOptions, from_flags, tune_settings
from .model.generator import GenerationError, GenerationParams
from .store import NoLibrary, Store, StoreError
from .task import TaskError
from .ui.progress import ProgressView

LINE_COMMANDS = ("status", "models", "kernels", "finetune")


def _error(text: str) -> None:
    """A clear message in the notebook (and in a plain terminal); the kernel session carries on."""
    display(
        {
            "text/plain": f"autotriton: {text}",
            "text/html": f"<p style='color:#cf222e'>autotriton: {html.escape(text)}</p>",
        },
        raw=True,
    )


def _unquote(value: str | None) -> str | None:
    """IPython's magic argument splitting keeps the quotes around a quoted value."""
    if value and len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


@magics_class
class AutotritonMagics(Magics):
    """The autotriton magics."""

    n = Integer(TritonizeOptions.n, help="candidates sampled per cell").tag(config=True)
    rounds = Integer(TritonizeOptions.rounds, help="repair rounds after the first").tag(config=True)
    model = Unicode("", help="model name (empty: the [model] setting)").tag(config=True)
    max_tokens = Integer(GenerationParams.max_tokens, help="tokens per sample").tag(config=True)
    temperature = Float(GenerationParams.temperature, help="sampling temperature").tag(config=True)
    library = Unicode("", help="kernel library file (empty: the user data directory)").tag(
        config=True
    )

    @magic_arguments()
    @argument("-n", type=int, help="candidates to sample")
    @argument("--model", help="autotriton, tiny, a .gguf, an HF folder or openai:NAME")
    @argument("--rounds", type=int, help="repair rounds")
    @argument("--name", help="name to accept the kernel under")
    @argument("--module", help="class to tritonize when the cell is not in the KernelBench format")
    @argument("--inputs", help="forward arguments, a Python expression (with --module)")
    @argument("--init", help="constructor arguments, a Python expression (with --module)")
    @argument("--no-timing", action="store_true", help="skip GPU timing")
    @argument("--tune", action="store_true", help="try every tuning variant, however long it takes")
    @argument("--no-tune", action="store_true", help="skip the tuning pass (by default within --tune-budget)")
    @argument("--tune-budget", type=float, help="seconds the tuning pass may take")
    @argument("--speed-rounds", type=int, help="ask for a faster kernel while the best is slower than torch.compile")
    @argument(
        "--rank-by",
        choices=sorted(RANK_FIGURES),
        help="the speed figure that ranks candidates: device (calls back to back, the default) "
        "or call (one call on an idle GPU, launch included)",
    )
    @argument(
        "--no-cache",
        action="store_true",
        help="measure the reference's eager and torch.compile times again (not from the cache)",
    )
    @argument(
        "--no-sandbox", action="store_true", help="verify without the OS sandbox (not advised)"
    )
    @argument("--allow-torch", help="ATen ops forward may run in PyTorch")
    @argument("--shapes", help="also judge at other input shapes, e.g. '33x257 33x257; 1x7 1x7'")
    @argument("--max-tokens", type=int)
    @argument("--device", choices=["auto", "cpu", "cuda"])
    @argument("--seed", type=int)
    @argument("command", nargs="*", help="line magic: status | models | kernels | finetune")
    @line_cell_magic
    def autotriton(self, line: str, cell: str | None = None) -> Any:
        """%%autotriton [options] over a module cell; %autotriton status|models|kernels."""
        words = line.split()
        if cell is None and words and words[0] == "finetune":
            return self._finetune(line)
        try:
            args = parse_argstring(self.autotriton, line)
        except Exception as e:  # UsageError and argparse's own exits
            _error(f"{e}. See %autotriton? for the options.")
            return None
        for key in ("inputs", "init", "module", "name", "model", "allow_torch", "shapes"):
            setattr(args, key, _unquote(getattr(args, key, None)))
        if cell is None:
            return self._line(args)
        return self._cell(args, cell)

    def _finetune(self, line: str) -> None:
        """%autotriton finetune [flags of `autotriton finetune`]: the same command, in the kernel."""
        import shlex

        from .cli import main

        extra = ["--library", self.library] if self.library and "--library" not in line else []
        main(["finetune", *shlex.split(line)[1:], *extra])

    # line magic ------------------------------------------------------------------------
    def _line(self, args: Any) -> None:
        what = args.command[0] if args.command else "status"
        if what not in LINE_COMMANDS:
            _error(f"unknown command {what!r}; use one of {', '.join(LINE_COMMANDS)}.")
            return
        if what == "finetune":
            from .cli import main

            main(
                [
                    "finetune",
                    *args.command[1:],
                    *(["--library", self.library] if self.library else []),
                ]
            )
            return
        from .model.registry import list_models

        if what == "models":
            for s in list_models(self._model_options(args)):
                print(
                    f"{s.name:<14} {s.backend:<9} {'ready' if s.available else 'needs ' + s.needs}"
                    + (f"  ({s.about})" if s.about else "")
                )
            return
        try:
            with Store(self.library or None, write=False) as store:
                if what == "kernels":
                    rows = store.accepted()
                    print(
                        "\n".join(f"{a.name:<24} {a.task_name}" for a in rows)
                        or "no accepted kernels yet"
                    )
                    return
                counts, path = store.counts(), store.path
                held = f"{counts['accepted']} accepted, {counts['candidates']} candidates"
        except NoLibrary as e:
            if what == "kernels":
                print("no accepted kernels yet")
                return
            path, held = e.path, "none yet: made when the first result is saved"
        except StoreError as e:
            _error(str(e))
            return
        o = self._model_options(args)
        print(
            f"model: {o.name}{_usable(o)}\nlibrary: {path} ({held})"
            f"\nsamples per cell: {self.n}, repair rounds: {self.rounds}"
            f"\nverifier: {_verifier_state()}"
        )

    # cell magic ------------------------------------------------------------------------
    def _model_options(self, args: Any):
        from .model.registry import ModelOptions

        # --model, else the model trait (%config AutotritonMagics.model), else the settings.
        name = getattr(args, "model", None) or self.model or None
        return from_flags("model", ModelOptions(), {"name": name})

    def _cell(self, args: Any, cell: str) -> None:

        self.last_view = None
        from .model.registry import load as load_model
        from .task import Task
        from .verify import VerifyOptions

        ran = self.shell.run_cell(cell, store_history=False)
        if not ran.success:
            return  # the user sees their own error, as for any cell
        try:
            task = Task.from_cell(
                cell,
                name=args.name or args.module or "Model",
                module=args.module,
                inputs=args.inputs,
                init=args.init,
            )
            # The CLI's rules for the same flags (config.from_flags): a typo in --shapes or
            # --allow-torch is refused here, before any generation.
            flags = ("device", "seed", "allow_torch", "shapes", "no_timing", "no_cache", "no_sandbox")
            vo = from_flags("verify", VerifyOptions(), {k: getattr(args, k) for k in flags})
            mo = self._model_options(args)
            tuning = tune_settings(args.tune, args.no_tune, args.tune_budget)
        except (TaskError, ConfigError) as e:
            _error(str(e))
            return
        n = args.n or self.n
        if not 1 <= n <= 64:
            _error(f"-n {n}: use 1 to 64 samples (each is a sequence in the decode batch and a candidate to verify).")
            return
        if args.speed_rounds is not None and not 0 <= args.speed_rounds <= 8:
            _error(f"--speed-rounds {args.speed_rounds}: use 0 to 8 rounds.")
            return
        params = GenerationParams(
            max_tokens=args.max_tokens or self.max_tokens,
            temperature=self.temperature,
            seed=args.seed,
        )
        options = TritonizeOptions(
            n=n,
            rounds=self.rounds if args.rounds is None else args.rounds,
            params=params,
            verify=vo,
            class_name="Model",
            **tuning,
            speed_rounds=args.speed_rounds or 0,
            rank_by=args.rank_by or TritonizeOptions.rank_by,
        )
        progress = ProgressView(task.name, self.library or None)
        try:
            generator = load_model(mo.name, mo, on_event=lambda e: progress.model(e.message))
        except GenerationError as e:
            progress.close("failed")
            _error(str(e))
            return
        result = self._run(task, generator, options, progress)
        if result is None:
            return
        self._show(args, task, result, retry=lambda: self._cell(args, cell), verify_options=vo)

    def _run(self, task: Any, generator: Any, options: Any, progress: Any) -> Any:
        """tritonize in a thread; Kernel -> Interrupt cancels it and keeps what finished."""
        from .interrupt import run_interruptibly
        from .pipeline import tritonize

        state = "failed"
        try:
            result, interrupted = run_interruptibly(
                lambda cancel: tritonize(
                    task,
                    generator,
                    options,
                    verifier=self._verifier(options.verify, progress),
                    on_event=progress.event,
                    cancel=cancel,
                ),
                on_interrupt=lambda: progress.note(
                    "interrupted: finishing the current step and keeping what is done"
                ),
            )
            state = "cancelled" if interrupted else "done"
        except (TaskError, GenerationError, StoreError) as e:
            _error(str(e))
            return None
        finally:
            progress.close(state)
        return result

    @staticmethod
    def _verifier(vo: Any, progress: Any) -> Any:
        """The kernel session's warm verifier (verify/session.py), seen with this cell's options."""
        from .pipeline import PipelineEvent
        from .verify import session

        if session.starting():
            progress.event(PipelineEvent("verifying", "waiting for the verifier started at %load_ext"))
        return session.get(vo, on_event=lambda m: progress.event(PipelineEvent("verifying", m)))

    def _show(
        self, args: Any, task: Any, result: Any, retry: Any, verify_options: Any = None
    ) -> None:
        from .ui.widget import ResultView, insert_cell

        ids: list[int] = []
        task_id = None
        try:
            with Store(self.library or None) as store:
                task_id, ids = store.save_result(task.name, task.source, result)
        except StoreError as e:
            _error(f"the candidates could not be stored: {e}")
        name = args.name or f"{args.module or 'Model'}Triton"
        view = ResultView(
            result,
            task,
            user_ns=self.shell.user_ns,
            name=name,
            library=self.library or None,
            task_id=task_id,
            candidate_ids=ids,
            on_retry=retry,
            set_next_input=lambda code: self.shell.set_next_input(code),
            insert_cell=insert_cell if getattr(self.shell, "kernel", None) is not None else None,
            verify_options=verify_options,
        )
        self.last_view = view
        # A display id, so the static copy saved with the notebook follows Accept.
        view.display_handle = display(view.mimebundle(), raw=True, display_id=True)


def _usable(o: Any) -> str:
    """' (not usable here: needs ...)' for a model that cannot run, else ''."""
    from .model.registry import resolve

    try:
        spec = resolve(o.name, o)
    except GenerationError as e:
        return f" (unknown: {e})"
    if spec.available:
        return ""
    return f" (not usable here: needs {spec.needs}; `%autotriton models` lists the usable ones)"


def start_verifier() -> None:
    """At %load_ext: start the session's verifier in the background ([verify] warm_start)."""
    from .config import load
    from .verify import VerifyOptions, session

    try:
        vo = load("verify", VerifyOptions())
    except ConfigError:
        return  # the first cell shows the config's problem
    if vo.warm_start:
        session.start(vo)


def _verifier_state() -> str:
    from .verify import session

    if session.starting():
        return "starting in the background"
    v = session.current()
    if v is not None and v.pool_alive():
        return f"warm on {v.device} ({'sandboxed' if v.pool.sandboxed else 'not sandboxed'})"
    err = session.start_error()
    if err is not None:
        return f"its background start failed ({err}); the next cell tries again"
    return "not started (the next cell starts it)"


def kernel_state() -> str:
    """What the JupyterLab panel shows about this kernel, as a JSON string (read through a
    silent execute's user_expressions): whether the magics are loaded, the configured
    model and adapter, and the models this process has already loaded."""
    import json

    from IPython import get_ipython

    from .config import load
    from .model.registry import ModelOptions

    ip = get_ipython()
    magics = ip.magics_manager.registry.get("AutotritonMagics") if ip is not None else None
    state: dict[str, Any] = {"extension_loaded": magics is not None, "busy": False}
    try:
        options = load("model", ModelOptions())
    except ConfigError as e:
        options = ModelOptions()
        state["error"] = str(e)
    state["model"] = (magics.model if magics is not None else "") or options.name
    state["adapter"] = options.adapter
    # The registry's cache is looked at only if something already imported it: no import here.
    registry = sys.modules.get("autotriton_jupyter.model.registry")
    state["loaded"] = registry.loaded_names() if registry is not None else []
    return json.dumps(state)
