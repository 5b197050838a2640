"""What every test shares: ``async def`` tests run with asyncio.run (a few lines instead of another
plugin dependency), a private cache folder, the markers set by file (MARKS), the CLI runner fixture and
the wheel built once.

The tests live in folders by kind:

- ``unit/``: one process, no server; functions and in-process commands, seconds in all (the subset a
  developer runs every minute: ``python -m pytest tests/unit``);
- ``properties/``: property-based and adversarial checks over many generated inputs (hypothesis, every
  block boundary, both file readers), slow by design;
- ``peers/``: values and files checked against another tool (trec_eval through pytrec_eval, ir_measures,
  gdeval, ranx, the files ragas, DeepEval and LlamaIndex write);
- ``integration/``: the fake model's local server, child processes, the browser, the built wheel;
- ``documents/``: what the README, the docstrings, the docs' tables and the house rules promise."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import inspect
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import bytecode_prefix

# Where PYTHONDONTWRITEBYTECODE is set (as on the shared test machine), bytecode goes to a folder outside the
# checkout instead of nowhere: bytecode_prefix says why, and how the folder is seeded and kept tidy.
if sys.dont_write_bytecode:
    bytecode_prefix.use()

# A suite started in the background of a script (`nohup ... &`) inherits SIGINT ignored, and so would every
# child: `ragassay label`, which the tests stop with Ctrl-C (SIGINT) as a person does, would never stop, and
# each such test would wait out its timeout. The tests' children get Ctrl-C back (an exec keeps SIG_IGN, not a
# handler): what they assert is how a command ends on Ctrl-C, not whether the shell let it through.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
        return True
    return None


import pytest  # noqa: E402


def pytest_configure(config):
    """Clients use httpx, the transport respx intercepts, for the whole session (set here, not with
    monkeypatch, so that a test's ``monkeypatch.undo()`` keeps it); a test served by the fake model
    (tests/fake_llm.py) runs on the default transport, aiohttp, which FakeLLM switches on while it
    serves."""
    os.environ["RAGASSAY_HTTP"] = "httpx"
    if getattr(config, "workerinput", None) is not None and config.getvalue("loadgroup"):
        config.pluginmanager.register(GroupSuffix(), "ragassay-xdist-group-suffix")


class GroupSuffix:
    """Puts a test's xdist_group name into its node id in an xdist worker, where pytest-xdist fails to.

    With ``--dist loadgroup`` the controller sends the tests whose node ids end in the same ``@group`` to one
    worker. pytest-xdist 3.8 writes that suffix into ``item._nodeid``, which pytest 9.2 no longer reads (a node
    keeps its id as a NodeId in ``item._id``), so no test had a group: the built wheel was built once per
    worker, and the chain of commands on real text (about 35 s) and ranx's compiled code were made again in
    each worker. This hook runs after xdist's (trylast) and adds the suffix only where it is still missing,
    so it does nothing on a pytest whose ids xdist can still change. Which worker runs a test changes
    nothing a test asserts."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        for item in items:
            names = sorted(
                {
                    str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")
                }
            )
            suffix = f"@{'_'.join(names)}"
            if names and not item.nodeid.endswith(suffix):  # an "@" in a parameter (ndcg@10) is not a group
                item._id = type(item._id).parse(item.nodeid + suffix)  # NodeId.parse


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """No test writes to the user's real cache (~/.cache/ragassay); and each test starts on httpx,
    whatever an earlier one left (see pytest_configure)."""
    os.environ["RAGASSAY_HTTP"] = "httpx"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(params=["numpy", "arrow"])
def parser(request, monkeypatch):
    """Run a test with each reader of TREC/TSV files: the numpy splitter and pyarrow's parser."""
    if request.param == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setenv("RAGASSAY_PARSER", request.param)
    from ragassay.data.column_reading import reader_path

    assert reader_path() == request.param
    return request.param


# What the wheel is built from: the checkout without what a build or a run leaves in it. setuptools reuses
# build/lib, so a module deleted or moved since the last build (runtime/engine.py became a package) would ship
# beside its replacement: the wheel is built from a copy without these.
WHEEL_SOURCE_IGNORE = shutil.ignore_patterns(
    "build",
    "dist",
    ".venv*",
    "*.egg-info",
    "__pycache__",
    ".git",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".import_linter_cache",
    "ragassay-demo",
    ".ragassay",
    "out",
)


def wheel_source_digest(root: Path) -> str:
    """A hash of every file the wheel is built from (the files shutil.copytree copies with
    WHEEL_SOURCE_IGNORE, by path and content) and of the Python that builds it, so that two processes share
    a wheel only when they would build the same one."""
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0".encode())
    for folder, dirs, files in os.walk(root):
        ignored = WHEEL_SOURCE_IGNORE(folder, dirs + files)
        dirs[:] = sorted(d for d in dirs if d not in ignored)
        for name in sorted(f for f in files if f not in ignored):
            path = Path(folder, name)
            digest.update(f"{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes() if path.is_file() else b"")
            digest.update(b"\0")
    return digest.hexdigest()[:24]


@pytest.fixture(scope="session")
def built_wheel():
    """The wheel of this checkout, built with no network (--no-deps, --no-build-isolation: setuptools comes
    from the test extras) once for every process that asks for it: the xdist workers share it through a
    folder in the temporary directory named by the hash of its source, and the first to take the folder's
    lock builds it while the others wait. A wheel is moved into place only once it is whole, so a wheel found
    there is one built from exactly these files; the tests only read it (or install it into a venv of their
    own)."""
    root = Path(__file__).resolve().parents[1]
    shared = Path(tempfile.gettempdir()) / "ragassay-test-wheels" / wheel_source_digest(root)
    shared.mkdir(parents=True, exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            found = list((shared / "wheel").glob("ragassay-*.whl"))
            if found:
                return found[0]
            work = Path(tempfile.mkdtemp(prefix="build-", dir=shared))
            source = work / "ragassay"
            shutil.copytree(root, source, ignore=WHEEL_SOURCE_IGNORE)
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--no-build-isolation",
                    "-q",
                    "-w",
                    str(work / "wheel"),
                    str(source),
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            (wheel,) = (work / "wheel").glob("ragassay-*.whl")
            os.replace(work / "wheel", shared / "wheel")
            shutil.rmtree(work, ignore_errors=True)
            return shared / "wheel" / wheel.name
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def wheel_venv(built_wheel):
    """A virtual environment with the built wheel installed by pip (so its ``ragassay`` script is the
    wheel's), its dependencies visible through a .pth file: made once for every process that asks for it,
    beside the wheel it holds, by the first to take the lock (the others wait and reuse it). Making one takes
    about 3 s a process; the tests run their commands in it and write only in folders of their own. The
    marker file is written last, so a venv without it (a run stopped while making it) is made again."""
    venv = built_wheel.parent.parent / "venv"
    made = venv.parent / "venv.made"
    with open(venv.parent / "venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if made.exists():
                return venv
            shutil.rmtree(venv, ignore_errors=True)
            # pip runs without the tester's PYTHON* variables, as the user's commands do: with PYTHONPATH pointing
            # at the checkout's src (a way of running the tests) and src/ragassay.egg-info left there by a test
            # that builds in the clone, pip found ragassay "already installed" and put no `ragassay` script in it
            clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean)
            site = next((venv / "lib").glob("python*/site-packages"))
            (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "--python",
                    str(venv / "bin" / "python"),
                    "install",
                    "-q",
                    "--no-deps",
                    "--no-index",
                    str(built_wheel),
                ],
                check=True,
                capture_output=True,
                text=True,
                env=clean,
            )
            made.touch()
            return venv
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Markers by test file (the module's name): a file is listed when any of its tests needs what the marker
# names, so `-m "not subprocess"` may leave out a few tests that would have run without one. A test
# that uses the built wheel is also marked slow and subprocess wherever it is (see below).
MARKS = {
    "browser": {"test_label", "test_report", "test_report_labels", "test_site"},
    "peers": {
        "test_benchmarks",
        "test_blockwise",
        "test_chain_real_text",
        "test_measures_peers",
        "test_report_labels",
        "test_rests_on",
        "test_set_quality",
        "test_formats_like_peers",
        "test_measure_names_peers",
        "test_measure_params_downstream",
        "test_metrics_vs_trec_eval",
        "test_peer_files",
        "test_queries_asked",
    },
    "subprocess": {
        "test_package",
        "test_readme_chain",
        "test_readme_commands",
        "test_benchmarks",
        "test_blockwise",
        "test_chain_real_text",
        "test_cli",
        "test_command_server",
        "test_composed",
        "test_declared_args",
        "test_engine",
        "test_exports_keep",
        "test_exports_load",
        "test_generate_engine",
        "test_label",
        "test_lazy_imports",
        "test_measures_peers",
        "test_overhead",
        "test_people_samples",
        "test_product",
        "test_replies",
        "test_report",
        "test_report_labels",
        "test_retriever_fallback",
        "test_stages_end_to_end",
        "test_words",
        "test_words_match",
    },
}

# The tests marked slow, as module::function (every parameter of it): those that took 4 s or more in a run of
# the whole suite on 2 cores (`python -m pytest -n 2 --durations=0`, 2026-11-29, the machine shared). A
# test that becomes slow belongs here; `python -m pytest -m "not slow"` leaves them out.
SLOW = """
test_bad_input_table::test_an_endpoint_that_is_not_the_api_is_one_line_naming_it
test_batch::test_generate_with_the_batch_api_backend
test_batch::test_the_batch_api_backend_writes_the_live_records_and_a_rerun_sends_nothing
test_benchmarks::test_judge_scale_runs_and_reports_every_figure
test_benchmarks::test_the_cli_startup_benchmark_prints_every_figure_beside_numpy
test_benchmarks::test_the_local_model_benchmark_measures_each_stage_against_the_local_test_server
test_benchmarks::test_the_metrics_scale_benchmark_prints_each_figure_beside_pytrec_evals
test_blockwise::test_small_qrels_are_read_whole_and_carry_the_in_memory_digest
test_blockwise::test_the_command_by_blocks_prints_what_it_prints_in_memory
test_chunk_table::test_a_coverage_plan_over_a_table_shares_one_chunk_per_id
test_chunk_table::test_a_plan_over_a_table_holds_no_chunk
test_chunk_table::test_judging_from_a_table_is_judging_from_the_chunks_read_whole
test_columns::test_gather_copies_every_token_exactly
test_columns::test_key_index_finds_exactly_the_stored_keys
test_columns::test_key_index_of_many_random_keys_finds_each_at_its_position
test_columns::test_plain_decimals_equal_python_float_bit_for_bit
test_composed::test_agree_one_model_one_prompt_on_two_runs_is_one_labeller_another_prompt_is_not
test_composed::test_label_pairs_writes_a_people_origin_and_with_names_the_other_by_origin
test_demo_as_run::test_a_second_demo_sends_nothing_and_a_dead_endpoint_still_leaves_the_report
test_demo_as_run::test_people_against_the_judged_pool_and_out_moves_outputs_and_state
test_demo_as_run::test_the_demo_and_run_on_a_copy_make_the_same_steps_calls_and_report_inputs
test_docstrings::test_docstring_examples_run
test_error_kinds::test_every_kind_the_code_raises_is_a_named_kind_with_its_class
test_generate_engine::test_a_killed_generate_resumes_from_its_journal_without_the_cache
test_generate_engine::test_the_demo_takes_generates_lock_like_the_command
test_generate_rerun::test_a_run_stopped_part_way_goes_on_without_asking_again_for_what_it_received
test_generate_rerun::test_the_dry_run_counts_rejections_and_later_waves_from_answers_it_knows
test_generate_rerun::test_the_dry_run_counts_the_calls_of_a_fresh_run
test_house::test_every_test_builds_its_llm_with_the_one_shared_builder
test_house::test_no_loop_of_assertions_can_pass_by_checking_nothing
test_import_graph::test_no_module_imports_itself_through_others
test_import_graph::test_own_imports_inside_functions_only_where_a_reason_is_written
test_io::test_many_blocks_on_two_threads_match_a_simple_parser
test_io::test_the_lines_with_long_digit_runs_are_found_in_one_pass_as_line_by_line
test_judge::test_a_runs_top_ids_are_the_head_of_its_ranking
test_label::test_a_person_labels_thirty_pairs_by_keyboard_through_a_kill_and_agree_matches_the_page
test_label::test_a_second_assessor_sees_how_they_agree_and_narrow_screens_work
test_label::test_answers_are_labelled_with_letters_and_feed_check_human
test_label::test_hostile_text_in_a_chunk_stays_text
test_label::test_label_stopped_by_ctrl_c_or_sigterm_exits_130_or_143_with_every_label_saved
test_label::test_the_sample_is_fixed_by_its_seed_spread_over_grades_and_queries
test_lazy_imports::test_every_command_shows_its_help_importing_no_handler
test_llm::test_ping_command
test_llm::test_the_aiohttp_transport_against_a_real_server_across_event_loops
test_measure_names_peers::test_ranx_names_give_ranx_values
test_metrics_vs_trec_eval::test_a_measure_with_its_own_relevance_level_equals_trec_eval_at_that_level
test_metrics_vs_trec_eval::test_a_run_scored_by_slices_of_queries_equals_trec_eval
test_metrics_vs_trec_eval::test_ideal_rankings_with_huge_grades_equal_trec_eval
test_metrics_vs_trec_eval::test_larger_random_run_equals_trec_eval
test_metrics_vs_trec_eval::test_per_query_values_equal_trec_eval
test_output_kinds::test_an_output_of_the_same_kind_is_resumed_in_every_form
test_overhead::test_a_first_run_holds_bytes_per_pair_not_objects
test_overhead::test_a_process_that_sends_nothing_never_imports_openai
test_overhead::test_a_rerun_of_a_finished_judgment_holds_its_keys_packed
test_overhead::test_a_run_holds_only_the_items_in_flight
test_overhead::test_a_run_keeps_no_calls_once_items_are_done
test_overhead::test_asks_leave_nothing_behind
test_package::test_the_sdist_builds_the_same_wheel
test_package::test_the_wheel_holds_the_package_and_nothing_else
test_peer_files::test_ranx_saved_qrels_and_runs_are_evaluated_as_the_trec_files
test_people_samples::test_the_wheel_ships_the_sample_and_offers_the_public_extra
test_plan_keys::test_a_key_list_reads_as_the_list_it_was_given
test_plan_keys::test_key_locations_answer_as_a_dict
test_plan_keys::test_packed_index_keys_answer_as_a_dict_whatever_is_asked
test_power::test_a_huge_difference_needs_two_queries_and_is_computed_at_once
test_product::test_demo_with_a_mocked_endpoint_runs_every_stage
test_product::test_the_demo_runs_from_the_built_wheel_in_an_empty_directory
test_project_prompt::test_run_judges_and_checks_with_the_projects_prompts_and_redoes_a_step_whose_prompt_changed
test_project_run::test_a_dry_run_says_what_the_metrics_steps_will_score_on
test_project_run::test_a_spent_ceiling_skips_the_llm_steps_after_it
test_project_run::test_max_calls_holds_for_the_whole_run_not_for_each_step
test_project_run::test_run_pools_judges_once_reports_and_reruns_only_what_changed
test_readers_agree::test_both_readers_give_the_same_table_or_the_same_error
test_readme_chain::test_answers_that_meet_no_generated_id_stop_the_check_before_any_call
test_readme_chain::test_answers_that_meet_part_of_the_generated_ids_are_counted_and_warned
test_readme_chain::test_the_step_by_step_table_runs_end_to_end_and_says_what_met_and_who_labelled
test_replies::test_a_port_that_accepts_and_never_answers_fails_within_the_timeout
test_replies::test_sigterm_at_any_moment_of_a_run_ends_with_the_one_line_and_no_traceback
test_replies::test_sigterm_ends_a_run_with_one_line_and_a_rerun_resumes
test_report::test_in_a_real_browser_a_query_page_opens_with_text_not_markup
test_run_reads::test_a_run_of_the_example_reads_each_input_a_bounded_number_of_times
test_schema::test_stage_outputs_carry_their_kind_on_every_line
test_server_habits::test_a_benign_habit_gives_the_records_an_openai_like_server_gives
test_speed::test_ping_measures_a_local_servers_speed_and_keeps_it_for_dry_runs
test_stages_end_to_end::test_a_second_writer_is_refused_at_once_naming_the_first
test_stages_end_to_end::test_dry_run_predicts_the_calls_a_judge_run_makes
test_stages_end_to_end::test_the_demo_against_a_model_that_refuses_everything_names_each_stage_and_exits_3
test_stages_end_to_end::test_the_demo_runs_every_stage_against_a_local_model_with_one_llm
test_store_adversary::test_a_plan_said_first_changes_no_answer
test_store_adversary::test_every_answer_and_finalize_on_files_without_the_reported_shapes
test_store_adversary::test_every_position_of_a_read_block_boundary_inside_a_line
test_store_adversary::test_lines_past_4_mb
test_store_adversary::test_many_thousand_lines_match_the_reference
test_trec_order::test_the_order_is_pythons_sort_of_query_score_and_id
test_words::test_every_command_prints_json_with_kind_and_version
test_words::test_every_help_example_runs_where_its_files_are
test_words_match::test_every_flag_a_message_suggests_is_taken_by_each_command_that_can_print_it
""".split()


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the addopts) starts two workers per core: many tests wait rather than compute (a child
    process starting, the fake server's delay, a browser, a timeout that is the claim), and a second worker
    per core computes meanwhile. Measured on the 2-core test machine (shared with other sessions: the load
    average at the start and the end beside each figure), the whole suite on the same tests: 2 workers 363 s
    (load 1.8-2.4; 625 s of CPU, 171% of the machine's 200%), 4 workers 321 s (load 0.4-4.3; 614 s of CPU,
    190%); on a busier machine 778 s against 497 s. The unit subset alone, which hardly waits, is faster on 2
    (19 s against 27 s): pass ``-n 2`` there if it matters."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return 2 * cores


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the xdist_group marks (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    """Mark each test by its file (MARKS); the tests of one file that share an expensive module-scoped
    fixture (SHARED_SETUP) go to one xdist worker together, and so do the tests that use ranx. The tests of
    the built wheel may run on any worker: the workers share one wheel (see built_wheel)."""
    for item in items:
        module = item.path.stem
        for mark, modules in MARKS.items():
            if module in modules:
                item.add_marker(mark)
        if f"{module}::{getattr(item, 'originalname', item.name)}" in SLOW:
            item.add_marker(pytest.mark.slow)
        if "built_wheel" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.subprocess)
        if module in RANX_MODULES and "ranx" in _source(item):
            item.add_marker(pytest.mark.xdist_group("ranx"))
        elif module in SHARED_SETUP and _module_scoped(item):
            item.add_marker(pytest.mark.xdist_group(module))


# The files whose module-scoped fixture is expensive (the chain of commands on a real corpus, about 35 s; the
# documentation site built by mkdocs, about 8 s; each stage against the fake as an OpenAI-like server, 4.5 s; the
# outputs of every kind, 2 s; the judged pools of test_composed, 1.5 s; a command server, tests/command_server.py,
# 1.5 s; the venv's working folder and the demo's copy, 1.2 s): a module-scoped fixture is built once per process,
# so their tests that use it go to one xdist worker together, or each of the four workers (see
# pytest_xdist_auto_num_workers) would build it again. The browser's tests (test_label) are left out: they mostly
# wait, and balance better spread over the workers.
SHARED_SETUP = {
    "test_chain_real_text",
    "test_site",
    "test_server_habits",
    "test_output_kinds",
    "test_composed",
    "test_readme_commands",
    "test_readme_chain",
    "test_command_server",
}


def _module_scoped(item) -> bool:
    """Whether a test uses a module-scoped fixture."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


# ranx builds its Qrels and Run in numba's typed dicts, whose code is compiled in each new process (about
# 25 s, and numba cannot cache it): its tests go to one xdist worker together, so it is compiled once
RANX_MODULES = {"test_measure_names_peers", "test_peer_files", "test_measures_peers", "test_qrels_as_run_pairs"}


def _source(item) -> str:
    """The source of a test function (empty for an item that is not one), to see what it uses."""
    try:
        return inspect.getsource(item.function)
    except (AttributeError, OSError, TypeError):
        return ""


@pytest.fixture
def cli():
    """The one CLI runner: ``cli("evaluate", qrels, run, "--format", "json")`` runs the command in this
    process and returns its exit code and both streams (helpers.Said); ``env=`` sets variables for
    that command only. Module-level helpers import helpers.cli directly."""
    from helpers import cli as run_cli

    return run_cli
