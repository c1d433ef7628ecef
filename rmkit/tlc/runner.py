"""Run TLC on a spec folder and return a typed :class:`TlcResult`.

Why it works this way:

* The source tree stays clean. TLC writes ``states/`` (and, depending on the release, trace
  files) next to the spec unless told otherwise, and a run in the same second as another one
  collides on the ``-metadir`` name. So each run copies the folder's ``.tla`` and ``.cfg`` files
  into a fresh temporary directory, runs TLC there with ``-metadir`` inside it, and deletes it
  afterwards; paths of the copy are mapped back to the spec folder in every message.
* TLC runs in ``-tool`` mode, whose framed messages are parsed by code (see
  :mod:`rmkit.tlc.messages`), and its output is streamed line by line so that progress reports
  reach the caller while TLC runs.
* Only what TLC 2.15 understands is passed: ``-workers N`` (no ``auto``), ``-deadlock`` to turn
  deadlock checking off (no ``CHECK_DEADLOCK`` in the cfg), ``-simulate -depth N -seed S``.
* A simulation without a violation never ends in 2.15 (there is no ``-num``), so ``timeout``
  ends it; that is a ``pass`` with ``complete=False``. A model check cut by ``timeout`` is an
  ``error``: an unfinished exhaustive search proves nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from rmkit.tlc.cfgfile import CfgNames, read_cfg_names
from rmkit.tlc.interpret import Interpreter
from rmkit.tlc.messages import MessageReader
from rmkit.tlc.result import (
    ERR_JAR_MISSING, ERR_JAVA_MISSING, ERR_SPEC_MISSING, ERROR, MODEL_CHECK, SIMULATE, ProgressUpdate, TlcError, TlcResult,
)
from rmkit.tlc.tools import JAVA_ADVICE, ToolMissing, find_jar, find_java

DEFAULT_JAVA_OPTS = ("-XX:+UseParallelGC", "-Dfile.encoding=UTF-8")
DEFAULT_MAX_TRACES = 100


def _error_result(kind: str, message: str, advice: str | None, module: str, config: str, mode: str) -> TlcResult:
    return TlcResult(verdict=ERROR, mode=mode, module=module, config=config,
                     error=TlcError(kind, message, advice=advice))


def build_command(java: str, jar: Path, module: str, cfg: str, meta: Path, *, workers: int = 1,
                  simulate_depth: int | None = None, seed: int | None = None, continue_after_violation: bool = False,
                  deadlock_check: bool = True, extra_args: Iterable[str] = (), java_opts: Iterable[str] = (),
                  tmpdir: Path | None = None, simulate_traces: int | None = None) -> list[str]:
    """The ``java ... tlc2.TLC ...`` command line (TLC 2.15 flags only)."""
    cmd = [java, *DEFAULT_JAVA_OPTS]
    if tmpdir is not None:
        cmd.append(f"-Djava.io.tmpdir={tmpdir}")
    cmd += [*java_opts, "-cp", str(jar), "tlc2.TLC", "-tool", "-workers", str(workers), "-metadir", str(meta),
            "-config", cfg]
    if not deadlock_check:
        cmd.append("-deadlock")
    if simulate_depth is not None:
        cmd.append("-simulate")
        if simulate_traces is not None:  # (TLC 2.15 reads ``num=N`` right after -simulate)
            cmd.append(f"num={simulate_traces}")
        cmd += ["-depth", str(simulate_depth)]
        if seed is not None:
            cmd += ["-seed", str(seed)]
    if continue_after_violation:
        cmd.append("-continue")
    cmd += [*extra_args, module]
    return cmd


def run_tlc(spec_dir: str | os.PathLike, module: str, cfg: str | os.PathLike | None = None, *, workers: int = 1,
            simulate_depth: int | None = None, seed: int | None = None, continue_after_violation: bool = False,
            deadlock_check: bool = True, extra_args: Iterable[str] = (),
            progress: Callable[[ProgressUpdate], None] | None = None, timeout: float | None = None,
            java_opts: Iterable[str] = (), java: str | os.PathLike | None = None,
            max_traces: int | None = DEFAULT_MAX_TRACES, on_line: Callable[[str], None] | None = None,
            simulate_traces: int | None = None) -> TlcResult:
    """Model-check (or, with ``simulate_depth``, simulate) ``module`` of ``spec_dir`` with ``cfg``.

    ``cfg`` is a file name in ``spec_dir`` or a path (default ``<module>.cfg``). ``deadlock_check=False``
    passes ``-deadlock``. ``seed`` applies to simulation only, and so does ``simulate_traces``: TLC
    stops after that many behaviours (with a seed and one worker, the same behaviours every run),
    else it simulates until ``timeout``. With ``continue_after_violation``
    TLC goes on after a violation and every counterexample is kept, up to ``max_traces`` (then
    rmkit stops TLC; ``None``: no cap). ``progress`` gets a :class:`ProgressUpdate` per TLC progress
    report; ``on_line`` every raw output line. ``java`` names the java executable (default:
    ``$JAVA_HOME/bin/java``, else ``java`` on PATH); ``java_opts`` go to the JVM (e.g. ``-Xmx8g``).
    Never raises for TLC's or the spec's problems: they come back as an ``error`` verdict.
    """
    spec_dir = Path(spec_dir)
    module = module[:-4] if module.endswith(".tla") else module
    mode = SIMULATE if simulate_depth is not None else MODEL_CHECK
    cfg_path = spec_dir / f"{module}.cfg" if cfg is None else Path(cfg) if Path(cfg).is_absolute() else spec_dir / cfg
    config = cfg_path.name
    if workers < 1:
        raise ValueError(f"workers: expected a number >= 1, found {workers}")
    if simulate_depth is not None and simulate_depth < 1:
        raise ValueError(f"simulate_depth: expected a number >= 1, found {simulate_depth}")
    if seed is not None and simulate_depth is None:
        raise ValueError("seed: applies to simulation only (give simulate_depth too)")
    if simulate_traces is not None and (simulate_depth is None or simulate_traces < 1):
        raise ValueError(f"simulate_traces: expected a number >= 1 with simulate_depth, found {simulate_traces}")

    if not (spec_dir / f"{module}.tla").is_file():
        return _error_result(ERR_SPEC_MISSING, f"module {module}: expected {spec_dir / (module + '.tla')}, found no such file",
                             "check the spec folder and the module name", module, config, mode)
    if not cfg_path.is_file():
        return _error_result(ERR_SPEC_MISSING, f"config {config}: expected {cfg_path}, found no such file",
                             "check the config name", module, config, mode)
    try:
        jar = find_jar()
        java_exe = find_java(java)
    except ToolMissing as exc:
        return _error_result(ERR_JAVA_MISSING if exc.kind == "java" else ERR_JAR_MISSING, exc.message, exc.advice,
                             module, config, mode)

    cfg_names = read_cfg_names(cfg_path.read_text(encoding="utf-8", errors="replace"))
    with tempfile.TemporaryDirectory(prefix="rmkit-tlc-") as tmp:
        work = Path(tmp) / "model"
        work.mkdir()
        for f in spec_dir.iterdir():
            if f.suffix in (".tla", ".cfg") and f.is_file():
                shutil.copy2(f, work / f.name)
        if cfg_path.parent.resolve() != spec_dir.resolve():
            shutil.copy2(cfg_path, work / config)
        (Path(tmp) / "java-tmp").mkdir()
        cmd = build_command(java_exe, jar, module, config, Path(tmp) / "meta", workers=workers,
                            simulate_depth=simulate_depth, seed=seed, continue_after_violation=continue_after_violation,
                            deadlock_check=deadlock_check, extra_args=extra_args, java_opts=java_opts,
                            tmpdir=Path(tmp) / "java-tmp", simulate_traces=simulate_traces)
        return _run(cmd, work, spec_dir, module=module, config=config, cfg_names=cfg_names, mode=mode,
                    progress=progress, timeout=timeout, max_traces=max_traces, on_line=on_line)


def _run(cmd: list[str], work: Path, spec_dir: Path, *, module: str, config: str, cfg_names: CfgNames, mode: str,
         progress, timeout: float | None, max_traces: int | None, on_line) -> TlcResult:
    started = time.monotonic()
    shown_cmd = [c.replace(str(work), str(spec_dir)) for c in cmd]
    interp = Interpreter(module=module, config=config, cfg_names=cfg_names, mode=mode, progress=progress,
                         clock=lambda: time.monotonic() - started)
    try:
        proc = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, encoding="utf-8", errors="replace", bufsize=1)
    except OSError as exc:
        return _error_result(ERR_JAVA_MISSING, f"cannot start {cmd[0]}: {exc.strerror or exc}", JAVA_ADVICE,
                             module, config, mode)
    stopped: list[str] = []

    def stop(reason: str) -> None:
        if proc.poll() is None and not stopped:
            stopped.append(reason)
            proc.terminate()

    timer = threading.Timer(timeout, stop, args=("timeout",)) if timeout else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    reader = MessageReader()
    output: list[str] = []
    # TLC 2.15 unpacks its standard modules into java.io.tmpdir and names them in its output
    std_s, work_s, spec_s = str(work.parent / "java-tmp") + os.sep, str(work), str(spec_dir)
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n").replace(std_s, "").replace(work_s, spec_s)
            output.append(line)
            if on_line is not None:
                on_line(line)
            for item in reader.feed(line):
                interp.handle(item)
            if max_traces is not None and interp.violations > max_traces:
                stop("max-traces")  # the next violation started: the first max_traces are complete
        exit_code = proc.wait()
    finally:
        if timer is not None:
            timer.cancel()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for msg in reader.close():
        interp.handle(msg)
    if max_traces is not None:
        del interp.counterexamples[max_traces:]
    return interp.finish(exit_code=exit_code, seconds=time.monotonic() - started, stopped=stopped[0] if stopped else None,
                         timeout=timeout, command=shown_cmd, output=output)
