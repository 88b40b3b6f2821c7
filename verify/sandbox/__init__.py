"""Code from the checkpoint (answer templates, callable traits) runs here: in worker processes
that are killed when a call overruns its time limit, so one stalled answer fails only its own
trait or task.

Modules: ``pool`` (the worker processes: start, time limit, kill and replace, shutdown at exit),
``worker`` (what a worker runs: the template compiler, the template's methods, callable traits),
``calls`` (the typed calls the stages make). Regex patterns do not need a process: they run off
the event loop under the ``regex`` package's timeout (``judging.deterministic``, ``templates.answer_base``).
"""
