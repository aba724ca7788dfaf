"""What the batch system says of a run's worker jobs: a submission refused, a job that ends before any worker joins.

A run on ``--cluster slurm|pbs`` cannot go on when the batch system will never give it a worker (no
``sbatch``, a controller down, every job gone from the queue with none of its workers joining). The
watch tells that from dask-jobqueue's own job objects and the batch system's ``squeue``/``qstat``, and
stops the run in one line (:class:`BatchSystemError`) instead of waiting for a worker for ever. A
pending job is never a failure: clusters queue for hours.
"""

from __future__ import annotations

import _thread
import asyncio
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distributed.core import Status
from distributed.diagnostics.plugin import SchedulerPlugin

from ..errors import BatchSystemError, ClusterError
from ..types import ClusterKind

__all__ = ["JOBQUEUE_FIELDS", "JobWatch", "jobqueue_classes", "jobqueue_settings", "watched_job_class"]

if TYPE_CHECKING:
    from dask_jobqueue import JobQueueCluster

Kind = ClusterKind
_SUBMIT_COMMAND = {"slurm": "sbatch", "pbs": "qsub"}
# The fields that are dask-jobqueue's own (its keys, with underscores): a file's null or missing value takes dask's
# config jobqueue.<kind>, so a site's dask-jobqueue settings serve rmtsweep too and the two never disagree.
JOBQUEUE_FIELDS = ("queue", "account", "cores", "memory", "processes", "walltime", "interface", "python",
                   "local_directory", "log_directory", "job_script_prologue", "job_extra_directives")


def jobqueue_classes(kind: Kind) -> tuple[type, type]:
    """dask-jobqueue's cluster and job classes of ``kind``; a :class:`ClusterError` if it is not installed."""
    previous = signal.getsignal(signal.SIGINT)
    try:
        import dask_jobqueue as djq
    except ImportError:
        raise ClusterError("dask-jobqueue is not installed: pip install 'rmtsweep[cluster]'") from None
    finally:
        # dask_jobqueue.runner sets SIGINT to sys.exit() when first imported (0.9): Ctrl-C would then exit 0
        # through chained tracebacks. Keep the handler this process had.
        if previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, previous)
    return {"slurm": (djq.SLURMCluster, djq.slurm.SLURMJob), "pbs": (djq.PBSCluster, djq.pbs.PBSJob)}[kind]


def jobqueue_settings(kind: Kind, over: dict[str, Any] | None = None) -> dict[str, Any]:
    """The values dask's config holds under ``jobqueue.<kind>`` for the :data:`JOBQUEUE_FIELDS` that ``over`` leaves
    null or out (null and empty values of dask's config left out too).

    That is dask-jobqueue's defaults, then the site's and the user's dask YAML files and ``DASK_JOBQUEUE__<KIND>__...``
    variables, as dask-jobqueue itself reads them.
    """
    over = over or {}
    import dask.config
    try:
        jobqueue_classes(kind)                  # dask-jobqueue adds its defaults to dask's config when imported
    except ClusterError:
        pass                                    # not installed: only the user's own jobqueue settings are there
    values = {name: dask.config.get(f"jobqueue.{kind}.{name}", default=None) for name in JOBQUEUE_FIELDS
              if over.get(name) is None}
    return {name: value for name, value in values.items() if value not in (None, "", [])}



# SLURM job states after which no worker can come (squeue %T); PBS: C (Torque) and F (PBS Pro) finished
_SLURM_ENDED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"}
_PBS_ENDED = {"C", "F"}
_GONE = "no longer in the queue"
_watched: dict[str, type] = {}


def watched_job_class(kind: Kind) -> type:
    """dask-jobqueue's job class of ``kind`` that keeps a failed submission's message instead of raising it.

    Raised, it would be logged as a traceback from inside the cluster's event loop and the run would wait
    for a worker forever; kept (``job.failure``), :class:`JobWatch` reports it in one line. The job then
    counts as submitted, with no job id, so adaptive scaling does not submit it again in a loop.
    ``job_states`` asks the batch system about jobs by id.
    """
    if kind not in _watched:
        _, job_cls = jobqueue_classes(kind)
        states = _slurm_states if kind == "slurm" else _pbs_states
        _watched[kind] = type(job_cls.__name__, (_Watched, job_cls),
                              {"kind": kind, "job_states": staticmethod(states)})
    return _watched[kind]


class _Watched:
    kind: Kind
    failure: str | None = None
    submit_command: str                                  # set by the dask-jobqueue Job it is mixed into

    async def start(self) -> None:
        try:
            await super().start()  # type: ignore[misc]  # a mixin: the Job class beside it has start()
        except (OSError, RuntimeError, ValueError) as exc:
            self.failure = _submission_failure(self.kind, self.submit_command.split()[0], exc)
            self.status = Status.running          # what awaiting a job asserts; it has no job id to cancel


def _submission_failure(kind: Kind, command: str, exc: Exception) -> str:
    """The batch system's own message, in one line."""
    if isinstance(exc, FileNotFoundError):
        return (f"{command}: command not found (run where the {kind} commands are, e.g. a login node, or use "
                "--scheduler)")
    if isinstance(exc, OSError):
        return f"{command}: {exc.strerror or exc}"
    text = str(exc)
    if isinstance(exc, RuntimeError) and "stderr:" in text:          # dask_jobqueue.core.Job._call
        code = re.search(r"Exit code: (-?\d+)", text)
        stderr = " ".join(text.rpartition("stderr:")[2].split())
        return stderr or f"{command} exited with status {code[1] if code else '?'} and no message"
    return f"{command}: {' '.join(text.split())}"                    # no job id in its output


async def _command(*args: str) -> tuple[int, str, str] | None:
    """Exit status, stdout and stderr of a batch command; None if it cannot run or does not finish (within the
    setting ``rmtsweep.batch-system.status-timeout``)."""
    from ..config import get
    try:
        proc = await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
    except OSError:
        return None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), float(get("batch-system.status-timeout")))
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return None
    assert proc.returncode is not None                    # communicate() waited for the exit
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


async def _slurm_states(ids: list[str]) -> dict[str, str]:
    """``{job id: state}`` from squeue (``"no longer in the queue"`` if it knows the id no more); {} if unknown."""
    answer = await _command("squeue", "--noheader", "--states=all", "--format=%i %T", f"--jobs={','.join(ids)}")
    if answer is None:
        return {}
    code, out, err = answer
    if code == 0:
        listed = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)
        return {i: listed.get(i, _GONE) for i in ids}
    if "Invalid job id" in err:             # squeue asked about one job it has forgotten
        if len(ids) == 1:
            return {ids[0]: _GONE}
        return {k: v for i in ids for k, v in (await _slurm_states([i])).items()}
    return {}                               # the controller did not answer: ask again later


async def _pbs_states(ids: list[str]) -> dict[str, str]:
    """``{job id: job_state}`` from ``qstat -f`` (ids as dask-jobqueue keeps them, the number); {} if unknown."""
    answer = await _command("qstat", "-f", *ids)
    if answer is None:
        return {}
    _, out, err = answer
    states, current = {}, None
    for line in out.splitlines():
        if m := re.match(r"\s*Job Id:\s*(\d+)", line):
            current = m[1]
        elif current and (m := re.match(r"\s*job_state\s*=\s*(\S+)", line)):
            states[current] = m[1]
    for line in err.splitlines():
        if m := re.search(r"Unknown Job Id (?:Error )?(\d+)|(\d+)\S* Job has finished", line):
            states[m[1] or m[2]] = _GONE
    return {i: states[i] for i in ids if i in states}


def _ended(kind: Kind, state: str) -> bool:
    return state == _GONE or state in (_SLURM_ENDED if kind == "slurm" else _PBS_ENDED)


class JobWatch:
    """Whether the batch system will ever give the run a worker, from dask-jobqueue's own job objects.

    The run cannot go on when no worker is connected and every job the cluster wants is lost: its
    submission failed (the job keeps the batch system's message), or it was submitted but has left the
    queue (or reached a final state) with no worker of it ever joining, which the batch system is asked
    about (squeue/qstat) every ``interval`` seconds (the cluster config's ``queue_poll``). A pending job
    is never lost: clusters queue for hours. While a worker is connected, or some job may still give one,
    a failed submission (a limit on jobs per user, say) is a note and the run goes on.

    :meth:`watching` waits for the first submission before it yields (so nothing is written when the
    batch system refuses it), then watches in a thread and stops the run by interrupting the main thread.
    """

    def __init__(self, cluster: JobQueueCluster, kind: Kind, log_directory: str | None = None,
                 notes: Callable[[str], None] = lambda line: None) -> None:
        self.cluster, self.kind, self.log_directory, self.notes = cluster, kind, log_directory, notes
        self.failure: str | None = None
        self._joined = _Joined()
        self._noted: set[str] = set()

    @contextmanager
    def watching(self, interval: float, submit_timeout: float | None = None) -> Iterator[JobWatch]:
        """Wait for the first submission, raise :class:`BatchSystemError` if the run cannot go on, then watch.

        ``interval``: seconds between two looks at the queue (the cluster config's ``queue_poll``);
        ``submit_timeout`` defaults to the setting ``rmtsweep.batch-system.submit-timeout``.
        """
        from ..config import get
        submit_timeout = float(get("batch-system.submit-timeout") if submit_timeout is None else submit_timeout)
        self.cluster.sync(self._plugin)
        failure = self.cluster.sync(self._first_submission, submit_timeout)
        if failure:
            raise BatchSystemError(failure)
        stop, lock = threading.Event(), threading.Lock()
        interrupt = threading.current_thread() is threading.main_thread()
        if interrupt:
            previous = signal.signal(signal.SIGINT, partial(self._on_sigint, signal.getsignal(signal.SIGINT)))

        def poll() -> None:
            while not stop.wait(interval):
                try:
                    failure = self.cluster.sync(self.check)
                except Exception:  # noqa: BLE001 - the cluster is closing, or the loop is busy: try again
                    continue
                with lock:
                    if failure and not stop.is_set():
                        self.failure = failure
                        if interrupt:
                            _interrupt_main()                   # a KeyboardInterrupt there, turned back below
                        return

        threading.Thread(target=poll, name="rmtsweep-job-watch", daemon=True).start()
        try:
            yield self
        except KeyboardInterrupt:
            if self.failure:
                raise BatchSystemError(self.failure) from None
            raise
        finally:
            with lock:
                stop.set()
            if interrupt:
                signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, previous: Any, signum: int, frame: Any) -> None:
        """SIGINT while watching: the watch's own (jobs lost), whatever this process does with SIGINT otherwise (a
        run started in the background of a script has it ignored, and would then wait for ever); else as before."""
        if self.failure is None and previous is signal.SIG_IGN:
            return
        if self.failure is None and callable(previous):
            previous(signum, frame)
            return
        raise KeyboardInterrupt                                # turned into the one line by :meth:`watching`

    async def _plugin(self) -> None:
        self._scheduler.add_plugin(self._joined, name="rmtsweep-joined")

    async def _first_submission(self, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while not (jobs := self._jobs()) or not all(j.job_id or j.failure for j in jobs):
            if time.monotonic() > deadline:
                command = _SUBMIT_COMMAND[self.kind]
                return (f"{self.kind} worker job not submitted: {command} did not return within {timeout:.0f} s; "
                        f"is the {self.kind} controller up?")
            await asyncio.sleep(0.1)
        return await self.check()

    @property
    def _scheduler(self) -> Any:
        """The cluster's scheduler, which is up while the cluster is watched."""
        assert self.cluster.scheduler is not None
        return self.cluster.scheduler

    def _jobs(self) -> list:
        spec = self.cluster.worker_spec                   # what adaptive scaling still wants
        return [job for name, job in list(self.cluster.workers.items()) if name in spec]

    async def check(self) -> str | None:
        """One line if the run cannot get a worker any more (see the class), else None."""
        jobs = self._jobs()
        refused = [f"{self.kind} worker job not submitted: {job.failure}" for job in jobs if job.failure]
        waiting = [job for job in jobs if job.job_id and not self._joined.had_worker(job.name)]
        asked = {job.job_id: job for job in waiting}
        lost = None
        if jobs and not self._scheduler.workers and len(refused) + len(waiting) == len(jobs):
            states = await type(jobs[0]).job_states(list(asked)) if asked else {}
            ended = [i for i in asked if i in states and _ended(self.kind, states[i])]
            wanted = {job.job_id for job in self._jobs() if job.job_id}
            if len(ended) == len(asked) and not self._scheduler.workers and set(asked) <= wanted:
                lost = refused[0] if refused else (
                    f"{self.kind} job {ended[0]} ended ({states[ended[0]]}) before any worker joined the "
                    f"scheduler; its output: {self._log(ended[0])}")
        for line in refused:
            if line != lost and line not in self._noted:
                self._noted.add(line)
                self.notes(f"{line}; the run goes on with the jobs it has")
        return lost

    def _log(self, job_id: str) -> str:
        where = Path(self.log_directory) if self.log_directory else Path.cwd()
        if self.kind == "slurm":
            name = f"rmtsweep-worker-{job_id}.err" if self.log_directory else f"slurm-{job_id}.out"
        else:
            name = f"rmtsweep-worker.o{job_id}"
        return str(where / name)


def _interrupt_main() -> None:
    """A real SIGINT to the main thread: it wakes a wait with no timeout (``as_completed``'s).

    ``_thread.interrupt_main()`` only marks the signal as arrived; a main thread blocked on a lock then never
    runs the handler (seen: a run waiting for its first task hung there for ever after its job left the queue).
    """
    if hasattr(signal, "pthread_kill"):
        ident = threading.main_thread().ident
        assert ident is not None                             # the main thread has started
        signal.pthread_kill(ident, signal.SIGINT)
    else:
        _thread.interrupt_main()


class _Joined(SchedulerPlugin):
    """The names of the workers that have joined the scheduler, ever."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def add_worker(self, scheduler: Any, worker: str) -> None:
        self.names.add(str(scheduler.workers[worker].name))

    def had_worker(self, job: str) -> bool:
        """Whether a worker of the job named ``job`` has joined (its workers: ``job``, or ``job-0``, ``job-1``, ...)."""
        return any(name == job or name.startswith(f"{job}-") for name in self.names)
