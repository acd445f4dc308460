"""tritonize(task, generator, options) -> Result: sample, extract, verify, rank, repair (UI-free).

Events tell a front end what is happening; the Result is plain data that the CLI, the
magic, the widget and the store all share.

Length: the sample-verify-rank loop with its repair, speed and tuning rounds, which
share the ranking and the events.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, InvalidStateError, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ..config import RANK_FIGURES, TritonizeOptions
from ..model.extract import extract
from ..model.generator import Cancel, Chat, Event, Generator
from ..model.prompts import repair_chat, speed_chat, task_chat
from ..task import Candidate, Task
from ..verify import Report, Verifier
from ..verify.judge import Interrupted
from ..verify.report import FAIL, INCONCLUSIVE
from .attempt import Attempt, Result, rank_key, speedups


@dataclass
class PipelineEvent:
    """kind: generating, token, extracted, verifying, verified, repairing, speeding, tuning, done."""

    kind: str
    message: str = ""
    sample: int = -1
    round: int = 0
    data: dict[str, Any] = field(default_factory=dict)


def _no_code_report(problem: str) -> Report:
    r = Report()
    r.add("extraction", FAIL, problem)
    return r.finish()


def tritonize(
    task: Task,
    generator: Generator,
    options: TritonizeOptions | None = None,
    verifier: Verifier | None = None,
    on_event: Callable[[PipelineEvent], None] | None = None,
    cancel: Cancel | None = None,
) -> Result:
    """Sample n candidates, verify them, and repair failures for up to `rounds` more rounds."""
    o = options or TritonizeOptions()
    tell = on_event or (lambda _e: None)
    tuning: dict[str, Any] = {}

    def emit(e: PipelineEvent) -> None:
        if e.kind == "tuning" and "tuning" in e.data:  # what the tuning pass did, for Result
            tuning.clear()
            tuning.update(e.data["tuning"])
        tell(e)

    cancel = cancel or Cancel()
    own = verifier is None
    v = verifier or Verifier(o.verify, on_event=lambda m: emit(PipelineEvent("verifying", m)))
    t0 = time.perf_counter()
    results: list[Attempt] = []
    judged: dict[str, _Judging] = {}  # each code judged once in this call (_Judging)
    try:
        chat = task_chat(task.source, o.class_name)
        chats = [chat]
        for rnd in range(o.rounds + 1):
            if cancel.cancelled:
                break
            emit(
                PipelineEvent(
                    "generating",
                    f"round {rnd + 1}: sampling {o.n} candidate{'' if o.n == 1 else 's'}"
                    if rnd == 0
                    else f"round {rnd + 1}: repairing {len(chats)} candidates",
                    round=rnd,
                )
            )
            batch = _sample(
                v, task, generator, chats, o.n if rnd == 0 else 1, rnd, o, emit, cancel, judged
            )
            results.extend(batch)
            if any(b.passed for b in batch) or rnd == o.rounds:
                break
            # Repair: send each failed candidate's reasons back to the model.
            failed = sorted(batch, key=lambda c: rank_key(c, o.rank_by))[: o.n]
            chats = [
                repair_chat(
                    chats[0] if rnd == 0 else chat,
                    b.completion,
                    [f"{x['check']}: {x['message']}" for x in b.report.reasons],
                )
                for b in failed
                if b.report is not None
            ]
            emit(
                PipelineEvent(
                    "repairing",
                    f"{len(chats)} candidates go back with the verifier's reasons",
                    round=rnd + 1,
                )
            )
        _speed_rounds(v, task, generator, results, o, emit, cancel, judged)
        if o.tune and not cancel.cancelled:
            tuned = _tune_best(v, task, results, o, emit)
            if tuned is not None:
                results.append(tuned)
    finally:
        if own:
            v.close()
    results.sort(key=lambda c: rank_key(c, o.rank_by))
    res = Result(
        task.name,
        getattr(generator, "name", "model"),
        results,
        cancel.cancelled,
        time.perf_counter() - t0,
        getattr(generator, "adapter", None),
        o.rank_by,
        tuning or None,
    )
    emit(PipelineEvent("done", "a candidate passed" if res.best else "no candidate passed"))
    return res


def _sample(
    v: Verifier,
    task: Task,
    generator: Generator,
    chats: list[Chat],
    per_chat: int,
    rnd: int,
    o: TritonizeOptions,
    emit: Callable[[PipelineEvent], None],
    cancel: Cancel,
    judged: dict[str, _Judging],
) -> list[Attempt]:
    """One round: per_chat samples of each chat, each verified as soon as its code is complete
    (a code judged before in this call is not judged again: `judged`)."""

    def on_token(e: Event) -> None:
        emit(PipelineEvent("token", sample=e.sample, round=rnd, data={"event": e}))

    overlap = _Overlap(v, task, rnd, per_chat, emit, cancel, judged)
    try:
        completions = generator.generate(
            chats, per_chat, o.params, on_event=overlap.watch(on_token), cancel=overlap.cancel
        )
        batch = [
            Attempt.from_completion(c, chats[c.chat], rnd, i) for i, c in enumerate(completions)
        ]
        for b in batch:
            emit(PipelineEvent("extracted", "code extracted" if b.code else b.problem or "no code", sample=b.sample, round=rnd))
        overlap.finish(batch)
    finally:
        overlap.close()
    for b in batch:
        if b.report is None and b.code:
            b.report = Report()  # no verdict on the code: inconclusive, not a failed check
            b.report.add("judging", INCONCLUSIVE, "The run was interrupted before this sample was judged.")
            b.report.finish()
        elif b.report is None:
            b.report = _no_code_report(b.problem or "no code was extracted")
    return batch


def _speed_rounds(
    v: Verifier,
    task: Task,
    generator: Generator,
    results: list[Attempt],
    o: TritonizeOptions,
    emit: Callable[[PipelineEvent], None],
    cancel: Cancel,
    judged: dict[str, _Judging],
) -> None:
    """While the best passing candidate is slower than torch.compile, send it back with its
    timing table and a request for a faster kernel (up to o.speed_rounds rounds)."""
    for k in range(o.speed_rounds):
        if cancel.cancelled:
            return
        timed = [
            c for c in results
            if c.passed and c.report and (c.report.timing or {}).get("speedup_vs_compile")
        ]
        if not timed:
            emit(PipelineEvent("speeding", "speed round skipped: no passing candidate was timed "
                               "against torch.compile (it needs a GPU)"))
            return
        best = min(timed, key=lambda c: rank_key(c, o.rank_by))
        assert best.report is not None and best.report.timing is not None
        x = speedups(best.report.timing, o.rank_by)[0] or 0.0
        figure = RANK_FIGURES.get(o.rank_by, o.rank_by)
        if x >= 1.0:
            if k:
                emit(PipelineEvent("speeding", f"the best candidate is now {x:.2f}x torch.compile ({figure})"))
            return
        rnd = max(c.round for c in results) + 1
        emit(
            PipelineEvent(
                "speeding",
                f"speed round {k + 1}: the best candidate ({x:.2f}x torch.compile, {figure}) goes back "
                f"with its timing; sampling {o.n}",
                round=rnd,
            )
        )
        chats = [speed_chat(best.chat, best.completion, best.report.timing)]
        results.extend(_sample(v, task, generator, chats, o.n, rnd, o, emit, cancel, judged))


def _tune_best(
    v: Verifier,
    task: Task,
    results: list[Attempt],
    o: TritonizeOptions,
    emit: Callable[[PipelineEvent], None],
) -> Attempt | None:
    """The tuning pass over the best passing, timed candidate: its best verified variant as
    a candidate of its own (ranked with the others), or None."""
    from ..tuning import Tuning, tune

    timed = [
        c for c in results if c.passed and c.code and (c.report and (c.report.timing or {}).get("candidate_ms"))
    ]
    if not timed:
        why = (
            "no candidate passed"
            if not any(c.passed for c in results)
            else "timing was off (--no-timing)"
            if not o.verify.timing
            else "no passing candidate was timed (timing needs a GPU)"
        )
        skipped = Tuning(None, skipped=why, figure=RANK_FIGURES[o.rank_by])  # the shape of a pass that ran
        emit(PipelineEvent("tuning", f"tuning: nothing to tune: {why}", data={"tuning": skipped.to_dict()}))
        return None
    best = min(timed, key=lambda c: rank_key(c, o.rank_by))
    assert best.code is not None and best.report is not None
    label = f"round {best.round + 1}, sample {best.sample + 1}"
    got = tune(
        Candidate(best.code, label),
        best.report,
        lambda cands: v.verify_many(task, cands),
        o.tune_variants,
        on_event=lambda m: emit(PipelineEvent("tuning", m)),
        budget_s=o.tune_budget_s,
        rank_by=o.rank_by,
    )
    emit(PipelineEvent("tuning", got.summary(), data={"tuning": got.to_dict()}))
    if got.suspect:  # the same code, caught cheating with other launch parameters
        for c in results:  # and every sample that wrote it (judged once: _Judging)
            if c.code == best.code and c.report is not None:  # (no tuned attempt is here yet)
                c.report.add("tuning_integrity", FAIL, got.suspect)
                c.report.finish(o.verify.strict)
        return None
    if got.best is None or got.best.report is None:
        return None
    report = got.best.report
    report.notes.append(
        f"the tuning pass made this from {label} ({got.best.variant.describe()}); "
        f"{got.original_ms:.4f} ms there, {got.best.ms:.4f} ms here ({got.figure})"
    )
    return Attempt(
        best.round,
        best.sample,
        best.prompt,
        best.completion,
        best.finish_reason,
        0,
        0.0,
        got.best.variant.source,
        None,
        report,
        list(best.chat),
        tuned=got.best.variant.describe(),
    )


# Failures that may come from the machine rather than the code (a worker out of time under
# load, one that could not start, one lost with its fork server): not copied to a later sample.
_NOT_THE_CODES = frozenset({"timeout", "start", "lost"})


def _machine_failed(r: Report) -> bool:
    return any(c.name in _NOT_THE_CODES for c in r.blocking())


def _quietly(tell: Callable[[Any], None], what: Any) -> None:
    """Tell a front end something; its error is logged, not raised into the judging."""
    try:
        tell(what)
    except Exception:
        logging.getLogger(__name__).exception("a pipeline event could not be delivered")


class _Judging:
    """One code's judging, shared by every sample of a tritonize call that wrote the same
    code, character for character (models often do: a short task at a low temperature).
    It is judged once, for the first of them; the others get a copy of its report, and
    its first verdict and its verdict as they come. Only the exact text counts: code that
    differs in a comment alone could read its own source and behave otherwise."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.future: Future = Future()  # replaced by the judging's own before anyone follows
        self.lock = threading.Lock()
        self.checked: str | None = None  # the first verdict's message, once it came
        self.others: list[Callable[[str], None]] = []  # the other samples' "checked" events

    def on_checked(self, message: str) -> None:
        with self.lock:
            self.checked = message
            others = list(self.others)
        for tell in others:
            _quietly(tell, message)  # a front end's error is not the candidate's

    def reusable(self) -> bool:
        """Whether another sample may take this judging's report: not when it was cancelled,
        nor when it failed in a way that may not be the code's (a worker that ran out of
        time under load, or could not start, or was lost with its fork server)."""
        f = self.future
        if _stopped(f):
            return False
        if not f.done() or f.exception() is not None:
            return True
        return not _machine_failed(f.result())

    def follow(
        self,
        tell_checked: Callable[[str], None],
        copy_of: Callable[[Report], Report],
        tell_verified: Callable[[Report], None],
    ) -> Future:
        """Another sample with this code: its report, a copy of the first's, as a Future;
        its events are told as the first's come (the verdict once the Future has it)."""
        with self.lock:
            self.others.append(tell_checked)
            checked = self.checked
        if checked is not None:
            _quietly(tell_checked, checked)
        mine: Future = Future()

        def done(f: Future) -> None:
            try:
                if f.cancelled():
                    mine.cancel()
                    return
                if f.exception() is not None:
                    mine.set_exception(f.exception())
                    return
                try:
                    rep = copy_of(f.result())
                except BaseException as e:
                    mine.set_exception(e)
                    return
                mine.set_result(rep)
            except InvalidStateError:  # cancelled by an interrupted run meanwhile
                return
            _quietly(tell_verified, rep)

        self.future.add_done_callback(done)
        return mine


class _Overlap:
    """Verification overlapped with generation, for one round.

    The reference is prepared while the model generates. Each sample's code is judged
    as soon as that sample is complete, while others are still generating: correctness
    at once (the first verdict, a "checked" event), timing only once generation is
    over, so the decoding model does not disturb the timer. A reference that cannot
    run stops generation (its error is raised), since no candidate could be judged.
    A code judged before in this tritonize call is not judged again (_Judging).
    """

    def __init__(
        self,
        v: Verifier,
        task: Task,
        rnd: int,
        per_chat: int,
        emit: Callable[[PipelineEvent], None],
        user_cancel: Cancel,
        judged: dict[str, _Judging],
    ) -> None:
        self.v, self.task, self.rnd, self.per_chat, self.emit = v, task, rnd, per_chat, emit
        self.user_cancel = user_cancel
        self.judged = judged
        self.cancel = _EitherCancel(user_cancel)
        self.generating = threading.Event()  # set once generation is over: timing may start
        self.early: dict[int, tuple[str, Future]] = {}
        self.own: list[Future] = []  # the judgings this round started (not the copies)
        self.copies: set[int] = set()  # the samples given a copy of another's judging
        # As many candidates at once as the verifier runs in parallel (and the reference).
        self.pool = ThreadPoolExecutor(v.parallel + 1, thread_name_prefix="autotriton-verify")
        self.reference = self.pool.submit(self._prepare)

    def _prepare(self) -> None:
        try:
            self.v.prepare(self.task)
        except BaseException:
            self.cancel.stop()  # nothing can be judged: stop generating
            raise

    def watch(self, on_token: Callable[[Event], None]) -> Callable[[Event], None]:
        def sink(e: Event) -> None:
            on_token(e)
            if e.kind == "done" and e.sample >= 0 and e.text and not self.cancel.cancelled:
                i = e.chat * self.per_chat + e.sample
                ex = extract(e.text, e.message or "stop")
                if ex.code and i not in self.early:
                    self.early[i] = (ex.code, self._submit(i, ex.code))

        return sink

    def _name(self, i: int) -> str:
        return f"round{self.rnd + 1}-sample{i + 1}"

    def _submit(self, i: int, code: str) -> Future:
        """Sample i's report to come: judged now, or a copy of the same code's judging."""
        first = self.judged.get(code)
        if first is None or not first.reusable():
            judging = _Judging(self._name(i))
            judging.future = self.pool.submit(self._verify, i, code, judging)
            self.judged[code] = judging
            self.own.append(judging.future)
            return judging.future
        name = self._name(i)
        self.copies.add(i)

        def checked(message: str) -> None:
            self.emit(PipelineEvent("checked", message, sample=i, round=self.rnd))

        def copy_of(rep: Report) -> Report:
            mine = copy.deepcopy(rep)
            mine.candidate = name
            mine.notes.append(
                f"the same code as {first.name}, character for character: judged once, and "
                "this is that judging's report"
            )
            return mine

        def verified(rep: Report) -> None:
            self.emit(
                PipelineEvent(
                    "verified", rep.verdict, sample=i, round=self.rnd, data={"report": rep.to_dict()}
                )
            )

        return first.follow(checked, copy_of, verified)

    def _verify(self, i: int, code: str, judging: _Judging) -> Report:
        self.reference.result()  # its error, if any, is raised to finish()

        def checked(r: Report) -> bool:
            message = (
                "correct; timing once generation is over"
                if not self.generating.is_set()
                else "correct; timing"
            )
            # Inside the judge: a front end's error must not read as the worker's.
            _quietly(self.emit, PipelineEvent("checked", message, sample=i, round=self.rnd))
            judging.on_checked(message)  # and to the samples that wrote the same code
            self.generating.wait()
            return not self.user_cancel.cancelled  # an interrupted run is not timed

        # An interrupt before its first verdict raises Interrupted: no verdict, no event.
        rep = self.v.verify(self.task, Candidate(code, self._name(i)), before_timing=checked)
        _quietly(  # as for the samples that share this judging
            self.emit,
            PipelineEvent("verified", rep.verdict, sample=i, round=self.rnd, data={"report": rep.to_dict()}),
        )
        return rep

    def finish(self, batch: list[Attempt]) -> None:
        """Reports for every sample with code: judged early when its code is the same."""
        self.generating.set()
        self.reference.result()  # a broken reference is the caller's error
        if self.user_cancel.cancelled:
            for fut in self.own:  # what already started is kept (and so are its copies)
                fut.cancel()
        futures = {}
        for b in batch:
            if not b.code:
                continue
            code, fut = self.early.get(b.sample, (None, None))
            if fut is not None and code == b.code and not fut.cancelled():
                futures[b.sample] = fut
            elif not self.user_cancel.cancelled:
                futures[b.sample] = self._submit(b.sample, b.code)
        stopped = self._await(futures.values())
        for b in batch:
            if b.sample in futures and futures[b.sample] not in stopped:
                b.report = futures[b.sample].result()
        # A copy of a judging that failed through the machine: judged once more, for all of
        # this round's samples with that code (the first of them judged, the others copies).
        again = {
            b.sample: self._submit(b.sample, b.code)
            for b in batch
            if b.sample in self.copies and b.report is not None and _machine_failed(b.report)
            and not self.user_cancel.cancelled
        }
        stopped = self._await(again.values())
        for b in batch:
            if b.sample in again:  # (stopped: the copy it had is no verdict either)
                b.report = None if again[b.sample] in stopped else again[b.sample].result()

    def _await(self, futures: Iterable[Future]) -> set[Future]:
        """Wait for these judgings. An interrupt meanwhile stops the candidates still being
        checked for correctness (their workers are killed, and one not begun is not begun);
        the judgings so stopped are returned: they give no verdict (their samples are marked
        interrupted). One whose correctness was judged finishes, untimed."""
        pending = [f for f in futures if not f.done()]
        while pending:
            if self.user_cancel.cancelled:
                for f in pending:
                    if f in self.own:  # (a copy's Future follows its judging's)
                        f.cancel()
                # Each pass: a judging whose verify began since (it waited for the
                # reference) is stopped too.
                self.v.interrupt()
            # (A Future cancelled by hand is done() but never ends a wait(): the timeout.)
            wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            pending = [f for f in pending if not f.done()]
        return {f for f in futures if _stopped(f)}

    def close(self) -> None:
        self.generating.set()
        self.pool.shutdown(wait=True, cancel_futures=True)


def _stopped(f: Future) -> bool:
    """A judging cancelled before it began, or stopped by an interrupt (no verdict)."""
    return f.done() and (f.cancelled() or isinstance(f.exception(), Interrupted))


class _EitherCancel(Cancel):
    """The user's Cancel, or a stop of our own (a reference that cannot run)."""

    def __init__(self, user: Cancel) -> None:
        super().__init__()
        self.user = user

    def stop(self) -> None:
        super().set()

    def set(self) -> None:
        self.user.set()

    @property
    def cancelled(self) -> bool:
        return self.user.cancelled or self._flag.is_set()
