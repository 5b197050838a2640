"""The one LLM-stage scaffold (runtime/scaffold.py): which LLMs a job runs on, for every backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragassay.errors import UsageError
from ragassay.llm import LLMConfig, LLMError
from ragassay.runtime.engine import Estimate
from ragassay.runtime.scaffold import Backend, StageJob, StageOutcome, run_llm_stage


class RecordingJob(StageJob[int]):
    """A job that records the LLMs each round ran on and says how many items wait."""

    def __init__(self, config: LLMConfig, output: Path, rules_without_endpoint: bool = False, waiting: int = 0):
        self.configs, self.output = [config], output
        self.rules_without_endpoint, self.waiting = rules_without_endpoint, waiting
        self.rounds: list[list] = []

    def estimate(self) -> Estimate:
        return Estimate(items=3, calls=2)

    async def execute(self, llms) -> int:
        self.rounds.append(list(llms))
        return len(llms)

    def pending(self, result: int) -> int:
        return self.waiting


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGASSAY_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_a_dry_run_is_the_jobs_estimate_shaped_for_the_backend(tmp_path):
    job = RecordingJob(LLMConfig(model="m"), tmp_path / "out.jsonl")
    live = run_llm_stage(job, dry_run=True)
    batch = run_llm_stage(job, Backend("batch"), dry_run=True)
    assert (live.calls, live.batch, batch.batch) == (2, False, True)
    assert job.rounds == []  # nothing ran, and no endpoint was needed


def test_no_endpoint_means_rules_only_for_a_stage_that_has_rules_and_an_error_for_one_that_has_not(tmp_path):
    rules = RecordingJob(LLMConfig(model="m"), tmp_path / "a.jsonl", rules_without_endpoint=True)
    outcome = run_llm_stage(rules)
    assert isinstance(outcome, StageOutcome) and outcome.result == 0 and rules.rounds == [[]] and outcome.usage == {}
    with pytest.raises(LLMError, match="no LLM endpoint configured"):
        run_llm_stage(RecordingJob(LLMConfig(model="m"), tmp_path / "b.jsonl"))
    with pytest.raises(LLMError, match="has no scheme"):  # a bad setting is never taken for "no endpoint"
        run_llm_stage(
            RecordingJob(
                LLMConfig(model="m", base_url="localhost:8000/v1"), tmp_path / "c.jsonl", rules_without_endpoint=True
            )
        )


def test_live_runs_on_one_client_per_config_and_reports_its_usage(tmp_path):
    job = RecordingJob(LLMConfig(model="m", base_url="http://127.0.0.1:9/v1", use_cache=False), tmp_path / "o.jsonl")
    outcome = run_llm_stage(job)
    (llms,) = job.rounds
    assert outcome.result == 1 and [x.config.model for x in llms] == ["m"] and llms[0].batch is None
    assert outcome.usage_numbers()["m"]["calls"] == 0 and outcome.batch_note == ""


def test_export_requests_needs_no_endpoint_and_says_when_there_is_nothing_to_export(tmp_path):
    job = RecordingJob(LLMConfig(model="m", use_cache=False), tmp_path / "o.jsonl", waiting=0)
    outcome = run_llm_stage(job, Backend(export_requests=tmp_path / "req.jsonl"))
    (llms,) = job.rounds
    assert llms[0].batch is not None and llms[0].batch.collect  # an offline client collecting requests
    assert outcome.batch_note.startswith("no calls left to export") and not (tmp_path / "req.jsonl").exists()


def test_the_batch_backend_refuses_batch_files_before_anything_runs(tmp_path):
    job = RecordingJob(LLMConfig(model="m"), tmp_path / "o.jsonl")
    with pytest.raises(UsageError, match="--backend batch sends the batches itself"):
        run_llm_stage(job, Backend("batch", export_requests="r.jsonl"), dry_run=True)
    assert job.rounds == []
