"""Helpers the sweep tests share: configurations that fail only when they
run (the sweep's up-front check accepts them), to exercise error rows."""

from __future__ import annotations

from flowemu.core.errors import ConfigError

#: what such a configuration fails with: the memory a run needs is checked
#: when it runs, against its worker's share of the machine
NO_MEMORY = "max_memory: the run needs more than the limit"


def fail_when_run(monkeypatch, victim) -> None:
    """Make each configuration ``victim(cfg)`` is true of raise
    :data:`NO_MEMORY` when it runs; the pool's workers are forked, so they
    inherit the patch."""
    from flowemu.study.sweep import executor
    real = executor.config_rows   # what a worker runs for each configuration

    def config_rows(cfg, threads=None, max_memory=None):
        if victim(cfg):
            raise ConfigError(NO_MEMORY)
        return real(cfg, threads, max_memory)

    monkeypatch.setattr(executor, "config_rows", config_rows)
