"""Names vulture reports as unused in ``src/`` that are used where it cannot see: by name at run time,
by a framework, in a written file format, or by the tests, the docs and the benchmarks.

``.ci/static_gate.py`` runs ``vulture src .ci/vulture_whitelist.py --min-confidence 60``; a name
listed here counts as used. Add a name only with the reason it is not dead; anything else vulture
finds is dead code, to be removed. This file is read by vulture, never run.
"""

# ruff: noqa: B018, F821

# Python calls these itself: a module's lazy attributes (PEP 562) in ragassay/__init__.py, and the
# signal handler's two arguments in cli/__init__.py, which signal.signal passes whether used or not.
__getattr__
__dir__
signum
frame

# The CLI's handlers, found by name when a command runs (cli/handlers.py imports `<group>.run_<cmd>`
# only then, so that --help imports none of them).
run_label
run_ping
run_judge
run_check
run_generate
run_remap
run_evaluate
run_compare
run_agree
run_retrieve
run_demo_cmd
run_report
run_merge
run_track
run_history
run_gate
run_init
run_run
run_qualify
run_quality

# pydantic reads these: each model's settings and its validators, registered by their decorators.
model_config
_._leave_off_what_does_not_apply  # data/records.py
_._tag_given  # data/records.py
_._tag_matches  # data/records.py
_._id_str  # data/records.py
_._status_matches  # data/records.py
_._reference_given  # data/records.py
_._kind_given  # data/result_models.py
_._kind_matches  # data/result_models.py
_.as_table  # product/project/sections.py

# Fields of the records every stage writes (data/records.py): a file format, read by other tools.
juror_grades
batch_position
batch_size
window_grades
best_window
nuggets_reused
context_chars_cut
contexts_dropped
response_words
graded_label

# Fields of the JSON results (data/result_models.py) that --format json writes and report, track and
# gate read back: a file format.
baseline
disagreements
delivered
reject_reasons
people_agreement
speed_unmeasured
without_results
structured_outputs
structured_outputs_reason
context_tokens
server_said_by
tokens_per_second
prompt_tokens_per_second
answer_tokens_per_second
speed_note

# Fields of dataclasses that to_dict() writes into a result by walking the fields (metrics/compare.py,
# metrics/power.py, metrics/qualification.py, data/people_labels.py, product/published_agreement.py).
baseline_mean
p_t_test_holm
_.p_t_test_holm  # metrics/compare.py: Holm's correction, set on each test and written with it
power_note
mean_diff
binary_agreement
missing_a
missing_b
p_method
mcnemar_method
only_people
only_model
second_join
datasets

# The label page's HTTP server (product/label_server.py): http.server calls these by name.
protocol_version
_.log_message
_.do_GET
_.do_POST
_.daemon_threads

# Public functions a user calls, named in the docs (docs/concepts/significance.md, docs/errors.md).
pairwise_analyses
anova_queries_needed
error_kinds_table  # also writes docs/errors.md

# Used by the benchmarks (benchmarks/judge_prompt_cost.py prints the date of the prices).
PRICES_AS_OF

# Used only by the tests: not dead by this project's rule (a name a test, the docs, the benchmarks or
# the public API uses stays); remove one only together with the test that calls it.
ROLES  # cli/paths.py: tests/integration/test_declared_args.py
TYPES  # cli/values.py: tests/integration/test_bad_input_table.py
model_origin  # data/origin.py: tests/integration/test_origin_and_joins.py
cached_price_for  # llm/usage.py: tests/integration/test_llm.py
system_ranking_agreement  # metrics/qualification.py: tests/unit/test_qualification_stats.py
read_data_block  # product/report_page.py: tests/integration/test_report.py
_.first_waves  # stages/generate/writer.py: tests/integration/test_generate.py
same_question  # stages/generate_checks.py: tests/unit/test_same_question.py
